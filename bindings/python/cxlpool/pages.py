"""Pages: what :meth:`Handler.alloc` hands out, and the calls that take a
page from the caller (alloc, free, store, batch_store).

Pages move through three states, enforced here so that a page handle is
never used after it was given back (the C library may already have handed
the same page out again)::

    LIVE --alloc--> (caller writes page.buf) --store/batch_store--> CONSUMED
    LIVE --free--> CONSUMED            LIVE --handler closed--> CONSUMED

A call that fails before consuming its pages (bad arguments, the C errors
batch_store lists as "before any page is consumed") leaves them LIVE; a
call claims its pages (BUSY) for its length, so that no two calls use one.

The methods live in the :class:`PageCalls` mixin of
:class:`cxlpool.Handler`, which supplies the session.
"""

from __future__ import annotations

from ctypes import byref, c_bool, c_size_t, c_uint64, c_void_p
from typing import Any, List, Optional, Sequence, Tuple

from . import _lib
from ._keys import KeyLike
from ._keys import keys as _keys
from ._session import Session
from .errors import (BadPageError, CxlpError, InvalidArgumentError,
                     UnknownOutcomeError, check, error_from_code, make)

_LIVE, _BUSY, _CONSUMED = 0, 1, 2


def _length(value: int, name: str) -> int:
    """A size_t argument checked in Python (ctypes would wrap negatives)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int")
    if value < 0:
        raise make(InvalidArgumentError, f"{name}={value} is negative")
    return value


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


class PageCalls:
    """Mixin of :class:`cxlpool.Handler`: alloc, alloc_pages, free, store
    and batch_store, the calls that move pages between states."""

    def _s(self) -> Any:  # supplied by Handler
        raise NotImplementedError

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
                PageCalls._free_c(h, handles)
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
        session, bkeys, pages, lens = self._store_args(keys, pages, lengths)
        with session.call() as h:
            self._claim(session, pages)
            try:
                err, stored = self._batch_store_c(h, bkeys, pages, lens, pin)
            except BaseException:
                self._unclaim(pages)
                raise
            return self._store_outcome(err, stored, pages)

    def _store_args(self, keys: Sequence[KeyLike], pages: Sequence[Page],
                    lengths: Optional[Sequence[int]]
                    ) -> Tuple[Session, List[bytes], List[Page], List[int]]:
        """A store's arguments checked: (session, keys as bytes, pages,
        value lengths), or InvalidArgumentError."""
        session = self._s()
        bkeys = _keys(keys)
        pages = list(pages)
        lens = self._store_lengths(session, len(pages), lengths)
        if len(bkeys) != len(pages):
            raise make(InvalidArgumentError,
                       f"{len(bkeys)} keys for {len(pages)} pages")
        return session, bkeys, pages, lens

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


def _consume_all(pages: Sequence[Page]) -> None:
    """Page._consume() of every page, their views released under one
    lookup (the pages of one call share a session)."""
    if not pages:
        return
    for p in pages:
        p._state = _CONSUMED
    pages[0]._session.invalidate_many([p._xid for p in pages])
