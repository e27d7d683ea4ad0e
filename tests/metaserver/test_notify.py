"""The systemd unit (dist/systemd) and the metaserver's readiness
(metaserver/notify.c): systemd-analyze accepts the unit; READY=1 reaches
$NOTIFY_SOCKET, and --ready-file appears, only once the pool is open and
the endpoint accepts connections; STOPPING=1 and the file's removal at
the end.

    test_notify.py METASERVER UNIT
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

METASERVER = ""
UNIT = ""


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


if __name__ == "__main__":
    METASERVER, UNIT = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1])
