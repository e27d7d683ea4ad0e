#!/usr/bin/env python3
"""meson setup and the patched nng (deps/nng/README.md).

A source tree whose nng prefix was never built must not be configured
against the system's nng 1.5 (it has nng#1518's accept wedge, and Debian's
libnng.a is not position-independent, so libcxlpool.so failed to link
after meson said it had found "our" nng): setup stops and names the script
to run. A prefix that holds the build is used and named.

Usage: test_meson_nng.py SRCDIR PREFIX (PREFIX: the nng prefix this build
uses, or "" when it links a system nng of 1.6 or newer).
"""
import os
import subprocess
import sys
import tempfile
import unittest

SRC, PREFIX = sys.argv[1], sys.argv[2]


def setup(prefix):
    with tempfile.TemporaryDirectory(prefix="cxlp-meson-") as d:
        r = subprocess.run(
            ["meson", "setup", os.path.join(d, "b"), SRC,
             "-Dnng_prefix=" + prefix, "-Dtests=disabled"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=300)
        return r.returncode, r.stdout


def system_nng_minor():
    try:
        with open("/usr/include/nng/nng.h") as f:
            text = f.read()
    except OSError:
        return None
    ver = {}
    for line in text.splitlines():
        for k in ("MAJOR", "MINOR"):
            if line.startswith("#define NNG_%s_VERSION " % k):
                ver[k] = int(line.split()[2])
    return (ver.get("MAJOR", 0), ver.get("MINOR", 0))


class MesonNng(unittest.TestCase):
    def test_unbuilt_prefix_stops_setup(self):
        sysver = system_nng_minor()
        if sysver is None or sysver >= (1, 6):
            self.skipTest("system nng %s: setup may use it" % (sysver,))
        with tempfile.TemporaryDirectory() as empty:
            rc, out = setup(empty)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("no patched nng at " + empty, out)
        self.assertIn("scripts/build-nng.sh", out)
        self.assertNotIn("Debian 1.5.2 with deps/nng patches", out)

    def test_built_prefix_is_used(self):
        if not PREFIX:
            self.skipTest("this build links the system's nng")
        rc, out = setup(PREFIX)
        self.assertEqual(rc, 0, out)
        self.assertIn("nng: " + PREFIX + " (Debian 1.5.2", out)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
