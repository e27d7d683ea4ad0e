"""cxlpool.maru as a drop-in for Maru's own tests and integrations (issue
29): chunk sizes that are not multiples of 4 KiB, zero-length values,
retrieved views that say writable (SGLang's ``c_char.from_buffer``)
while another handler's region stays read-only, Maru's allocator,
owned_region_manager and mapper with its stats keys (and what
maru_sglang's MaruHostTensorAllocator reads), MARU_EAGER_MAP / MARU_STAT
parsed as Maru parses them, and a tcp secret from CXLP_SECRET_FILE.
Maru's own tests/integration/test_handler.py runs as python_maru_upstream
(tests/python/maru_upstream)."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import socket
import tempfile
import unittest

import cxlp_test
from cxlp_test import KiB, MiB, ServerTestCase

import cxlpool
from cxlpool.maru import MaruConfig, MaruHandler

# a child: MaruHandler (64 KiB chunks) on argv[1]; runs argv[2] with h
# bound; prints what it assigns to `out` as JSON
CHILD = r"""
import ctypes, json, sys
from cxlpool.maru import MaruConfig, MaruHandler
cfg = MaruConfig(server_url=sys.argv[1], chunk_size_bytes=64 << 10,
                 pool_size=2 << 20)
with MaruHandler(cfg) as h:
    out = None
    exec(sys.argv[2])
    print(json.dumps(out), flush=True)
"""


def child(url: str, code: str) -> object:
    done = cxlp_test.run_python(CHILD, url, code)
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


class CompatCase(ServerTestCase):
    def maru(self, **kw: object) -> MaruHandler:
        args: dict = dict(server_url=self.server.url,
                          chunk_size_bytes=64 * KiB, pool_size=2 * MiB)
        args.update(kw)
        h = MaruHandler(MaruConfig(**args))  # type: ignore[arg-type]
        self.assertTrue(h.connect())
        self.addCleanup(h.close)
        return h

    def put(self, h: MaruHandler, key: str, data: bytes) -> tuple:
        a = h.alloc(len(data))
        a.buf[:] = data
        self.assertTrue(h.store(key, a))
        return (a.region_id, a.page_index)

    def k(self, tag: str) -> str:
        return f"{self.id()}@{tag}"


class ChunkSizes(CompatCase):
    def test_64_b_1_kib_4_kib_plus_64_and_1_mib_read_back_elsewhere(
            self) -> None:
        for size in (64, KiB, 4 * KiB + 64, MiB):
            h = self.maru(chunk_size_bytes=size)
            self.assertEqual(h.allocator.chunk_size, size)
            self.assertEqual(h.allocator.page_count,
                             h.pool_handle.length // size)
            values = {self.k(f"{size}-{n}"): bytes([n % 251 + 1]) * n
                      for n in (size, 1, size - 1)}
            where = {k: self.put(h, k, v) for k, v in values.items()}
            got = child(self.server.url, f"""
out = {{}}
for k in {list(values)!r}:
    m = h.retrieve(k)
    out[k] = [m.view.hex(), m.region_id, m.page_index]""")
            for k, v in values.items():
                self.assertEqual(got[k], [v.hex(), *where[k]],  # type: ignore
                                 f"chunk {size}")
            h.close()

    def test_below_64_b_is_refused_saying_why(self) -> None:
        with self.assertRaisesRegex(ValueError, "cache line"):
            MaruConfig(chunk_size_bytes=63)


class ZeroLength(CompatCase):
    def test_a_zero_length_value_retrieves_as_an_empty_view(self) -> None:
        h = self.maru()
        key = self.k("z")
        a = h.alloc(0)
        self.assertEqual(len(a.buf), 0)
        loc = (a.region_id, a.page_index)
        self.assertTrue(h.store(key, a))
        self.assertTrue(h.exists(key))
        for m in (h.retrieve(key), h.batch_retrieve([key])[0]):
            self.assertIsNotNone(m, "was None: the value could not be "
                                 "located")
            self.assertEqual(len(m.view), 0)
            self.assertEqual((m.region_id, m.page_index), loc)
        out = child(self.server.url, f"""
