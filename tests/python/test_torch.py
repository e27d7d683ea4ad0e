"""cxlpool.torch (issue 19): tensors over a page and over a retrieved
value with no copy (the tensor's data pointer is the page's address),
read-only marks, the region registration helper's pieces. Skips when
torch does not import (CI: Debian's python3-torch is 600 MB installed)."""

from __future__ import annotations

import unittest

import cxlp_test
from cxlp_test import KiB, MiB, ServerTestCase

import cxlpool

try:
    import torch
    import cxlpool.torch as ct
except ImportError:  # pragma: no cover - depends on the machine
    torch = None


@unittest.skipIf(torch is None, "torch is not installed")
class Tensors(ServerTestCase):
    def test_a_page_and_its_retrieved_value_are_the_same_memory(self
                                                                ) -> None:
        a, b = self.handler(), self.handler()
        page = a.alloc()
        t = ct.as_tensor(page.buf, torch.float16, (64 * KiB // 2,))
        self.assertEqual(t.data_ptr(), cxlpool.address_of(page.buf))
        self.assertFalse(ct.is_readonly(t))
        t[:1024] = torch.arange(1024, dtype=torch.float16)
        self.assertTrue(a.store(self.key("t"), page, 2048))
        view = b.retrieve(self.key("t"))
        r = ct.as_tensor(view, torch.float16)
        self.assertTrue(ct.same_memory(r, view), "no copy")
        self.assertTrue(ct.is_readonly(r))
        self.assertTrue(torch.equal(r, torch.arange(1024,
                                                    dtype=torch.float16)))
        w = r.clone()
        w[0] = 7
        self.assertEqual(float(r[0]), 0.0, "the clone is a copy")

    def test_maru_handles_and_memory_infos_make_tensors(self) -> None:
        from cxlpool.maru import MaruConfig, MaruHandler
        cfg = MaruConfig(server_url=self.server.url,
                         chunk_size_bytes=64 * KiB, pool_size=2 * MiB)
        with MaruHandler(cfg) as h:
            a = h.alloc(4096)
            ct.as_tensor(a.buf, torch.int32)[:] = 5
            addr = cxlpool.address_of(a.buf)
            self.assertTrue(h.store(self.key("m"), a))
            m = h.retrieve(self.key("m"))
            t = ct.as_tensor(m.view, torch.int32)
            self.assertEqual(t.data_ptr(), addr)
            self.assertEqual(int(t.sum()), 5 * 1024)
            del t

    def test_register_regions_covers_each_region_in_pieces(self) -> None:
        h = self.handler()
        reg, unreg = [], []
        ct.register_regions(h, lambda a, n: reg.append((a, n)),
                            lambda a, n: unreg.append((a, n)),
                            piece=768 * KiB)
        [own] = h.region_list()
        self.assertEqual(reg, ct.pieces(own.addr, own.length, 768 * KiB))
        self.assertEqual(sum(n for _, n in reg), own.length)
        self.assertTrue(all(n <= 768 * KiB for _, n in reg))
        h.close()
        self.assertEqual(unreg, reg, "unregistered before unmap")


if __name__ == "__main__":
    cxlp_test.main()
