"""The metaserver's /metrics and /health (--metrics, metaserver/http.c,
metrics.c) scraped during a workload, and the handler's own counters
(cxlp_counters, Handler.counters / counters_text)."""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.request
from typing import Dict, Tuple

import cxlp_test
from cxlp_test import ServerTestCase, cxlpool

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*='
                    r'"(?:[^"\\]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*='
                    r'"(?:[^"\\]|\\.)*")*)\})? (-?[0-9.e+-]+|\+Inf|NaN)$')
META = re.compile(r'^# (HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|TYPE '
                  r'[a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram))$')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PORT = free_port()


def parse(text: str) -> Dict[Tuple[str, str], float]:
    """Every line of a Prometheus text exposition, checked; the samples
    by (name, labels)."""
    out: Dict[Tuple[str, str], float] = {}
    types: Dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            if not META.match(line):
                raise AssertionError(f"bad comment line: {line!r}")
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ")
                types[name] = kind
            continue
        m = SAMPLE.match(line)
        if not m:
            raise AssertionError(f"bad sample line: {line!r}")
        name = m.group(1)
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name not in types and base not in types:
            raise AssertionError(f"{name}: no TYPE line before it")
        key = (name, m.group(3) or "")
        if key in out:
            raise AssertionError(f"{key}: twice")
        out[key] = float(m.group(4))
    return out


def growing(name: str) -> bool:
    """A sample that may only grow: a counter or a histogram's parts."""
    return name.endswith(("_total", "_bucket", "_count", "_sum"))


