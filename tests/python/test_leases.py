"""cxlpool.leases: lease and batch_lease through the binding, against a
real metaserver (the C behaviour in full is tests/integration/
test_lease.c), and the eviction counters of stats."""

from __future__ import annotations

import time

import cxlp_test
from cxlp_test import ServerTestCase, cxlpool


class Leases(ServerTestCase):
    def put(self, h: cxlpool.Handler, key: bytes) -> None:
        page = h.alloc()
        page.buf[:2] = b"ok"
        self.assertTrue(h.store(key, page, 2))

    def test_a_leased_key_is_not_deleted_until_released(self) -> None:
        owner, reader = self.handler(), self.handler()
        key = self.key("k")
        self.put(owner, key)
        reader.lease(key, 60000)
        self.assertEqual(owner.stats().leases, 1)
        with self.assertRaises(cxlpool.PinnedError):
            owner.delete(key)
        reader.lease(key, 0)
        with self.assertRaises(cxlpool.NotPinnedError):
            reader.lease(key, 0)
        owner.delete(key)

    def test_out_of_range_ms_is_refused_and_the_lease_kept(self) -> None:
        owner, reader = self.handler(), self.handler()
        key = self.key("k")
        self.put(owner, key)
        reader.lease(key, 60000)
        for bad in (2 ** 32, -1, 1.5, True, None):
            with self.assertRaises(cxlpool.InvalidArgumentError, msg=bad):
                reader.lease(key, bad)  # type: ignore[arg-type]
            with self.assertRaises(cxlpool.InvalidArgumentError, msg=bad):
                reader.batch_lease([key], bad)  # type: ignore[arg-type]
        # 2**32 wrapped to 0 and released the lease: the delete went
        with self.assertRaises(cxlpool.PinnedError):
            owner.delete(key)
        self.assertEqual(owner.stats().leases, 1)
        reader.lease(key, 2 ** 32 - 1)  # the top of the range: taken

    def test_batch_lease_reports_each_key(self) -> None:
        h = self.handler(lease_ms=500)
        key = self.key("k")
        self.put(h, key)
        got = h.batch_lease([key, self.key("missing")], 1000)
        self.assertIsNone(got[0])
        self.assertIsInstance(got[1], cxlpool.NotFoundError)
        st = h.stats()
        self.assertEqual(st.leases, 1)
        self.assertEqual(st.evicted_pressure, 0)
        self.assertGreater(st.largest_free, 0)


class Renewals(ServerTestCase):
    server_args = ["--lease-max-ms", "3600000"]  # the hour is not cut

    def put(self, h: cxlpool.Handler, key: bytes) -> None:
        page = h.alloc()
        page.buf[:2] = b"ok"
        self.assertTrue(h.store(key, page, 2))

    def test_a_renewal_shortens_a_lease(self) -> None:
        owner, reader = self.handler(), self.handler()
        key = self.key("k")
        self.put(owner, key)
        reader.lease(key, 3600000)
        with self.assertRaises(cxlpool.PinnedError):
            owner.delete(key)
        reader.lease(key, 1)  # ends 1 ms from now, not in an hour
        deadline = time.monotonic() + 30  # far from the hour
        while True:  # the server drops it at its next tick
            try:
                owner.delete(key)
                break
            except cxlpool.PinnedError:
                self.assertLess(time.monotonic(), deadline,
                                "the renewal did not shorten the lease")
                time.sleep(0.02)


if __name__ == "__main__":
    cxlp_test.main()
