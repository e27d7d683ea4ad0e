"""Shared fixtures for the Python binding's tests.

Puts ``bindings/python`` of the source tree first on sys.path (so the
tests use the package being built, not an installed one), starts a real
cxlpool-metaserver on a temporary pool, and runs Python children that use
the same package. Environment (set by meson's test_env):

CXLP_METASERVER  path of cxlpool-metaserver (tests skip without it)
CXLP_LIBDIR      the build's handler/ directory, where libcxlpool.so is
CXLP_PY_C_READER path of the C reader helper (tests/python/c_reader.c);
                 also accepted as ``--c-reader PATH`` on the command line
"""

from __future__ import annotations

import faulthandler
import os
import signal
import subprocess
import sys
import threading
import time
import unittest
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional

SRCDIR = Path(os.environ.get("CXLP_SRCDIR",
                             Path(__file__).resolve().parents[2]))
PYDIR = SRCDIR / "bindings" / "python"
sys.path.insert(0, str(PYDIR))

import cxlpool  # noqa: E402  (after the sys.path change)

READY = "cxlpool-metaserver: ready"
KiB = 1024
MiB = 1024 * KiB


class MetaServer:
    """A cxlpool-metaserver on a private pool file and ipc socket."""

    def __init__(self, extra: Optional[List[str]] = None) -> None:
        exe = os.environ.get("CXLP_METASERVER")
        if not exe:
            raise unittest.SkipTest("CXLP_METASERVER is not set")
        name = f"cxlp-py-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.exe = exe
        self.pool = f"/dev/shm/{name}"
        self.sock = f"/tmp/{name}.sock"
        self.url = f"ipc://{self.sock}"
        self.proc: Optional[subprocess.Popen[str]] = None
        self.log: List[str] = []
        self.extra = list(extra or [])

    def start(self, timeout: float = 60.0) -> "MetaServer":
        """Start the server and wait for its ready line on stderr."""
        self.proc = subprocess.Popen(
            [self.exe, "--pool", self.pool, "--size", "256M",
             "--listen", self.url, *self.extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, env=native_env())
        ready = threading.Event()
        threading.Thread(target=self._drain, args=(ready,),
                         daemon=True).start()
        if not ready.wait(timeout) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError("metaserver did not start:\n" +
                               "".join(self.log[-20:]))
        return self

    def _drain(self, ready: threading.Event) -> None:
        """Keep reading stderr (so the pipe never fills); flag ready."""
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            if READY in line:
                ready.set()
        ready.set()  # EOF: the server died; start() checks poll()

    def pause(self) -> None:
        """SIGSTOP the server and wait until every thread of it stopped:
        requests go unanswered."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)
        tasks = Path(f"/proc/{self.proc.pid}/task")
        while not all(_stopped(t) for t in tasks.iterdir()):
            time.sleep(0.01)

    def resume(self) -> None:
        """SIGCONT the server."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Stop the server (TERM, then KILL) and remove its files."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for path in (self.pool, self.sock):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def _stopped(task: Path) -> bool:
    """True if the thread /proc/PID/task/TID is stopped (state T)."""
    try:
        stat = (task / "stat").read_text()
    except FileNotFoundError:
        return True
    return stat[stat.rindex(")") + 2] in "Tt"


class ServerTestCase(unittest.TestCase):
    """A test class sharing one metaserver, started for the class."""

    server: MetaServer
    server_args: List[str] = []  # more flags for the class's server

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = MetaServer(cls.server_args).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def config(self, **kw: Any) -> cxlpool.Config:
        """A Config for this class's server: 64 KiB pages, 2 MiB regions."""
        args: Dict[str, Any] = dict(server_url=self.server.url,
                                    page_size=64 * KiB,
                                    region_size=2 * MiB)
        args.update(kw)
        return cxlpool.Config(**args)

    def handler(self, **kw: Any) -> cxlpool.Handler:
        """A connected handler, closed at the end of the test."""
        h = cxlpool.Handler(self.config(**kw)).connect()
        self.addCleanup(h.close)
        return h

    def key(self, tag: str) -> bytes:
        """A key unique to this test."""
        return f"{self.id()}@{tag}".encode()


def child_env() -> Dict[str, str]:
    """Environment for a Python child: the package on PYTHONPATH."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(PYDIR)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH")
                        else []))
    return env


def run_python(code: str, *args: str,
               timeout: float = 90.0) -> "subprocess.CompletedProcess[str]":
    """Run code in a new Python process (argv[1:] = args); capture output."""
    return subprocess.run([sys.executable, "-c", code, *args],
                          env=child_env(), capture_output=True, text=True,
                          timeout=timeout)


def c_reader_path() -> Optional[str]:
    """Path of the C reader helper, if the test was given one."""
    return os.environ.get("CXLP_PY_C_READER") or None


def _asan_runtime() -> Optional[str]:
    """Path of libasan if libcxlpool was built with ASan, else None."""
    libs = [c for c in cxlpool._lib.candidates() if os.path.exists(c)]
    if not libs:
        return None
    out = subprocess.run(["ldd", libs[0]], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("libasan.so") and len(parts) > 2:
            return parts[2]
    return None


def reexec_under_asan() -> None:
    """Re-run this test with the ASan runtime preloaded, if needed.

    A sanitizer build of libcxlpool cannot be dlopen()ed by a plain
    python3: ASan must come first. Leak detection is turned off for the
    Python processes (the interpreter itself leaks by design) and given
    back to the C programs the tests start (native_env()).
    """
    if os.environ.get("CXLP_PY_ASAN_ORIG") is not None:
        return
    runtime = _asan_runtime()
    if runtime is None:
        return
    env = dict(os.environ)
    env["CXLP_PY_ASAN_ORIG"] = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = env["CXLP_PY_ASAN_ORIG"] + ":detect_leaks=0"
    env["LD_PRELOAD"] = runtime
    os.execve(sys.executable, [sys.executable, "-B"] + sys.argv, env)


def native_env() -> Dict[str, str]:
    """Environment for C programs: the sanitizer options as meson set
    them, without the Python-only preload."""
    env = dict(os.environ)
    if "CXLP_PY_ASAN_ORIG" in env:
        env["ASAN_OPTIONS"] = env.pop("CXLP_PY_ASAN_ORIG")
        env.pop("LD_PRELOAD", None)
    return env


def main() -> None:
    """unittest.main(), after taking ``--c-reader PATH`` off argv (and
    re-executing under ASan's runtime for a sanitizer build)."""
    reexec_under_asan()
    argv = list(sys.argv)
    if "--c-reader" in argv:
        i = argv.index("--c-reader")
        os.environ["CXLP_PY_C_READER"] = argv[i + 1]
        del argv[i:i + 2]
    # a test file that hangs prints every thread's Python stack before
    # meson's 120 s timeout kills it (the line tells which call hung)
    faulthandler.dump_traceback_later(100, exit=False)
    unittest.main(argv=argv, verbosity=2)
