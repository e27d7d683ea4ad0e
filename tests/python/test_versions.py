"""cxlpool.versions: versioned retrieves and validate through the binding,
against a real metaserver (the C behaviour in full is
tests/handler/kv/test_version.c)."""

from __future__ import annotations

import cxlp_test
from cxlp_test import ServerTestCase, cxlpool


class VersionedReads(ServerTestCase):
    def put(self, h: cxlpool.Handler, key: bytes, data: bytes) -> None:
        page = h.alloc()
        page.buf[:len(data)] = data
        self.assertTrue(h.store(key, page, len(data)))

    def test_a_copy_validates_until_its_key_is_deleted(self) -> None:
        w, r = self.handler(), self.handler()
        key = self.key("k")
        self.put(w, key, b"chunk bytes")
        view, ver = r.retrieve_v(key)
        copy = bytes(view)
        self.assertEqual(copy, b"chunk bytes")
        self.assertIsInstance(ver, cxlpool.Version)
        self.assertIs(r.validate(ver), True)
        w.delete(key)
        self.assertIs(r.validate(ver), False)

    def test_a_key_stored_again_is_a_new_version(self) -> None:
        h = self.handler()
        key = self.key("k")
        self.put(h, key, b"same")
        _, old = h.retrieve_v(key)
        h.delete(key)
        self.put(h, key, b"same")
        _, new = h.retrieve_v(key)
        self.assertNotEqual(old, new)
        self.assertEqual(h.batch_validate([old, new]), [False, True])

    def test_batch_retrieve_v_gives_a_version_or_the_error(self) -> None:
        h = self.handler()
        key = self.key("k")
        self.put(h, key, b"v")
        got = h.batch_retrieve_v([key, self.key("missing")])
        view, ver = got[0]
        self.assertEqual(bytes(view), b"v")
        self.assertIs(h.validate(ver), True)
        self.assertIsInstance(got[1], cxlpool.NotFoundError)
        self.assertEqual(got[1].key, self.key("missing"))

    def test_without_direct_reads_only_pinned_versions_validate(self) -> None:
        w, r = self.handler(), self.handler(direct_reads=False)
        key = self.key("k")
        self.put(w, key, b"v")
        _, plain = r.retrieve_v(key)
        _, pinned = r.retrieve_v(key, pin=True)
        self.assertIs(r.validate(pinned), True)
        with self.assertRaises(cxlpool.NoVersionError):
            r.validate(plain)
        status = r.batch_validate([pinned, plain])
        self.assertIs(status[0], True)
        self.assertIsInstance(status[1], cxlpool.NoVersionError)
        r.unpin(key)

    def test_what_is_not_a_version_is_refused(self) -> None:
        h = self.handler()
        with self.assertRaises(TypeError):
            h.validate((1, 2))  # type: ignore[arg-type]
        with self.assertRaises(cxlpool.InvalidArgumentError):
            h.validate(cxlpool.Version((0, 0)))
        with self.assertRaises(cxlpool.BatchSizeError):
            h.batch_validate([])
        h.close()
        with self.assertRaises(cxlpool.ClosedError):
            h.validate(cxlpool.Version((0, 0)))

    def test_prepare_read_takes_a_retrieved_view_and_refuses_others(self
                                                                    ) -> None:
        w, r = self.handler(), self.handler()
        key = self.key("k")
        self.put(w, key, b"bytes to copy")
        view, ver = r.retrieve_v(key)
        addr = cxlpool.address_of(view)
        r.prepare_read(view)  # host pool: a check, the bytes stay
        r.prepare_read(view, 4)
        r.prepare_read(addr, len(view))
        self.assertEqual(bytes(view), b"bytes to copy")
        self.assertIs(r.validate(ver), True)
        with self.assertRaises(cxlpool.InvalidArgumentError):
            r.prepare_read(bytearray(64))  # memory of no mapping
        with self.assertRaises(ValueError):
            r.prepare_read(view, len(view) + 1)
        with self.assertRaises(TypeError):
            r.prepare_read(addr)
        r.close()
        with self.assertRaises(cxlpool.ClosedError):
            r.prepare_read(addr, 1)


if __name__ == "__main__":
    cxlp_test.main()
