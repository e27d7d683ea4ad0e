"""The systemd unit (dist/systemd) and the metaserver's readiness
(metaserver/notify.c): systemd-analyze accepts the unit; READY=1 reaches
$NOTIFY_SOCKET, and --ready-file appears, only once the pool is open and
the endpoint accepts connections; STOPPING=1 and the file's removal at
the end. With --elect (an etcd the test starts on loopback ports;
skipped without one), a standby sends no READY=1 while it waits, only
STATUS= and EXTEND_TIMEOUT_USEC=, and sends it once it is elected (the
leader killed -9), when its endpoint accepts.

    test_notify.py METASERVER UNIT
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

METASERVER = ""
UNIT = ""
ETCD = os.environ.get("CXLP_ETCD") or "/usr/bin/etcd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_etcd(where: str) -> tuple[subprocess.Popen, str]:
    """One etcd member on free loopback ports, once it answers a read."""
    cport, pport = free_port(), free_port()
    curl, purl = f"http://127.0.0.1:{cport}", f"http://127.0.0.1:{pport}"
    log = open(os.path.join(where, "etcd.log"), "wb")
    proc = subprocess.Popen([ETCD, "--name", "n", "--data-dir",
                             os.path.join(where, "etcd"),
                             "--listen-client-urls", curl,
                             "--advertise-client-urls", curl,
                             "--listen-peer-urls", purl,
                             "--initial-advertise-peer-urls", purl,
                             "--initial-cluster", f"n={purl}"],
                            stdout=log, stderr=log)
    log.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            req = urllib.request.Request(curl + "/v3/kv/range",
                                         data=json.dumps({"key": "eA=="})
                                         .encode(), method="POST")
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status == 200:
                    return proc, f"etcd://127.0.0.1:{cport}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise AssertionError("etcd did not answer in 60 s")


def accepts(path: str) -> bool:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        c.connect(path)
        return True
    except OSError:
        return False
    finally:
        c.close()


class Notify(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="cxlp-notify-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_systemd_analyze_accepts_the_unit(self) -> None:
        tool = shutil.which("systemd-analyze")
        if tool is None:
            raise unittest.SkipTest("systemd-analyze is not installed")
        with open(UNIT) as f:
            text = f.read()
        exec_line = [l for l in text.splitlines()
                     if l.startswith("ExecStart=")]
        self.assertEqual(len(exec_line), 1)
        # the installed path need not exist here: point it at the build
        text = text.replace(exec_line[0].split()[0],
                            "ExecStart=" + os.path.abspath(METASERVER))
        unit = os.path.join(self.dir, "cxlpool-metaserver.service")
        with open(unit, "w") as f:
            f.write(text)
        # --man=no: the man page is not installed where the test runs
        out = subprocess.run([tool, "verify", "--man=no", unit],
                             capture_output=True, text=True, timeout=60)
        errs = [l for l in (out.stdout + out.stderr).splitlines()
                if "cxlpool-metaserver.service" in l]
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(errs, [], "\n".join(errs))

    def test_ready_only_once_the_endpoint_accepts(self) -> None:
        note = os.path.join(self.dir, "notify")
        ready = os.path.join(self.dir, "ready")
        sock = os.path.join(self.dir, "ms.sock")
        pool = f"/dev/shm/cxlp-notify-{os.getpid()}.pool"
        self.addCleanup(lambda: os.path.exists(pool) and os.unlink(pool))
        rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        rx.bind(note)
        rx.settimeout(60)
        env = dict(os.environ, NOTIFY_SOCKET=note)
        proc = subprocess.Popen([METASERVER, "--pool", pool, "--size",
                                 "64M", "--listen", f"ipc://{sock}",
                                 "--ready-file", ready], env=env,
                                stderr=subprocess.DEVNULL)
        try:
            msg = rx.recv(4096).decode()
            # at this moment: the endpoint accepts, the file is there
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(sock)
            c.close()
            self.assertTrue(os.path.exists(pool))
            self.assertIn("READY=1", msg.splitlines())
            self.assertIn(f"MAINPID={proc.pid}", msg.splitlines())
            with open(ready) as f:
                self.assertEqual(f.read().strip(), str(proc.pid))
            proc.terminate()
            self.assertIn("STOPPING=1", rx.recv(4096).decode())
            self.assertEqual(proc.wait(timeout=60), 0)
            self.assertFalse(os.path.exists(ready), "ready file left")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            rx.close()

    def start(self, pool: str, sock: str, ready: str) -> subprocess.Popen:
        """A metaserver with --ready-file ready, once the file is there."""
        proc = subprocess.Popen([METASERVER, "--pool", pool, "--size",
                                 "64M", "--listen", f"ipc://{sock}",
                                 "--ready-file", ready],
                                stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: proc.poll() is None and (
            proc.kill(), proc.wait()))
        deadline = time.monotonic() + 60
        while not os.path.exists(ready) and time.monotonic() < deadline:
            self.assertIsNone(proc.poll(), "the metaserver exited")
            time.sleep(0.05)
        self.assertTrue(os.path.exists(ready), "no ready file")
        return proc

    def test_a_second_server_that_cannot_start_leaves_the_ready_file(
            self) -> None:
        ready = os.path.join(self.dir, "ready")
        pool = f"/dev/shm/cxlp-notify3-{os.getpid()}.pool"
        self.addCleanup(lambda: os.path.exists(pool) and os.unlink(pool))
        first = self.start(pool, os.path.join(self.dir, "a.sock"), ready)
        second = subprocess.run([METASERVER, "--pool", pool, "--listen",
                                 f"ipc://{self.dir}/b.sock", "--ready-file",
                                 ready], capture_output=True, text=True,
                                timeout=60)
        self.assertEqual(second.returncode, 1, second.stderr)
        self.assertIn("served by", second.stderr)
        with open(ready) as f:
            self.assertEqual(f.read().strip(), str(first.pid),
                             "the running server's ready file was taken")
        first.terminate()
        self.assertEqual(first.wait(timeout=60), 0)

    def test_a_start_that_cannot_open_the_pool_removes_an_old_ready_file(
            self) -> None:
        ready = os.path.join(self.dir, "ready")
        bad = os.path.join(self.dir, "not-a-pool")
        with open(bad, "wb") as f:
            f.write(b"x" * 65536)
        with open(ready, "w") as f:
            f.write("999999\n")  # a crashed run's
        r = subprocess.run([METASERVER, "--pool", bad, "--listen",
                            f"ipc://{self.dir}/c.sock", "--ready-file",
                            ready], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertFalse(os.path.exists(ready), "a dead run's ready file")

    def test_a_ready_file_in_a_missing_directory_is_refused(self) -> None:
        where = os.path.join(self.dir, "nodir", "ready")
        r = subprocess.run([METASERVER, "--pool", "/dev/shm/never.pool",
                            "--ready-file", where], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(f"--ready-file {where}: its directory "
                      f"{os.path.dirname(where)}: No such file", r.stderr)
        self.assertFalse(os.path.exists("/dev/shm/never.pool"))

    def test_a_bad_notify_socket_does_not_stop_the_server(self) -> None:
        sock = os.path.join(self.dir, "ms.sock")
        pool = f"/dev/shm/cxlp-notify2-{os.getpid()}.pool"
        self.addCleanup(lambda: os.path.exists(pool) and os.unlink(pool))
        env = dict(os.environ, NOTIFY_SOCKET=os.path.join(self.dir, "none"))
        proc = subprocess.Popen([METASERVER, "--pool", pool, "--size",
                                 "64M", "--listen", f"ipc://{sock}"],
                                env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(sock) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)
            self.assertIsNone(proc.poll(), "the server exited")
            proc.terminate()
            _, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 0)
            self.assertIn("NOTIFY_SOCKET", err)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def elect_server(self, tag: str, pool: str, spec: str, key: str
                     ) -> tuple[subprocess.Popen, socket.socket, str]:
        """A metaserver with --elect, its own NOTIFY_SOCKET and socket."""
        note = os.path.join(self.dir, f"notify-{tag}")
        sock = os.path.join(self.dir, f"{tag}.sock")
        rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        rx.bind(note)
        self.addCleanup(rx.close)
        env = dict(os.environ, NOTIFY_SOCKET=note)
        proc = subprocess.Popen([METASERVER, "--pool", pool, "--size", "64M",
                                 "--listen", f"ipc://{sock}", "--elect", spec,
                                 "--elect-key", key, "--elect-ttl", "2s"],
                                env=env, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: proc.poll() is None and (
            proc.kill(), proc.wait()))
        return proc, rx, sock

    @staticmethod
    def until_ready(rx: socket.socket) -> list[str]:
        """The datagram with READY=1 (a standby's words before it)."""
        while True:
            lines = rx.recv(4096).decode().splitlines()
            if "READY=1" in lines:
                return lines

    def test_a_standby_is_ready_only_once_elected(self) -> None:
        if not os.access(ETCD, os.X_OK):
            raise unittest.SkipTest(f"no etcd at {ETCD} (apt-get install "
                                    "etcd-server, or set CXLP_ETCD)")
        etcd, spec = start_etcd(self.dir)
        self.addCleanup(lambda: (etcd.kill(), etcd.wait()))
        pool = f"/dev/shm/cxlp-notify-elect-{os.getpid()}.pool"
        self.addCleanup(lambda: os.path.exists(pool) and os.unlink(pool))
        key = f"/cxlpool-test/notify-{os.getpid()}"
        lead, lrx, _ = self.elect_server("l", pool, spec, key)
        lrx.settimeout(60)
        self.until_ready(lrx)
        stby, srx, ssock = self.elect_server("s", pool, spec, key)
        # a few seconds of waiting: words, but never READY=1
        words: list[str] = []
        srx.settimeout(0.5)
        end = time.monotonic() + 3
        while time.monotonic() < end:
            try:
                words += srx.recv(4096).decode().splitlines()
            except socket.timeout:
                pass
        self.assertNotIn("READY=1", words, "a standby said it was ready")
        self.assertTrue(any(w.startswith("EXTEND_TIMEOUT_USEC=")
                            for w in words), words)
        self.assertTrue(any(w.startswith("STATUS=standby") for w in words),
                        words)
        self.assertFalse(accepts(ssock), "a standby's endpoint accepts")
        os.kill(lead.pid, signal.SIGKILL)
        lead.wait()
        srx.settimeout(60)
        lines = self.until_ready(srx)
        # at this moment: elected, the pool open, the endpoint accepts
        self.assertTrue(accepts(ssock), "READY=1 before the endpoint")
        self.assertIn(f"MAINPID={stby.pid}", lines)
        stby.terminate()
        self.assertEqual(stby.wait(timeout=60), 0)


if __name__ == "__main__":
    METASERVER, UNIT = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1])
