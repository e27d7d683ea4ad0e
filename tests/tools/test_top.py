"""pool-inspect top under tmux: against a metaserver with a workload, the
screen shows the figures (keys, sessions, the hit ratio of the lookups
the server answered, ops/s), refreshes, and q quits.

    test_top.py METASERVER POOL_INSPECT SRCDIR
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

METASERVER = POOL_INSPECT = SRCDIR = ""


SOCK = f"cxlp-top-{os.getpid()}"  # a tmux server of this test's own


def tmux(*args: str) -> str:
    out = subprocess.run(["tmux", "-L", SOCK, *args], capture_output=True,
                         text=True, timeout=30, env=cxlp_test.native_env())
    return out.stdout


class Top(unittest.TestCase):
    def setUp(self) -> None:
        if shutil.which("tmux") is None:
            raise unittest.SkipTest("tmux is not installed")
        self.dir = tempfile.mkdtemp(prefix="cxlp-top-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.pool = f"/dev/shm/cxlp-top-{os.getpid()}.pool"
        self.url = f"ipc://{self.dir}/ms.sock"
        self.ms = subprocess.Popen([METASERVER, "--pool", self.pool,
                                    "--size", "64M", "--listen", self.url],
                                   stderr=subprocess.PIPE, text=True,
                                   env=cxlp_test.native_env())
        self.addCleanup(self.stop_server)
        assert self.ms.stderr is not None
        for line in self.ms.stderr:
            if "ready" in line:
                break
        self.session = "top"
        self.addCleanup(lambda: tmux("kill-server"))

    def stop_server(self) -> None:
        self.ms.terminate()
        self.ms.wait(timeout=30)
        if os.path.exists(self.pool):
            os.unlink(self.pool)

    def screen(self) -> str:
        return tmux("capture-pane", "-p", "-t", self.session)

    def wait_for(self, pattern: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if re.search(pattern, text):
                return text
            time.sleep(0.1)
        self.fail(f"no {pattern!r} on the screen:\n{text}")

    def test_the_screen_shows_the_figures_and_refreshes(self) -> None:
        cxlpool = cxlp_test.cxlpool
        tmux("new-session", "-d", "-s", self.session, "-x", "120", "-y",
             "30", f"{POOL_INSPECT} top --server {self.url} "
             "--interval-ms 300")
        self.wait_for(r"cxlpool top")
        cfg = cxlpool.Config(server_url=self.url, page_size=65536,
                             region_size=2 * 1024 * 1024,
                             direct_reads=False)
        with cxlpool.Handler(cfg) as h:
            keys = [f"top-{i}".encode() for i in range(20)]
            pages = h.alloc_pages(20)
            h.batch_store(keys, pages, [8] * 20)
            h.batch_retrieve(keys[:15] + [b"no-1", b"no-2", b"no-3",
                                          b"no-4", b"no-5"])
            first = self.wait_for(r"keys 20  sessions 1")
            self.wait_for(r"hit ratio 75\.0%")
            n1 = int(re.search(r"refresh (\d+)", first).group(1))
            later = self.wait_for(rf"refresh (?!{n1}\b)\d+")
            self.assertRegex(later, r"ops/s .*register")
            self.assertRegex(later, r"pool 64\.0 MiB")
        tmux("send-keys", "-t", self.session, "q")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.alive():
            time.sleep(0.1)
        self.assertFalse(self.alive(), "q did not quit")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-L", SOCK, "has-session", "-t",
                               self.session], capture_output=True,
                              env=cxlp_test.native_env()).returncode == 0


if __name__ == "__main__":
    METASERVER, POOL_INSPECT, SRCDIR = sys.argv[1:4]
    sys.path.insert(0, os.path.join(SRCDIR, "tests", "python"))
    import cxlp_test  # noqa: E402  (puts the binding on sys.path)

    cxlp_test.reexec_under_asan()
    unittest.main(argv=sys.argv[:1])