m = h.retrieve({key!r})
out = None if m is None else [len(m.view), m.region_id, m.page_index]""")
        self.assertEqual(out, [0, *loc])

    def test_the_plain_handler_places_an_empty_value_too(self) -> None:
        h = self.maru()
        key = self.k("z")
        a = h.alloc(0)
        self.assertTrue(h.store(key, a))
        view = h.handler.retrieve(cxlpool.maru.pool_key(key))
        self.assertEqual(len(view), 0)
        region, off = h.handler.locate(view)
        self.assertEqual((region, off // (64 * KiB)),
                         (a.region_id, a.page_index))


class WritableViews(CompatCase):
    def test_from_buffer_takes_the_address_of_a_retrieved_view(self
                                                               ) -> None:
        h = self.maru()
        key = self.k("sg")
        a = h.alloc(5)
        a.buf[:] = b"sglng"
        addr = cxlpool.address_of(a.buf)
        self.assertTrue(h.store(key, a))
        m = h.retrieve(key)
        self.assertFalse(m.view.readonly)
        self.assertEqual(ctypes.addressof(ctypes.c_char.from_buffer(m.view)),
                         addr)
        out = child(self.server.url, f"""
m = h.batch_retrieve([{key!r}])[0]
src = ctypes.addressof(ctypes.c_char.from_buffer(m.view))
out = ctypes.string_at(src, len(m.view)).decode()""")
        self.assertEqual(out, "sglng")

    def test_a_write_to_another_handlers_value_faults_and_changes_nothing(
            self) -> None:
        h = self.maru()
        key = self.k("w")
        self.put(h, key, b"precious")
        done = cxlp_test.run_python(CHILD, self.server.url, f"""
m = h.retrieve({key!r})
ctypes.c_char.from_buffer(m.view)
print("mapped", flush=True)
m.view[0] = 0x58
out = "wrote" """)
        self.assertIn("mapped", done.stdout)
        self.assertNotIn("wrote", done.stdout)
        # SIGSEGV (under ASan: its SEGV report, then an abort)
        self.assertTrue(done.returncode == -11 or
                        (done.returncode != 0 and "SEGV" in done.stderr),
                        f"{done.returncode}: {done.stderr[-2000:]}")
        self.assertEqual(bytes(h.retrieve(key).view), b"precious")


class SGLangCalls(CompatCase):
    """The calls of Maru's maru_sglang MaruStorage (at 4fd29ce), shaped as
    it makes them: set's store(key, data=memoryview), batch_set_v1's
    batch_store of memoryviews of ctypes arrays, batch_get_v1's
    from_buffer + memmove into host memory, in another process."""

    def test_set_and_batch_set_v1_then_batch_get_v1_elsewhere(self) -> None:
        h = self.maru(chunk_size_bytes=4 * KiB)
        k1, k2, k3 = self.k("set"), self.k("v1-mla"), self.k("v1-kv")
        self.assertTrue(h.store(k1, data=memoryview(bytearray(b"s" * 100))))
        host = (ctypes.c_char * 64)(*([b"m"] * 64))
        mla = memoryview((ctypes.c_char * 64).from_address(
            ctypes.addressof(host)))  # batch_set_v1, 1 chunk per key
        kv = (ctypes.c_char * 96)()  # K+V concatenated
        ctypes.memset(kv, ord("k"), 48)
        ctypes.memset(ctypes.addressof(kv) + 48, ord("v"), 48)
        self.assertEqual(h.batch_store([k2, k3], [mla, memoryview(kv)]),
                         [True, True])
        self.assertEqual(h.allocator.num_allocated, 3)
        out = child(self.server.url, f"""
