"""``python3 -m cxlpool.maru_shim install``: with Maru installed (its
handler and its integrations, one distribution), one command makes the
integrations import cxlpool's maru and maru_handler; uninstall gives
Maru's back (issue 29). In a venv: cxlpool installed from a copy of
bindings/python, Maru from a copy of CXLP_MARU_CHECKOUT's tree, offline.

Skipped without CXLP_MARU_CHECKOUT, or without a Python that has venv,
pip, setuptools and wheel (Debian: python3-venv python3-setuptools
python3-wheel), msgpack and dacite (Maru's dependencies: python3-msgpack
python3-dacite), the venv seeing the system's packages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cxlp_test
from cxlp_test import ServerTestCase

NEEDS = "import venv, ensurepip, setuptools, wheel, msgpack, dacite"

CHECK = r"""
import importlib.util, json, sys
spec = importlib.util.find_spec("maru")
out = {"maru": spec.origin}
try:
    import maru, maru_handler, maru_handler.memory as mem, cxlpool.maru as cm
    out["same"] = [maru.MaruHandler is cm.MaruHandler,
                   mem.AllocHandle is cm.AllocHandle,
                   maru_handler.MaruHandler is cm.MaruHandler]
    import maru_sglang.config, maru_common
    out["sglang"] = maru_sglang.config.__file__
    h = maru.MaruHandler(maru.MaruConfig(server_url=sys.argv[1],
                                        pool_size=2 << 20,
                                        chunk_size_bytes=1024))
    out["connect"] = h.connect()
    h.close()
except Exception as exc:
    out["error"] = repr(exc)
print(json.dumps(out))
"""


def python() -> "str | None":
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run(
                [exe, "-c", NEEDS], capture_output=True).returncode == 0:
            return exe
    return None


class ShimInstall(ServerTestCase):
    def run_ok(self, *args: str, env: "dict | None" = None) -> str:
        out = subprocess.run(list(args), capture_output=True, text=True,
                             timeout=110, env=env)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        return out.stdout

    def test_one_command_switches_the_integrations_to_cxlpool(self) -> None:
        checkout = os.environ.get("CXLP_MARU_CHECKOUT")
        if not checkout or not (Path(checkout) / "maru_sglang").is_dir():
            self.skipTest("CXLP_MARU_CHECKOUT (a Maru checkout) is not set")
        exe = python()
        if exe is None:
            self.skipTest("no python3 with venv, setuptools, wheel, "
                          "msgpack, dacite")
        import json
        with tempfile.TemporaryDirectory() as tmp:
            t = Path(tmp)
            ignore = shutil.ignore_patterns("build", "*.egg-info",
                                            "__pycache__", ".git", "docs")
            shutil.copytree(cxlp_test.PYDIR, t / "cxlpool-src",
                            ignore=ignore)
            shutil.copytree(checkout, t / "maru-src", ignore=ignore)
            self.run_ok(exe, "-m", "venv", "--system-site-packages",
                        str(t / "venv"))
            py = str(t / "venv" / "bin" / "python")
            pip = [py, "-m", "pip", "install", "--no-index", "--no-deps",
                   "--no-build-isolation"]
            self.run_ok(*pip, str(t / "cxlpool-src"))
            # Maru asks for Python 3.12; its integrations run on 3.11
            self.run_ok(*pip, "--ignore-requires-python",
                        str(t / "maru-src"))
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)
            site = subprocess.run(
                [py, "-c", "import sysconfig; "
                 "print(sysconfig.get_paths()['purelib'])"],
                capture_output=True, text=True).stdout.strip()

            def check() -> dict:
                out = self.run_ok(py, "-c", CHECK, self.server.url, env=env)
                return json.loads(out.strip().splitlines()[-1])

            before = check()
            self.assertTrue(before["maru"].startswith(site), before)
            self.assertNotEqual(before.get("same"), [True, True, True],
                                "Maru's own is imported before")
            said = self.run_ok(py, "-m", "cxlpool.maru_shim", "install",
                               env=env)
            self.assertIn("cxlpool-maru-shim.pth", said)
            after = check()
            self.assertIn("cxlpool", after["maru"], after)
            self.assertEqual(after.get("same"), [True, True, True], after)
            self.assertTrue(after["sglang"].startswith(site),
                            "the integrations are still Maru's")
            self.assertTrue(after["connect"], after)
            self.run_ok(py, "-m", "cxlpool.maru_shim", "uninstall", env=env)
            self.assertEqual(check()["maru"], before["maru"])


if __name__ == "__main__":
    cxlp_test.main()
