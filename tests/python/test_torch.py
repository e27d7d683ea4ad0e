"""cxlpool.torch (issue 19): tensors over a page and over a retrieved
value with no copy (the tensor's data pointer is the page's address),
read-only marks, the region registration helper's pieces, on CPU tensors
of Debian's python3-torch (scripts/install-deps.sh installs it). Under a
python3 that cannot import torch (pyenv's or a venv's do not see Debian's
packages) it runs itself again under /usr/bin/python3 if that one can;
without any torch the tensor tests skip, unless CXLP_REQUIRE_TORCH is set
(scripts/test.sh sets it), which makes a missing torch a failure."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import types
import unittest

DEBIAN_PYTHON = "/usr/bin/python3"


def _torch_elsewhere() -> None:
    """exec this test under Debian's python3 if torch imports only there."""
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    if (os.path.realpath(sys.executable) == os.path.realpath(DEBIAN_PYTHON)
            or not os.path.exists(DEBIAN_PYTHON)
            or os.environ.get("CXLP_TORCH_REEXEC")):
        return
    probe = subprocess.run([DEBIAN_PYTHON, "-c", "import torch"],
                           capture_output=True)
    if probe.returncode == 0:
        os.environ["CXLP_TORCH_REEXEC"] = "1"
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, "-B"] + sys.argv)


_torch_elsewhere()

import cxlp_test  # noqa: E402
from cxlp_test import KiB, MiB, ServerTestCase  # noqa: E402

import cxlpool  # noqa: E402

try:
    import torch
    import cxlpool.torch as ct
except ImportError:  # pragma: no cover - depends on the machine
    if os.environ.get("CXLP_REQUIRE_TORCH"):
        raise
    torch = None
    # register_regions needs no tensor: test it over a stand-in torch
    # (only attributes read at import), so that CI runs those tests too
    _stub = types.ModuleType("torch")
    _stub.uint8 = None  # type: ignore[attr-defined]
    sys.modules["torch"] = _stub
    import cxlpool.torch as ct
    del sys.modules["torch"]


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


class FakeCudart:
    """cudaHostRegister / cudaHostUnregister that record their calls and
    return cudaError_t codes: `fail` (an int) for read-only memory
    registered without cudaHostRegisterReadOnly, as CUDA does."""

    def __init__(self) -> None:
        self.reg: list = []
        self.unreg: list = []
        self.readonly: set = set()  # addresses of read-only pieces

    def cudaHostRegister(self, a: int, n: int, flags: int) -> int:
        if a in self.readonly and not flags & 0x08:
            return 1  # cudaErrorInvalidValue
        self.reg.append((a, n, flags))
        return 0

    def cudaHostUnregister(self, a: int) -> int:
        if a not in [r[0] for r in self.reg]:
            return 712  # cudaErrorHostMemoryNotRegistered
        self.unreg.append(a)
        return 0


class Registration(ServerTestCase):
    """register_regions and register_cuda (no GPU, no torch needed)."""

    def test_register_regions_covers_each_region_in_pieces(self) -> None:
        h = self.handler()
        reg, unreg = [], []
        ct.register_regions(h, lambda a, n, i: reg.append((a, n)),
                            lambda a, n, i: unreg.append((a, n)),
                            piece=768 * KiB)
        [own] = h.region_list()
        self.assertEqual(reg, ct.pieces(own.addr, own.length, 768 * KiB))
        self.assertEqual(sum(n for _, n in reg), own.length)
        self.assertTrue(all(n <= 768 * KiB for _, n in reg))
        h.close()
        self.assertEqual(unreg, reg, "unregistered before unmap")

    def test_read_only_regions_get_the_read_only_flag(self) -> None:
        a, b = self.handler(), self.handler()
        page = a.alloc()
        region, _ = a.locate(page.buf)
        self.assertTrue(a.store(self.key("ro"), page, 3))
        rt = FakeCudart()
        foreign = b.region_view(region)
        rt.readonly.add(foreign.addr)
        r = ct.register_cuda(b, rt, flags=0x01)
        self.assertEqual(r.errors, [])
        flags = {a_: f for a_, _, f in rt.reg}
        self.assertEqual(flags[foreign.addr], 0x01 | 0x08)
        [own] = [i for i in b.region_list() if i.writable]
        self.assertEqual(flags[own.addr], 0x01)
        b.close()
        self.assertEqual(sorted(rt.unreg), sorted(flags))

    def test_a_failed_register_is_raised_now_and_logged_later(self) -> None:
        h = self.handler()

        def refuse(a: int, n: int, info: object) -> int:
            return 2  # cudaErrorMemoryAllocation
        unreg: list = []
        with self.assertLogs("cxlpool.torch", logging.ERROR):
            with self.assertRaises(ct.RegistrationError) as cm:
                ct.register_regions(h, refuse,
                                    lambda a, n, i: unreg.append(a))
        self.assertEqual(cm.exception.errors[0].error, 2)
        self.assertEqual(unreg, [], "nothing registered, none undone")
        codes = iter([0, 2])  # the replay works, the next region fails
        r = ct.register_regions(h, lambda a, n, i: next(codes),
                                lambda a, n, i: unreg.append(a))
        with self.assertLogs("cxlpool.torch", logging.ERROR):
            pages = [h.alloc() for _ in range(2 * MiB // (64 * KiB) + 1)]
        self.assertEqual([f.error for f in r.errors], [2])
        with self.assertRaises(ct.RegistrationError):
            r.check()
        h.close()
        self.assertEqual(len(unreg), 1, "only the registered region")
        del pages

    def test_register_regions_and_maru_hooks_share_the_handler(
            self) -> None:
        from cxlpool.maru import MaruConfig, MaruHandler
        cfg = MaruConfig(server_url=self.server.url,
                         chunk_size_bytes=64 * KiB, pool_size=2 * MiB)
        with MaruHandler(cfg) as m:
            added: list = []
            m.set_on_region_added(lambda r, n: added.append(r))
            reg: list = []
            r = ct.register_regions(m.handler,
                                    lambda a, n, i: reg.append(i.region),
                                    lambda a, n, i: None)
            own = m.get_owned_region_ids()
            self.assertEqual((added, reg), (own, own))
            pages = [m.alloc(1) for _ in range(2 * MiB // (64 * KiB) + 1)]
            self.assertEqual(len(added), 2, "the Maru hook still works")
            self.assertEqual(reg, added)
            m.set_on_region_added(None)
            more = [m.alloc(1) for _ in range(2 * MiB // (64 * KiB))]
            self.assertEqual(len(reg), 3, "registration kept")
            r.remove()
            del pages, more


if __name__ == "__main__":
    cxlp_test.main()
