"""Leases: pins with a time limit (cxlp_lease, cxlp_batch_lease).

A lease holds a key out of eviction, and refuses its delete, for a while,
without having to be released: it ends at its time, when the session
ends, or at ``lease(key, 0)``. Leasing a key again sets its end to now +
ms, whatever was left: a renewal may lengthen or shorten a lease. A reader that leases a key and finishes its
copy within the lease needs no ``validate``::

    h.lease(key, 2000)             # or retrieve(key, lease=True)
    view = h.retrieve(key)
    dst[:len(view)] = view         # within 2 s: the bytes are the key's

The methods live in the :class:`Leases` mixin of :class:`cxlpool.Handler`.
"""

from __future__ import annotations

from ctypes import c_int, c_uint
from typing import Any, List, Optional, Sequence

from . import _keys, _lib
from .errors import CxlpError, InvalidArgumentError, check, make

_MS_MAX = 2 ** 32 - 1  # the C call's unsigned


def _ms(ms: object) -> int:
    """ms as the C call's unsigned, or InvalidArgumentError: a value out
    of range must not wrap (2**32 would be 0, a release; -1 the
    maximum)."""
    if isinstance(ms, bool) or not isinstance(ms, int) or \
            not 0 <= ms <= _MS_MAX:
        raise make(InvalidArgumentError, f"lease ms={ms!r}: an int in "
                   f"0..{_MS_MAX} (0 releases)")
    return ms


class Leases:
    """Mixin of :class:`cxlpool.Handler`: lease and batch_lease."""

    def _s(self) -> Any:  # supplied by Handler
        raise NotImplementedError

    def lease(self, key: _keys.KeyLike, ms: int) -> None:
        """Lease key for ms milliseconds (cut to the metaserver's
        --lease-max-ms); ms 0 releases it. A lease this session holds is
        renewed to end ms from now, sooner or later than it would have.
        Raises InvalidArgumentError (ms not an int in 0..2**32-1),
        NotFoundError, NotPinnedError (release without a lease)."""
        k = _keys.key(key)
        ms = _ms(ms)
        with self._s().call() as h:
            check(_lib.lib().cxlp_lease(h, k, len(k), c_uint(ms)))

    def batch_lease(self, keys: Sequence[_keys.KeyLike], ms: int
                    ) -> List[Optional[CxlpError]]:
        """lease() each key in one round trip: None or the error, per
        key."""
        bkeys = _keys.keys(keys)
        n = len(bkeys)
        ms = _ms(ms)
        with self._s().call() as h:
            kptrs, klens = _lib.key_arrays(bkeys)
            status = (c_int * n)()
            check(_lib.lib().cxlp_batch_lease(h, n, kptrs, klens,
                                              c_uint(ms), status))
            return [None if status[i] == 0 else
                    _keys.key_error(status[i], bkeys[i]) for i in range(n)]
