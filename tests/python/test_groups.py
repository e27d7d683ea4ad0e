"""cxlpool.groups: request groups through the binding, against a real
metaserver (the C behaviour in full, other processes and restarts
included, is tests/integration/test_group.c)."""

from __future__ import annotations

import cxlp_test
from cxlp_test import ServerTestCase, cxlpool


class Groups(ServerTestCase):
    def chunks(self, g: "cxlpool.Group", names: list) -> list:
        pages = []
        for name in names:
            page = g.alloc()
            page.buf[:len(name)] = name
            pages.append(page)
        return pages

    def test_keys_appear_at_the_commit_of_the_last_batch(self) -> None:
        h = self.handler()
        r = self.handler()
        keys = [self.key(f"g{i}") for i in range(4)]
        with h.group(self.key("req"), total=4, atomic=True) as g:
            self.assertEqual(h.stats().pages_reserved, 4)
            self.assertEqual(g.store(keys[:2], self.chunks(g, keys[:2]),
                                     [len(k) for k in keys[:2]]),
                             [True, True])
            self.assertEqual(g.state, "open")
            self.assertEqual(r.batch_exists(keys), [False] * 4)
            g.store(keys[2:], self.chunks(g, keys[2:]),
                    [len(k) for k in keys[2:]])
            self.assertEqual(g.state, "committed")
            self.assertEqual(g.count, 4)
        self.assertEqual(r.batch_exists(keys), [True] * 4)
        self.assertEqual(bytes(r.retrieve(keys[3])), keys[3])
        self.assertEqual(h.stats().pages_reserved, 0)

    def test_past_the_total_and_a_cancel_roll_it_back(self) -> None:
        h = self.handler()
        other = self.handler()
        keys = [self.key(f"o{i}") for i in range(3)]
        g = h.group(self.key("over"), total=2)
        g.store(keys[:1], self.chunks(g, keys[:1]))
        pages = self.chunks(g, keys[1:])
        with self.assertRaises(cxlpool.GroupError):
            g.store(keys[1:], pages)
        self.assertEqual(g.state, "rolled back")
        for page in pages:  # the refused batch's pages stayed ours
            h.free(page)
        g.close()
        self.assertEqual(h.stats().pages_allocated, 0)
        g = h.group(self.key("cancel"), total=2)
        g.store(keys[:1], self.chunks(g, keys[:1]))
        other.cancel_group(self.key("cancel"))
        with self.assertRaises(cxlpool.CanceledError):
            g.commit()
        g.close()
        self.assertEqual(other.batch_exists(keys), [False] * 3)
        st = h.stats()
        self.assertEqual((st.pages_allocated, st.pages_registered), (0, 0))
        with self.assertRaises(cxlpool.NotFoundError):
            other.cancel_group(self.key("cancel"))

    def test_present_chunks_are_pinned_and_counted(self) -> None:
        h = self.handler()
        k = self.key("have")
        page = h.alloc()
        h.store(k, page, 1)
        with h.group(self.key("dd"), total=1, pin=True) as g:
            self.assertEqual(g.skip_present([k]), [True])
            self.assertEqual(g.state, "committed", "its one chunk")
        with self.assertRaises(cxlpool.PinnedError):
            h.delete(k)
        h.unpin(k)
        h.delete(k)


if __name__ == "__main__":
    cxlp_test.main()