class Metrics(ServerTestCase):
    server_args = ["--metrics", f"http://127.0.0.1:{PORT}"]

    def get(self, path: str) -> Tuple[int, str]:
        try:
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{PORT}{path}", timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def scrape(self) -> Dict[Tuple[str, str], float]:
        status, text = self.get("/metrics")
        self.assertEqual(status, 200)
        return parse(text)

    def workload(self, h: "cxlpool.Handler", tag: str, n: int) -> None:
        keys = [self.key(f"{tag}{i}") for i in range(n)]
        pages = h.alloc_pages(n)
        for p in pages:
            p.buf[:4] = b"data"
        h.batch_store(keys, pages, [4] * n)
        h.batch_retrieve(keys)
        h.batch_exists(keys)

    def test_scrapes_during_a_workload_parse_and_counters_only_grow(
            self) -> None:
        h = self.handler()
        stop = threading.Event()

        def work() -> None:
            i = 0
            while not stop.is_set():
                self.workload(h, f"w{i}-", 16)
                i += 1

        t = threading.Thread(target=work)
        t.start()
        try:
            prev = self.scrape()
            for _ in range(5):
                cur = self.scrape()
                for key, v in prev.items():
                    if growing(key[0]):
                        self.assertGreaterEqual(cur.get(key, 0.0), v, key)
                prev = cur
        finally:
            stop.set()
            t.join()
        reg = prev[("cxlpool_requests_total", 'op="register",code="ok"')]
        self.assertGreater(reg, 0)
        self.assertGreater(prev[("cxlpool_request_duration_seconds_count",
                                 'op="register"')], 0)

    def test_values_match_pool_inspect_stats(self) -> None:
        h = self.handler()
        self.workload(h, "m", 32)
        inspect = os.environ.get("CXLP_POOL_INSPECT")
        if not inspect:
            raise unittest.SkipTest("CXLP_POOL_INSPECT is not set")
        out = subprocess.run([inspect, "stats", "--server", self.server.url,
                              "--json"], capture_output=True, text=True,
                             timeout=60, env=cxlp_test.native_env())
        self.assertEqual(out.returncode, 0, out.stderr)
        st = json.loads(out.stdout)["stats"]
        m = self.scrape()
        pairs = [("cxlpool_pool_bytes", "", "pool_bytes"),
                 ("cxlpool_data_bytes", "", "data_bytes"),
                 ("cxlpool_free_bytes", "", "free_bytes"),
                 ("cxlpool_largest_free_extent_bytes", "",
                  "largest_free_bytes"),
                 ("cxlpool_keys", "", "keys"),
                 ("cxlpool_value_bytes", "", "value_bytes"),
                 ("cxlpool_pins", "", "pins"),
                 ("cxlpool_index_slots", "", "index_slots"),
                 ("cxlpool_regions", 'state="orphan"', "orphan_regions"),
                 ("cxlpool_leases", "", "leases")]
        for name, labels, field in pairs:
            self.assertEqual(m[(name, labels)], st[field], name)
        self.assertEqual(m[("cxlpool_regions", 'state="owned"')] +
                         m[("cxlpool_regions", 'state="orphan"')],
                         st["regions"])
        self.assertEqual(m[("cxlpool_sessions", "")] + 1, st["sessions"],
                         "pool-inspect's own session is gone")
        # the totals since format are the pool's: as pool-inspect
        # summary reads them from the superblock
        out = subprocess.run([inspect, "summary", self.server.pool,
                              "--json"], capture_output=True, text=True,
                             timeout=60, env=cxlp_test.native_env())
        self.assertEqual(out.returncode, 0, out.stderr)
        summary = json.loads(out.stdout)
        tot = summary["evicted_since_format"]
        # no --elect: role single, and the pool's term (0) as the pool has
        # it (pool/owner.c note 3)
        self.assertEqual(m[("cxlpool_role", 'role="single"')], 1)
        self.assertEqual(m[("cxlpool_term", "")], summary["term"])
        for cause in ("pressure", "watermark", "orphan"):
            lab = f'cause="{cause}"'
            self.assertEqual(m[("cxlpool_evictions_since_format", lab)],
                             tot[cause]["keys"], cause)
            self.assertEqual(m[("cxlpool_evicted_bytes_since_format",
                                lab)], tot[cause]["bytes"], cause)

    def test_health_and_unknown_paths(self) -> None:
        status, text = self.get("/health")
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(text)["status"], "ok")
        status, _ = self.get("/nothing-here")
        self.assertEqual(status, 404)

    def test_idle_and_hostile_http_clients_do_not_stop_the_server(
            self) -> None:
        idle = []
        for _ in range(64):  # past the endpoint's 16 connections
            s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
            idle.append(s)
        try:
            h = self.handler()  # the metaserver still takes handlers
            self.workload(h, "idle", 4)
            self.assertEqual(h.healthcheck(), True)
            # the idle ones are dropped after the endpoint's idle time
            idle[0].settimeout(10)
            self.assertEqual(idle[0].recv(1), b"", "an idle client kept")
            status, _ = self.get("/metrics")  # served again
            self.assertEqual(status, 200)
        finally:
            for s in idle:
                s.close()
        with socket.create_connection(("127.0.0.1", PORT), timeout=10) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000)
            self.assertIn(b" 431 ", s.recv(200))
        with socket.create_connection(("127.0.0.1", PORT), timeout=10) as s:
            s.sendall(b"POST /metrics HTTP/1.1\r\n\r\n")
            self.assertIn(b" 405 ", s.recv(200))

    def test_head_answers_the_get_headers_without_a_body(self) -> None:
        for path, ctype in (("/metrics", b"version=0.0.4"),
                            ("/health", b"application/json")):
            with socket.create_connection(("127.0.0.1", PORT),
                                          timeout=10) as s:
                s.sendall(f"HEAD {path} HTTP/1.1\r\n\r\n".encode())
                got = b""
                while chunk := s.recv(4096):
                    got += chunk
            head, _, body = got.partition(b"\r\n\r\n")
            self.assertTrue(head.startswith(b"HTTP/1.1 200 "), got[:100])
            self.assertIn(ctype, head)
            self.assertIn(b"Content-Length: ", head)
            self.assertNotIn(b"Content-Length: 0\r", head + b"\r")
            self.assertEqual(body, b"", "a HEAD answer has no body")

    def test_handler_counters_count_this_handlers_calls(self) -> None:
        h = self.handler()
        c0 = h.counters()
        keys = [self.key(f"c{i}") for i in range(5)]
        pages = h.alloc_pages(5)
        for p in pages:
            p.buf[:3] = b"abc"
        h.batch_store(keys, pages, [3] * 5)
        got = h.batch_retrieve(keys + [self.key("nope")])
        self.assertEqual(len(got), 6)
        c = h.counters()
        self.assertEqual(c["keys_stored"] - c0["keys_stored"], 5)
        self.assertEqual(c["bytes_stored"] - c0["bytes_stored"], 15)
        self.assertEqual(c["lookups"] - c0["lookups"], 6)
        self.assertEqual(c["hits"] - c0["hits"], 5)
        self.assertEqual(c["misses"] - c0["misses"], 1)
        self.assertEqual(c["direct_reads"] - c0["direct_reads"], 6)
        text = h.counters_text(labels={"instance": 'a"b\nc'})
        text += h.counters_text(labels={"instance": "two"}, header=False)
        m = parse(text)
        self.assertEqual(m[("cxlpool_handler_hits_total",
                            'instance="a\\"b\\nc"')], c["hits"])
        self.assertEqual(m[("cxlpool_handler_hits_total",
                            'instance="two"')], c["hits"])
        self.assertEqual(text.count("# TYPE cxlpool_handler_hits_total"), 1)
        with self.assertRaises(ValueError):
            h.counters_text(labels={"bad-name": "x"})


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process pid has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http_get(port: int, path: str, rcvbuf: int = 0,
             pause: float = 0.0) -> Tuple[bytes, bytes]:
    """GET path over a raw socket (with SO_RCVBUF rcvbuf if set, and a
    pause before reading): the header block and the body, as received."""
    with socket.socket() as s:
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(10)
        s.connect(("127.0.0.1", port))
        s.sendall(f"GET {path} HTTP/1.1\r\n\r\n".encode())
        time.sleep(pause)
        got = b""
        while chunk := s.recv(1024 if rcvbuf else 65536):
            got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    return head, body


