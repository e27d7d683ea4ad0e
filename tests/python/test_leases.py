"""cxlpool.leases: lease and batch_lease through the binding, against a
real metaserver (the C behaviour in full is tests/integration/
test_lease.c), and the eviction counters of stats."""

from __future__ import annotations

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


if __name__ == "__main__":
    cxlp_test.main()
