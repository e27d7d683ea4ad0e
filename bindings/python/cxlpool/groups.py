"""Request groups: one request's chunks, sent in several batches, that
readers see all at once, at the commit, or never (cxlp_group_*).

A prefill instance hands a decoder the KV cache of one request::

    with h.group("req-17", total=len(chunks), atomic=True,
                 wait_ms=2000) as g:               # admission: reserved
        present = g.skip_present(keys)             # pinned, not rewritten
        todo = [i for i, p in enumerate(present) if not p]
        pages = [g.alloc() for _ in todo]
        ...write the chunks into the pages...
        g.store([keys[i] for i in todo], pages)    # the last batch commits
    # leaving the block rolls back a group still open

A group that cannot be admitted raises NoSpaceError at the end of its
wait, holding nothing. A batch past the declared total raises GroupError
(its pages stay the caller's) and rolls the group back; a group rolled
back by anything (abort, a cancel by another handler, a failed batch of
an atomic group, a metaserver restart) makes its next call raise
CanceledError. The methods live in the :class:`Groups` mixin of
:class:`cxlpool.Handler`.
"""

from __future__ import annotations

from ctypes import byref, c_bool, c_size_t, c_uint, c_uint64, c_void_p
from typing import Any, List, Optional, Sequence

from . import _lib
from ._keys import KeyLike
from ._keys import key as key_bytes
from ._keys import keys as _keys
from ._session import Session
from .errors import (CanceledError, ClosedError, InvalidArgumentError,
                     check, error_from_code, make)
from .pages import Page, PageCalls

OPEN, COMMITTED, ROLLED_BACK, UNKNOWN = 0, 1, 2, 3
_STATES = {OPEN: "open", COMMITTED: "committed",
           ROLLED_BACK: "rolled back", UNKNOWN: "unknown"}
_ATOMIC, _PIN, _NORESERVE = 0x1, 0x2, 0x4