PORT2 = free_port()


class Descriptors(ServerTestCase):
    """The endpoint when the process is out of file descriptors, and a
    client that reads its answer slowly."""
    server_args = ["--metrics", f"http://127.0.0.1:{PORT2}"]

    def test_the_log_names_the_address_bound(self) -> None:
        self.assertTrue(any(f"bound=127.0.0.1:{PORT2}" in line
                            for line in self.server.log), self.server.log)

    def test_a_slow_reader_gets_the_whole_answer(self) -> None:
        # Where loopback buffers hold the whole answer (this VM's gVisor
        # kernel), this passes either way; on Linux a small receive
        # window fills the server's send buffer, which used to end the
        # answer early (http.c, send_all).
        head, body = http_get(PORT2, "/metrics", rcvbuf=2048, pause=0.5)
        m = re.search(rb"Content-Length: (\d+)", head)
        self.assertIsNotNone(m, head)
        self.assertEqual(len(body), int(m.group(1)), "a short body")

    def test_out_of_descriptors_it_waits_and_serves_again(self) -> None:
        assert self.server.proc is not None
        pid = self.server.proc.pid
        old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        held = []
        try:
            used = len(os.listdir(f"/proc/{pid}/fd"))
            resource.prlimit(pid, resource.RLIMIT_NOFILE,
                             (used + 2, old[1]))
            for _ in range(6):  # the server's last descriptors
                u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                u.connect(self.server.sock)
                held.append(u)
            time.sleep(0.3)
            c = socket.create_connection(("127.0.0.1", PORT2), timeout=10)
            held.append(c)
            c.sendall(b"GET /health HTTP/1.1\r\n\r\n")
            time.sleep(0.3)
            cpu0 = cpu_seconds(pid)
            time.sleep(2.0)
            spent = cpu_seconds(pid) - cpu0
            self.assertLess(spent, 0.5, f"{spent:.2f} s of CPU in 2 s "
                            "with no descriptor free: a spinning accept")
        finally:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
            for u in held:
                u.close()
        head, _ = http_get(PORT2, "/health")
        self.assertTrue(head.startswith(b"HTTP/1.1 200 "), head)


if __name__ == "__main__":
    cxlp_test.main()
