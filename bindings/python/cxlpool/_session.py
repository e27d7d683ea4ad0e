"""One C handler and the zero-copy views into its mappings.

A :class:`Session` owns a ``struct cxlp_handler *`` and every memoryview
the binding has handed out over memory that handler maps. It exists apart
from the public :class:`~cxlpool.Handler` because its life can be longer:
the C handler is closed only once no Python object can reach its memory.

How a view is made and tracked (zero copy):

* ``(c_ubyte * n).from_address(addr)`` wraps the C pointer in a ctypes
  array that owns nothing; ``memoryview(array).cast("B")`` (and
  ``.toreadonly()`` for retrieved data) is the view handed out. No byte is
  copied, ever.
* Every memoryview derived from it (slices, casts, ``memoryview(v)``, a
  numpy array built on it) keeps that ctypes array alive, through
  CPython's shared managed buffer. The session holds only *weak*
  references: to the handed-out view (to release it) and to the array
  (whose death says that nothing in Python can reach the memory any more).

Invalidation (page freed or stored, handler closed): the handed-out view is
``release()``d, after which any use of it raises ValueError instead of
touching memory. A view derived from it by the user may outlive that; so
:meth:`Session.close` invalidates every view and then calls ``cxlp_close``
only when the last tracked array is gone. Until then the session is a
"zombie": closed to every call, kept in ``_ZOMBIES``, its mappings still in
place, so even a stray derived view cannot fault. A derived view of a page
that was freed or stored may however see that page reused by a later
``alloc``: don't keep views of pages you gave back.

Concurrency: the C handler is thread-safe; this class only counts the calls
in progress so that close waits for them (the C API leaves that to the
caller) and refuses new ones.

Fork: a session belongs to the process that connected. In a forked child
every call raises ClosedError and close() forgets the handler without
calling ``cxlp_close`` (the C library would refuse it the same way: see
cxlpool.h, cxlp_connect). A child is told by a fork generation bumped in
``os.register_at_fork``, not by calling getpid on every call (a system
call per call), and it is told before any lock is taken: a thread of the
parent may have held one at the fork, and is gone in the child.

Cost: every Python-level step of a call is paid per page or per key, and
in a connector that writes 64 KiB chunks it was more than the copy: a
call enters through ``with session.call()`` (Session is its own context
manager, no generator), locks are taken directly (the Condition is only
for close's wait), and the batch paths export and invalidate a whole
batch of views under one lock.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from functools import partial
from typing import Dict, List, Sequence, Set, Tuple

from . import _lib
from .errors import ClosedError, make

_OPEN, _CLOSING, _CLOSED = "open", "closing", "closed"

# Closed sessions still waiting for their last view to die.
_ZOMBIES: Set["Session"] = set()
_ZOMBIES_LOCK = threading.Lock()

_Entry = Tuple["weakref.ref[ctypes.Array[ctypes.c_ubyte]]",
               "weakref.ref[memoryview]"]

# Bumped in every forked child: a session made before the fork sees a
# generation that is not its own.
_FORK_GEN = 0


def _forked() -> None:
    global _FORK_GEN
    _FORK_GEN += 1


os.register_at_fork(after_in_child=_forked)


def _wrap(addr: int, size: int, readonly: bool
          ) -> Tuple["ctypes.Array[ctypes.c_ubyte]", memoryview]:
    """The ctypes array over size bytes at addr and the view handed out."""
    arr = (ctypes.c_ubyte * size).from_address(addr)
    raw = memoryview(arr)
    try:
        view = raw.cast("B")
    finally:
        raw.release()
    if readonly:
        writable = view
        view = writable.toreadonly()
        writable.release()
    return arr, view


class Session:
    """A connected C handler, its call count and its exported views."""

    def __init__(self, handle: ctypes.c_void_p) -> None:
        self._h = handle
        self.pid = os.getpid()
        self._fork_gen = _FORK_GEN
        self.page_size = int(_lib.lib().cxlp_page_size(handle))
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._state = _OPEN
        self._active = 0
        self._here = threading.local()  # .n: this thread's calls running
        self._exports: Dict[int, _Entry] = {}
        self._next_id = 0

    # -- calls ---------------------------------------------------------

    def call(self) -> "Session":
        """``with session.call() as h:`` runs a C call on the handler.

        Entering yields the handle; it raises ClosedError when the handler
        is closed or closing, or when this process is not the one that
        connected (after fork).
        """
        return self

    def __enter__(self) -> ctypes.c_void_p:
        h = self.hold()
        self._here.n = getattr(self._here, "n", 0) + 1
        return h

    def __exit__(self, *exc: object) -> None:
        self._here.n -= 1
        self.release()

    def hold(self) -> ctypes.c_void_p:
        """Count a call that may end on another thread (an asynchronous
        submit, released by its callback): close() waits for it as for
        any call, but it is no call of this thread's. Raises as
        __enter__ does; release() ends it."""
        if self._fork_gen != _FORK_GEN:  # before the lock: see Fork above
            raise make(ClosedError, f"handler was connected by process "
                       f"{self.pid}; connect again in this process")
        with self._lock:
            if self._state != _OPEN:
                raise make(ClosedError, "handler is closed")
            self._active += 1
        return self._h

    def release(self) -> None:
        """End a hold() (or a call)."""
        with self._lock:
            self._active -= 1
            if self._active == 0 and self._state != _OPEN:
                self._cond.notify_all()

    @property
    def is_open(self) -> bool:
        """True until close() starts."""
        return self._state == _OPEN

    @property
    def forked(self) -> bool:
        """True in a child of fork(): the session is the parent's."""
        return self._fork_gen != _FORK_GEN

    # -- views ---------------------------------------------------------

    def export(self, addr: int, size: int,
               readonly: bool) -> Tuple[int, memoryview]:
        """Wrap size bytes at addr in a tracked memoryview; no copy.

        Call inside call(), so that close() cannot run meanwhile. Returns
        (export id, view); the id names the view for invalidate().
        """
        return self.export_many([(addr, size)], readonly)[0]

    def export_many(self, spans: Sequence[Tuple[int, int]],
                    readonly: bool) -> List[Tuple[int, memoryview]]:
        """export() of each (addr, size), registered under one lock."""
        made = [_wrap(addr, size, readonly) for addr, size in spans]
        out = []
        with self._lock:
            for arr, view in made:
                xid = self._next_id
                self._next_id += 1
                self._exports[xid] = (weakref.ref(arr,
                                                  partial(self._gone, xid)),
                                      weakref.ref(view))
                out.append((xid, view))
        return out

    def invalidate(self, xid: int) -> None:
        """Release the view handed out under xid; later use raises.

        A view that another object has a buffer of (e.g. numpy) cannot be
        released; it stays valid and keeps the session's mappings alive.
        """
        self.invalidate_many([xid])

    def invalidate_many(self, xids: Sequence[int]) -> None:
        """invalidate() of each xid, looked up under one lock."""
        with self._lock:
            entries = [self._exports.get(x) for x in xids]
        for entry in entries:
            view = entry[1]() if entry is not None else None
            if view is not None:
                try:
                    view.release()
                except BufferError:
                    pass

    def live_views(self) -> int:
        """Number of tracked arrays still reachable from Python."""
        with self._lock:
            return len(self._exports)

    def _gone(self, xid: int, _ref: object) -> None:
        """Weakref callback: the array of xid died; maybe finish close."""
        with self._lock:
            self._exports.pop(xid, None)
            last = self._state == _CLOSED and not self._exports
        if last:
            self._destroy()

    # -- close ---------------------------------------------------------

    def close(self) -> None:
        """Refuse new calls, wait for running ones, invalidate every view,
        then close the C handler now or when the last view dies.

        Idempotent. Never raises. Called from inside one of this
        handler's own calls (a region listener run by the call that
        mapped the region), it cannot wait for that call: a thread of
        ours closes the handler once the call has returned.
        """
        if self._fork_gen != _FORK_GEN:  # the parent's: forget it, no lock
            self._state = _CLOSED
            self._h = ctypes.c_void_p()
            return
        if getattr(self._here, "n", 0) > 0:
            threading.Thread(target=self.close, daemon=True).start()
            return
        with self._cond:
            if self._state != _OPEN:
                return
            self._state = _CLOSING
            while self._active:
                self._cond.wait()
            xids = list(self._exports)
        self.invalidate_many(xids)
        with self._lock:
            self._state = _CLOSED
            last = not self._exports
            if not last:
                with _ZOMBIES_LOCK:
                    _ZOMBIES.add(self)
        if last:
            self._destroy()

    def _destroy(self) -> None:
        """cxlp_close the handler (once) and forget the zombie."""
        with self._lock:
            handle, self._h = self._h, ctypes.c_void_p()
        if handle:
            _lib.lib().cxlp_close(ctypes.byref(handle))
            if handle:
                # refused: called from this handler's region callback
                # (a listener closing it), whose delivering call still
                # uses it; a thread of ours closes it, waiting for that
                # call (cxlp_close joins the handler's threads)
                threading.Thread(target=_close_later, args=(handle,),
                                 daemon=True).start()
        with _ZOMBIES_LOCK:
            _ZOMBIES.discard(self)

    @property
    def c_closed(self) -> bool:
        """True once cxlp_close has been called (for tests)."""
        return not self._h


def _close_later(handle: ctypes.c_void_p) -> None:
    _lib.lib().cxlp_close(ctypes.byref(handle))


def fork_gen() -> int:
    """How many forks this process is from the one that imported us."""
    return _FORK_GEN


def zombies() -> int:
    """Closed sessions still kept open in C for a live view (for tests)."""
    with _ZOMBIES_LOCK:
        return len(_ZOMBIES)

