"""Asynchronous calls: batch_store and batch_retrieve that return at once
with a :class:`concurrent.futures.Future` (cxlp_batch_store_async,
cxlp_batch_retrieve_async).

The future's result is exactly what the synchronous method returns
(``batch_store``: ``list[bool]``; ``batch_retrieve``: a view or an
exception instance per key), and its exception what that method raises
once it has taken the pages (``UnknownOutcomeError`` with ``stored``;
``SessionError``, which gives the pages back). Errors the C submit
returns (bad arguments, ``BadPageError``, ``ClosedError``, a
``CxlpOSError`` with errno ``EAGAIN`` for a full handler with
``wait=False``) are raised by the call itself, with no future. An asyncio loop awaits one with
``await asyncio.wrap_future(fut)``::

    fut = h.batch_store_async(keys, pages, lengths)
    ...                               # the round trip runs meanwhile
    stored = fut.result()             # or: await asyncio.wrap_future(fut)

How a call ends. The C library calls back on a thread of its own, once
per call. Two module-level ctypes callbacks serve every call, so no
callback object can be collected while the C library still holds it;
the ``void *arg`` it is given is a token into :data:`_pending`, which
keeps the call's future, pages and keys until then. Whatever the
callback does in Python happens under ``try``: an exception there
(building a view, a bug) is set on the future, never lost in the C
thread. A submitted call holds the session open (``Session.call``) until
its callback has run, so :meth:`Handler.close` waits for every call in
flight, as ``cxlp_close`` does. The future is set running at once and
cannot be cancelled: the C call runs whatever the caller then does.

The future's own done-callbacks run on the library's thread. They may
submit again (a submit there never waits: ``EAGAIN`` when the handler
is full, after the one call that takes over the finished call's slot);
close the handler from one and the C library finishes the close on a
thread of its own.
"""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import Future
from ctypes import byref, c_size_t, c_uint, c_uint64, c_void_p
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _lib
from ._keys import KeyLike
from ._keys import key_error as _key_error
from ._keys import keys as _keys
from ._session import Session
from .errors import InvalidArgumentError, error_from_code, make


@dataclass
class _Pending:
    """What a call in flight needs when its callback comes."""

    future: "Future[Any]"
    session: Session
    handler: Any
    keys: List[bytes]
    pages: List[Any] = field(default_factory=list)


_pending: Dict[int, _Pending] = {}
_pending_lock = threading.Lock()
_tokens = itertools.count(1)


def _put(p: _Pending) -> int:
    token = next(_tokens)
    with _pending_lock:
        _pending[token] = p
    return token


def _take(token: Optional[int]) -> Optional[_Pending]:
    with _pending_lock:
        return _pending.pop(token or 0, None)


def _finish(p: _Pending, compute: Any) -> None:
    """Run compute() while the session is still held, release it, then
    settle the future with compute's value or exception."""
    value: Any = None
    exc: Optional[BaseException] = None
    try:
        value = compute()
    except BaseException as e:  # noqa: B902 -- nothing may be lost here
        exc = e
    finally:
        p.session.release()
    if exc is not None:
        p.future.set_exception(exc)
    else:
        p.future.set_result(value)


def _store_done(arg: Optional[int], rc: int, n: int, stored: Any,
                status: Any) -> None:
    """cxlp_store_done_fn: the pages are consumed (or given back) and the
    future settled as batch_store would return or raise."""
    p = _take(arg)
    if p is None:
        return

    def compute() -> List[bool]:
        err = error_from_code(rc) if rc < 0 else None
        result = [bool(stored[i]) for i in range(n)]
        return p.handler._store_outcome(err, result, p.pages)

    _finish(p, compute)


def _retrieve_done(arg: Optional[int], rc: int, n: int, data: Any,
                   lens: Any, status: Any) -> None:
    """cxlp_retrieve_done_fn: views made as batch_retrieve makes them."""
    p = _take(arg)
    if p is None:
        return

    def compute() -> List[Any]:
        if rc < 0:
            raise error_from_code(rc)
        found = [i for i in range(n) if status[i] == 0 and lens[i]]
        views = p.session.export_many(
            [(data[i] or 0, lens[i]) for i in found], readonly=True)
        out: List[Any] = [memoryview(b"") if status[i] == 0 else
                          _key_error(status[i], p.keys[i])
                          for i in range(n)]
        for i, (_, view) in zip(found, views):
            out[i] = view
        return out

    _finish(p, compute)


