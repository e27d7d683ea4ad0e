"""Maru's own tests/integration/test_handler.py against cxlpool.maru
(issue 29), with pytest and the conftest of tests/python/maru_upstream
(its server fixtures start a cxlpool-metaserver; nothing else of the test
is changed).

Which test_handler.py: the copy in tests/python/maru_upstream (Maru at
4fd29ce, Apache-2.0, README.md there), or, with CXLP_MARU_CHECKOUT set to
a Maru checkout, that checkout's tests/integration/test_handler.py, run
beside our conftest in a temporary directory. Nothing is fetched.

Needs pytest (Debian: python3-pytest): this interpreter's, or else
/usr/bin/python3's; without one the test is skipped (exit 77). Passes
when pytest passes every test it collects; prints pytest's summary.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

import cxlp_test

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "maru_upstream"
SKIP = 77  # meson: skipped


def pytest_python() -> Optional[str]:
    """An interpreter that has pytest: this one, else the system's."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import pytest"], capture_output=True
                ).returncode == 0:
            return exe
    return None


def test_dir(tmp: str) -> Path:
    """The directory to run: ours, or a checkout's file beside our
    conftest."""
    checkout = os.environ.get("CXLP_MARU_CHECKOUT")
    if not checkout:
        return UPSTREAM
    src = Path(checkout) / "tests" / "integration" / "test_handler.py"
    if not src.is_file():
        sys.exit(f"CXLP_MARU_CHECKOUT={checkout}: no {src}")
    shutil.copy(UPSTREAM / "conftest.py", tmp)
    shutil.copy(src, tmp)
    return Path(tmp)


def main() -> int:
    cxlp_test.reexec_under_asan()
    if not os.environ.get("CXLP_METASERVER"):
        print("SKIP: CXLP_METASERVER is not set")
        return SKIP
    exe = pytest_python()
    if exe is None:
        print("SKIP: no pytest (apt-get install python3-pytest)")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="cxlp-maru-up-") as tmp:
        where = test_dir(tmp)
        env = cxlp_test.child_env()
        env["CXLP_PY_TESTS"] = str(HERE)
        args: List[str] = [exe, "-B", "-m", "pytest", "-q",
                           "-p", "no:cacheprovider", "--rootdir",
                           str(where), str(where / "test_handler.py")]
        print("running:", " ".join(args), flush=True)
        return subprocess.run(args, cwd=str(where), env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
