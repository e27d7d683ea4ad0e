"""cxlpool.maru: Maru's handler surface on cxlpool (issue 19), one test
per item of it, two processes where it matters, the deliberate
differences pinned, and a Maru-style allocator adapter (every page of
every region wrapped once, addressed as region << 32 | page) that stores
and loads through it."""

from __future__ import annotations

import json
import re
import time
import uuid

import cxlp_test
from cxlp_test import KiB, MiB, ServerTestCase

import cxlpool
from cxlpool.maru import (AllocHandle, MaruConfig, MaruHandler, MemoryInfo,
                          pool_key)

CHUNK = 64 * KiB

# a child: MaruHandler on argv[1]; runs argv[2] (python) with h bound;
# prints what it assigns to `out` as JSON
CHILD = r"""
import json, sys
from cxlpool.maru import MaruConfig, MaruHandler, AllocHandle
cfg = MaruConfig(server_url=sys.argv[1], chunk_size_bytes=64 << 10,
                 pool_size=2 << 20)
with MaruHandler(cfg) as h:
    out = None
    exec(sys.argv[2])
    print(json.dumps(out))
"""


def child(url: str, code: str) -> object:
    done = cxlp_test.run_python(CHILD, url, code)
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


class MaruTestCase(ServerTestCase):
    def cfg(self, **kw: object) -> MaruConfig:
        args: dict = dict(server_url=self.server.url,
                          chunk_size_bytes=CHUNK, pool_size=2 * MiB)
        args.update(kw)
        return MaruConfig(**args)  # type: ignore[arg-type]

    def maru(self, **kw: object) -> MaruHandler:
        h = MaruHandler(self.cfg(**kw))
        self.assertTrue(h.connect())
        self.addCleanup(h.close)
        return h

    def put(self, h: MaruHandler, key: str, data: bytes) -> AllocHandle:
        a = h.alloc(len(data))
        a.buf[:] = data
        self.assertTrue(h.store(key, a))
        return a

    def k(self, tag: str) -> str:
        return f"{self.id()}@{tag}"


class Config(MaruTestCase):
    def test_maru_config_has_maru_defaults(self) -> None:
        c = MaruConfig()
        self.assertEqual(c.server_url, "tcp://localhost:5555")
        self.assertEqual(str(uuid.UUID(c.instance_id)), c.instance_id)
        self.assertNotEqual(MaruConfig().instance_id, c.instance_id)
        self.assertEqual((c.pool_size, c.chunk_size_bytes),
                         (100 * MiB, 1 * MiB))
        self.assertEqual((c.auto_connect, c.timeout_ms, c.auto_expand,
                          c.expand_size), (True, 2000, True, None))
        self.assertEqual(c.to_cxlpool().page_size, 1 * MiB)

    def test_maru_config_refuses_what_maru_refuses_and_63_b(self) -> None:
        with self.assertRaisesRegex(ValueError, r"must be >= chunk_size"):
            MaruConfig(pool_size=CHUNK, chunk_size_bytes=2 * CHUNK)
        with self.assertRaisesRegex(ValueError, "must be positive"):
            MaruConfig(chunk_size_bytes=0)
        with self.assertRaisesRegex(ValueError,
                                    "requires auto_expand=True"):
            MaruConfig(auto_expand=False, expand_size=4 * MiB)
        with self.assertRaises(TypeError):
            MaruConfig(no_such_field=1)  # type: ignore[call-arg]
        with self.assertRaisesRegex(ValueError, "at least 64 bytes"):
            MaruConfig(chunk_size_bytes=63)
        for size in (64, 1000, 1024, 4096 + 64):  # issue 29
            self.assertEqual(MaruConfig(chunk_size_bytes=size)
                             .to_cxlpool().page_size, size)

    def test_config_has_every_c_setting(self) -> None:
        header = (cxlp_test.SRCDIR / "include" / "cxlpool.h").read_text()
        setters = set(re.findall(r"cxlp_config_set_(\w+)\(", header))
        fields = set(cxlpool.Config.__dataclass_fields__)
        fields.add("server")  # server_url
        self.assertEqual(setters - fields, set())

    def test_a_page_over_64_mib_is_accepted_with_a_larger_region(self
                                                                 ) -> None:
        cfg = cxlpool.Config(page_size=80 * MiB, region_size=320 * MiB,
                             secret="s3cret")
        with cfg.to_c():
            pass  # refused before the fix: page applied before region
        small = cxlpool.Config(page_size=4096, region_size=8192)
        with small.to_c():
            pass


