#!/usr/bin/env python3
"""test-summary.py -- print one plain summary line for a meson test run:
'<label>: N passed, N failed, N skipped', read from meson's testlog.json,
then one line per failed test with the last lines of its output. With
--last, print only the failures, each with the last lines of its output
(test.sh repeats these at the very end, where a CI log cut to its tail
still shows them)."""
import json
import sys

args = [a for a in sys.argv[1:] if a != "--last"]
last = "--last" in sys.argv[1:]
builddir, label = args[0], args[1]
passed = failed = skipped = 0
failures = []
with open(f"{builddir}/meson-logs/testlog.json") as f:
    for line in f:
        rec = json.loads(line)
        result = rec.get("result")
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
            failures.append(rec)
if not last:
    print(f"{label}: {passed} passed, {failed} failed, {skipped} skipped")
for rec in failures:
    print(f"{label}: FAILED {rec.get('name')} {rec.get('result')} "
          f"(exit {rec.get('returncode')}, {rec.get('duration', 0):.1f} s)")
    out = (rec.get("stdout") or "") + (rec.get("stderr") or "")
    for t in out.splitlines()[-25 if last else -15:]:
        print(f"  | {t}")
