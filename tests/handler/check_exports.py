#!/usr/bin/env python3
"""check_exports.py -- libcxlpool.so exports the public API and nothing
else: every CXLP_API function of include/cxlpool.h, plus the one name
handler/handler.sym explains (cxlp_errmsg_buf_), and each of those under
version CXLPOOL_0.

Usage: check_exports.py NM LIBCXLPOOL_SO CXLPOOL_H
"""
import re
import subprocess
import sys

NOT_API = {"cxlp_errmsg_buf_"}  # handler.sym says why


def api_names(header: str) -> set:
    text = re.sub(r"/\*.*?\*/", "", open(header).read(), flags=re.S)
    return set(re.findall(r"CXLP_API\b[^;{(]*?\b(cxlp_\w+)\s*\(", text))


def exported(nm: str, lib: str) -> dict:
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = {}
    for line in out.splitlines():
        name = line.split()[-1]
        sym, _, ver = name.partition("@@")
        if sym != "CXLPOOL_0":
            names[sym] = ver
    return names


def main() -> int:
    nm, lib, header = sys.argv[1:4]
    api = api_names(header)
    got = exported(nm, lib)
    want = api | NOT_API
    ok = True
    if len(api) < 30:
        print(f"only {len(api)} CXLP_API functions found in {header}")
        ok = False
    for name in sorted(set(got) - want):
        print(f"exported but not API: {name}")
        ok = False
    for name in sorted(want - set(got)):
        print(f"API but not exported: {name}")
        ok = False
    for name, ver in sorted(got.items()):
        if ver != "CXLPOOL_0":
            print(f"{name}: version {ver or '(none)'}, not CXLPOOL_0")
            ok = False
    print(f"{len(got)} names exported, {len(api)} API functions")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