infos = h.batch_retrieve({[k1, k2, k3]!r})
out = []
for info in infos:
    src = ctypes.addressof(ctypes.c_char.from_buffer(info.view))
    dst = (ctypes.c_char * len(info.view))()
    ctypes.memmove(dst, src, len(info.view))
    out.append(dst.raw.decode())""")
        self.assertEqual(out, ["s" * 100, "m" * 64, "k" * 48 + "v" * 48])

    def test_data_larger_than_a_chunk_is_false_and_holds_nothing(
            self) -> None:
        h = self.maru(chunk_size_bytes=KiB)
        self.assertEqual(h.batch_store([self.k("big"), self.k("ok")],
                                       [b"x" * (KiB + 1), b"y"]),
                         [False, True])
        self.assertFalse(h.exists(self.k("big")))
        self.assertEqual(h.allocator.num_allocated, 1)
        with self.assertRaises(TypeError):
            h.store(self.k("neither"))


class Allocator(CompatCase):
    def test_num_allocated_follows_alloc_store_free_delete(self) -> None:
        h = self.maru(chunk_size_bytes=KiB)
        al = h.allocator
        pages = al.page_count
        self.assertEqual((al.num_allocated, al.num_free_pages), (0, pages))
        a = h.alloc(3)
        self.assertEqual(h.allocator.num_allocated, 1)
        h.free(a)
        self.assertEqual(h.allocator.num_allocated, 0)
        self.put(h, self.k("1"), b"one")
        self.assertEqual(h.allocator.num_allocated, 1)
        self.put(h, self.k("1"), b"dup")  # the duplicate's page freed
        self.assertEqual(h.allocator.num_allocated, 1)
        self.assertTrue(h.delete(self.k("1")))
        self.assertEqual((h.allocator.num_allocated,
                          h.allocator.num_free_pages), (0, pages))

    def test_a_batch_of_new_keys_and_another_handlers_counts_the_new(
            self) -> None:
        other = self.maru()
        taken = self.k("taken")
        self.put(other, taken, b"theirs")
        h = self.maru(chunk_size_bytes=KiB)
        handles = []
        for d in (b"new1", b"x", b"new2"):
            a = h.alloc(len(d))
            a.buf[:] = d
            handles.append(a)
        keys = [self.k("n1"), taken, self.k("n2")]
        self.assertEqual(h.batch_store(keys, handles), [True] * 3)
        self.assertEqual(h.allocator.num_allocated, 2, "the loser's page "
                         "was freed")
        self.assertEqual(bytes(h.retrieve(taken).view), b"theirs")
        # the pages kept are the ones holding n1, n2: deleting frees them
        self.assertTrue(h.delete(keys[0]))
        self.assertTrue(h.delete(keys[2]))
        self.assertEqual(h.allocator.num_allocated, 0)

    def test_owned_region_manager_and_maru_stats_keys(self) -> None:
        h = self.maru(chunk_size_bytes=KiB, pool_size=KiB)
        orm = h.owned_region_manager
        first = orm.get_first_region_id()
        self.assertEqual(first, h.pool_handle.region)
        self.assertTrue(orm.is_owned(first))
        pages = h.allocator.page_count
        for i in range(pages + 1):  # one more: a second region
            self.put(h, self.k(str(i)), b"f")
        st = orm.get_stats()
        self.assertEqual(st["num_regions"], 2)
        self.assertEqual(orm.get_region_ids()[0], first, "first stays")
        self.assertEqual(st["total_allocated_pages"], pages + 1)
        self.assertEqual(st["total_free_pages"],
                         st["total_page_count"] - pages - 1)
        self.assertEqual(st["total_pool_size"],
                         sum(r["pool_size"] for r in st["regions"]))
        r0 = st["regions"][0]
        self.assertEqual((r0["region_id"], r0["free_pages"],
                          r0["allocated_pages"], r0["utilization"]),
                         (first, 0, pages, 1.0))
        full = h.get_stats()
        self.assertEqual(full["allocator"], full["store_regions"]
                         ["regions"][0])
        self.assertEqual(full["store_regions"]["registered_pages"],
                         pages + 1)
        h.close()
        self.assertIsNone(h.owned_region_manager)
        self.assertIsNone(h.allocator)

    def test_what_maru_host_tensor_allocator_reads(self) -> None:
        total = 3 * 4096 + 100  # numel * element size: any size
        cfg = MaruConfig(server_url=self.server.url, pool_size=total,
                         chunk_size_bytes=total, auto_connect=False)
        h = MaruHandler(cfg)
        self.assertTrue(h.connect())
        self.addCleanup(h.close)
        rid = h.owned_region_manager.get_first_region_id()
        buf = h._mapper.get_buffer_view(rid, 0, total)
        base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        arr = (ctypes.c_byte * total).from_buffer(buf)
        arr[0], arr[total - 1] = 7, 9
        self.assertEqual(base, h.pool_handle.addr)
        out = child(self.server.url, f"""