class Group:
    """An open request group (:meth:`Groups.group`); a context manager
    that closes it, rolling it back if it is still open."""

    __slots__ = ("_handler", "_session", "_ptr", "id")

    def __init__(self, handler: Any, session: Session, ptr: c_void_p,
                 gid: bytes) -> None:
        self._handler = handler
        self._session = session
        self._ptr: Optional[c_void_p] = ptr
        self.id = gid

    def _p(self) -> c_void_p:
        if self._ptr is None:
            raise make(InvalidArgumentError, "group closed")
        return self._ptr

    @property
    def state(self) -> str:
        """"open", "committed", "rolled back" or "unknown" (the commit's
        answer was lost)."""
        if self._ptr is None:
            return "closed"
        return _STATES[int(_lib.lib().cxlp_group_state(self._ptr))]

    @property
    def count(self) -> int:
        """Chunks the group holds so far (staged or present)."""
        return 0 if self._ptr is None else \
            int(_lib.lib().cxlp_group_count(self._ptr))

    def alloc(self) -> Page:
        """A page for a chunk: from the group's reservation, else as
        Handler.alloc. With atomic=True a failure rolls the group back."""
        session = self._session
        with session.call() as h:
            page, addr = c_uint64(), c_void_p()
            check(_lib.lib().cxlp_group_alloc(h, self._p(), byref(page),
                                              byref(addr)))
            xid, view = session.export(addr.value or 0, session.page_size,
                                       readonly=False)
            return Page(session, page.value, view, xid)

    def skip_present(self, keys: Sequence[KeyLike]) -> List[bool]:
        """Which keys are already in the pool: each is pinned for the
        group and counts as one of its chunks (do not write it)."""
        bkeys = _keys(keys)
        n = len(bkeys)
        with self._session.call() as h:
            kptrs, klens = _lib.key_arrays(bkeys)
            present = (c_bool * max(n, 1))()
            check(_lib.lib().cxlp_group_skip_present(h, self._p(), n, kptrs,
                                                     klens, present))
            return list(present)[:n]

    def store(self, keys: Sequence[KeyLike], pages: Sequence[Page],
              lengths: Optional[Sequence[int]] = None) -> List[bool]:
        """One batch of the group: as Handler.batch_store, but the keys are
        staged until the commit; the batch that completes the total
        commits the group. Raises GroupError (no total, past the total,
        group not open: pages stay the caller's) or CanceledError (the
        group rolled back during this batch: pages consumed)."""
        hd: PageCalls = self._handler
        session, bkeys, pages, lens = hd._store_args(keys, pages, lengths)
        if not pages:
            raise make(InvalidArgumentError, "no pages")
        with session.call() as h:
            hd._claim(session, pages)
            n = len(pages)
            kptrs, klens = _lib.key_arrays(bkeys)
            cpages = (c_uint64 * n)(*[p.handle for p in pages])
            clens = (c_size_t * n)(*lens)
            stored = (c_bool * n)()
            rc = _lib.lib().cxlp_group_store(h, self._p(), n, kptrs, klens,
                                             cpages, clens, stored)
            err = error_from_code(rc) if rc < 0 else None
            if isinstance(err, CanceledError):  # the pages were consumed
                hd._store_outcome(None, list(stored), pages)
                raise err
            return hd._store_outcome(err, list(stored), pages)

    def commit(self) -> None:
        """Make every staged key visible at once; the rest of the
        reservation goes back. Raises CanceledError (rolled back instead)
        or UnknownOutcomeError (no answer: the keys may be in); called
        again after UnknownOutcomeError, it finds out (cxlp_group_commit)."""
        with self._session.call() as h:
            check(_lib.lib().cxlp_group_commit(h, self._p()))

    def abort(self) -> None:
        """Roll the group back: its staged pages are freed, its pins and
        its reservation released."""
        with self._session.call() as h:
            check(_lib.lib().cxlp_group_abort(h, self._p()))

    def close(self) -> None:
        """Roll back if still open, and free the group; a second close
        does nothing."""
        if self._ptr is None:
            return
        ptr, self._ptr = self._ptr, None
        try:
            with self._session.call() as h:
                _lib.lib().cxlp_group_close(h, byref(ptr))
        except ClosedError:  # the handler's close freed its pages
            _lib.lib().cxlp_group_close(None, byref(ptr))

    def __enter__(self) -> "Group":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<cxlpool.Group {self.id!r} {self.state}, {self.count} chunks>"


class Groups:
    """Mixin of :class:`cxlpool.Handler`: group, cancel_group."""

    def _s(self) -> Any:  # supplied by Handler
        raise NotImplementedError

    def group(self, gid: KeyLike, total: int, *, atomic: bool = False,
              pin: bool = False, reserve: bool = True,
              wait_ms: int = 0) -> Group:
        """Open request group gid of total chunks (cxlp_group_open),
        reserving them unless reserve=False and waiting up to wait_ms
        for room. atomic: a batch with a key not stored, or an alloc that
        fails, rolls the group back. pin: after the commit this handler
        keeps a pin on every key of the group."""
        bid = key_bytes(gid)
        for name, v in (("total", total), ("wait_ms", wait_ms)):
            if isinstance(v, bool) or not isinstance(v, int) or \
                    not 0 <= v < 2 ** 32:
                raise make(InvalidArgumentError, f"{name}={v!r}")
        flags = (_ATOMIC if atomic else 0) | (_PIN if pin else 0) | \
            (0 if reserve else _NORESERVE)
        session = self._s()
        with session.call() as h:
            ptr = c_void_p()
            check(_lib.lib().cxlp_group_open(h, bid, len(bid),
                                             c_size_t(total), c_uint(flags),
                                             c_uint(wait_ms), byref(ptr)))
            return Group(self, session, ptr, bid)

    def cancel_group(self, gid: KeyLike) -> None:
        """Roll back the open group gid of any handler (a decoder that
        gives up). Raises NotFoundError when no such group is open."""
        bid = key_bytes(gid)
        with self._s().call() as h:
            check(_lib.lib().cxlp_group_cancel(h, bid, len(bid)))
