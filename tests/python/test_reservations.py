"""cxlpool.reservations: reserve through the binding, against a real
metaserver (the C behaviour in full, a full pool and waits included, is
tests/integration/test_reserve.c)."""

from __future__ import annotations

import cxlp_test
from cxlp_test import ServerTestCase, cxlpool


class Reservations(ServerTestCase):
    def test_pages_come_out_of_the_reservation_and_the_rest_go_back(
            self) -> None:
        h = self.handler()
        free0 = h.stats().pages_free
        with h.reserve(5) as r:
            self.assertEqual(r.left, 5)
            self.assertEqual(h.stats().pages_reserved, 5)
            pages = [r.alloc(), r.alloc()]
            self.assertEqual(r.left, 3)
            keys = [self.key(f"r{i}") for i in range(2)]
            for i, page in enumerate(pages):
                page.buf[:3] = b"ab" + bytes([i])
            self.assertEqual(h.batch_store(keys, pages, [3, 3]),
                             [True, True])
        self.assertEqual(r.left, 0)
        st = h.stats()
        self.assertEqual(st.pages_reserved, 0)
        self.assertEqual(st.pages_free, free0 - 2, "the 3 not taken went "
                         "back, the 2 stored hold keys")
        self.assertEqual(bytes(h.retrieve(keys[1])), b"ab\x01")
        with self.assertRaises(cxlpool.InvalidArgumentError):
            r.alloc()
        r.release()  # a second release does nothing

    def test_a_used_up_reservation_says_so(self) -> None:
        h = self.handler()
        r = h.reserve(1)
        page = r.alloc()
        with self.assertRaises(cxlpool.NoSpaceError):
            r.alloc()
        h.free(page)
        r.release()

    def test_bad_arguments_and_a_closed_handler(self) -> None:
        h = self.handler()
        for bad in (0, -1, True, 1.5):
            with self.assertRaises(cxlpool.InvalidArgumentError):
                h.reserve(bad)  # type: ignore[arg-type]
        with self.assertRaises(cxlpool.InvalidArgumentError):
            h.reserve(1, wait_ms=-5)
        r = h.reserve(2)
        h.close()
        r.release()  # the close freed the pages: no error
        self.assertEqual(r.left, 0)

    def test_left_and_alloc_after_the_close_raise_closed_error(self
                                                               ) -> None:
        h = self.handler()
        r = h.reserve(3)
        self.assertEqual(r.left, 3)
        h.close()
        with self.assertRaises(cxlpool.ClosedError):
            r.left  # was 3: pages the close had freed
        with self.assertRaises(cxlpool.ClosedError):
            r.alloc()
        self.assertIn("closed handler", repr(r))
        r.release()
        self.assertEqual(r.left, 0)


if __name__ == "__main__":
    cxlp_test.main()
