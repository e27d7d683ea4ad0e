"""Handler: the Python face of ``struct cxlp_handler``.

Each method is one C call of ``include/cxlpool.h`` with the same
semantics; this module only converts arguments, turns negative returns into
exceptions (see :mod:`cxlpool.errors`) and wraps C pointers in zero-copy
memoryviews (see :mod:`cxlpool._session` for how they are kept safe).

Keys are ``bytes`` (``str`` is encoded as UTF-8; any other bytes-like
object is copied to bytes). The library checks their length.

The calls that take pages from the caller, and the page states they keep,
are in :mod:`cxlpool.pages`; versioned reads in :mod:`cxlpool.versions`,
leases in :mod:`cxlpool.leases`: mixins of :class:`Handler`. The
process-wide helpers (address_of, set_log_handler) are in
:mod:`cxlpool.process`; this module names them too, as before.
"""

from __future__ import annotations

import threading
from ctypes import byref, c_bool, c_int, c_size_t, c_void_p
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional, Sequence, Union

from . import _lib
from ._keys import KeyLike
from ._keys import key as _key
from ._keys import key_error as _key_error
from ._keys import keys as _keys
from ._session import Session
from ._session import fork_gen as _fork_gen
from .config import Config
from .errors import ClosedError, CxlpError, check, error_from_code, make
from .leases import Leases
from .pages import Page, PageCalls
from .counters import Counters
from .groups import Group, Groups  # noqa: F401
from .reservations import Reservation, Reservations  # noqa: F401
# named here too: cxlpool and callers import them from cxlpool.handler
from .process import address_of, set_log_handler  # noqa: F401
from .versions import VersionedReads
from .futures import AsyncCalls
from .regions import RegionInfo, Regions  # noqa: F401


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
    pages_reserved: int    # of pages_allocated, held by reservations
    endpoint_switches: int  # moves to another metaserver endpoint

    def as_dict(self) -> Dict[str, int]:
        """The counters as a plain dict."""
        return asdict(self)


class Handler(PageCalls, VersionedReads, Leases, Reservations, Groups,
              AsyncCalls, Counters, Regions):
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
        self._lock_gen = _fork_gen()

    def _own_lock(self) -> threading.Lock:
        """self._lock, made anew in a child of fork(): a thread of the
        parent (gone in the child) may have held it at the fork."""
        if self._lock_gen != _fork_gen():
            self._lock = threading.Lock()
            self._lock_gen = _fork_gen()
        return self._lock

    # -- lifecycle -----------------------------------------------------

    def connect(self) -> "Handler":
        """Open a session with the metaserver and take a first region.

        No-op if already connected; after close() it opens a new session.
        In a child of fork(), a handler the parent had connected connects
        anew, a session of the child's own (the parent's stays the
        parent's). Returns self. Raises ConnectError, ServerTimeoutError,
        ... or InvalidArgumentError for a config value the library
        refuses.
        """
        with self._own_lock():
            if self._session is not None and self._session.forked:
                self._session.close()  # forgets it: the parent's
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
        with self._own_lock():
            session = self._session
        if session is not None:
            session.close()

    @property
    def connected(self) -> bool:
        """True between connect() and close() (False in a child of fork()
        for the parent's session)."""
        return (self._session is not None and self._session.is_open
                and not self._session.forked)

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
        """A tracked read-only view of size bytes at addr: a zero-length
        value is an empty view at its page (locate() places it)."""
        if not addr:
            return memoryview(b"")
        return session.export(addr, size, readonly=True)[1]

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
        return self._batch_retrieve(keys, pin, True)

    def _batch_retrieve(self, keys: Sequence[KeyLike], pin: bool,
                        readonly: bool) -> List[Union[memoryview,
                                                      CxlpError]]:
        """batch_retrieve(); readonly False hands out views whose buffer
        says writable over the same mapping (cxlpool.maru's MemoryInfo,
        for callers that need a writable buffer to take an address,
        ctypes' from_buffer: a foreign region's mapping stays read-only,
        so a write through such a view faults)."""
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
            # a zero-length value too: an empty view at its page
            found = [i for i in range(n) if status[i] == 0 and data[i]]
            views = session.export_many(
                [(data[i], sizes[i]) for i in found], readonly=readonly)
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
