"""Python processes sharing one pool: round trips both ways, and the
batch_store race (first writer wins, every loser page freed)."""

from __future__ import annotations

import json
import subprocess
import sys

import cxlp_test
from cxlp_test import ServerTestCase

# A child that stores argv[3:] keys with value "<key>=<tag>" and reports.
STORE = r"""
import json, sys, cxlpool
url, tag, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
with cxlpool.Handler(cxlpool.Config(server_url=url, region_size=2 << 20,
                                    page_size=64 << 10)) as h:
    pages = [h.alloc() for _ in keys]
    vals = [f"{k}={tag}".encode() for k in keys]
    for p, v in zip(pages, vals):
        p.buf[:len(v)] = v
    stored = h.batch_store(keys, pages, [len(v) for v in vals])
    print(json.dumps({"stored": stored}))
"""

# A child that reads argv[2:] keys and prints their values (null: missing).
LOAD = r"""
import json, sys, cxlpool
url, keys = sys.argv[1], sys.argv[2:]
with cxlpool.Handler(cxlpool.Config(server_url=url, region_size=2 << 20,
                                    page_size=64 << 10)) as h:
    got = h.batch_retrieve(keys)
    print(json.dumps([bytes(v).decode() if isinstance(v, memoryview)
                      else type(v).__name__ for v in got]))
"""

# A racer: write one page per key filled with its id byte, say "ready",
# wait for "go" on stdin, batch_store, report its stats.
RACE = r"""
import json, sys, cxlpool
url, me, keys = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cfg = cxlpool.Config(server_url=url, region_size=2 << 20, page_size=4096)
with cxlpool.Handler(cfg) as h:
    pages = [h.alloc() for _ in keys]
    for p in pages:
        p.buf[:] = bytes([me]) * len(p.buf)
    print("ready", flush=True)
    sys.stdin.readline()
    stored = h.batch_store(keys, pages)
    st = h.stats()
    print(json.dumps({"stored": stored, "registered": st.pages_registered,
                      "allocated": st.pages_allocated,
                      "free": st.pages_free, "total": st.pages_total}))
"""


class TwoProcesses(ServerTestCase):
    def test_a_child_reads_what_the_parent_stored(self) -> None:
        h = self.handler()
        keys = [self.key(f"k{i}") for i in range(8)]
        pages = [h.alloc() for _ in keys]
        for k, p in zip(keys, pages):
            p.buf[:len(k)] = k
        self.assertEqual(h.batch_store(keys, pages, [len(k) for k in keys]),
                         [True] * 8)
        out = cxlp_test.run_python(LOAD, self.server.url,
                                   *[k.decode() for k in keys])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout), [k.decode() for k in keys])

    def test_the_parent_reads_what_a_child_stored(self) -> None:
        keys = [self.key(f"k{i}").decode() for i in range(8)]
        out = cxlp_test.run_python(STORE, self.server.url, "child", *keys)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["stored"], [True] * 8)
        # The child has closed: its region stays readable (its keys live).
        h = self.handler()
        got = h.batch_retrieve(keys)
        self.assertEqual([bytes(v).decode() for v in got],
                         [f"{k}=child" for k in keys])

    def test_a_missing_key_reads_as_not_found_in_the_child(self) -> None:
        out = cxlp_test.run_python(LOAD, self.server.url,
                                   self.key("missing").decode())
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout), ["NotFoundError"])


class BatchStoreRace(ServerTestCase):
    RACERS = 4
    KEYS = 64

    def race(self, keys: list) -> list:
        """Run RACERS children storing keys at once; their reports."""
        procs = [subprocess.Popen(
            [sys.executable, "-c", RACE, self.server.url, str(me), *keys],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=cxlp_test.child_env())
            for me in range(1, self.RACERS + 1)]
        for p in procs:
            line = p.stdout.readline()
            self.assertEqual(line, "ready\n", p.stderr.read()
                             if line == "" else line)
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        reports = []
        for p in procs:
            out, err = p.communicate(timeout=90)
            self.assertEqual(p.returncode, 0, err)
            reports.append(json.loads(out))
        return reports

    def test_one_writer_wins_each_key_and_losers_free_pages(self) -> None:
        keys = [self.key(f"k{i}").decode() for i in range(self.KEYS)]
        reports = self.race(keys)
        for r in reports:
            self.assertEqual(r["stored"], [True] * self.KEYS)
            # Loser pages were freed: nothing left allocated.
            self.assertEqual(r["allocated"], 0)
            self.assertEqual(r["free"] + r["registered"], r["total"])
        self.assertEqual(sum(r["registered"] for r in reports), self.KEYS)
        # Each key holds one racer's whole page, and each racer's count of
        # won keys is what it reported registered.
        h = self.handler()
        owners = []
        for view in h.batch_retrieve(keys):
            self.assertIsInstance(view, memoryview)
            data = bytes(view)
            self.assertEqual(len(data), 4096)
            self.assertEqual(data, data[:1] * len(data))
            owners.append(data[0])
        for me, r in enumerate(reports, start=1):
            self.assertEqual(owners.count(me), r["registered"])
        self.assertEqual(h.stats().keys, self.KEYS)


if __name__ == "__main__":
    cxlp_test.main()
