"""bindings/python installs offline with pip and works once installed.

The source folder is copied first, so that pip's in-tree build files
never land in the source tree. Needs an interpreter with setuptools and
wheel (Debian: python3-setuptools, python3-wheel); the test tries the one
running it, then Debian's /usr/bin/python3, and skips if neither has them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

import cxlp_test
from cxlp_test import ServerTestCase

CAN_BUILD = "import setuptools, wheel"


def builder() -> Optional[str]:
    """A Python interpreter that can build the package offline."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if not os.path.exists(exe):
            continue
        ok = subprocess.run([exe, "-c", CAN_BUILD], capture_output=True)
        pip = subprocess.run([exe, "-m", "pip", "--version"],
                             capture_output=True)
        if ok.returncode == 0 and pip.returncode == 0:
            return exe
    return None


class PipInstall(ServerTestCase):
    def test_pip_installs_offline_and_the_copy_connects(self) -> None:
        exe = builder()
        if exe is None:
            self.skipTest("no python3 with setuptools+wheel+pip")
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "src"
            site = Path(tmp) / "site"
            shutil.copytree(cxlp_test.PYDIR, src,
                            ignore=shutil.ignore_patterns(
                                "build", "*.egg-info", "__pycache__"))
            out = subprocess.run(
                [exe, "-m", "pip", "install", "--no-build-isolation",
                 "--no-index", "--no-deps", "--target", str(site),
                 str(src)], capture_output=True, text=True, timeout=110)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            env = dict(os.environ, PYTHONPATH=str(site))
            code = ("import sys, cxlpool; "
                    "assert cxlpool.__file__.startswith(sys.argv[1]); "
                    "h = cxlpool.Handler(cxlpool.Config(server_url="
                    "sys.argv[2], region_size=2 << 20)).connect(); "
                    "print(h.healthcheck()); h.close()")
            run = subprocess.run([exe, "-c", code, str(site),
                                  self.server.url], env=env,
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(run.stdout.strip(), "True")
            self.assertTrue((site / "cxlpool" / "py.typed").exists())
            # the Maru shim installs beside it (bindings/python/README.md)
            out = subprocess.run(
                [exe, "-m", "pip", "install", "--no-build-isolation",
                 "--no-index", "--no-deps", "--target", str(site),
                 str(src / "maru_shim")], capture_output=True, text=True,
                timeout=110)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            code = ("import sys, maru, maru_handler.memory as mem, "
                    "cxlpool.maru as m; "
                    "assert maru.__file__.startswith(sys.argv[1]); "
                    "assert maru.MaruHandler is m.MaruHandler; "
                    "assert mem.AllocHandle is m.AllocHandle; print('ok')")
            run = subprocess.run([exe, "-c", code, str(site)], env=env,
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(run.stdout.strip(), "ok")


if __name__ == "__main__":
    cxlp_test.main()
