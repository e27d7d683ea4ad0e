"""Handler's region calls (cxlpool/regions.py, issue 19): the listing,
views by (region, offset, size), locations of views, page handles, and the
region callback with exactly the mapped ranges, own and foreign."""

from __future__ import annotations

import ctypes
import gc
import threading
import time
import weakref

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

    def test_a_listener_may_close_its_handler(self) -> None:
        """close() from a listener run inside the handler's own call
        (the retrieve that maps a foreign region) returns at once; the
        call returns its view, and the handler closes once the call has
        returned (which releases the view, as any close does)."""
        a, b = self.handler(), self.handler()
        page = a.alloc()
        page.buf[:3] = b"xyz"
        region, _ = a.locate(page.buf)
        self.assertTrue(a.store(self.key("k"), page, 3))
        closed_in_cb = threading.Event()

        def on_event(ev: str, info: cxlpool.RegionInfo) -> None:
            if ev == "mapped" and info.region == region and \
                    not closed_in_cb.is_set():
                closed_in_cb.set()
                b.close()
        b.add_region_listener(on_event)
        session = b._session
        got = b.retrieve(self.key("k"))
        self.assertTrue(closed_in_cb.is_set())
        self.assertIsInstance(got, memoryview)
        deadline = time.monotonic() + 30
        while not session.c_closed and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertTrue(session.c_closed, "the handler was never closed")
        self.assertFalse(b.connected)
        with self.assertRaises(cxlpool.ClosedError):
            b.retrieve(self.key("k"))

    def test_a_callback_that_raises_is_logged_and_dropped(self) -> None:
        h = self.handler(region_size=2 * MiB)

        def bad(ev: str, info: cxlpool.RegionInfo) -> None:
            raise RuntimeError("boom")
        with self.assertLogs("cxlpool.regions", "ERROR"):
            h.set_region_callback(bad)
        h.alloc()  # still works
        h.set_region_callback(None)

    def test_listeners_are_replayed_alone_and_removed_alone(self) -> None:
        h = self.handler(region_size=2 * MiB)
        a: list = []
        b: list = []
        h.set_region_callback(lambda ev, info: a.append((ev, info.region)))
        [own] = h.region_list()
        self.assertEqual(a, [("mapped", own.region)])
        tok = h.add_region_listener(lambda ev, i: b.append((ev, i.region)))
        self.assertEqual(b, [("mapped", own.region)], "b replayed")
        self.assertEqual(len(a), 1, "a not replayed to again")
        h.set_region_callback(None)  # drops a only
        pages = [h.alloc() for _ in range(2 * MiB // (64 * KiB) + 1)]
        self.assertEqual(len(b), 2, "b still told of the new region")
        self.assertEqual(len(a), 1)
        h.remove_region_listener(tok)
        c: list = []
        h.set_region_callback(lambda ev, i: c.append((ev, i.region)))
        self.assertEqual(sorted(r for _, r in c),
                         sorted(i.region for i in h.region_list()))
        h.close()
        self.assertEqual(len(b), 2, "removed: no UNMAPPING")
        self.assertEqual(sorted(r for e, r in c if e == "unmapping"),
                         sorted(r for e, r in c if e == "mapped"))
        del pages

    def test_a_listener_added_inside_a_callback_is_replayed(self) -> None:
        h = self.handler(region_size=2 * MiB)
        inner: list = []

        def outer(ev: str, info: cxlpool.RegionInfo) -> None:
            if not inner:
                h.add_region_listener(
                    lambda e, i: inner.append((e, i.region)))
        with self.assertNoLogs("cxlpool.regions", "ERROR"):
            h.set_region_callback(outer)
        [own] = h.region_list()
        self.assertEqual(inner, [("mapped", own.region)])

    def test_the_thunk_c_holds_stays_alive_whatever_threads_set(
            self) -> None:
        """Two threads set callbacks, the first's Python bookkeeping
        running after the second's: the thunk C was given last must be
        alive (the old per-call thunk was dropped here)."""
        h = self.handler()
        lib = cxlpool._lib.lib()
        real = lib.cxlp_set_region_fn
        calls: list = []  # (thread name, weakrefs of the thunks given)
        second_done = threading.Event()

        def spy(handle: object, fn: object, arg: object) -> int:
            rc = real(handle, fn, arg)
            objs = getattr(fn, "_objects", None) or {}
            refs = [weakref.ref(o) for o in objs.values()
                    if isinstance(o, ctypes._CFuncPtr)]
            calls.append((threading.current_thread().name, refs))
            if threading.current_thread().name == "first":
                second_done.wait(2)  # let the second finish first
            return rc
        lib.cxlp_set_region_fn = spy
        try:
            t1 = threading.Thread(name="first", target=lambda:
                                  h.set_region_callback(lambda e, i: None))
            t1.start()
            while not calls:
                time.sleep(0.001)
            t2 = threading.Thread(name="second", target=lambda:
                                  h.set_region_callback(lambda e, i: None))
            t2.start()
            t2.join()
            second_done.set()
            t1.join()
        finally:
            lib.cxlp_set_region_fn = real
        gc.collect()
        last = calls[-1][1]
        self.assertTrue(last and all(r() is not None for r in last),
                        "the function C holds was freed")
        for _ in range(2 * MiB // (64 * KiB) + 1):
            h.alloc()  # a new region: C calls the thunk


if __name__ == "__main__":
    cxlp_test.main()