v = h.get_buffer_view({rid}, 0, {total})
out = [v[0], v[{total} - 1], v.readonly]""")
        self.assertEqual(out, [7, 9, True])


class EnvOverrides(unittest.TestCase):
    def env(self, name: str, value: str) -> None:
        old = os.environ.get(name)
        os.environ[name] = value
        self.addCleanup(lambda: os.environ.pop(name) if old is None
                        else os.environ.__setitem__(name, old))

    def test_maru_eager_map_and_maru_stat_are_parsed_as_maru_does(
            self) -> None:
        for raw, want in (("0", False), (" Off ", False), ("yes", True),
                          ("TRUE", True)):
            self.env("MARU_EAGER_MAP", raw)
            self.env("MARU_STAT", raw)
            c = MaruConfig(eager_map=not want, enable_stats=not want)
            self.assertEqual((c.eager_map, c.enable_stats), (want, want))
        self.env("MARU_STAT", "1")
        self.env("MARU_EAGER_MAP", "maybe")
        with self.assertRaisesRegex(ValueError, "MARU_EAGER_MAP must be "
                                    "one of: 1/0, true/false, yes/no, "
                                    "on/off"):
            MaruConfig()
        self.env("MARU_EAGER_MAP", "1")
        self.env("MARU_STAT", "")
        with self.assertRaisesRegex(ValueError, "MARU_STAT must be"):
            MaruConfig()


class SecretFromTheEnvironment(unittest.TestCase):
    """A tcp metaserver's secret, for a MaruConfig that cannot carry one:
    CXLP_SECRET_FILE (libcxlpool reads it at connect)."""

    def setUp(self) -> None:
        d = tempfile.mkdtemp(prefix="cxlp-secret-")
        self.addCleanup(shutil.rmtree, d)
        self.secret = os.path.join(d, "secret")
        self.wrong = os.path.join(d, "wrong")
        for path, text in ((self.secret, "maru secret\n"),
                           (self.wrong, "not it\n")):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600),
                      "w") as f:
                f.write(text)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"tcp://127.0.0.1:{port}"
        self.server = cxlp_test.MetaServer(
            ["--listen", self.url, "--secret-file", self.secret]).start()
        self.addCleanup(self.server.stop)
        self.addCleanup(os.environ.pop, "CXLP_SECRET_FILE", None)

    def connects(self, path: "str | None") -> bool:
        if path is None:
            os.environ.pop("CXLP_SECRET_FILE", None)
        else:
            os.environ["CXLP_SECRET_FILE"] = path
        h = MaruHandler(MaruConfig(server_url=self.url, pool_size=2 * MiB,
                                   chunk_size_bytes=KiB,
                                   auto_connect=False))
        try:
            return h.connect()
        finally:
            h.close()

    def test_set_missing_wrong_unreadable(self) -> None:
        self.assertFalse(self.connects(None))
        self.assertTrue(self.connects(self.secret))
        self.assertFalse(self.connects(self.wrong))
        self.assertFalse(self.connects(self.secret + ".missing"))
        self.assertFalse(self.connects(os.path.dirname(self.secret)))
        with self.assertRaisesRegex(cxlpool.CxlpError, "CXLP_SECRET_FILE="):
            os.environ["CXLP_SECRET_FILE"] = self.secret + ".missing"
            cxlpool.Handler(cxlpool.Config(server_url=self.url)).connect()


if __name__ == "__main__":
    cxlp_test.main()