class Lifecycle(MaruTestCase):
    def test_connect_returns_false_and_never_raises(self) -> None:
        h = MaruHandler(self.cfg(server_url="ipc:///nonexistent/x.sock",
                                 timeout_ms=200))
        self.assertFalse(h.connect())
        self.assertFalse(h.connected)
        self.assertFalse(h.healthcheck())
        with self.assertRaises(RuntimeError):
            h.alloc(1)

    def test_context_manager_connects_and_closes(self) -> None:
        with MaruHandler(self.cfg()) as h:
            self.assertTrue(h.connected)
            self.assertTrue(h.healthcheck())
            a = h.alloc(10)
        self.assertFalse(h.connected)
        self.assertFalse(h.healthcheck())
        with self.assertRaises(ValueError):
            a.buf[0] = 1  # released at close
        idle = MaruHandler(self.cfg(auto_connect=False))
        with idle:
            self.assertFalse(idle.connected)

    def test_properties(self) -> None:
        h = self.maru(instance_id="rank-3")
        self.assertEqual(h.instance_id, "rank-3")
        self.assertEqual(h.get_chunk_size(), CHUNK)
        first = h.get_owned_region_ids()[0]
        self.assertEqual(h.pool_handle.region, first)
        self.assertEqual(h.allocator.page_count, 2 * MiB // CHUNK)
        self.assertEqual(h.allocator.chunk_size, CHUNK)


class Pages(MaruTestCase):
    def test_alloc_gives_a_writable_view_of_exactly_size_at_the_page(
            self) -> None:
        h = self.maru()
        a = h.alloc(1000)
        self.assertEqual(len(a.buf), 1000)
        self.assertFalse(a.buf.readonly)
        self.assertEqual(a.size, 1000)
        self.assertIn(a.region_id, h.get_owned_region_ids())
        page = h.get_buffer_view(a.region_id, a.page_index * CHUNK, 1000)
        self.assertEqual(cxlpool.address_of(page),
                         cxlpool.address_of(a.buf), "no copy")
        with self.assertRaises(ValueError):
            h.alloc(CHUNK + 1)

    def test_alloc_in_an_exhausted_pool_raises_value_error(self) -> None:
        h = self.maru(auto_expand=False)
        pages = [h.alloc(1) for _ in range(2 * MiB // CHUNK)]
        with self.assertRaisesRegex(ValueError, "exhausted"):
            h.alloc(1)
        h.free(pages[0])
        h.alloc(1)

    def test_free_gives_the_page_back_and_a_second_free_is_harmless(
            self) -> None:
        h = self.maru(auto_expand=False)
        a = h.alloc(10)
        h.free(a)
        with self.assertRaises(ValueError):
            a.buf[0] = 1
        h.free(a)  # no raise
        b = h.alloc(10)
        self.assertEqual((b.region_id, b.page_index),
                         (a.region_id, a.page_index), "the page came back")
        self.assertFalse(h.store("", b), "empty key: not stored")
        h.free(b)  # after a failed store: no raise

    def test_free_of_a_stored_page_is_refused(self) -> None:
        h = self.maru()
        a = self.put(h, self.k("kept"), b"kept bytes")
        with self.assertLogs("cxlpool.maru", "WARNING"):
            h.free(a)
        again = h.alloc(10)
        self.assertNotEqual((again.region_id, again.page_index),
                            (a.region_id, a.page_index))
        self.assertEqual(bytes(h.retrieve(self.k("kept")).view),
                         b"kept bytes")

    def test_a_caller_built_handle_stores_the_page(self) -> None:
        h = self.maru()
        a = h.alloc(CHUNK)
        mine = AllocHandle(buf=h.get_buffer_view(a.region_id, a.page_index *
                                                 CHUNK, 5),
                           _region_id=a.region_id,
                           _page_index=a.page_index, _size=5)
        mine.buf[:] = b"built"
        self.assertTrue(h.store(self.k("b"), mine))
        self.assertEqual(bytes(h.retrieve(self.k("b")).view), b"built")
        self.assertFalse(h.store(self.k("c"), mine), "consumed already")


class Store(MaruTestCase):
    def test_store_consumes_the_handle(self) -> None:
        h = self.maru()
        a = self.put(h, self.k("x"), b"abc")
        with self.assertRaises(ValueError):
            a.buf[0] = 1
        self.assertTrue(h.exists(self.k("x")))

    def test_a_lost_register_race_returns_true_and_frees_the_page(
            self) -> None:
        key = self.k("race")
        child(self.server.url, f"""
a = h.alloc(5); a.buf[:] = b"first"; out = h.store({key!r}, a)""")
        h = self.maru()
        before = h.handler.stats().pages_free
        a = h.alloc(6)
        a.buf[:] = b"second"
        self.assertTrue(h.store(key, a))
        self.assertEqual(h.handler.stats().pages_free, before)
        self.assertEqual(bytes(h.retrieve(key).view), b"first")

    def test_batch_store_splits_past_batch_max(self) -> None:
        h = self.maru(chunk_size_bytes=4096, pool_size=32 * MiB)
        n = cxlpool.BATCH_MAX + 5
        keys = [self.k(str(i)) for i in range(n)]
        handles = []
        for i in range(n):
            a = h.alloc(4)
            a.buf[:] = i.to_bytes(4, "little")
            handles.append(a)
        self.assertEqual(h.batch_store(keys, handles), [True] * n)
        got = h.batch_retrieve(keys + [self.k("none")])
        self.assertIsNone(got[-1])
        self.assertEqual([int.from_bytes(g.view, "little")
                          for g in got[:-1]], list(range(n)))
        self.assertEqual(h.batch_exists(keys[-3:] + ["nope"]),
                         [True, True, True, False])
        # batch_pin stops at the first miss, in the first of two batches
        pinned = h.batch_pin([keys[0], self.k("gap")] + keys[1:])
        self.assertEqual(pinned, [True] + [False] * n)
        self.assertEqual(h.batch_unpin(keys[:2]), [True, False])
        with self.assertRaises(ValueError):
            h.batch_store(keys[:2], handles[:1])


class Reads(MaruTestCase):
    def test_retrieve_gives_a_zero_copy_memory_info(self) -> None:
        h = self.maru()
        a = h.alloc(7)
        a.buf[:] = b"payload"
        addr = cxlpool.address_of(a.buf)
        loc = (a.region_id, a.page_index)
        self.assertTrue(h.store(self.k("r"), a))
        m = h.retrieve(self.k("r"))
        self.assertIsInstance(m, MemoryInfo)
        self.assertEqual(bytes(m.view), b"payload")
        self.assertEqual(len(m.view), 7)
        self.assertEqual((m.region_id, m.page_index), loc)
        self.assertEqual(cxlpool.address_of(m.view), addr, "no copy")
        self.assertFalse(m.view.readonly, "says writable (issue 29)")
        self.assertIsNone(h.retrieve(self.k("missing")))

    def test_another_process_reads_it_read_only_at_the_same_place(
            self) -> None:
        key = self.k("x")
        out = child(self.server.url, f"""
a = h.alloc(9); a.buf[:] = b"from kid!"
out = [h.store({key!r}, a), a.region_id, a.page_index]""")
        self.assertTrue(out[0])
        h = self.maru()
        m = h.retrieve(key)
        self.assertEqual(bytes(m.view), b"from kid!")
        self.assertEqual([m.region_id, m.page_index], out[1:])
        v = h.get_buffer_view(m.region_id, m.page_index * CHUNK, 9)
        self.assertTrue(v.readonly, "a foreign region is read-only")
        self.assertEqual(bytes(v), b"from kid!")
        self.assertEqual(h.get_region_page_count(m.region_id),
                         2 * MiB // CHUNK)
        self.assertNotIn(m.region_id, h.get_owned_region_ids())

    def test_keys_longer_than_key_max_work_across_processes(self) -> None:
        key = "L" * (cxlpool.KEY_MAX + 500)
        out = child(self.server.url, f"""
a = h.alloc(4); a.buf[:] = b"long"; out = h.store({key!r}, a)""")
        self.assertTrue(out)
        h = self.maru()
        self.assertEqual(bytes(h.retrieve(key).view), b"long")
        self.assertFalse(h.exists(key[:-1] + "M"))
        self.assertEqual(len(pool_key(key)), cxlpool.KEY_MAX)

    def test_buffer_view_and_page_count_of_unknown_regions_are_none(
            self) -> None:
        h = self.maru()
        self.assertIsNone(h.get_buffer_view(99999, 0, 10))
        self.assertIsNone(h.get_region_page_count(99999))
        own = h.get_owned_region_ids()[0]
        self.assertIsNone(h.get_buffer_view(own, 2 * MiB - 5, 10))
        self.assertEqual(h.get_region_page_count(own), 2 * MiB // CHUNK)


class PinsAndDeletes(MaruTestCase):
    def test_pin_unpin_and_delete(self) -> None:
        h = self.maru()
        key = self.k("p")
        self.put(h, key, b"v")
        self.assertTrue(h.pin(key))
        self.assertFalse(h.delete(key), "pinned")
        self.assertTrue(h.unpin(key))
        self.assertFalse(h.unpin(key), "no pin left")
        self.assertFalse(h.pin(self.k("none")))
        self.assertTrue(h.delete(key))
        self.assertFalse(h.delete(key))
        self.assertFalse(h.exists(key))

    def test_batch_pin_stops_at_the_first_miss(self) -> None:
        h = self.maru()
        keys = [self.k(str(i)) for i in range(4)]
        for k in keys:
            self.put(h, k, b"v")
        got = h.batch_pin([keys[0], keys[1], self.k("gap"), keys[2]])
        self.assertEqual(got, [True, True, False, False])
        self.assertEqual(h.batch_unpin([keys[0], keys[1], keys[2]]),
                         [True, True, False])

    def test_a_live_handlers_key_is_deleted_only_by_its_owner(self) -> None:
        key = self.k("own")
        h = self.maru()
        self.put(h, key, b"mine")
        out = child(self.server.url, f"out = h.delete({key!r})")
        self.assertFalse(out, "another live handler's key")
        self.assertTrue(h.exists(key))

    def test_pins_die_with_their_session(self) -> None:
        key = self.k("pinned")
        h = self.maru()
        self.put(h, key, b"v")
        self.assertTrue(child(self.server.url, f"out = h.pin({key!r})"))
        self.assertTrue(h.delete(key), "the child's pin went with it")


class StatsAndRegions(MaruTestCase):
    def test_get_stats_has_maru_sections(self) -> None:
        h = self.maru()
        self.put(h, self.k("s"), b"12345")
        st = h.get_stats()
        self.assertGreaterEqual(st["kv_manager"]["total_entries"], 1)
        self.assertGreaterEqual(st["kv_manager"]["total_size"], 5)
        self.assertGreaterEqual(st["allocation_manager"]["active_clients"],
                                1)
        regions = st["store_regions"]["regions"]
        self.assertEqual(regions[0]["page_count"], 2 * MiB // CHUNK)
        self.assertEqual(st["allocator"], regions[0])
        self.assertEqual(st["store_regions"]["registered_pages"], 1)

    def test_on_region_added_replays_then_reports_expansions(self) -> None:
        h = self.maru()
        seen: list = []
        h.set_on_region_added(lambda r, n: seen.append((r, n)))
        self.assertEqual(seen, [(h.get_owned_region_ids()[0],
                                 2 * MiB // CHUNK)])
        pages = [h.alloc(1) for _ in range(2 * MiB // CHUNK)]
        self.assertEqual(len(seen), 1)
        extra = h.alloc(1)  # the next region
        self.assertEqual(len(seen), 2, "reported before alloc returned")
        self.assertEqual(seen[1][0], extra.region_id)
        self.assertEqual(sorted(h.get_owned_region_ids()),
                         sorted(r for r, _ in seen))
        key = self.k("foreign")
        child(self.server.url, f"""
a = h.alloc(1); a.buf[:] = b"f"; out = h.store({key!r}, a)""")
        m = h.retrieve(key)
        self.assertNotIn(m.region_id, h.get_owned_region_ids())
        self.assertEqual(len(seen), 2, "a foreign region is not added")
        h.set_on_region_added(None)
        del pages

    def test_region_hooks_and_other_listeners_do_not_clobber(self) -> None:
        h = self.maru()
        seen: list = []
        other: list = []
        tok = h.handler.add_region_listener(
            lambda ev, i: other.append((ev, i.region)))
        h.handler.set_region_callback(lambda ev, i: other.append("cb"))
        h.set_on_region_added(lambda r, n: seen.append(r))
        own = h.get_owned_region_ids()[0]
        self.assertEqual(seen, [own])
        self.assertEqual(other, [("mapped", own), "cb"], "not replayed "
                         "to again")
        h.set_on_region_added(None)  # the others keep theirs
        pages = [h.alloc(1) for _ in range(2 * MiB // CHUNK + 1)]
        self.assertEqual(len(other), 4, "both told of the new region")
        self.assertEqual(seen, [own])
        h.handler.remove_region_listener(tok)
        del pages

    def test_on_region_removed_tells_of_a_region_that_goes(self) -> None:
        h = self.maru(cxlpool_options={"reserve_regions": 0})
        removed: list = []
        h.set_on_region_removed(lambda r, n: removed.append((r, n)))
        first = h.get_owned_region_ids()[0]
        pages = [h.alloc(1) for _ in range(2 * MiB // CHUNK + 1)]
        second = pages[-1].region_id
        self.assertNotEqual(second, first)
        h.free(pages.pop())  # the second region is empty: given back
        for _ in range(500):
            if removed:
                break
            time.sleep(0.01)
        self.assertEqual(removed, [(second, 2 * MiB // CHUNK)])
        h.close()
        self.assertEqual(removed[1:], [(first, 2 * MiB // CHUNK)],
                         "and at close")

    def test_page_index_and_count_use_the_owners_page_size(self) -> None:
        key = self.k("big")
        code = (
            "import json, sys\n"
            "from cxlpool.maru import MaruConfig, MaruHandler\n"
            "cfg = MaruConfig(server_url=sys.argv[1], "
            "chunk_size_bytes=128 << 10, pool_size=2 << 20)\n"
            "with MaruHandler(cfg) as h:\n"
            "    a, b = h.alloc(1), h.alloc(2); b.buf[:] = b'ok'\n"
            "    print(json.dumps([h.store(sys.argv[2], b), b.region_id, "
            "b.page_index]))\n")
        done = cxlp_test.run_python(code, self.server.url, key)
        self.assertEqual(done.returncode, 0, done.stderr)
        ok, region, index = json.loads(done.stdout.strip().splitlines()[-1])
        self.assertTrue(ok)
        h = self.maru()  # 64 KiB chunks
        m = h.retrieve(key)
        self.assertEqual((m.region_id, m.page_index), (region, index))
        self.assertEqual(h.get_region_page_count(region),
                         2 * MiB // (128 * KiB))
        self.assertEqual(h.handler.region_view(region).page_size,
                         128 * KiB)


class AllocatorAdapter:
    """Maru-style: every page of every own region wrapped once, by
    set_on_region_added, and addressed as region << 32 | page."""

    def __init__(self, h: MaruHandler) -> None:
        self.h = h
        self.chunk = h.get_chunk_size()
        self.pages: dict = {}
        h.set_on_region_added(self._add)

    def _add(self, region: int, count: int) -> None:
        for i in range(count):
            self.pages[region << 32 | i] = self.h.get_buffer_view(
                region, i * self.chunk, self.chunk)

    def store(self, key: str, data: bytes) -> bool:
        a = self.h.alloc(len(data))
        addr = a.region_id << 32 | a.page_index
        self.pages[addr][:len(data)] = data  # through the adapter's view
        return self.h.store(key, AllocHandle(
            buf=self.pages[addr][:len(data)], _region_id=a.region_id,
            _page_index=a.page_index, _size=len(data)))


class Adapter(MaruTestCase):
    def test_an_allocator_adapter_stores_and_another_process_loads(
            self) -> None:
        h = self.maru(pool_size=1 * MiB, expand_size=1 * MiB)
        ad = AllocatorAdapter(h)
        per = h.get_region_page_count(h.get_owned_region_ids()[0])
        self.assertEqual(len(ad.pages), per)
        keys = [self.k(str(i)) for i in range(per + 3)]
        for i, k in enumerate(keys):
            self.assertTrue(ad.store(k, f"chunk {i}".encode()))
        self.assertEqual(len(ad.pages), 2 * per, "the second region too")
        out = child(self.server.url, f"""
got = h.batch_retrieve({keys!r})
out = [bytes(m.view).decode() for m in got]""")
        self.assertEqual(out, [f"chunk {i}" for i in range(len(keys))])
        m = h.retrieve(keys[-1])
        addr = m.region_id << 32 | m.page_index
        self.assertEqual(cxlpool.address_of(ad.pages[addr]),
                         cxlpool.address_of(m.view), "the adapter's page")


class Shim(MaruTestCase):
    def test_import_maru_resolves_to_cxlpool(self) -> None:
        shim = cxlp_test.PYDIR / "maru_shim"
        code = (
            "import sys; sys.path.insert(0, sys.argv[1])\n"
            "from maru import MaruConfig, MaruHandler\n"
            "from maru_handler.memory import AllocHandle, MemoryInfo\n"
            "import cxlpool.maru as m\n"
            "assert MaruHandler is m.MaruHandler and AllocHandle is "
            "m.AllocHandle and MemoryInfo is m.MemoryInfo\n"
            "cfg = MaruConfig(server_url=sys.argv[2], "
            "chunk_size_bytes=65536, pool_size=2 << 20)\n"
            "with MaruHandler(cfg) as h:\n"
            "    a = h.alloc(2); a.buf[:] = b'ok'\n"
            "    print(h.store('shim-key', a), bytes(h.retrieve("
            "'shim-key').view).decode())\n")
        done = cxlp_test.run_python(code, str(shim), self.server.url)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.split(), ["True", "ok"])

    def test_the_shim_readme_its_package_points_to_exists(self) -> None:
        shim = cxlp_test.PYDIR / "maru_shim"
        doc = (shim / "maru_handler" / "__init__.py").read_text()
        self.assertIn("maru_shim/README.md", doc)
        self.assertIn("pip install", (shim / "README.md").read_text())


if __name__ == "__main__":
    cxlp_test.main()
