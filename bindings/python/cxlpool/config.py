"""Handler configuration: a plain dataclass turned into a cxlp_config.

The fields and their defaults are those of ``cxlp_config_new()``; the C
setters validate the values at :meth:`Handler.connect`, where an out of
range value raises :class:`InvalidArgumentError` with the C library's
message.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional

from . import _lib
from .errors import InvalidArgumentError, check, make

KiB = 1024
MiB = 1024 * KiB

#: Default metaserver endpoint of the C library.
DEFAULT_SERVER_URL = "ipc:///tmp/cxlpool.sock"


@dataclass
class Config:
    """What a :class:`Handler` connects to and how it carves its pages.

    server_url   metaserver endpoint: ``ipc://path``, ``tcp://host:port``,
                 or several comma-separated (a leader and its standbys)
    pool         the pool's path on this host: its owner record names
                 the leader, whom the handler then follows ("": not set)
    page_size    bytes per page, i.e. the chunk size (alias ``chunk_size``)
    region_size  bytes per region taken from the pool
    auto_expand  take a new region when the owned ones are full
    max_regions  at most this many regions (0: no limit)
    reserve_regions  empty regions kept; the handler gives the others
                 back to the pool (0: keep none)
    timeout_ms   wait this long for each metaserver reply
    retries      resend a request this many times before giving up
    instance_id  caller-chosen id reported to the metaserver (e.g. a rank)
    keepalive_ms heartbeat after this long without a reply (0: off), so
                 the session is reattached soon after a metaserver restart
    lease_ms     how long a lease taken by a leased store lasts
    alloc_wait_ms  how long alloc waits for room in a pool where nothing
                 can be evicted (0: NoSpaceError at once)
    direct_reads read the pool's index from shared memory for unpinned
                 lookups and version checks (off: every lookup asks the
                 metaserver, and unpinned versions cannot be checked)
    max_inflight at most this many asynchronous calls (batch_store_async,
                 batch_retrieve_async) in flight at once, 1..1024
    secret       shared secret sent at connect (a tcp:// metaserver with
                 --secret-file refuses a handler without it); None: none
    tls_ca       for a ``tls+tcp://`` server_url: PEM file of the CAs
                 that sign the metaserver's certificate (required there)
    tls_cert, tls_key  PEM files of this handler's certificate and key,
                 for a metaserver with --tls-verify-peer (mutual TLS)
    tls_server_name  the name the server's certificate must carry
                 (default: the URL's host)
    """

    server_url: str = DEFAULT_SERVER_URL
    page_size: int = 64 * KiB
    region_size: int = 64 * MiB
    auto_expand: bool = True
    max_regions: int = 0
    reserve_regions: int = 1
    timeout_ms: int = 5000
    retries: int = 3
    instance_id: int = 0
    keepalive_ms: int = 1000
    lease_ms: int = 10000
    alloc_wait_ms: int = 0
    direct_reads: bool = True
    max_inflight: int = 8
    secret: Optional[str] = None
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    tls_server_name: str = ""
    pool: str = ""  # last: positional construction keeps its meaning

    @property
    def chunk_size(self) -> int:
        """Alias of page_size: one page holds one KV chunk."""
        return self.page_size

    @chunk_size.setter
    def chunk_size(self, value: int) -> None:
        self.page_size = value

    @contextmanager
    def to_c(self) -> Iterator[ctypes.c_void_p]:
        """Yield a ``struct cxlp_config *`` holding these values.

        The C config is deleted when the block ends. Raises
        InvalidArgumentError for a value the C library refuses, TypeError
        or OverflowError for a value ctypes cannot pass.
        """
        lib = _lib.lib()
        cfg = ctypes.c_void_p()
        check(lib.cxlp_config_new(ctypes.byref(cfg)))
        try:
            self._apply(lib, cfg)
            yield cfg
        finally:
            lib.cxlp_config_delete(ctypes.byref(cfg))

    def _apply(self, lib: ctypes.CDLL, cfg: ctypes.c_void_p) -> None:
        """Call every setter on cfg, raising on the first refusal."""
        if not isinstance(self.server_url, str):
            raise TypeError("server_url must be a str")
        check(lib.cxlp_config_set_server(cfg, self.server_url.encode()))
        if not isinstance(self.pool, str):
            raise TypeError("pool must be a str")
        check(lib.cxlp_config_set_pool(cfg, self.pool.encode()))
        # the C setters keep page <= region at every step: the smallest
        # page first, so that neither order of the two refuses a valid
        # pair (a page over the default 64 MiB region did)
        page = _uint("page_size", self.page_size, _SIZE_BITS)
        check(lib.cxlp_config_set_page_size(cfg, 64))
        check(lib.cxlp_config_set_region_size(
            cfg, _uint("region_size", self.region_size, _SIZE_BITS)))
        check(lib.cxlp_config_set_page_size(cfg, page))
        check(lib.cxlp_config_set_auto_expand(cfg, bool(self.auto_expand)))
        check(lib.cxlp_config_set_max_regions(
            cfg, _uint("max_regions", self.max_regions, 32)))
        check(lib.cxlp_config_set_reserve_regions(
            cfg, _uint("reserve_regions", self.reserve_regions, 32)))
        check(lib.cxlp_config_set_timeout_ms(
            cfg, _uint("timeout_ms", self.timeout_ms, 32)))
        check(lib.cxlp_config_set_retries(
            cfg, _uint("retries", self.retries, 32)))
        check(lib.cxlp_config_set_instance_id(
            cfg, _uint("instance_id", self.instance_id, 64)))
        check(lib.cxlp_config_set_keepalive_ms(
            cfg, _uint("keepalive_ms", self.keepalive_ms, 32)))
        check(lib.cxlp_config_set_lease_ms(
            cfg, _uint("lease_ms", self.lease_ms, 32)))
        check(lib.cxlp_config_set_alloc_wait_ms(
            cfg, _uint("alloc_wait_ms", self.alloc_wait_ms, 32)))
        check(lib.cxlp_config_set_direct_reads(cfg,
                                               bool(self.direct_reads)))
        check(lib.cxlp_config_set_max_inflight(
            cfg, _uint("max_inflight", self.max_inflight, 32)))
        if self.secret is not None and not isinstance(self.secret, str):
            raise TypeError("secret must be a str or None")
        check(lib.cxlp_config_set_secret(
            cfg, (self.secret or "").encode()))
        self._apply_tls(lib, cfg)

    def _apply_tls(self, lib: ctypes.CDLL, cfg: ctypes.c_void_p) -> None:
        """Set the TLS fields (paths and the server name; "" unset)."""
        for name in ("tls_ca", "tls_cert", "tls_key", "tls_server_name"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a str")
            check(getattr(lib, "cxlp_config_set_" + name)(
                cfg, value.encode()))


_SIZE_BITS = 8 * ctypes.sizeof(ctypes.c_size_t)


def _uint(name: str, value: int, bits: int) -> int:
    """Return value if it is an int in [0, 2**bits), else raise.

    ctypes would silently wrap a negative or oversized value, so the range
    is checked here (InvalidArgumentError, as the C setters would say).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < (1 << bits):
        raise make(InvalidArgumentError,
                   f"{name}={value}: out of range for a {bits}-bit field")
    return value
