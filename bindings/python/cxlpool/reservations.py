"""Reservations: n pages set aside at once (cxlp_reserve).

A writer that must send all of a request's chunks reserves them first, so
that it learns before it starts whether the pool can take them; then each
page comes out of the reservation with no wait and no round trip::

    with h.reserve(len(chunks), wait_ms=2000) as r:   # all or nothing
        pages = [r.alloc() for _ in chunks]
        ...write, then h.batch_store(keys, pages)...
    # leaving the block frees the pages not taken

The pages are allocated up front (so reservations never add up to more
than the pool): :meth:`Handler.stats` counts them in ``pages_reserved``.
The method lives in the :class:`Reservations` mixin of
:class:`cxlpool.Handler`.
"""

from __future__ import annotations

from ctypes import byref, c_size_t, c_uint, c_uint64, c_void_p
from typing import Any, Optional

from . import _lib
from ._session import Session
from .errors import ClosedError, InvalidArgumentError, check, make
from .pages import Page


class Reservation:
    """Pages held by :meth:`Handler.reserve`; a context manager that
    releases the pages not taken."""

    __slots__ = ("_session", "_ptr")

    def __init__(self, session: Session, ptr: c_void_p) -> None:
        self._session = session
        self._ptr: Optional[c_void_p] = ptr

    @property
    def left(self) -> int:
        """Pages not taken yet (0 once released). Raises ClosedError once
        the handler is closed (the close freed them)."""
        if self._ptr is None:
            return 0
        with self._session.call():
            return int(_lib.lib().cxlp_reserve_left(self._ptr))

    def alloc(self) -> Page:
        """One page of the reservation: never waits, never asks the
        metaserver. NoSpaceError once every page is taken,
        InvalidArgumentError once released, ClosedError once the handler
        is closed."""
        session = self._session
        with session.call() as h:
            if self._ptr is None:
                raise make(InvalidArgumentError, "reservation released")
            page, addr = c_uint64(), c_void_p()
            check(_lib.lib().cxlp_reserve_alloc(h, self._ptr, byref(page),
                                                byref(addr)))
            xid, view = session.export(addr.value or 0, session.page_size,
                                       readonly=False)
            return Page(session, page.value, view, xid)

    def release(self) -> None:
        """Free the pages not taken; a second release does nothing."""
        if self._ptr is None:
            return
        ptr, self._ptr = self._ptr, None
        try:
            with self._session.call() as h:
                check(_lib.lib().cxlp_reserve_release(h, byref(ptr)))
        except ClosedError:  # the close freed the pages; free the rest
            _lib.lib().cxlp_reserve_release(None, byref(ptr))

    def __enter__(self) -> "Reservation":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        try:
            return f"<cxlpool.Reservation {self.left} pages left>"
        except ClosedError:
            return "<cxlpool.Reservation of a closed handler>"


class Reservations:
    """Mixin of :class:`cxlpool.Handler`: reserve."""

    def _s(self) -> Any:  # supplied by Handler
        raise NotImplementedError

    def reserve(self, n: int, wait_ms: int = 0) -> Reservation:
        """Allocate n pages at once into a Reservation, all or nothing,
        waiting up to wait_ms for room when nothing can be evicted.
        Raises NoSpaceError (with what holds the pool) holding nothing."""
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise make(InvalidArgumentError, f"n={n!r}: a positive int")
        if isinstance(wait_ms, bool) or not isinstance(wait_ms, int) or \
                not 0 <= wait_ms < 2 ** 32:
            raise make(InvalidArgumentError, f"wait_ms={wait_ms!r}")
        session = self._s()
        with session.call() as h:
            ptr = c_void_p()
            check(_lib.lib().cxlp_reserve(h, c_size_t(n), c_uint(wait_ms),
                                          byref(ptr)))
            return Reservation(session, ptr)
