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
  (``"unmapping"``), replayed for the regions mapped when it is set;
* :meth:`Regions.add_region_listener` / :meth:`remove_region_listener`
  -- any number of further such listeners (cxlpool.torch's
  register_regions, cxlpool.maru's region hooks), each replayed to alone
  when added; all share the handler's one C callback (_RegionMux).

A callback runs on the thread of the call that mapped the region (an
alloc, a retrieve, region_view), on the library's own thread (regions
given back, or asked back by the metaserver) or in close; never under a
lock of the library, so it may call the handler, set_region_callback and
the listener calls included. An exception it raises is logged and
dropped: it cannot cross into C.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from ctypes import byref, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

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
        with session.call():  # size 0: an empty view at the offset
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
        (UNMAPPING). None stops it. This is the handler's one
        set_region_callback slot: setting it replaces the previous fn
        only, not the listeners of :meth:`add_region_listener` (which
        cxlpool.torch.register_regions and cxlpool.maru use)."""
        mux = _mux(self._s())
        mux.set_primary(fn)

    def add_region_listener(self, fn: Callable[[str, RegionInfo], None]
                            ) -> "RegionListener":
        """Add fn(event, info) as one more region listener: it gets a
        MAPPED of every region mapped now (it alone: the other listeners
        are not replayed to), then every event in order, like
        set_region_callback. Returns the token that
        :meth:`remove_region_listener` takes. Any number of listeners
        share the one C callback (cxlp_set_region_fn) of the handler."""
        return _mux(self._s()).add(fn)

    def remove_region_listener(self, token: "RegionListener") -> None:
        """Stop the listener add_region_listener returned (no UNMAPPING
        is replayed to it); the others keep theirs. A delivery running on
        another thread may still call it once. Idempotent."""
        _mux(self._s()).remove(token)


class RegionListener:
    """One listener of a handler's region events (add_region_listener's
    token). ``mapped`` is what it has been told is mapped, by region id:
    a MAPPED reaches it only for a region it does not hold, an UNMAPPING
    only for one it does, so the replay made for a new listener reaches
    that listener alone."""

    __slots__ = ("fn", "mapped", "__weakref__")

    def __init__(self, fn: Callable[[str, RegionInfo], None]) -> None:
        self.fn = fn
        self.mapped: Dict[int, RegionInfo] = {}


class _RegionMux:
    """The listeners of one session behind its one C region callback.

    Thunk lifetime: the C callback is one CFUNCTYPE made once per
    session (under _MUX_LOCK) and kept by the session until it is freed,
    which is after cxlp_close: cxlp_set_region_fn is only ever given that
    one function, so no thunk C may still call can be dropped, whatever
    threads set or remove listeners (the earlier per-call thunk could be
    replaced in C by one thread and dropped in Python by another).

    Order: C delivers one event at a time, in order, under its
    deliver_lock, so dispatch runs on one thread at a time and needs no
    lock of ours while listeners run (self._lock, a leaf, guards only the
    lists): a listener may call the handler, and a thread that adds a
    listener never holds a lock the delivering thread waits for.

    Replay: a listener added outside a callback is appended, then
    cxlp_set_region_fn is called again with the same thunk: C delivers
    what is pending, then a MAPPED of every region mapped now; each
    listener's ``mapped`` filters out what it was told already. Added
    from inside a callback (C refuses cxlp_set_region_fn there), it is
    replayed from self._mapped by the delivering thread itself.
    """

    def __init__(self, session: Any) -> None:
        self._session = session
        self._lock = threading.Lock()
        self._listeners: List[RegionListener] = []
        self._primary: Optional[RegionListener] = None
        self._mapped: Dict[int, RegionInfo] = {}
        self._tls = threading.local()
        self.thunk = _lib.REGION_FN(self._deliver)

    def _deliver(self, _arg: Any, event: int, cinfo: Any) -> None:
        """The C callback: one event to every listener it concerns."""
        try:
            kind = _EVENTS.get(event, str(event))
            info = RegionInfo._of(cinfo.contents)
            with self._lock:
                if kind == MAPPED:
                    self._mapped[info.region] = info
                elif kind == UNMAPPING:
                    self._mapped.pop(info.region, None)
                listeners = list(self._listeners)
            self._tls.depth = getattr(self._tls, "depth", 0) + 1
            try:
                for lst in listeners:
                    _tell(lst, kind, info)
            finally:
                self._tls.depth -= 1
        except Exception:  # cannot cross into C
            _log.exception("region callback raised")

    def _install(self) -> None:
        """cxlp_set_region_fn(thunk): replays every mapped region."""
        session = self._session
        with session.call() as h:
            check(_lib.lib().cxlp_set_region_fn(
                h, ctypes.cast(self.thunk, c_void_p), None))

    def _replay(self, lst: RegionListener) -> None:
        if getattr(self._tls, "depth", 0):
            with self._lock:
                now = sorted(self._mapped.values(), key=lambda i: i.region)
            for info in now:
                _tell(lst, MAPPED, info)
        else:
            self._install()

    def add(self, fn: Callable[[str, RegionInfo], None]) -> RegionListener:
        if not callable(fn):
            raise TypeError("a region listener is a callable")
        lst = RegionListener(fn)
        with self._lock:
            self._listeners.append(lst)
        try:
            self._replay(lst)
        except BaseException:
            self.remove(lst)
            raise
        return lst

    def remove(self, lst: Optional[RegionListener]) -> None:
        with self._lock:
            if lst in self._listeners:
                self._listeners.remove(lst)
            if self._primary is lst:
                self._primary = None

    def set_primary(self, fn: Optional[Callable[[str, RegionInfo], None]]
                    ) -> None:
        lst = RegionListener(fn) if fn is not None else None
        with self._lock:
            old, self._primary = self._primary, lst
            if old in self._listeners:
                self._listeners.remove(old)  # type: ignore[arg-type]
            if lst is not None:
                self._listeners.append(lst)
        if lst is not None:
            try:
                self._replay(lst)
            except BaseException:
                self.remove(lst)
                raise

    def listeners(self) -> int:
        """How many listeners are set (for tests)."""
        with self._lock:
            return len(self._listeners)


def _tell(lst: RegionListener, kind: str, info: RegionInfo) -> None:
    """Deliver one event to lst if it concerns it; log what it raises."""
    if kind == MAPPED:
        if info.region in lst.mapped:
            return  # told already (a replay made for another listener)
        lst.mapped[info.region] = info
    elif kind == UNMAPPING:
        if lst.mapped.pop(info.region, None) is None:
            return  # never told it was mapped
    try:
        lst.fn(kind, info)
    except Exception:  # cannot cross into C
        _log.exception("region callback raised")


# Guards the making of a session's _RegionMux (once per session).
_MUX_LOCK = threading.Lock()


def _mux(session: Any) -> _RegionMux:
    """The session's region multiplexer, made (and kept) on first use."""
    mux = getattr(session, "region_mux", None)
    if mux is None:
        with _MUX_LOCK:
            mux = getattr(session, "region_mux", None)
            if mux is None:
                mux = _RegionMux(session)
                # kept with the session: the library may call its thunk
                # until cxlp_close, which may come after this handler
                # object is gone
                session.region_mux = mux
    return mux


def _u32(value: int) -> int:
    """A uint32_t argument checked in Python (ctypes would wrap it)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("region ids and page indices are ints")
    if not 0 <= value <= 0xFFFFFFFF:
        raise make(NotFoundError, f"{value}: not a region id or index")
    return value


def _addr(view: Any) -> Optional[int]:
    """The address behind view (None for None): an empty view too, as
    retrieve gives for a zero-length value, placed at its page."""
    if isinstance(view, int):
        return view or None
    if view is None:
        return None
    return address_of(view) or None
