"""The manual pages (man/*.scd) against what they describe: every flag
of cxlpool-metaserver --help is an option of cxlpool-metaserver(8) and
the other way round; every command and flag of pool-inspect --help is in
pool-inspect(8); every function of cxlpool.h is named in libcxlpool(3).
And, where scdoc is installed, each page builds.

    test_man.py SRCDIR METASERVER POOL_INSPECT
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Set

SRC = Path(".")
METASERVER = ""
POOL_INSPECT = ""


def help_text(exe: str) -> str:
    out = subprocess.run([exe, "--help"], capture_output=True, text=True,
                         timeout=30)
    return out.stdout + out.stderr


def flags_of_help(text: str) -> Set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))


def page(name: str) -> str:
    return (SRC / "man" / name).read_text()


def section(text: str, title: str) -> str:
    m = re.search(rf"^# {title}\n(.*?)(?=^# |\Z)", text, re.S | re.M)
    return m.group(1) if m else ""


def flags_of_page(text: str) -> Set[str]:
    return set(re.findall(r"^\*(--[a-z][a-z0-9-]*)\*", text, re.M))


class ManPages(unittest.TestCase):
    def test_metaserver_page_and_help_name_the_same_flags(self) -> None:
        helped = flags_of_help(help_text(METASERVER))
        paged = flags_of_page(section(page("cxlpool-metaserver.8.scd"),
                                      "OPTIONS"))
        self.assertGreater(len(helped), 10)
        self.assertEqual(helped - paged, set(), "in --help, not the page")
        self.assertEqual(paged - helped, set(), "in the page, not --help")

    def test_pool_inspect_page_and_help_agree(self) -> None:
        text = help_text(POOL_INSPECT)
        commands = set(re.findall(r"^  ([a-z]+)\s", text, re.M))
        man = page("pool-inspect.8.scd")
        paged_cmds = set(re.findall(r"^\*([a-z]+)\*", section(man,
                                                             "COMMANDS"),
                                    re.M))
        self.assertGreater(len(commands), 5)
        self.assertEqual(commands, paged_cmds)
        self.assertEqual(flags_of_help(text) - flags_of_page(
            section(man, "OPTIONS")), set(), "in --help, not the page")

    def test_libcxlpool_page_names_every_function(self) -> None:
        header = (SRC / "include" / "cxlpool.h").read_text()
        funcs = set(re.findall(r"^CXLP_API[^;(]*?\b(cxlp_[a-z0-9_]+)\(",
                               header, re.M | re.S))
        man = page("libcxlpool.3.scd")
        named = set(re.findall(r"\b(cxlp_[a-z0-9_]+)\b", man))
        self.assertGreater(len(funcs), 50)
        self.assertEqual(funcs - named, set(), "functions the page omits")
        self.assertEqual(named - funcs, set(), "names that are no function")

    def test_each_page_builds_with_scdoc(self) -> None:
        scdoc = shutil.which("scdoc")
        if scdoc is None:
            raise unittest.SkipTest("scdoc is not installed")
        for src in sorted((SRC / "man").glob("*.scd")):
            out = subprocess.run([scdoc], stdin=src.open(),
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, f"{src}: {out.stderr}")
            self.assertIn(".TH", out.stdout)


if __name__ == "__main__":
    SRC, METASERVER, POOL_INSPECT = Path(sys.argv[1]), sys.argv[2], \
        sys.argv[3]
    unittest.main(argv=sys.argv[:1])
