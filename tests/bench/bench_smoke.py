"""bench_smoke.py -- run `cxlpool-bench --quick --json -` and check that it
exits 0 and prints one valid JSON document with every section in it (the
evict section's full pool evicted).

No timing is asserted: only that each section ran, produced numbers and
reported no failures. The metaserver comes from $CXLP_METASERVER (set by
tests/meson.build), so the run uses this build's server. A second run
places the servers on one CPU and the bench on another (--server-cpus,
--client-cpus) and checks, from the CPUs /proc reported for each process,
that they ran there; a malformed CPU list is refused with exit status 2.
"""
import json
import math
import os
import subprocess
import sys

SECTIONS = ("echo", "echo_register256", "dispatch", "latency", "batch",
            "datapath", "index", "evict", "targets")


def fail(msg, out=None):
    print("bench_smoke: " + msg, file=sys.stderr)
    if out:
        print(out, file=sys.stderr)
    sys.exit(1)


def numbers_ok(value):
    """Every number in the document is finite and non-negative."""
    if isinstance(value, dict):
        return all(numbers_ok(v) for v in value.values())
    if isinstance(value, list):
        return all(numbers_ok(v) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return math.isfinite(value) and value >= 0
    return True


def run_json(exe, *args):
    """Run the bench with --quick --json - and args; (document, stderr)."""
    proc = subprocess.run([exe, "--quick", "--json", "-"] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=280, check=False)
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        fail("%s: exit status %d" % (" ".join(args), proc.returncode), err)
    try:
        return json.loads(proc.stdout.decode()), err
    except ValueError as e:
        fail("stdout is not valid JSON: %s" % e, proc.stdout.decode())


def check_placement(exe):
    """The servers on the highest allowed CPU, the bench on the lowest
    (distinct on any machine with two); a bad list is refused."""
    cpus = os.sched_getaffinity(0)
    srv, cli = str(max(cpus)), str(min(cpus))
    doc, _ = run_json(exe, "--only", "echo", "--server-cpus", srv,
                      "--client-cpus", cli)
    seen = (doc["placement"]["client_cpus"], doc["placement"]["server_cpus"],
            doc["echo"]["server_cpus"])
    if seen != (cli, srv, srv):
        fail("placed bench, metaserver, echo server on CPUs %s, %s, %s; "
             "/proc says %s" % (cli, srv, srv, ", ".join(seen)))
    proc = subprocess.run([exe, "--quick", "--server-cpus", "1-0"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=60, check=False)
    if proc.returncode != 2 or b"CPU list" not in proc.stderr:
        fail("--server-cpus 1-0: exit %d" % proc.returncode,
             proc.stderr.decode(errors="replace"))


def main():
    exe = sys.argv[1]
    doc, err = run_json(exe)
    missing = [s for s in SECTIONS if s not in doc]
    if missing:
        fail("sections missing: %s" % ", ".join(missing))
    if doc.get("failed_sections") != 0 or not doc.get("quick"):
        fail("failed_sections=%r quick=%r" %
             (doc.get("failed_sections"), doc.get("quick")))
    for echo in ("echo", "echo_register256"):
        if doc[echo]["n"] <= 0 or doc[echo]["reply_bytes"] <= 0:
            fail("%s did not run" % echo)
    if sorted(r["op"] for r in doc["dispatch"]) != ["delete", "register"] \
            or any(r["ns_per_key_p50"] <= 0 for r in doc["dispatch"]):
        fail("dispatch rows missing or not positive")
    for op in ("store", "retrieve", "exists", "delete"):
        if doc["latency"][op]["n"] <= 0 or doc["latency"][op]["errors"]:
            fail("latency %s did not run cleanly" % op)
    if not doc["batch"] or any(r["errors"] for r in doc["batch"]):
        fail("batch rows missing or with errors")
    ops = set(r["op"] for r in doc["batch"])
    if ops != {"store", "retrieve", "exists", "lookup", "delete"}:
        fail("batch ops: %s" % sorted(ops))
    # lookups through the metaserver cost it CPU; direct reads cost none
    lookup = [r for r in doc["batch"] if r["op"] == "lookup"]
    if not any(r["server_cpu_us_per_key"] > 0 for r in lookup):
        fail("lookup rows show no metaserver CPU: did they use it?")
    if not doc["datapath"] or not doc["index"] or not doc["targets"]:
        fail("datapath, index or targets empty")
    # the full pool's stores must have evicted, or they measured nothing
    if doc["evict"]["full_evicted_keys"] <= 0 \
            or doc["evict"]["retrieve_first_touch_keys_per_s"] <= 0:
        fail("evict: no eviction or no reads: %r" % doc["evict"])
    if not numbers_ok(doc):
        fail("a negative or non-finite number in the JSON")
    if "## targets" not in err:
        fail("the tables did not go to stderr with --json -", err)
    if not doc["placement"]["client_cpus"] \
            or doc["placement"]["server_cpus"] == "?":
        fail("placement not reported: %r" % doc["placement"])
    check_placement(exe)
    print("bench_smoke: ok (%d batch rows, %d targets)" %
          (len(doc["batch"]), len(doc["targets"])))


if __name__ == "__main__":
    main()