# One callback object each, for every call: alive as long as the module.
_STORE_CB = _lib.STORE_DONE_FN(_store_done)
_RETRIEVE_CB = _lib.RETRIEVE_DONE_FN(_retrieve_done)


class AsyncCalls:
    """Mixin of :class:`cxlpool.Handler`: batch_store_async,
    batch_retrieve_async and async_inflight."""

    def _s(self) -> Any:  # supplied by Handler
        raise NotImplementedError

    # supplied by PageCalls
    _claim: Any
    _unclaim: Any
    _store_lengths: Any

    def batch_store_async(self, keys: Sequence[KeyLike],
                          pages: Sequence[Any],
                          lengths: Optional[Sequence[int]] = None, *,
                          pin: bool = False,
                          wait: bool = True) -> "Future[List[bool]]":
        """batch_store without waiting for the round trip: returns a
        Future whose result is batch_store's list[bool].

        The pages are the call's from now on (BUSY: no other call may
        use them) until the future is done. Raises at once, leaving the
        pages with the caller, what batch_store raises before taking them
        (InvalidArgumentError, KeyLengthError, TooBigError, BadPageError,
        ClosedError, SessionError), and CxlpOSError (errno EAGAIN) when
        wait=False (or on the library's thread) and max_inflight calls
        are in flight.
        """
        session, bkeys, pages, lens = self._store_args(keys, pages, lengths)
        flags = (_lib.STORE_PIN if pin else 0) | \
            (0 if wait else _lib.ASYNC_NOWAIT)
        n = len(bkeys)
        h = session.hold()
        try:
            self._claim(session, pages)
            try:
                fut = self._submit(_Pending(Future(), session, self, bkeys,
                                            pages), lambda token:
                                   _lib.lib().cxlp_batch_store_async(
                                       h, n, *_lib.key_arrays(bkeys),
                                       (c_uint64 * n)(*[p.handle
                                                        for p in pages]),
                                       (c_size_t * n)(*lens), flags,
                                       _STORE_CB, token))
            except BaseException:
                self._unclaim(pages)
                raise
        except BaseException:
            session.release()
            raise
        return fut

    def batch_retrieve_async(self, keys: Sequence[KeyLike], *,
                             pin: bool = True, wait: bool = True
                             ) -> "Future[List[Any]]":
        """batch_retrieve without waiting for the round trip, pinned by
        default (an unpinned retrieve is usually answered from shared
        memory at once): returns a Future whose result is
        batch_retrieve's list (a read-only view, or the exception
        instance, per key; with pin, the keys found are pinned: unpin
        them when done). Raises at once what the C submit returns."""
        session = self._s()
        bkeys = _keys(keys)
        n = len(bkeys)
        flags = (_lib.RETRIEVE_PIN if pin else 0) | \
            (0 if wait else _lib.ASYNC_NOWAIT)
        h = session.hold()
        try:
            fut = self._submit(_Pending(Future(), session, self, bkeys),
                               lambda token:
                               _lib.lib().cxlp_batch_retrieve_async(
                                   h, n, *_lib.key_arrays(bkeys), flags,
                                   _RETRIEVE_CB, token))
        except BaseException:
            session.release()
            raise
        return fut

    @staticmethod
    def _submit(p: _Pending, call: Any) -> "Future[Any]":
        """Register p, make the C submit call(token); raise its error
        (p forgotten, no callback will come) or return p's future."""
        p.future.set_running_or_notify_cancel()  # no cancel from now on
        token = _put(p)
        rc = call(c_void_p(token))
        if rc < 0:
            _take(token)
            raise error_from_code(rc)
        return p.future

    def async_inflight(self) -> Tuple[int, int]:
        """(calls in flight now, most at once since connect):
        cxlp_async_inflight."""
        with self._s().call() as h:
            peak = c_uint()
            now = _lib.lib().cxlp_async_inflight(h, byref(peak))
            if now < 0:
                raise error_from_code(now)
            return int(now), int(peak.value)


__all__ = ["AsyncCalls"]
