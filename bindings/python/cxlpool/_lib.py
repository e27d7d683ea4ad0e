"""Locate ``libcxlpool.so`` and declare its C API for ctypes.

This module is the only place that knows the C signatures of
``include/cxlpool.h``; everything else calls through :func:`lib`. The
library is loaded lazily, on the first call that needs it, so that
``import cxlpool`` works (and its exception classes can be used) on a
machine where the library is missing. The constants mirror the header and a
test compares them with it.

Search order for the library:

1. ``CXLP_LIB``: the full path of the library (no fallback if it fails);
2. ``CXLP_LIBDIR``: a directory holding ``libcxlpool.so.0`` or
   ``libcxlpool.so`` (meson's test environment points it at the build's
   ``handler/`` directory);
3. ``ctypes.util.find_library("cxlpool")``, then ``libcxlpool.so.0`` through
   the dynamic loader's own search path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import (POINTER, c_bool, c_char_p, c_int, c_size_t, c_uint,
                    c_uint64, c_void_p)
from typing import Any, Dict, List, Optional, Sequence, Tuple

# Keys are opaque byte strings of 1..KEY_MAX bytes (CXLP_KEY_MAX).
KEY_MAX = 1024
# A batch call takes at most BATCH_MAX keys (CXLP_BATCH_MAX).
BATCH_MAX = 4096

# Flags (CXLP_STORE_PIN, CXLP_RETRIEVE_PIN).
STORE_PIN = 0x1
RETRIEVE_PIN = 0x1

# enum cxlp_error: symbolic name -> value.
ERROR_CODES: Dict[str, int] = {
    "CXLP_E_BADMAGIC": -1000,
    "CXLP_E_VERSION": -1001,
    "CXLP_E_CHECKSUM": -1002,
    "CXLP_E_CORRUPT": -1003,
    "CXLP_E_NOSPACE": -1004,
    "CXLP_E_NOTFOUND": -1005,
    "CXLP_E_PINNED": -1006,
    "CXLP_E_NOTPINNED": -1007,
    "CXLP_E_PERM": -1008,
    "CXLP_E_BOUNDS": -1009,
    "CXLP_E_PROTO": -1010,
    "CXLP_E_BADOP": -1011,
    "CXLP_E_KEYLEN": -1012,
    "CXLP_E_BATCH": -1013,
    "CXLP_E_SESSION": -1014,
    "CXLP_E_TIMEOUT": -1015,
    "CXLP_E_CLOSED": -1016,
    "CXLP_E_CONN": -1017,
    "CXLP_E_BADPAGE": -1018,
    "CXLP_E_STALE": -1019,
    "CXLP_E_BUSY": -1020,
    "CXLP_E_TOOBIG": -1021,
    "CXLP_E_UNKNOWN": -1022,
    "CXLP_E_CHANGED": -1023,
    "CXLP_E_NOVERSION": -1024,
    "CXLP_E_GROUP": -1025,
    "CXLP_E_CANCELED": -1026,
    "CXLP_E_HOST": -1027,
}

# enum cxlp_log_level.
LOG_OFF, LOG_ERR, LOG_INFO, LOG_DEBUG = 0, 1, 2, 3

# typedef void (*cxlp_log_fn)(int level, const char *msg, void *arg);
LOG_FN = ctypes.CFUNCTYPE(None, c_int, c_char_p, c_void_p)

# Field names of struct cxlp_stats, in order, without reserved[1].
STATS_FIELDS: Tuple[str, ...] = (
    "pool_bytes", "data_bytes", "free_bytes", "regions", "orphan_regions",
    "keys", "value_bytes", "sessions", "pins", "index_slots",
    "own_regions", "pages_total", "pages_free", "pages_allocated",
    "pages_registered", "pages_unresolved", "foreign_maps", "redials",
    "pages_quarantined", "largest_free", "evicted_pressure",
    "evicted_watermark", "evicted_orphan", "evicted_bytes",
    "pages_reclaimed", "reclaims", "leases", "lease_expiries", "refills",
    "pages_reserved", "endpoint_switches",
)


class StatsStruct(ctypes.Structure):
    """struct cxlp_stats, field for field."""

    _fields_ = [(name, c_uint64) for name in STATS_FIELDS] + [
        ("reserved", c_uint64 * 1)]


class VersionStruct(ctypes.Structure):
    """cxlp_version_t: two opaque words."""

    _fields_ = [("opaque", c_uint64 * 2)]


_PTR = c_void_p          # opaque handles and arrays passed by address
_P = POINTER

# Asynchronous calls (cxlp_batch_store_async, cxlp_batch_retrieve_async).
ASYNC_NOWAIT = 1 << 16
# typedef void (*cxlp_store_done_fn)(void *arg, int rc, size_t n,
#     const bool stored[], const int status[]);
STORE_DONE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_size_t,
                                 _P(c_bool), _P(c_int))
# typedef void (*cxlp_retrieve_done_fn)(void *arg, int rc, size_t n,
#     const void *const data[], const size_t lens[], const int status[]);
RETRIEVE_DONE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_size_t,
                                    _P(c_void_p), _P(c_size_t), _P(c_int))

# name -> (restype, argtypes); one row per function of cxlpool.h.
_PROTOS: Dict[str, Tuple[Any, List[Any]]] = {
    "cxlp_strerror": (c_char_p, [c_int]),
    "cxlp_errormsg": (c_char_p, []),
    "cxlp_set_log_fn": (None, [LOG_FN, c_void_p, c_int]),
    "cxlp_config_new": (c_int, [_P(c_void_p)]),
    "cxlp_config_delete": (None, [_P(c_void_p)]),
    "cxlp_config_set_server": (c_int, [_PTR, c_char_p]),
    "cxlp_config_set_pool": (c_int, [_PTR, c_char_p]),
    "cxlp_config_set_page_size": (c_int, [_PTR, c_size_t]),
    "cxlp_config_set_region_size": (c_int, [_PTR, c_size_t]),
    "cxlp_config_set_auto_expand": (c_int, [_PTR, c_bool]),
    "cxlp_config_set_max_regions": (c_int, [_PTR, c_uint]),
    "cxlp_config_set_reserve_regions": (c_int, [_PTR, c_uint]),
    "cxlp_config_set_timeout_ms": (c_int, [_PTR, c_uint]),
    "cxlp_config_set_retries": (c_int, [_PTR, c_uint]),
    "cxlp_config_set_instance_id": (c_int, [_PTR, c_uint64]),
    "cxlp_config_set_keepalive_ms": (c_int, [_PTR, c_uint]),
    "cxlp_config_set_lease_ms": (c_int, [_PTR, c_uint]),
    "cxlp_config_set_alloc_wait_ms": (c_int, [_PTR, c_uint]),
    "cxlp_config_set_direct_reads": (c_int, [_PTR, c_bool]),
    "cxlp_connect": (c_int, [_P(c_void_p), _PTR]),
    "cxlp_close": (None, [_P(c_void_p)]),
    "cxlp_page_size": (c_size_t, [_PTR]),
    "cxlp_alloc": (c_int, [_PTR, _P(c_uint64), _P(c_void_p)]),
    "cxlp_free": (c_int, [_PTR, c_uint64]),
    "cxlp_reserve": (c_int, [_PTR, c_size_t, c_uint, _P(c_void_p)]),
    "cxlp_reserve_alloc": (c_int, [_PTR, _PTR, _P(c_uint64), _P(c_void_p)]),
    "cxlp_reserve_left": (c_size_t, [_PTR]),
    "cxlp_reserve_release": (c_int, [_PTR, _P(c_void_p)]),
    "cxlp_group_open": (c_int, [_PTR, c_char_p, c_size_t, c_size_t, c_uint,
                                c_uint, _P(c_void_p)]),
    "cxlp_group_alloc": (c_int, [_PTR, _PTR, _P(c_uint64), _P(c_void_p)]),
    "cxlp_group_skip_present": (c_int, [_PTR, _PTR, c_size_t, _PTR, _PTR,
                                        _PTR]),
    "cxlp_group_store": (c_int, [_PTR, _PTR, c_size_t, _PTR, _PTR, _PTR,
                                 _PTR, _PTR]),
    "cxlp_group_commit": (c_int, [_PTR, _PTR]),
    "cxlp_group_abort": (c_int, [_PTR, _PTR]),
    "cxlp_group_cancel": (c_int, [_PTR, c_char_p, c_size_t]),
    "cxlp_group_state": (c_int, [_PTR]),
    "cxlp_group_count": (c_size_t, [_PTR]),
    "cxlp_group_close": (None, [_PTR, _P(c_void_p)]),
    "cxlp_batch_store": (c_int, [_PTR, c_size_t, _PTR, _PTR, _PTR, _PTR,
                                 c_uint, _PTR]),
    "cxlp_store": (c_int, [_PTR, c_char_p, c_size_t, c_uint64, c_size_t,
                           c_uint, _P(c_bool)]),
    "cxlp_retrieve": (c_int, [_PTR, c_char_p, c_size_t, c_uint,
                              _P(c_void_p), _P(c_size_t)]),
    "cxlp_batch_retrieve": (c_int, [_PTR, c_size_t, _PTR, _PTR, c_uint,
                                    _PTR, _PTR, _PTR]),
    "cxlp_retrieve_v": (c_int, [_PTR, c_char_p, c_size_t, c_uint,
                                _P(c_void_p), _P(c_size_t),
                                _P(VersionStruct)]),
    "cxlp_batch_retrieve_v": (c_int, [_PTR, c_size_t, _PTR, _PTR, c_uint,
                                      _PTR, _PTR, _PTR, _PTR]),
    "cxlp_validate": (c_int, [_PTR, _P(VersionStruct)]),
    "cxlp_batch_validate": (c_int, [_PTR, c_size_t, _PTR, _PTR]),
    "cxlp_prepare_read": (c_int, [_PTR, c_void_p, c_size_t]),
    "cxlp_exists": (c_int, [_PTR, c_char_p, c_size_t]),
    "cxlp_batch_exists": (c_int, [_PTR, c_size_t, _PTR, _PTR, _PTR]),
    "cxlp_pin": (c_int, [_PTR, c_char_p, c_size_t]),
    "cxlp_unpin": (c_int, [_PTR, c_char_p, c_size_t]),
    "cxlp_batch_pin": (c_int, [_PTR, c_size_t, _PTR, _PTR, _P(c_size_t)]),
    "cxlp_batch_unpin": (c_int, [_PTR, c_size_t, _PTR, _PTR, _PTR]),
    "cxlp_lease": (c_int, [_PTR, c_char_p, c_size_t, c_uint]),
    "cxlp_batch_lease": (c_int, [_PTR, c_size_t, _PTR, _PTR, c_uint,
                                 _PTR]),
    "cxlp_delete": (c_int, [_PTR, c_char_p, c_size_t]),
    "cxlp_batch_delete": (c_int, [_PTR, c_size_t, _PTR, _PTR, _PTR]),
    "cxlp_stats": (c_int, [_PTR, _P(StatsStruct)]),
    "cxlp_healthcheck": (c_int, [_PTR]),
    "cxlp_counters": (c_int, [_PTR, _PTR, c_size_t]),
    "cxlp_config_set_max_inflight": (c_int, [_PTR, c_uint]),
    "cxlp_batch_store_async": (c_int, [_PTR, c_size_t, _PTR, _PTR, _PTR,
                                       _PTR, c_uint, STORE_DONE_FN,
                                       c_void_p]),
    "cxlp_batch_retrieve_async": (c_int, [_PTR, c_size_t, _PTR, _PTR,
                                          c_uint, RETRIEVE_DONE_FN,
                                          c_void_p]),
    "cxlp_async_inflight": (c_int, [_PTR, _P(c_uint)]),
    # region views (issue 19; cxlpool/regions.py)
    "cxlp_config_set_secret": (c_int, [_PTR, c_char_p]),
    "cxlp_locate": (c_int, [_PTR, c_void_p, _P(ctypes.c_uint32),
                            _P(c_uint64)]),
    "cxlp_batch_locate": (c_int, [_PTR, c_size_t, _PTR, _PTR, _PTR]),
    "cxlp_region_list": (c_int, [_PTR, _PTR, c_size_t]),
    "cxlp_region_view": (c_int, [_PTR, ctypes.c_uint32, _PTR]),
    "cxlp_page_at": (c_int, [_PTR, ctypes.c_uint32, ctypes.c_uint32,
                             _P(c_uint64), _P(c_void_p)]),
    "cxlp_set_region_fn": (c_int, [_PTR, c_void_p, c_void_p]),
    "cxlp_config_set_tls_ca": (c_int, [_PTR, c_char_p]),
    "cxlp_config_set_tls_cert": (c_int, [_PTR, c_char_p]),
    "cxlp_config_set_tls_key": (c_int, [_PTR, c_char_p]),
    "cxlp_config_set_tls_server_name": (c_int, [_PTR, c_char_p]),
}


# Region events (CXLP_REGION_MAPPED, CXLP_REGION_UNMAPPING).
REGION_MAPPED, REGION_UNMAPPING = 1, 2


class RegionInfoStruct(ctypes.Structure):
    """struct cxlp_region_info, field for field."""

    _fields_ = [("region", ctypes.c_uint32), ("gen", ctypes.c_uint32),
                ("addr", c_void_p), ("len", c_size_t),
                ("page_size", c_size_t), ("pages", ctypes.c_uint32),
                ("writable", c_bool), ("reserved", c_uint64 * 2)]


# typedef void (*cxlp_region_fn)(void *arg, int event,
#     const struct cxlp_region_info *info);
REGION_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, _P(RegionInfoStruct))

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None


def candidates() -> List[str]:
    """Return the library paths or names to try, in order (see module doc).

    ``CXLP_LIB``, when set, is the only candidate.
    """
    path = os.environ.get("CXLP_LIB")
    if path:
        return [path]
    names: List[str] = []
    libdir = os.environ.get("CXLP_LIBDIR")
    if libdir:
        names += [os.path.join(libdir, "libcxlpool.so.0"),
                  os.path.join(libdir, "libcxlpool.so")]
    found = ctypes.util.find_library("cxlpool")
    if found:
        names.append(found)
    names.append("libcxlpool.so.0")
    return names


def _declare(cdll: ctypes.CDLL) -> None:
    """Set restype/argtypes of every function in _PROTOS on cdll."""
    for name, (restype, argtypes) in _PROTOS.items():
        fn = getattr(cdll, name)
        fn.restype = restype
        fn.argtypes = argtypes


def lib() -> ctypes.CDLL:
    """Return the loaded, declared library, loading it on first use.

    Raises OSError naming every candidate tried when none loads.
    """
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            _lib = _load()
    return _lib


def _load() -> ctypes.CDLL:
    """Load the first candidate that the dynamic loader accepts."""
    errors: List[str] = []
    for name in candidates():
        try:
            cdll = ctypes.CDLL(name)
        except OSError as e:
            errors.append(f"{name}: {e}")
            continue
        _declare(cdll)
        return cdll
    raise OSError("cxlpool: cannot load libcxlpool (set CXLP_LIB or "
                  "CXLP_LIBDIR): " + "; ".join(errors))


def loaded() -> bool:
    """True once the library has been loaded."""
    return _lib is not None


def strerror(code: int) -> str:
    """cxlp_strerror(code) as a str."""
    raw = lib().cxlp_strerror(code)
    return raw.decode("utf-8", "replace") if raw else ""


def errormsg() -> str:
    """cxlp_errormsg() of this thread as a str (empty if none)."""
    raw = lib().cxlp_errormsg()
    return raw.decode("utf-8", "replace") if raw else ""


def key_arrays(keys: Sequence[bytes]) -> Tuple[Any, Any]:
    """Build ``const void *keys[]`` and ``size_t key_lens[]`` for keys.

    The pointer array points into the bytes objects themselves (no copy)
    and keeps them alive for as long as the array lives.
    """
    n = len(keys)
    ptrs = (c_char_p * n)(*keys)
    lens = (c_size_t * n)(*[len(k) for k in keys])
    return ptrs, lens
