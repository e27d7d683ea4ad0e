"""Handler: the Python face of ``struct cxlp_handler``.

Each method is one C call of ``include/cxlpool.h`` with the same
semantics; this module only converts arguments, turns negative returns into
exceptions (see :mod:`cxlpool.errors`) and wraps C pointers in zero-copy
memoryviews (see :mod:`cxlpool._session` for how they are kept safe).

Keys are ``bytes`` (``str`` is encoded as UTF-8; any other bytes-like
object is copied to bytes). The library checks their length.

Pages move through three states, enforced here so that a page handle is
never used after it was given back (the C library may already have handed
the same page out again)::

    LIVE --alloc--> (caller writes page.buf) --store/batch_store--> CONSUMED
    LIVE --free--> CONSUMED            LIVE --handler closed--> CONSUMED

A call that fails before consuming its pages (bad arguments, the C errors
batch_store lists as "before any page is consumed") leaves them LIVE.
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import byref, c_bool, c_int, c_size_t, c_uint64, c_void_p
from dataclasses import asdict, dataclass
from typing import (Any, Callable, Dict, List, Optional, Sequence,
                    Tuple, Union)

from . import _lib
from ._keys import KeyLike
from ._keys import key as _key
from ._keys import key_error as _key_error
from ._keys import keys as _keys
from ._session import Session
from .config import Config
from .errors import (BadPageError, CxlpError, InvalidArgumentError,
                     ClosedError, UnknownOutcomeError, check,
                     error_from_code, make)
from .leases import Leases
from .versions import VersionedReads

_LIVE, _BUSY, _CONSUMED = 0, 1, 2


def _length(value: int, name: str) -> int:
    """A size_t argument checked in Python (ctypes would wrap negatives)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int")
    if value < 0:
        raise make(InvalidArgumentError, f"{name}={value} is negative")
    return value


@dataclass(frozen=True)
class Stats:
    """struct cxlp_stats: the pool's counters and this handler's own."""

    # pool (from the metaserver)
    pool_bytes: int        # whole pool, bytes
    data_bytes: int        # data area, bytes
    free_bytes: int        # data area not in any region, bytes
    regions: int           # regions allocated (owned or orphaned)
    orphan_regions: int    # regions whose owner is gone
    keys: int              # keys registered
    value_bytes: int       # sum of registered value lengths
    sessions: int          # live sessions
    pins: int              # pins held, all sessions
    index_slots: int       # capacity of the key index
    # this handler
    own_regions: int       # regions this handler owns
    pages_total: int       # pages in them
    pages_free: int        # free for alloc
    pages_allocated: int   # allocated, not registered
    pages_registered: int  # holding a key
    pages_unresolved: int  # kept after a lost reply
    foreign_maps: int      # read-only region mappings cached
    redials: int           # connections replaced after repeated timeouts
    pages_quarantined: int  # out of use until close (a late REGISTER copy)
    # eviction (the pool's, then this handler's)
    largest_free: int      # largest free extent of the data area, bytes
    evicted_pressure: int  # keys evicted because a store found no room
    evicted_watermark: int  # keys evicted to keep free space
    evicted_orphan: int    # keys evicted from regions of gone handlers
    evicted_bytes: int     # value bytes of all evicted keys
    pages_reclaimed: int   # this handler's pages freed by eviction for it
    reclaims: int          # RECLAIM round trips it made
    leases: int            # leases held, all sessions
    lease_expiries: int    # leases that ran out
    refills: int           # of the reclaims, those made ahead of need

    def as_dict(self) -> Dict[str, int]:
        """The counters as a plain dict."""
        return asdict(self)


