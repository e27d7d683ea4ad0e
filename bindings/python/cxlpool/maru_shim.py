"""``python3 -m cxlpool.maru_shim install``: make Maru's integrations
(maru_vllm, maru_lmcache, maru_sglang, maru_common), installed with Maru,
import cxlpool's ``maru`` and ``maru_handler`` instead of Maru's (issue
29).

Maru ships its handler and its integrations in one distribution, so
uninstalling Maru to install bindings/python/maru_shim would remove the
integrations too. This command leaves Maru installed and writes one file,
``cxlpool-maru-shim.pth``, into the environment's site-packages: Python
runs its one line at start-up, which puts cxlpool's copy of the two
packages (cxlpool/_shim: ``maru``, ``maru_handler``,
``maru_handler.memory``, re-exporting cxlpool.maru) first on sys.path.
Every other module of Maru's is still Maru's. ``uninstall`` removes the
file (Maru's own handler is back); ``status`` says which ``maru`` this
interpreter imports.

    python3 -m cxlpool.maru_shim install [--site DIR]
    python3 -m cxlpool.maru_shim uninstall [--site DIR]
    python3 -m cxlpool.maru_shim status

DIR defaults to this interpreter's site-packages (a venv's, in a venv).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import List, Optional

PTH = "cxlpool-maru-shim.pth"
SHIM = Path(__file__).resolve().parent / "_shim"


def pth_line(shim: Path = SHIM) -> str:
    """The .pth line: put shim first on sys.path, once."""
    return (f"import sys; _p = {str(shim)!r}; "
            f"_p in sys.path or sys.path.insert(0, _p)\n")


def install(site: Path) -> Path:
    path = site / PTH
    tmp = site / (PTH + ".tmp")
    tmp.write_text(pth_line())
    os.replace(tmp, path)
    return path


def uninstall(site: Path) -> bool:
    try:
        (site / PTH).unlink()
        return True
    except FileNotFoundError:
        return False


def status() -> str:
    """Which maru a fresh interpreter imports."""
    out = subprocess.run(
        [sys.executable, "-c", "import maru, sys; print(maru.__file__)"],
        capture_output=True, text=True)
    where = out.stdout.strip() or out.stderr.strip().splitlines()[-1:]
    return f"maru: {where}"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m cxlpool.maru_shim",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["install", "uninstall", "status"])
    ap.add_argument("--site", type=Path,
                    default=Path(sysconfig.get_paths()["purelib"]),
                    help="site-packages to write the .pth into")
    args = ap.parse_args(argv)
    if args.action == "install":
        print(f"wrote {install(args.site)}: maru and maru_handler are "
              f"cxlpool's")
    elif args.action == "uninstall":
        print(f"removed {args.site / PTH}" if uninstall(args.site) else
              f"no {args.site / PTH}")
    print(status())
    return 0


if __name__ == "__main__":
    sys.exit(main())
