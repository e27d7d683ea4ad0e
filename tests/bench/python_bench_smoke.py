"""A smoke run of bench/python_bench.py with tiny counts: it must finish,
report every batch size and the data path with finite positive numbers,
and count no failed key. No timing is asserted."""

import json
import math
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import cxlp_test  # noqa: E402  (the binding's test fixtures)


def fail(why: str, detail: str = "") -> None:
    print("python_bench_smoke: " + why)
    if detail:
        print(detail[-4000:])
    sys.exit(1)


def main() -> None:
    # an ASan build of libcxlpool needs ASan's runtime preloaded into
    # python3; the bench's own python3 child inherits it
    cxlp_test.reexec_under_asan()
    script = sys.argv[1]
    proc = subprocess.run([sys.executable, "-B", script, "--quick",
                           "--json", "-"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=240, check=False)
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        fail("exit %d" % proc.returncode, err)
    doc = json.loads(proc.stdout)
    if doc["errors"] != 0 or not doc["quick"]:
        fail("errors=%r quick=%r" % (doc["errors"], doc["quick"]))
    if [r["batch"] for r in doc["keys"]] != [16, 256, 1024]:
        fail("batch rows: %r" % doc["keys"])
    nums = [v for r in doc["keys"] for k, v in r.items() if k != "batch"]
    nums += list(doc["datapath"].values())
    if len(doc["datapath"]) != 4 or \
            not all(math.isfinite(v) and v > 0 for v in nums):
        fail("a missing, non-finite or non-positive figure", repr(doc))
    if "## data path" not in err:
        fail("the tables did not go to stderr with --json -", err)
    print("python_bench_smoke: ok")


if __name__ == "__main__":
    main()
