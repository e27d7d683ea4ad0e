"""Versioned reads: zero-copy retrieves that a reader without a pin checks
after its copy (cxlp_retrieve_v, cxlp_batch_retrieve_v, cxlp_validate,
cxlp_batch_validate), and prepare_read before a device copy
(cxlp_prepare_read).

A view from ``retrieve`` stays readable after its key is deleted (or
evicted), and the key's owner may then write another value into the same
page while you copy. ``retrieve_v`` also returns the value's
:class:`Version`; once the copy is complete (a device copy waited for),
``validate(version)`` says, with no round trip, whether the key held that
value all along, i.e. whether the copy is good::

    while True:
        view, ver = h.retrieve_v(key)
        dst[:len(view)] = view
        if h.validate(ver):
            break                  # dst holds the key's value, whole

On a pool that several hosts share without hardware coherence (coherence
``sw``), every retrieve drops this host's cached lines of the values it
returns; a device copy (or a second read) started later from a view kept
since calls ``prepare_read(view)`` first, so that it reads the device, not
this host's stale cache. The version check after the copy stays.

The methods live in the :class:`VersionedReads` mixin of
:class:`cxlpool.Handler`, which supplies the session and the views.
"""

from __future__ import annotations

from ctypes import byref, c_int, c_size_t, c_void_p
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _keys, _lib
from .errors import CxlpError, check, error_from_code
from .process import address_of

_CHANGED = _lib.ERROR_CODES["CXLP_E_CHANGED"]


@dataclass(frozen=True)
class Version:
    """The version of a retrieved value (``cxlp_version_t``): opaque.

    A plain, hashable value: keep it with the copy it belongs to and pass
    it to :meth:`Handler.validate` once the copy is complete.
    """

    opaque: Tuple[int, int]

    @classmethod
    def _of(cls, v: _lib.VersionStruct) -> "Version":
        return cls((int(v.opaque[0]), int(v.opaque[1])))

    def _c(self) -> _lib.VersionStruct:
        v = _lib.VersionStruct()
        v.opaque[0], v.opaque[1] = self.opaque
        return v


def _c_version(version: Any) -> _lib.VersionStruct:
    """version as the C struct, or TypeError."""
    if not isinstance(version, Version):
        raise TypeError("version must be a cxlpool.Version, not "
                        f"{type(version).__name__}")
    return version._c()


def _status(code: int) -> Union[bool, CxlpError]:
    """One batch_validate entry: True, False (changed) or the error."""
    if code == 0:
        return True
    if code == _CHANGED:
        return False
    return error_from_code(code, message=_lib.strerror(code))


class VersionedReads:
    """Handler's versioned reads; Handler supplies ``_s`` and ``_view``."""

    _s: Any
    _view: Any

    def retrieve_v(self, key: _keys.KeyLike, *, pin: bool = False
                   ) -> Tuple[memoryview, Version]:
        """retrieve() that also returns the value's version
        (cxlp_retrieve_v): ``(view, version)``. Raises NotFoundError."""
        session = self._s()
        k = _keys.key(key)
        with session.call() as h:
            data, size, ver = c_void_p(), c_size_t(), _lib.VersionStruct()
            flags = _lib.RETRIEVE_PIN if pin else 0
            check(_lib.lib().cxlp_retrieve_v(h, k, len(k), flags,
                                             byref(data), byref(size),
                                             byref(ver)))
            return (self._view(session, data.value, size.value),
                    Version._of(ver))

    def batch_retrieve_v(self, keys: Sequence[_keys.KeyLike], *,
                         pin: bool = False
                         ) -> List[Union[Tuple[memoryview, Version],
                                         CxlpError]]:
        """batch_retrieve() with versions (cxlp_batch_retrieve_v): per
        key ``(view, version)`` or the exception instance (not raised)."""
        session = self._s()
        bkeys = _keys.keys(keys)
        n = len(bkeys)
        with session.call() as h:
            kptrs, klens = _lib.key_arrays(bkeys)
            data, sizes = (c_void_p * n)(), (c_size_t * n)()
            status, vers = (c_int * n)(), (_lib.VersionStruct * n)()
            flags = _lib.RETRIEVE_PIN if pin else 0
            check(_lib.lib().cxlp_batch_retrieve_v(h, n, kptrs, klens, flags,
                                                   data, sizes, status,
                                                   vers))
            found = [i for i in range(n) if status[i] == 0 and sizes[i]]
            views = dict(zip(found, session.export_many(
                [(data[i] or 0, sizes[i]) for i in found], readonly=True)))
            return [_keys.key_error(status[i], bkeys[i]) if status[i] else
                    (views[i][1] if i in views else memoryview(b""),
                     Version._of(vers[i])) for i in range(n)]

    def validate(self, version: Version) -> bool:
        """Is a copy of the value retrieved with version good?

        Call it once the copy is complete (a device copy waited for).
        True: the key held that value, unchanged, all along; False
        (CXLP_E_CHANGED): it was deleted, evicted or stored again, so the
        copy may be torn or another key's: retrieve again. Raises
        NoVersionError when the version cannot be checked (an unpinned
        retrieve the metaserver answered, e.g. direct_reads off: retrieve
        with pin=True instead), InvalidArgumentError for a version not of
        this handler. No round trip (cxlp_validate).
        """
        v = _c_version(version)
        with self._s().call() as h:
            rc = _lib.lib().cxlp_validate(h, byref(v))
            if rc == _CHANGED:
                return False
            check(rc)
            return True

    def prepare_read(self, view: Any, size: Optional[int] = None) -> None:
        """Drop this host's cached lines of a range before a device copy
        of it (or a CPU read long after its retrieve) starts
        (cxlp_prepare_read). view is a retrieved view, a page's buf or a
        buffer_view (size: its length unless given, at most that), or an
        int address with its size. Nothing but a check on pools of
        coherence host or hw. Raises InvalidArgumentError when the range
        is not inside one region this handler maps, TypeError for an
        int address without a size."""
        if isinstance(view, int) and not isinstance(view, bool):
            if size is None:
                raise TypeError("prepare_read of an address needs a size")
            addr = view
        else:
            n = memoryview(view).nbytes
            if size is not None and not 0 <= size <= n:
                raise ValueError(f"size {size} outside the view's {n} "
                                 "bytes")
            addr, size = address_of(view), n if size is None else size
        if size < 0:
            raise ValueError(f"size {size} is negative")
        with self._s().call() as h:
            check(_lib.lib().cxlp_prepare_read(h, addr or None, size))

    def batch_validate(self, versions: Sequence[Version]
                       ) -> List[Union[bool, CxlpError]]:
        """validate() of each version at once (cxlp_batch_validate): per
        version True, False, or the exception validate() would raise (not
        raised)."""
        cvers = [_c_version(v) for v in versions]
        n = len(cvers)
        with self._s().call() as h:
            arr = (_lib.VersionStruct * n)(*cvers)
            status = (c_int * n)()
            check(_lib.lib().cxlp_batch_validate(h, n, arr, status))
            return [_status(status[i]) for i in range(n)]