class Page:
    """A page allocated by :meth:`Handler.alloc`.

    ``buf`` is a writable memoryview of the whole page (``size`` bytes) in
    shared memory: write the chunk there, then :meth:`Handler.store` it.
    After store, batch_store, free or close, ``buf`` is released and any
    use of it raises ValueError.
    """

    __slots__ = ("_session", "_id", "_buf", "_xid", "_state", "__weakref__")

    def __init__(self, session: Session, page_id: int, buf: memoryview,
                 xid: int) -> None:
        self._session = session
        self._id = page_id
        self._buf = buf
        self._xid = xid
        self._state = _LIVE

    @property
    def handle(self) -> int:
        """The C page handle (cxlp_page_t)."""
        return self._id

    @property
    def buf(self) -> memoryview:
        """Writable view of the page; released once the page is consumed."""
        return self._buf

    @property
    def size(self) -> int:
        """Page size in bytes."""
        return self._session.page_size

    @property
    def live(self) -> bool:
        """True while the page is the caller's (not stored, freed, closed)."""
        return self._state != _CONSUMED and self._session.is_open

    def __repr__(self) -> str:
        state = "live" if self.live else "consumed"
        return f"<cxlpool.Page {self._id:#x} {self.size} bytes {state}>"

    def _consume(self) -> None:
        """The page is no longer the caller's: release its view."""
        self._state = _CONSUMED
        self._session.invalidate(self._xid)


