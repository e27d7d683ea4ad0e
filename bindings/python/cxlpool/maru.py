"""cxlpool.maru: Maru's handler API (``MaruConfig``, ``MaruHandler``,
``AllocHandle``, ``MemoryInfo``) on cxlpool (issue 19).

The vLLM, LMCache and SGLang integrations written for Maru reach the pool
only through ``from maru import MaruConfig, MaruHandler`` and
``maru_handler.memory``. This module offers that surface, with Maru's
semantics, over :class:`cxlpool.Handler`: no byte is copied on the data
path (``AllocHandle.buf`` and ``MemoryInfo.view`` are views of the shared
mapping), and the integrations get cxlpool's crash recovery, direct reads
and batching. ``bindings/python/maru_shim`` makes ``import maru`` and
``import maru_handler.memory`` resolve here.

Where cxlpool deliberately differs from Maru, cxlpool's behaviour is kept;
bindings/python/README.md has the table ("cxlpool.maru"). In brief: a lost
register race returns True and frees the page; pins belong to the
handler's session and die with it; a live handler's keys can only be
deleted by their owner; free() of a stored page is refused (logged, no
effect) rather than leaving a key on a reused page; chunk sizes are at
least 64 bytes (any size above: Maru's tests use 1 KiB).

Retrieved views (``MemoryInfo.view``) say writable, as Maru's do where
they map the region read-write, so that ``ctypes.c_char.from_buffer(
info.view)`` (SGLang's zero-copy read) takes their address; the memory
behind them is mapped as before: another handler's region read-only, so a
write through the view faults (SIGSEGV: the process dies, the other
handler's value is untouched), and this handler's own region read-write,
so a write changes the stored value in place, under every reader (as in
Maru: don't). cxlpool.Handler's own retrieve keeps read-only views.

``allocator``, ``owned_region_manager`` and ``mapper`` (``_mapper``) are
views of the handler's own regions with Maru's names and stats keys
(cxlpool/_maru_regions.py has what they count).

Keys are ``str`` (UTF-8; bytes also work). A key longer than
cxlpool.KEY_MAX bytes is stored under a fixed-length digest form
(:func:`pool_key`), the same in every process. Batch calls take any
number of keys and are split at cxlpool.BATCH_MAX.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import _lib
from .config import Config
from .errors import CxlpError, NoSpaceError, UnknownOutcomeError
from .handler import Handler
from .process import address_of

_log = logging.getLogger("cxlpool.maru")

from ._maru_regions import (Mapper, OwnedRegionManager,  # noqa: E402
                           RegionAllocator)
from ._maru_types import (KiB, AllocHandle, MaruConfig,  # noqa: F401,E402
                          MemoryInfo, _Live, pool_key)


class MaruHandler:
    """Maru's handler on cxlpool. Thread-safe; see the module doc."""

    def __init__(self, config: Optional[MaruConfig] = None) -> None:
        self._config = config or MaruConfig()
        self._h: Optional[Handler] = None
        self._lock = threading.RLock()
        self._live: Dict[Tuple[int, int], _Live] = {}
        # own keys stored, and the pages holding them (free refuses those)
        self._stored: Dict[bytes, Tuple[int, int]] = {}
        self._stored_at: Dict[Tuple[int, int], bytes] = {}
        self._on_region_added: Optional[Any] = None    # listener tokens
        self._on_region_removed: Optional[Any] = None
        # pages of each own region handed out and not given back (live or
        # stored: _maru_regions.py), and the own regions in the order seen
        self._used: Dict[int, int] = {}
        self._order: List[int] = []
        # one store at a time: the keys_stored counter's step over a store
        # tells which of its keys landed at this handler's pages
        self._store_lock = threading.Lock()

    # -- connection ----------------------------------------------------

    def connect(self) -> bool:
        """Connect; True on success. Never raises (logs why not)."""
        with self._lock:
            if self._h is not None and self._h.connected:
                return True
            try:
                h = Handler(self._config.to_cxlpool()).connect()
            except Exception as exc:  # Maru's connect never raises
                _log.error("connect to %s failed: %s",
                           self._config.server_url, exc)
                return False
            self._h = h
            return True

    def close(self) -> None:
        """Close the handler; views handed out are released. Idempotent."""
        with self._lock:
            h, self._h = self._h, None
            # the hooks' listeners go with the handler (after its
            # UNMAPPINGs at close, which set_on_region_removed reports)
            self._on_region_added = self._on_region_removed = None
            self._live.clear()
            self._stored.clear()
            self._stored_at.clear()
            self._used.clear()
            self._order.clear()
        if h is not None:
            h.close()

    def __enter__(self) -> "MaruHandler":
        if self._config.auto_connect and not self.connect():
            raise RuntimeError(f"cannot connect to "
                               f"{self._config.server_url}")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _ensure(self) -> Handler:
        h = self._h
        if h is None or not h.connected:
            raise RuntimeError("MaruHandler is not connected")
        return h

    @property
    def connected(self) -> bool:
        return self._h is not None and self._h.connected

    @property
    def instance_id(self) -> str:
        return str(self._config.instance_id)

    @property
    def handler(self) -> Handler:
        """The cxlpool.Handler underneath (cxlpool's own calls)."""
        return self._ensure()

    # -- pages ---------------------------------------------------------

    def get_chunk_size(self) -> int:
        return self._config.chunk_size_bytes

    def alloc(self, size: int) -> AllocHandle:
        """A page for size bytes (<= chunk size). Raises ValueError when
        size is too large or the pool is exhausted, RuntimeError when not
        connected."""
        h = self._ensure()
        chunk = self._config.chunk_size_bytes
        if size > chunk or size < 0:
            raise ValueError(f"Requested size {size} exceeds chunk_size "
                             f"{chunk}")
        try:
            page = h.alloc()
        except NoSpaceError as exc:
            raise ValueError(f"Cannot allocate page: pool exhausted: "
                             f"{exc.message}") from exc
        region, off = h.locate(page.buf)
        loc = (region, off // chunk)
        session = h._s()
        with session.call():
            xid, buf = session.export(address_of(page.buf), max(size, 1),
                                      readonly=False)
        with self._lock:
            self._live[loc] = _Live(page, xid)
            # a page of a key evicted (or deleted by another handler
            # after this one's close): still counted used
            old = self._stored_at.pop(loc, None)
            if old is not None and self._stored.get(old) == loc:
                del self._stored[old]
            else:
                self._count(loc[0], 1)
        return AllocHandle(buf=buf if size else buf[:0], _region_id=loc[0],
                           _page_index=loc[1], _size=size)

    def _count(self, region: int, n: int) -> None:
        """Pages used in region change by n (under self._lock)."""
        self._used[region] = max(0, self._used.get(region, 0) + n)

    def _pages_used(self, region: int) -> int:
        with self._lock:
            return self._used.get(region, 0)

    def _take(self, handle: AllocHandle) -> Optional[_Live]:
        """The live page of handle, no longer live; None if it is not."""
        with self._lock:
            return self._live.pop((handle._region_id, handle._page_index),
                                  None)

    def _release(self, live: _Live) -> None:
        live.page._session.invalidate(live.xid)

    def free(self, handle: AllocHandle) -> None:
        """Give an unstored page back. A page already consumed (stored,
        lost a race, a store that failed, freed) is left alone: a free
        after a failed store does not raise, and a stored page keeps its
        key (refused, logged: delete(key) frees it)."""
        h = self._ensure()
        live = self._take(handle)
        if live is None:
            if (handle._region_id, handle._page_index) in \
                    self._stored_at:
                _log.warning("free of region %d page %d refused: it holds "
                             "a stored key (delete the key instead)",
                             handle._region_id, handle._page_index)
            return
        self._release(live)
        h.free(live.page)
        with self._lock:
            self._count(handle._region_id, -1)

    def store(self, key: str, handle: Optional[AllocHandle] = None,
              data: Any = None) -> bool:
        """Register key for the page; True if the key is in the pool. The
        handle is consumed either way. ``data=`` (any buffer) instead of
        a handle is copied into a page first, as SGLang's MaruStorage
        calls it (``store(key, data=memoryview)``)."""
        if (handle is None) == (data is None):
            raise TypeError("store takes a handle or data=, not both")
        return self.batch_store([key], [handle if handle is not None
                                        else data])[0]

    def batch_store(self, keys: Sequence[str],
                    handles: Sequence[Any]) -> List[bool]:
        """store() of each (key, handle), in batches of BATCH_MAX. An entry
        that is a buffer (memoryview, bytes, a ctypes array), as SGLang's
        batch_set and batch_set_v1 pass, is copied into a page first; one
        that does not fit a chunk, or finds the pool full, is False."""
        if len(keys) != len(handles):
            raise ValueError("keys and handles must have the same length")
        h = self._ensure()
        handles = [hd if isinstance(hd, AllocHandle) else self._copy_in(hd)
                   for hd in handles]
        out: List[bool] = []
        for i in range(0, len(keys), _lib.BATCH_MAX):
            out += self._store_batch(h, keys[i:i + _lib.BATCH_MAX],
                                     handles[i:i + _lib.BATCH_MAX])
        return out

    def _copy_in(self, data: Any) -> AllocHandle:
        """A page holding a copy of data's bytes; a handle no page is
        live for (stored as False) when they cannot be placed."""
        with memoryview(data) as raw:
            src = raw if raw.c_contiguous else memoryview(raw.tobytes())
            n = src.nbytes
            try:
                a = self.alloc(n)
            except ValueError as exc:
                _log.error("store of %d bytes: %s", n, exc)
                return AllocHandle(buf=memoryview(b""), _region_id=-1,
                                   _page_index=-1, _size=0)
            if n:  # any format: a ctypes c_char array's is "<c"
                ctypes.memmove(address_of(a.buf), address_of(src), n)
        return a

    def _store_batch(self, h: Handler, keys: Sequence[str],
                     handles: Sequence[AllocHandle]) -> List[bool]:
        lives = [self._take(hd) for hd in handles]
        idx = [i for i, lv in enumerate(lives) if lv is not None]
        out = [False] * len(keys)
        if not idx:
            return out
        bkeys = [pool_key(keys[i]) for i in idx]
        pages = [lives[i].page for i in idx]  # type: ignore[union-attr]
        lens = [max(0, handles[i]._size) for i in idx]
        for i in idx:
            self._release(lives[i])  # type: ignore[arg-type]
        locs = [(handles[i]._region_id, handles[i]._page_index)
                for i in idx]
        with self._store_lock:
            before = h.counters()["keys_stored"]
            try:
                stored = h.batch_store(bkeys, pages, lens)
            except UnknownOutcomeError as exc:
                stored = list(exc.stored)
            except CxlpError as exc:  # before any page was consumed
                _log.error("batch_store: %s", exc)
                for p in pages:
                    if p.live:
                        h.free(p)
                with self._lock:
                    for loc in locs:
                        self._count(loc[0], -1)
                return out
            mine = h.counters()["keys_stored"] - before
        kept = self._kept(h, bkeys, locs, [bool(x) for x in stored], mine)
        with self._lock:
            for j, i in enumerate(idx):
                out[i] = bool(stored[j])
                if kept[j]:
                    self._stored[bkeys[j]] = locs[j]
                    self._stored_at[locs[j]] = bkeys[j]
                else:  # not stored, or stored at another's page
                    self._count(locs[j][0], -1)
        return out

    def _kept(self, h: Handler, bkeys: List[bytes],
              locs: List[Tuple[int, int]], stored: List[bool],
              mine: int) -> List[bool]:
        """Which stored keys hold this handler's page (the others lost the
        race and their pages were freed), given that mine of them do: all
        or none at once; else looked up (no round trip with direct
        reads) and placed."""
        if mine >= sum(stored):
            return stored
        if mine <= 0:
            return [False] * len(stored)
        ask = [j for j, ok in enumerate(stored) if ok]
        kept = [False] * len(stored)
        try:
            got = h.batch_retrieve([bkeys[j] for j in ask])
        except CxlpError:
            return kept
        views = [None if isinstance(g, Exception) else g for g in got]
        chunk = self._config.chunk_size_bytes
        for j, v, loc in zip(ask, views, h.batch_locate(views)):
            kept[j] = loc is not None and \
                (loc[0], loc[1] // chunk) == locs[j]
            if v is not None:
                v.release()
        return kept

    # -- reads ---------------------------------------------------------

    def _infos(self, h: Handler, views: List[Any]
               ) -> List[Optional[MemoryInfo]]:
        """MemoryInfo of each view (None stays None).

        page_index is in pages of the region's owner (RegionInfo.
        page_size), which for another handler's region need not be this
        handler's chunk size (Maru divides by its own); -1 when the
        owner's page size is unknown (direct reads off). A view no region
        holds (cannot happen for a view retrieve just returned: its
        mapping holds it) is a miss, None, as Maru's retrieve gives None
        when it cannot place the value."""
        found = [i for i, v in enumerate(views) if v is not None]
        locs = h.batch_locate([views[i] for i in found])
        sizes: Dict[int, int] = {}
        out: List[Optional[MemoryInfo]] = [None] * len(views)
        for i, loc in zip(found, locs):
            if loc is None:
                _log.error("retrieve: a value in no region this handler "
                           "maps; reported as a miss")
                continue
            region, off = loc
            if region not in sizes:
                sizes[region] = self._page_size_of(h, region)
            size = sizes[region]
            out[i] = MemoryInfo(view=views[i], region_id=region,
                                page_index=off // size if size else -1)
        return out

    def _page_size_of(self, h: Handler, region: int) -> int:
        """The page size of region's owner (0: unknown)."""
        try:
            return h.region_view(region).page_size
        except CxlpError:
            return 0

    def retrieve(self, key: str) -> Optional[MemoryInfo]:
        """The value of key (zero copy), or None when it is not there."""
        return self.batch_retrieve([key])[0]

    def batch_retrieve(self, keys: Sequence[str]
                       ) -> List[Optional[MemoryInfo]]:
        """retrieve() of each key; None for misses (and, as Maru, for
        every key when the round trip fails)."""
        h = self._ensure()
        out: List[Optional[MemoryInfo]] = []
        for i in range(0, len(keys), _lib.BATCH_MAX):
            part = [pool_key(k) for k in keys[i:i + _lib.BATCH_MAX]]
            try:
                got = h._batch_retrieve(part, False, False)
            except CxlpError as exc:
                _log.error("batch_retrieve: %s", exc)
                out += [None] * len(part)
                continue
            views = [None if isinstance(g, Exception) else g for g in got]
            out += self._infos(h, views)
        return out

    def exists(self, key: str) -> bool:
        return self.batch_exists([key])[0]

    def batch_exists(self, keys: Sequence[str]) -> List[bool]:
        """Whether each key is in the pool (a full per-key list)."""
        h = self._ensure()
        out: List[bool] = []
        for i in range(0, len(keys), _lib.BATCH_MAX):
            part = [pool_key(k) for k in keys[i:i + _lib.BATCH_MAX]]
            try:
                out += h.batch_exists(part)
            except CxlpError as exc:
                _log.error("batch_exists: %s", exc)
                out += [False] * len(part)
        return out

    # -- pins, deletes -------------------------------------------------

    def pin(self, key: str) -> bool:
        try:
            self._ensure().pin(pool_key(key))
            return True
        except CxlpError:
            return False

    def unpin(self, key: str) -> bool:
        try:
            self._ensure().unpin(pool_key(key))
            return True
        except CxlpError:
            return False

    def batch_pin(self, keys: Sequence[str]) -> List[bool]:
        """Pin keys in order, stopping at the first that cannot be
        pinned: True for those pinned, False from it on."""
        h = self._ensure()
        done = 0
        for i in range(0, len(keys), _lib.BATCH_MAX):
            part = [pool_key(k) for k in keys[i:i + _lib.BATCH_MAX]]
            try:
                done += h.batch_pin(part)
            except CxlpError as exc:
                done += int(getattr(exc, "npinned", 0) or 0)
                break
        return [True] * done + [False] * (len(keys) - done)

    def batch_unpin(self, keys: Sequence[str]) -> List[bool]:
        h = self._ensure()
        out: List[bool] = []
        for i in range(0, len(keys), _lib.BATCH_MAX):
            part = [pool_key(k) for k in keys[i:i + _lib.BATCH_MAX]]
            try:
                out += [e is None for e in h.batch_unpin(part)]
            except CxlpError as exc:
                _log.error("batch_unpin: %s", exc)
                out += [False] * len(part)
        return out

    def delete(self, key: str) -> bool:
        """Remove key; False when it is not there, pinned, or a live
        handler other than this one owns it."""
        k = pool_key(key)
        try:
            self._ensure().delete(k)
        except CxlpError:
            return False
        with self._lock:
            loc = self._stored.pop(k, None)
            if loc is not None and self._stored_at.get(loc) == k:
                del self._stored_at[loc]
                self._count(loc[0], -1)
        return True

    # -- status --------------------------------------------------------

    def healthcheck(self) -> bool:
        """True if connected and the metaserver answers. Never raises."""
        try:
            return self._h is not None and self._h.healthcheck()
        except Exception:
            return False

    def get_stats(self) -> Dict[str, Any]:
        """Maru's sections (kv_manager, allocation_manager, stats_manager,
        store_regions = owned_region_manager.get_stats(), allocator = its
        first region's) from cxlpool's counters, and cxlpool's own
        ("cxlpool"). store_regions also has cxlpool's counts of the
        handler's pages (total_pages, free_pages, allocated_pages: not
        registered, registered_pages), which eviction keeps exact."""
        h = self._ensure()
        st = h.stats()
        store = OwnedRegionManager(self).get_stats()
        store.update({"total_pages": st.pages_total,
                      "free_pages": st.pages_free,
                      "allocated_pages": st.pages_allocated,
                      "registered_pages": st.pages_registered})
        out: Dict[str, Any] = {
            "kv_manager": {"total_entries": st.keys,
                           "total_size": st.value_bytes},
            "allocation_manager": {
                "num_allocations": st.regions,
                "total_allocated": st.data_bytes - st.free_bytes,
                "active_clients": st.sessions},
            "stats_manager": {},
            "store_regions": store,
            "cxlpool": st.as_dict(),
        }
        if store["regions"]:
            out["allocator"] = store["regions"][0]
        return out

    # -- regions -------------------------------------------------------

    def get_buffer_view(self, region_id: int, offset: int,
                        size: int) -> Optional[memoryview]:
        """A view of (region, offset, size): writable for own regions,
        read-only for others' (mapped on demand); None when the region
        is unknown or the range is outside it."""
        try:
            return self._ensure().buffer_view(region_id, offset, size)
        except (CxlpError, TypeError):
            return None

    def get_region_page_count(self, region_id: int) -> Optional[int]:
        try:
            info = self._ensure().region_view(region_id)
        except (CxlpError, TypeError):
            return None
        # the owner's pages (info.pages), not length // own chunk size:
        # another handler's region is cut into its owner's pages (Maru
        # divides by its own chunk size); None when the owner's page size
        # is unknown (direct reads off)
        return info.pages if info.page_size else None

    def get_owned_region_ids(self) -> List[int]:
        if not self.connected:
            return []
        return [r.region for r in self._ensure().region_list()
                if r.writable]

    def set_on_region_added(self, callback: Optional[Callable[[int, int],
                                                              None]]
                            ) -> None:
        """callback(region_id, page_count) for every own region: now for
        those held, then after every expansion (before the alloc that
        takes its first page returns). None stops it.

        An own region can go again while the handler lives: the
        metaserver may ask regions back under pool pressure (whatever the
        reserve), and a region goes once no page of it is in use; views
        of it are then read-only (a write faults).
        :meth:`set_on_region_removed` tells of it. Both hooks are
        listeners of the handler's region events, apart from
        cxlpool.torch.register_regions and Handler.set_region_callback."""
        def on_region(event: str, info: Any) -> None:
            if event == "mapped" and info.writable:
                callback(info.region, info.pages)  # type: ignore[misc]
        self._set_hook("_on_region_added", callback, on_region)

    def set_on_region_removed(self, callback: Optional[Callable[[int, int],
                                                                None]]
                              ) -> None:
        """callback(region_id, page_count) before an own region goes
        (asked back by the metaserver under pool pressure, given back, or
        at close): drop the views of it. None stops it. (Maru has no such
        hook: its regions stay until close.)"""
        own: Dict[int, int] = {}

        def on_region(event: str, info: Any) -> None:
            if event == "mapped":
                if info.writable:
                    own[info.region] = info.pages
            elif event == "unmapping" and info.region in own:
                callback(info.region,  # type: ignore[misc]
                         own.pop(info.region))
        self._set_hook("_on_region_removed", callback, on_region)

    def _set_hook(self, slot: str, callback: Any,
                  on_region: Callable[[str, Any], None]) -> None:
        h = self._ensure()
        token = (h.add_region_listener(on_region)
                 if callback is not None else None)
        with self._lock:
            old = getattr(self, slot)
            setattr(self, slot, token)
        if old is not None:
            h.remove_region_listener(old)

    def _own_regions(self) -> List[Any]:
        """The own regions' RegionInfo, in the order first seen (the
        first is connect's); [] when not connected."""
        h = self._h
        if h is None or not h.connected:
            return []
        own = {r.region: r for r in h.region_list() if r.writable}
        with self._lock:
            self._order = [r for r in self._order if r in own] + \
                sorted(r for r in own if r not in self._order)
            return [own[r] for r in self._order]

    @property
    def pool_handle(self) -> Optional[Any]:
        """The first own region's RegionInfo (Maru: its MaruHandle)."""
        own = self._own_regions()
        return own[0] if own else None

    @property
    def allocator(self) -> Optional[RegionAllocator]:
        """The first own region's allocator (Maru's PagedMemoryAllocator:
        page_count, chunk_size, num_allocated, num_free_pages, get_stats);
        None when not connected."""
        first = self.pool_handle
        return RegionAllocator(self, first) if first is not None else None

    @property
    def owned_region_manager(self) -> Optional[OwnedRegionManager]:
        """Maru's OwnedRegionManager of the own regions (get_stats,
        get_first_region_id ...); None when not connected."""
        return OwnedRegionManager(self) if self.connected else None

    @property
    def mapper(self) -> Optional[Mapper]:
        """Maru's DaxMapper (get_buffer_view, get_region); None when not
        connected."""
        return Mapper(self) if self.connected else None

    _mapper = mapper  # Maru's private name, which maru_sglang uses


__all__ = ["AllocHandle", "MaruConfig", "MaruHandler", "MemoryInfo",
           "pool_key"]
