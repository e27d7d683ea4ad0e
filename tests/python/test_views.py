"""cxlpool._session: zero-copy views, their read-only-ness, and their
invalidation (use after free/store/close raises instead of crashing)."""

from __future__ import annotations

import gc
import subprocess

import cxlp_test
from cxlp_test import ServerTestCase, cxlpool

from cxlpool import _session


class ZeroCopy(ServerTestCase):
    def test_writes_through_buf_reach_a_c_reader(self) -> None:
        reader = cxlp_test.c_reader_path()
        if reader is None:
            self.skipTest("no C reader (run through meson test)")
        h = self.handler()
        key = self.key("k")
        page = h.alloc()
        chunk = bytes(range(256)) * 16
        page.buf[:len(chunk)] = chunk
        # store() passes a page handle, never data: the C reader can only
        # see these bytes if they were written into the shared page.
        self.assertTrue(h.store(key, page, len(chunk)))
        out = subprocess.run([reader, self.server.url, key.decode()],
                             capture_output=True, timeout=60,
                             env=cxlp_test.native_env())
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, chunk)

    def test_buf_and_retrieved_view_are_the_same_memory(self) -> None:
        h = self.handler()
        key = self.key("k")
        page = h.alloc()
        addr = cxlpool.address_of(page.buf)
        page.buf[:3] = b"abc"
        self.assertTrue(h.store(key, page, 3))
        view = h.retrieve(key)
        self.assertEqual(cxlpool.address_of(view), addr)
        # A second retrieve is another view of the same bytes.
        self.assertEqual(cxlpool.address_of(h.retrieve(key)), addr)

    def test_a_write_after_alloc_is_visible_without_store(self) -> None:
        h = self.handler()
        page = h.alloc()
        alias = page.buf[10:20]  # a derived view: same memory
        page.buf[10:13] = b"xyz"
        self.assertEqual(bytes(alias[:3]), b"xyz")
        del alias
        h.free(page)


class ReadOnly(ServerTestCase):
    def test_a_retrieved_view_refuses_writes(self) -> None:
        writer, reader = self.handler(), self.handler()
        key = self.key("k")
        page = writer.alloc()
        page.buf[:4] = b"data"
        writer.store(key, page, 4)
        for h in (reader, writer):  # foreign page, then own page
            view = h.retrieve(key)
            self.assertTrue(view.readonly)
            with self.assertRaises(TypeError):
                view[0] = 1
            with self.assertRaises(TypeError):
                memoryview(view).cast("B")[0] = 1
            self.assertEqual(bytes(view), b"data")

    def test_buf_is_writable(self) -> None:
        page = self.handler().alloc()
        self.assertFalse(page.buf.readonly)
        self.assertEqual(page.buf.format, "B")


class Invalidation(ServerTestCase):
    def test_a_view_used_after_close_raises(self) -> None:
        h = self.handler()
        key = self.key("k")
        page = h.alloc()
        page.buf[:2] = b"hi"
        h.store(key, page, 2)
        view = h.retrieve(key)
        pinned = h.retrieve(key, pin=True)
        live = h.alloc()
        buf = live.buf
        h.close()
        for v in (view, pinned, buf):
            with self.assertRaises(ValueError):
                v[0]
            with self.assertRaises(ValueError):
                bytes(v)
        with self.assertRaises(ValueError):
            buf[0] = 1
        self.assertFalse(live.live)

    def test_buf_is_released_by_store_and_free(self) -> None:
        h = self.handler()
        stored, freed = h.alloc(), h.alloc()
        h.store(self.key("k"), stored, 1)
        h.free(freed)
        for page in (stored, freed):
            with self.assertRaises(ValueError):
                page.buf[0] = 1

    def test_a_derived_view_keeps_the_mapping_until_dropped(self) -> None:
        h = self.handler()
        key = self.key("k")
        page = h.alloc()
        page.buf[:4] = b"keep"
        h.store(key, page, 4)
        view = h.retrieve(key)
        derived = view[1:3]  # not ours: memoryview slicing
        session = h._s()
        h.close()
        with self.assertRaises(ValueError):
            view[0]
        # The handler is closed to calls but its mapping is still there.
        self.assertEqual(bytes(derived), b"ee")
        self.assertFalse(session.c_closed)
        self.assertEqual(_session.zombies(), 1)
        with self.assertRaises(cxlpool.ClosedError):
            h.exists(key)
        del derived
        gc.collect()
        self.assertTrue(session.c_closed)
        self.assertEqual(_session.zombies(), 0)

    def test_close_without_derived_views_closes_at_once(self) -> None:
        h = self.handler()
        page = h.alloc()
        view = page.buf
        session = h._s()
        h.close()
        self.assertTrue(session.c_closed)
        del view

    def test_views_the_caller_released_are_forgotten(self) -> None:
        h = self.handler()
        key = self.key("k")
        page = h.alloc()
        h.store(key, page, 1)
        for _ in range(100):
            with h.retrieve(key) as view:
                self.assertEqual(len(view), 1)
        self.assertEqual(h._s().live_views(), 0)

    def test_an_empty_value_is_an_empty_view(self) -> None:
        h = self.handler()
        key = self.key("k")
        h.store(key, h.alloc(), 0)
        self.assertEqual(bytes(h.retrieve(key)), b"")


if __name__ == "__main__":
    cxlp_test.main()