class Handler(VersionedReads, Leases):
    """A connection to a cxlpool metaserver (``struct cxlp_handler``).

    Use it as a context manager, which connects on entry (if needed) and
    closes on exit::

        with cxlpool.Handler(cxlpool.Config(server_url=url)) as h:
            page = h.alloc()
            page.buf[:5] = b"hello"
            h.store(b"key", page, 5)
            print(bytes(h.retrieve(b"key")))

    Thread-safe like the C handler. Every method except connect raises
    ClosedError before connect and after close.
    """

    def __init__(self, config: Optional[Config] = None) -> None:
        self.config = config if config is not None else Config()
        self._session: Optional[Session] = None
        self._lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------

    def connect(self) -> "Handler":
        """Open a session with the metaserver and take a first region.

        No-op if already connected; after close() it opens a new session.
        Returns self. Raises ConnectError, ServerTimeoutError, ... or
        InvalidArgumentError for a config value the library refuses.
        """
        with self._lock:
            if self._session is not None and self._session.is_open:
                return self
            handle = c_void_p()
            with self.config.to_c() as cfg:
                check(_lib.lib().cxlp_connect(byref(handle), cfg))
            self._session = Session(handle)
        return self

    def close(self) -> None:
        """End the session. Idempotent; never raises.

        Waits for calls running in other threads, then releases every view
        this handler handed out (their use raises ValueError from then on)
        and consumes every live page. Registered keys stay in the pool.
        If a view derived from ours is still referenced, the C handler is
        closed only when the last one dies (see cxlpool._session).
        """
        with self._lock:
            session = self._session
        if session is not None:
            session.close()

    @property
    def connected(self) -> bool:
        """True between connect() and close()."""
        return self._session is not None and self._session.is_open

    def __enter__(self) -> "Handler":
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: modules may be gone
            pass

    def __repr__(self) -> str:
        state = "connected" if self.connected else "closed"
        return f"<cxlpool.Handler {self.config.server_url} {state}>"

    def _s(self) -> Session:
        """The session, or ClosedError if never connected."""
        session = self._session
        if session is None:
            raise make(ClosedError, "handler is not connected")
        return session

    @property
    def page_size(self) -> int:
        """This handler's page size in bytes (cxlp_page_size)."""
        return self._s().page_size

    # -- pages ---------------------------------------------------------

    def alloc(self) -> Page:
        """Take a free page (cxlp_alloc); its ``buf`` is writable.

        Raises NoSpaceError when the owned regions are full and no region
        can be added (auto-expand off, max_regions reached, pool full).
        """
        return self.alloc_pages(1)[0]

    def alloc_pages(self, n: int) -> List[Page]:
        """Take n free pages at once: alloc() n times, cheaper per page.

        All or nothing: if page k cannot be had, the k pages taken are
        given back and the error (NoSpaceError...) is raised.
        """
        n = _length(n, "n")
        session = self._s()
        with session.call() as h:
            handles, addrs = self._alloc_c(h, n)
            try:
                made = session.export_many(
                    [(a, session.page_size) for a in addrs], readonly=False)
            except BaseException:
                self._free_c(h, handles)
                raise
            return [Page(session, pid, view, xid)
                    for pid, (xid, view) in zip(handles, made)]

    @staticmethod
    def _free_c(h: c_void_p, handles: Sequence[int]) -> None:
        """cxlp_free pages this call took and will not hand out."""
        for taken in handles:
            _lib.lib().cxlp_free(h, taken)

    @staticmethod
    def _alloc_c(h: c_void_p, n: int) -> Tuple[List[int], List[int]]:
        """cxlp_alloc n times: (handles, addresses), or raise with every
        page taken so far freed."""
        alloc, page, addr = _lib.lib().cxlp_alloc, c_uint64(), c_void_p()
        handles: List[int] = []
        addrs: List[int] = []
        for _ in range(n):
            rc = alloc(h, byref(page), byref(addr))
            if rc < 0:
                err = error_from_code(rc)
                Handler._free_c(h, handles)
                raise err
            handles.append(page.value)
            addrs.append(addr.value or 0)
        return handles, addrs

    def free(self, page: Page) -> None:
        """Give back an allocated, unregistered page (cxlp_free)."""
        session = self._s()
        with session.call() as h:
            self._claim(session, [page])
            try:
                check(_lib.lib().cxlp_free(h, page.handle))
            except BaseException:
                page._state = _LIVE
                raise
            page._consume()

    def _claim(self, session: Session, pages: Sequence[Page]) -> None:
        """Mark pages BUSY for one call, or raise BadPageError.

        Refuses objects that are not pages of this session, pages already
        consumed or in use by another call, and a page named twice.
        """
        with session._lock:
            taken: List[Page] = []
            for i, page in enumerate(pages):
                why = self._page_problem(session, page)
                if why is not None:
                    for p in taken:
                        p._state = _LIVE
                    raise make(BadPageError, f"pages[{i}]: {why}")
                page._state = _BUSY
                taken.append(page)

    @staticmethod
    def _page_problem(session: Session, page: object) -> Optional[str]:
        """Why page cannot be used in a call now, or None."""
        if not isinstance(page, Page):
            return f"not a cxlpool.Page: {type(page).__name__}"
        if page._session is not session:
            return "page of another handler or session"
        if page._state == _CONSUMED:
            return "page already stored or freed"
        if page._state == _BUSY:
            return "page named twice or in use by another call"
        return None

    # -- store ---------------------------------------------------------

    def store(self, key: KeyLike, page: Page, length: Optional[int] = None,
              *, pin: bool = False) -> bool:
        """Register key for page holding length bytes (cxlp_store).

        length defaults to the page size. Returns True if the key is in the
        pool (this page holds it, or it was there already and this page was
        freed), False if the server did not confirm it (page freed). In
        both cases the page is consumed. pin=True returns the key pinned by
        this session, winner or loser. Raises UnknownOutcomeError (page
        consumed, kept by the handler) if the reply was lost, or an error
        that leaves the page with the caller.
        """
        return self.batch_store([key], [page],
                                None if length is None else [length],
                                pin=pin)[0]

    def batch_store(self, keys: Sequence[KeyLike], pages: Sequence[Page],
                    lengths: Optional[Sequence[int]] = None, *,
                    pin: bool = False) -> List[bool]:
        """Register keys[i] for pages[i] in one round trip.

        Exactly cxlp_batch_store: per key, True if the key is in the pool
        (this page holds it, or another handler or an earlier key of this
        batch won and this page was freed), False if the server did not
        confirm it (page freed). Every page is consumed exactly once.

        lengths[i] defaults to the page size. Raises, leaving every page
        with the caller: InvalidArgumentError (mismatched or empty lists,
        too many keys), KeyLengthError, TooBigError, BadPageError,
        ClosedError. Raises UnknownOutcomeError, with the per-key results
        in its ``stored`` attribute, when the outcome is unknown: pages are
        then consumed (kept by the handler until it resolves them).
        """
        session = self._s()
        bkeys = _keys(keys)
        pages = list(pages)
        lens = self._store_lengths(session, len(pages), lengths)
        if len(bkeys) != len(pages):
            raise make(InvalidArgumentError,
                       f"{len(bkeys)} keys for {len(pages)} pages")
        with session.call() as h:
            self._claim(session, pages)
            try:
                err, stored = self._batch_store_c(h, bkeys, pages, lens, pin)
            except BaseException:
                self._unclaim(pages)
                raise
            return self._store_outcome(err, stored, pages)

    @staticmethod
    def _store_lengths(session: Session, n: int,
                       lengths: Optional[Sequence[int]]) -> List[int]:
        """Value lengths for n pages: given, or the page size."""
        if lengths is None:
            return [session.page_size] * n
        lens = [_length(v, "length") for v in lengths]
        if len(lens) != n:
            raise make(InvalidArgumentError,
                       f"{len(lens)} lengths for {n} pages")
        return lens

    @staticmethod
    def _batch_store_c(h: c_void_p, keys: List[bytes], pages: List[Page],
                       lens: List[int], pin: bool
                       ) -> Tuple[Optional[CxlpError], List[bool]]:
        """Call cxlp_batch_store; returns (error or None, stored list)."""
        n = len(keys)
        kptrs, klens = _lib.key_arrays(keys)
        cpages = (c_uint64 * n)(*[p.handle for p in pages])
        clens = (c_size_t * n)(*lens)
        stored = (c_bool * n)()
        flags = _lib.STORE_PIN if pin else 0
        rc = _lib.lib().cxlp_batch_store(h, n, kptrs, klens, cpages, clens,
                                         flags, stored)
        err = error_from_code(rc) if rc < 0 else None
        return err, list(stored)

    @staticmethod
    def _unclaim(pages: Sequence[Page]) -> None:
        """Give BUSY pages back to the caller (the call consumed none)."""
        for p in pages:
            p._state = _LIVE

    def _store_outcome(self, err: Optional[CxlpError], stored: List[bool],
                       pages: List[Page]) -> List[bool]:
        """Consume pages after a store that took them; raise its error.

        Only success and CXLP_E_UNKNOWN consume the pages; any other error
        is one the C API returns before consuming any."""
        if err is None or isinstance(err, UnknownOutcomeError):
            _consume_all(pages)
        else:
            self._unclaim(pages)
        if isinstance(err, UnknownOutcomeError):
            err.stored = stored
        if err is not None:
            raise err
        return stored

    # -- retrieve ------------------------------------------------------

    def retrieve(self, key: KeyLike, *, pin: bool = False) -> memoryview:
        """Find key and return a read-only view of its bytes (zero copy).

        The view points into the shared mapping (cxlp_retrieve). Like the C
        pointer, it shows the key's value while the key stays as it was
        (deleted or evicted, its page may get another value): pin=True
        also pins the key so it cannot be deleted until :meth:`unpin`, and
        :meth:`retrieve_v` returns a version to :meth:`validate` a copy
        with. The view is released (use raises ValueError) when the
        handler closes, or by the caller's ``view.release()``. Raises
        NotFoundError.
        """
        session = self._s()
        k = _key(key)
        with session.call() as h:
            data = c_void_p()
            size = c_size_t()
            flags = _lib.RETRIEVE_PIN if pin else 0
            check(_lib.lib().cxlp_retrieve(h, k, len(k), flags, byref(data),
                                           byref(size)))
            return self._view(session, data.value, size.value)

    @staticmethod
    def _view(session: Session, addr: Optional[int],
              size: int) -> memoryview:
        """A tracked read-only view of size bytes at addr."""
        if size == 0:
            return memoryview(b"")
        return session.export(addr or 0, size, readonly=True)[1]

    def batch_retrieve(self, keys: Sequence[KeyLike], *,
                       pin: bool = False) -> List[Union[memoryview,
                                                        CxlpError]]:
        """Retrieve keys in one round trip (cxlp_batch_retrieve).

        Returns one entry per key: a read-only view as retrieve() returns,
        or, for a key the C call reported failed, the exception instance
        (NotFoundError for a miss) with the key in its ``key`` attribute.
        With pin=True the keys retrieved are pinned. Raises only if the
        round trip fails.
        """
        session = self._s()
        bkeys = _keys(keys)
        n = len(bkeys)
        with session.call() as h:
            kptrs, klens = _lib.key_arrays(bkeys)
            data = (c_void_p * n)()
            sizes = (c_size_t * n)()
            status = (c_int * n)()
            flags = _lib.RETRIEVE_PIN if pin else 0
            check(_lib.lib().cxlp_batch_retrieve(h, n, kptrs, klens, flags,
                                                 data, sizes, status))
            found = [i for i in range(n) if status[i] == 0 and sizes[i]]
            views = session.export_many(
                [(data[i] or 0, sizes[i]) for i in found], readonly=True)
            out: List[Union[memoryview, CxlpError]] = [
                memoryview(b"") if status[i] == 0 else
                _key_error(status[i], bkeys[i]) for i in range(n)]
            for i, (_, view) in zip(found, views):
                out[i] = view
            return out

    # -- lookups, pins, deletes ----------------------------------------

    def exists(self, key: KeyLike) -> bool:
        """True if key is in the pool (cxlp_exists)."""
        k = _key(key)
        with self._s().call() as h:
            return check(_lib.lib().cxlp_exists(h, k, len(k))) == 1

    def batch_exists(self, keys: Sequence[KeyLike]) -> List[bool]:
        """exists() of each key in one round trip (cxlp_batch_exists)."""
        bkeys = _keys(keys)
        n = len(bkeys)
        with self._s().call() as h:
            kptrs, klens = _lib.key_arrays(bkeys)
            out = (c_bool * n)()
            check(_lib.lib().cxlp_batch_exists(h, n, kptrs, klens, out))
            return list(out)

    def _one_key(self, fn: Callable[..., int], key: KeyLike) -> None:
        """Call fn(h, key, key_len) and raise on error."""
        k = _key(key)
        with self._s().call() as h:
            check(fn(h, k, len(k)))

    def pin(self, key: KeyLike) -> None:
        """Take one pin on key for this session (cxlp_pin).

        Raises NotFoundError."""
        self._one_key(_lib.lib().cxlp_pin, key)

    def unpin(self, key: KeyLike) -> None:
        """Release one of this session's pins on key (cxlp_unpin).

        Raises NotPinnedError if this session holds none, NotFoundError
        if the key does not exist."""
        self._one_key(_lib.lib().cxlp_unpin, key)

    def delete(self, key: KeyLike) -> None:
        """Remove key from the pool (cxlp_delete).

        Raises PinnedError while any session pins it, PermError when
        another live handler owns it, NotFoundError."""
        self._one_key(_lib.lib().cxlp_delete, key)

    def batch_pin(self, keys: Sequence[KeyLike]) -> int:
        """Pin keys in order, stopping at the first missing key.

        Returns len(keys) when all were pinned. Otherwise raises
        NotFoundError whose ``npinned`` attribute is the number of keys
        pinned (those before the miss, which stay pinned) and ``key`` the
        missing key.
        """
        bkeys = _keys(keys)
        n = len(bkeys)
        with self._s().call() as h:
            kptrs, klens = _lib.key_arrays(bkeys)
            npinned = c_size_t()
            rc = _lib.lib().cxlp_batch_pin(h, n, kptrs, klens,
                                           byref(npinned))
            if rc < 0:
                err = error_from_code(rc)
                err.npinned = npinned.value  # type: ignore[attr-defined]
                if npinned.value < n:
                    err.key = bkeys[npinned.value]  # type: ignore
                raise err
            return int(npinned.value)

    def _batch_status(self, fn: Callable[..., int],
                      keys: Sequence[KeyLike]) -> List[Optional[CxlpError]]:
        """Call a per-key status batch function; None or error per key."""
        bkeys = _keys(keys)
        n = len(bkeys)
        with self._s().call() as h:
            kptrs, klens = _lib.key_arrays(bkeys)
            status = (c_int * n)()
            check(fn(h, n, kptrs, klens, status))
            return [None if status[i] == 0 else _key_error(status[i],
                                                           bkeys[i])
                    for i in range(n)]

    def batch_unpin(self, keys: Sequence[KeyLike]
                    ) -> List[Optional[CxlpError]]:
        """unpin() each key in one round trip (cxlp_batch_unpin).

        Returns, per key, None or the exception unpin() would raise (not
        raised). Raises only if the round trip fails."""
        return self._batch_status(_lib.lib().cxlp_batch_unpin, keys)

    def batch_delete(self, keys: Sequence[KeyLike]
                     ) -> List[Optional[CxlpError]]:
        """delete() each key in one round trip (cxlp_batch_delete).

        Returns, per key, None or the exception delete() would raise (not
        raised). Raises only if the round trip fails."""
        return self._batch_status(_lib.lib().cxlp_batch_delete, keys)

    # -- status --------------------------------------------------------

    def stats(self) -> Stats:
        """Pool and handler counters (cxlp_stats, one round trip)."""
        with self._s().call() as h:
            st = _lib.StatsStruct()
            check(_lib.lib().cxlp_stats(h, byref(st)))
            return Stats(**{f: int(getattr(st, f))
                            for f in _lib.STATS_FIELDS})

    def healthcheck(self) -> bool:
        """True if the metaserver answers and knows this session.

        Raises the C error otherwise (SessionError, ServerTimeoutError...).
        """
        with self._s().call() as h:
            check(_lib.lib().cxlp_healthcheck(h))
            return True


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer, to read the address behind a buffer."""

    _fields_ = [("buf", c_void_p), ("obj", ctypes.py_object),
                ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", c_int), ("ndim", c_int),
                ("format", ctypes.c_char_p), ("shape", c_void_p),
                ("strides", c_void_p), ("suboffsets", c_void_p),
                ("internal", c_void_p)]


def _consume_all(pages: Sequence[Page]) -> None:
    """Page._consume() of every page, their views released under one
    lookup (the pages of one call share a session)."""
    if not pages:
        return
    for p in pages:
        p._state = _CONSUMED
    pages[0]._session.invalidate_many([p._xid for p in pages])


def address_of(view: Any) -> int:
    """Address of the first byte of a buffer (CPython only).

    For a view from alloc() or retrieve() this is the C pointer into the
    shared mapping, e.g. for a device copy (``cudaMemcpy``) in a
    connector. Works on read-only views; raises ValueError on a released
    one. The address is only valid while the view is.
    """
    pybuf = _PyBuffer()
    _get_buffer(view, byref(pybuf), 0)  # PyBUF_SIMPLE; raises on failure
    try:
        return int(pybuf.buf or 0)
    finally:
        _release_buffer(byref(pybuf))


# Private prototypes, so as not to change ctypes.pythonapi's shared ones.
_get_buffer = ctypes.PYFUNCTYPE(c_int, ctypes.py_object,
                                ctypes.POINTER(_PyBuffer), c_int)(
    ("PyObject_GetBuffer", ctypes.pythonapi))
_release_buffer = ctypes.PYFUNCTYPE(None, ctypes.POINTER(_PyBuffer))(
    ("PyBuffer_Release", ctypes.pythonapi))


# Keep the log callback alive while the library may call it.
_log_callback: Optional[Any] = None


def set_log_handler(fn: Optional[Callable[[int, str], None]],
                    level: int = _lib.LOG_ERR) -> None:
    """Route the C library's log lines to fn(level, message).

    None restores the library's stderr default. level is one of LOG_OFF,
    LOG_ERR, LOG_INFO, LOG_DEBUG. Process-wide; call before connect. fn
    may be called from the library's own threads and must not raise.
    """
    global _log_callback
    if fn is None:
        cb = ctypes.cast(None, _lib.LOG_FN)
    else:
        def trampoline(lvl: int, msg: Optional[bytes], _arg: Any) -> None:
            try:
                fn(lvl, (msg or b"").decode("utf-8", "replace"))
            except Exception:  # an exception cannot cross into C
                pass
        cb = _lib.LOG_FN(trampoline)
    _lib.lib().cxlp_set_log_fn(cb, None, level)
    _log_callback = cb
