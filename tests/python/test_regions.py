"""Handler's region calls (cxlpool/regions.py, issue 19): the listing,
views by (region, offset, size), locations of views, page handles, and the
region callback with exactly the mapped ranges, own and foreign."""

from __future__ import annotations

import cxlp_test
from cxlp_test import KiB, MiB, ServerTestCase

import cxlpool


class Regions(ServerTestCase):
    def test_list_view_and_locate_agree_on_the_own_region(self) -> None:
        h = self.handler()
        [own] = h.region_list()
        self.assertTrue(own.writable)
        self.assertEqual(own.pages, own.length // (64 * KiB))
        page = h.alloc()
        region, off = h.locate(page.buf)
        self.assertEqual(region, own.region)
        self.assertEqual(cxlpool.address_of(page.buf), own.addr + off)
        self.assertEqual(h.region_view(region), own)
        self.assertEqual(h.page_at(region, off // (64 * KiB)), page.handle)
        view = h.buffer_view(region, off, 5)
        view[:] = b"hello"
        self.assertEqual(bytes(page.buf[:5]), b"hello", "the same bytes")
        with self.assertRaises(cxlpool.BoundsError):
            h.buffer_view(region, own.length - 2, 5)
        with self.assertRaises(cxlpool.NotFoundError):
            h.locate(bytearray(4))
        h.close()
        with self.assertRaises(ValueError):
            view[0]  # released at close, like every view

    def test_a_foreign_region_is_viewed_read_only_and_reported(self) -> None:
        a, b = self.handler(), self.handler()
        page = a.alloc()
        page.buf[:3] = b"abc"
        region, off = a.locate(page.buf)
        self.assertTrue(a.store(self.key("k"), page, 3))
        events: list = []
        b.set_region_callback(lambda ev, info: events.append((ev, info)))
        self.assertEqual([e for e, _ in events], ["mapped"], "b's own")
        got = b.retrieve(self.key("k"))
        mapped = [i for e, i in events if e == "mapped" and
                  i.region == region]
        self.assertEqual(len(mapped), 1, "reported before retrieve "
                         "returned")
        self.assertFalse(mapped[0].writable)
        self.assertEqual(mapped[0].addr + off, cxlpool.address_of(got))
        self.assertEqual(b.locate(got), (region, off))
        ro = b.buffer_view(region, off, 3)
        self.assertTrue(ro.readonly)
        self.assertEqual(bytes(ro), b"abc")
        listed = {i.region: i for i in b.region_list()}
        b.close()
        gone = [i for e, i in events if e == "unmapping"]
        self.assertEqual({i.region for i in gone}, set(listed))
        for i in gone:
            self.assertEqual((i.addr, i.length),
                             (listed[i.region].addr,
                              listed[i.region].length))

    def test_a_callback_that_raises_is_logged_and_dropped(self) -> None:
        h = self.handler(region_size=2 * MiB)

        def bad(ev: str, info: cxlpool.RegionInfo) -> None:
            raise RuntimeError("boom")
        with self.assertLogs("cxlpool.regions", "ERROR"):
            h.set_region_callback(bad)
        h.alloc()  # still works
        h.set_region_callback(None)


if __name__ == "__main__":
    cxlp_test.main()
