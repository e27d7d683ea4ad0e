"""Regions: the mappings a handler holds, seen from Python (issue 19).

The calls of ``include/cxlpool.h``'s region section, as a mixin of
:class:`cxlpool.Handler`:

* :meth:`Regions.region_list` / :meth:`Regions.region_view` --
  :class:`RegionInfo` of every mapped region, or of one by id (a foreign
  region is mapped read-only on demand);
* :meth:`Regions.buffer_view` -- a zero-copy view of ``(region, offset,
  size)``, writable for own regions, read-only for foreign ones, tracked
  and released at close like every other view of the binding;
* :meth:`Regions.locate` / :meth:`Regions.batch_locate` -- the region id
  and offset of a view (a retrieved value, a page's buffer);
* :meth:`Regions.page_at` -- the C page handle of (own region, index);
* :meth:`Regions.set_region_callback` -- ``fn(event, RegionInfo)`` for
  every region mapped (``"mapped"``) and before one goes
  (``"unmapping"``), replayed for the regions mapped when it is set.

The callback runs on the thread of the call that mapped the region (an
alloc, a retrieve, region_view), on the library's own thread (regions
given back) or in close; never under a lock of the library, so it may call
the handler (except set_region_callback). An exception it raises is
logged and dropped: it cannot cross into C.
"""

from __future__ import annotations

import ctypes
import logging
from ctypes import byref, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple

from . import _lib
from .errors import BoundsError, NotFoundError, check, make
from .process import address_of

_log = logging.getLogger("cxlpool.regions")

MAPPED = "mapped"
UNMAPPING = "unmapping"
_EVENTS = {_lib.REGION_MAPPED: MAPPED, _lib.REGION_UNMAPPING: UNMAPPING}


@dataclass(frozen=True)
class RegionInfo:
    """struct cxlp_region_info: one mapped region."""

    region: int      # region id in the pool (the same in every process)
    gen: int         # its generation
    addr: int        # first byte of the mapping
    length: int      # bytes mapped (the whole region)
    page_size: int   # its owner's page size (0: unknown)
    pages: int       # length // page_size (0 when unknown)
    writable: bool   # own region, mapped read-write

    @classmethod
    def _of(cls, s: _lib.RegionInfoStruct) -> "RegionInfo":
        return cls(int(s.region), int(s.gen), int(s.addr or 0), int(s.len),
                   int(s.page_size), int(s.pages), bool(s.writable))


class Regions:
    """Mixin of :class:`cxlpool.Handler`: region views and the region
    callback."""

    def _s(self) -> Any:  # supplied by Handler
        raise NotImplementedError

    def region_list(self) -> List[RegionInfo]:
        """Every region this handler maps now, own and foreign, by id."""
        with self._s().call() as h:
            cap = 16
            while True:
                arr = (_lib.RegionInfoStruct * cap)()
                n = check(_lib.lib().cxlp_region_list(h, arr, cap))
                if n <= cap:
                    return [RegionInfo._of(arr[i]) for i in range(n)]
                cap = n + 8

    def region_view(self, region: int) -> RegionInfo:
        """The mapping of region (id), mapping a foreign one read-only
        first (needs direct reads). Raises NotFoundError."""
        with self._s().call() as h:
            info = _lib.RegionInfoStruct()
            check(_lib.lib().cxlp_region_view(h, _u32(region), byref(info)))
            return RegionInfo._of(info)

    def buffer_view(self, region: int, offset: int, size: int
                    ) -> memoryview:
        """A view of size bytes at offset of region: writable for own
        regions, read-only for foreign ones; zero copy, released at close.

        Raises NotFoundError (no such region), BoundsError (the range is
        not inside the region). The bytes of a foreign region are other
        handlers' values: read them as retrieve's rules say (pin, lease
        or validate)."""
        session = self._s()
        info = self.region_view(region)
        if (isinstance(offset, bool) or isinstance(size, bool) or
                offset < 0 or size < 0 or offset + size > info.length):
            raise make(BoundsError, f"region {region}: {offset}+{size} "
                       f"outside its {info.length} bytes")
        if size == 0:
            return memoryview(b"")
        with session.call():
            return session.export(info.addr + offset, size,
                                  readonly=not info.writable)[1]

    def locate(self, view: Any) -> Tuple[int, int]:
        """(region id, offset in the region) of the first byte of view (a
        page's buf, a retrieved view, or an int address). Raises
        NotFoundError when no region of this handler holds it."""
        out = self.batch_locate([view])[0]
        if out is None:
            raise make(NotFoundError, "locate: in no region this handler "
                       "maps")
        return out

    def batch_locate(self, views: Sequence[Any]
                     ) -> List[Optional[Tuple[int, int]]]:
        """locate() of each view in one C call; None where no region
        holds it (an empty view, memory of no mapping)."""
        n = len(views)
        if n == 0:
            return []
        ptrs = (c_void_p * n)(*[_addr(v) for v in views])
        regions = (ctypes.c_uint32 * n)()
        offsets = (c_uint64 * n)()
        with self._s().call() as h:
            rc = _lib.lib().cxlp_batch_locate(h, n, ptrs, regions, offsets)
        if rc < 0 and rc != _lib.ERROR_CODES["CXLP_E_NOTFOUND"]:
            check(rc)
        return [None if regions[i] == 0xFFFFFFFF else
                (int(regions[i]), int(offsets[i])) for i in range(n)]

    def page_at(self, region: int, index: int) -> int:
        """The C page handle (cxlp_page_t) of page index of own region.
        Raises NotFoundError (not this handler's region), BoundsError."""
        with self._s().call() as h:
            page = c_uint64()
            check(_lib.lib().cxlp_page_at(h, _u32(region), _u32(index),
                                          byref(page), None))
            return int(page.value)

    def set_region_callback(self, fn: Optional[Callable[[str, RegionInfo],
                                                        None]]) -> None:
        """Call fn(event, info) for every region mapped (MAPPED, replayed
        now for those mapped already) and before a region goes
        (UNMAPPING). None stops it. fn must not call
        set_region_callback."""
        session = self._s()
        if fn is None:
            cb = None
        else:
            def trampoline(_arg: Any, event: int, info: Any) -> None:
                try:
                    fn(_EVENTS.get(event, str(event)),
                       RegionInfo._of(info.contents))
                except Exception:  # cannot cross into C
                    _log.exception("region callback raised")
            cb = _lib.REGION_FN(trampoline)
        with session.call() as h:
            check(_lib.lib().cxlp_set_region_fn(
                h, ctypes.cast(cb, c_void_p) if cb is not None else None,
                None))
            # kept with the session: the library may call it until
            # cxlp_close, which may come after this handler object is gone
            session.region_callback = cb


def _u32(value: int) -> int:
    """A uint32_t argument checked in Python (ctypes would wrap it)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("region ids and page indices are ints")
    if not 0 <= value <= 0xFFFFFFFF:
        raise make(NotFoundError, f"{value}: not a region id or index")
    return value


def _addr(view: Any) -> Optional[int]:
    """The address behind view (None for an empty one)."""
    if isinstance(view, int):
        return view or None
    if len(view) == 0:
        return None
    return address_of(view)
