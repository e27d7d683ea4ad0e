"""cxlpool's conftest for Maru's own tests/integration/test_handler.py.

test_handler.py here is Maru's file, unchanged (README.md beside it). Its
fixtures are Maru's (server_port, server_thread, and the class-level
async_server_thread of TestMaruHandlerWithAsyncServer, which builds
``maru_server.server.MaruServer`` and ``maru_server.rpc_async_server.
RpcAsyncServer``); this conftest points each at a cxlpool-metaserver and
nothing else:

* ``server_thread`` starts a cxlpool-metaserver listening on
  tcp://127.0.0.1:server_port (and a private ipc socket), on a fresh pool,
  and stops it after the test;
* ``maru_server`` is a stand-in module whose ``MaruServer`` and
  ``RpcAsyncServer(maru_server, host, port, num_workers)`` do the same from
  ``start()`` to ``stop()``, so the test file's own async fixture runs
  unchanged;
* a tcp listener needs a shared secret: the server gets a --secret-file
  and the handlers find it through CXLP_SECRET_FILE, which libcxlpool
  reads when the config sets no secret (Maru's MaruConfig has no field
  for it);
* ``import maru`` resolves to cxlpool.maru through bindings/python/
  maru_shim, and cxlpool to bindings/python, both of this source tree.

Environment: CXLP_METASERVER (the server; the tests skip without it),
CXLP_LIBDIR (libcxlpool.so), CXLP_SRCDIR (the source tree), as meson's
test_env sets them; CXLP_PY_TESTS (tests/python, when this conftest is
copied elsewhere by tests/python/test_maru_upstream.py).
"""

from __future__ import annotations

import os
import sys
import tempfile
import types
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
# tests/python (cxlp_test): our parent, or, for a Maru checkout's file run
# beside a copy of this conftest, where tests/python/test_maru_upstream.py
# says (CXLP_PY_TESTS)
sys.path.insert(0, os.environ.get("CXLP_PY_TESTS", str(_HERE.parent)))
import cxlp_test  # noqa: E402  (puts bindings/python first on sys.path)

sys.path.insert(0, str(cxlp_test.PYDIR / "maru_shim"))

_SECRET_DIR = tempfile.mkdtemp(prefix="cxlp-maru-upstream-")
_SECRET = os.path.join(_SECRET_DIR, "secret")
with open(os.open(_SECRET, os.O_WRONLY | os.O_CREAT, 0o600), "w") as _f:
    _f.write("maru upstream tests\n")
os.environ["CXLP_SECRET_FILE"] = _SECRET


class _TcpServer:
    """A cxlpool-metaserver on 127.0.0.1:port for one test."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.server = cxlp_test.MetaServer(
            ["--listen", f"tcp://127.0.0.1:{port}", "--secret-file",
             _SECRET])

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.stop()


class MaruServer:
    """Stand-in for maru_server's MaruServer: the metaserver holds the
    state, so this holds nothing."""


class RpcServer:
    """Stand-in for maru_server's RpcServer and RpcAsyncServer: a
    cxlpool-metaserver on (host, port), started by the constructor and
    ready when it returns, stopped by stop().

    Started at construction, not by start(): Maru's fixtures call start()
    on a thread and then sleep 50 or 200 ms before the test connects,
    which a metaserver formatting its pool on a busy machine need not
    beat; start() (Maru's serving loop) only returns."""

    def __init__(self, maru_server: MaruServer, host: str = "127.0.0.1",
                 port: int = 5555, num_workers: int = 1) -> None:
        if host != "127.0.0.1":
            raise ValueError("the stand-in serves 127.0.0.1 only")
        self._srv: "_TcpServer | None" = _TcpServer(port)
        self._srv.start()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        srv, self._srv = self._srv, None
        if srv is not None:
            srv.stop()


def _stand_in_maru_server() -> None:
    """sys.modules entries for maru_server, .server, .rpc_async_server."""
    pkg = types.ModuleType("maru_server")
    pkg.__path__ = []  # a package
    pkg.MaruServer = MaruServer  # type: ignore[attr-defined]
    pkg.RpcServer = RpcServer  # type: ignore[attr-defined]
    server = types.ModuleType("maru_server.server")
    server.MaruServer = MaruServer  # type: ignore[attr-defined]
    rpc_async = types.ModuleType("maru_server.rpc_async_server")
    rpc_async.RpcAsyncServer = RpcServer  # type: ignore[attr-defined]
    pkg.server = server  # type: ignore[attr-defined]
    pkg.rpc_async_server = rpc_async  # type: ignore[attr-defined]
    sys.modules.update({"maru_server": pkg, "maru_server.server": server,
                        "maru_server.rpc_async_server": rpc_async})


_stand_in_maru_server()


@pytest.fixture
def server_port() -> int:
    """A free tcp port (Maru's fixture, as it is)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server_thread(server_port: int):
    """A cxlpool-metaserver on tcp://127.0.0.1:server_port, for the test
    (Maru's: an RpcServer thread on that port)."""
    if not os.environ.get("CXLP_METASERVER"):
        pytest.skip("CXLP_METASERVER is not set")
    rpc = RpcServer(MaruServer(), host="127.0.0.1", port=server_port)
    rpc.start()
    yield rpc
    rpc.stop()


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "integration: integration tests")
    config.addinivalue_line("markers", "slow: slow tests")


def pytest_unconfigure(config) -> None:
    try:
        os.unlink(_SECRET)
        os.rmdir(_SECRET_DIR)
    except OSError:
        pass
