#!/usr/bin/env python3
"""test-summary.py -- print one plain summary line for a meson test run:
'<label>: N passed, N failed, N skipped', read from meson's testlog.json."""
import json
import sys

builddir, label = sys.argv[1], sys.argv[2]
passed = failed = skipped = 0
with open(f"{builddir}/meson-logs/testlog.json") as f:
    for line in f:
        result = json.loads(line).get("result")
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{label}: {passed} passed, {failed} failed, {skipped} skipped")
