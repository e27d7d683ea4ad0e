"""bindings/python/examples/kv_connector.py keeps working: one process
saves a request's chunks with batch_store, another loads them with
batch_retrieve and checks every byte."""

from __future__ import annotations

import subprocess
import sys

import cxlp_test
from cxlp_test import ServerTestCase

EXAMPLE = cxlp_test.PYDIR / "examples" / "kv_connector.py"


class KVConnectorExample(ServerTestCase):
    def run_example(self, *args: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(
            [sys.executable, str(EXAMPLE), "--url", self.server.url, *args],
            env=cxlp_test.child_env(), capture_output=True, text=True,
            timeout=90)

    def test_chunks_saved_by_one_process_load_in_another(self) -> None:
        saved = self.run_example("save", "--request", "7")
        self.assertEqual(saved.returncode, 0, saved.stderr)
        self.assertIn("saved 8/8 chunks", saved.stdout)
        loaded = self.run_example("load", "--request", "7")
        self.assertEqual(loaded.returncode, 0, loaded.stderr)
        self.assertIn("loaded 8/8 chunks, bytes ok", loaded.stdout)

    def test_an_unsaved_request_loads_nothing(self) -> None:
        loaded = self.run_example("load", "--request", "8")
        self.assertEqual(loaded.returncode, 0, loaded.stderr)
        self.assertIn("loaded 0/8 chunks", loaded.stdout)

    def test_saving_twice_reports_every_chunk_stored(self) -> None:
        for _ in range(2):
            saved = self.run_example("save", "--request", "9")
            self.assertEqual(saved.returncode, 0, saved.stderr)
            self.assertIn("saved 8/8 chunks", saved.stdout)



MARU_EXAMPLE = cxlp_test.PYDIR / "examples" / "maru_connector.py"


class MaruConnectorExample(ServerTestCase):
    """examples/maru_connector.py, importing `maru` through the shim."""

    def run_example(self, *args: str) -> "subprocess.CompletedProcess[str]":
        env = cxlp_test.child_env()
        env["PYTHONPATH"] = str(cxlp_test.PYDIR / "maru_shim") + ":" + \
            env["PYTHONPATH"]
        return subprocess.run(
            [sys.executable, str(MARU_EXAMPLE), "--url", self.server.url,
             *args], env=env, capture_output=True, text=True, timeout=90)

    def test_layers_saved_by_one_process_load_in_another(self) -> None:
        saved = self.run_example("save", "--request", "7")
        self.assertEqual(saved.returncode, 0, saved.stderr)
        self.assertIn("prefix 0/8 chunks stored before; saved 8 chunks x 4 "
                      "layers", saved.stdout)
        loaded = self.run_example("load", "--request", "7")
        self.assertEqual(loaded.returncode, 0, loaded.stderr)
        self.assertIn("loaded 8/8 chunks x 4 layers, bytes ok",
                      loaded.stdout)

    def test_a_longer_request_finds_the_stored_prefix(self) -> None:
        self.assertEqual(self.run_example("save", "--request", "5")
                         .returncode, 0)
        longer = ["--request", "5", "--tokens", str(12 * 16)]
        loaded = self.run_example("load", *longer)
        self.assertEqual(loaded.returncode, 0, loaded.stderr)
        self.assertIn("loaded 8/12 chunks x 4 layers, bytes ok",
                      loaded.stdout)
        saved = self.run_example("save", *longer)
        self.assertIn("prefix 8/12 chunks stored before; saved 4 chunks",
                      saved.stdout)
        again = self.run_example("load", *longer)
        self.assertIn("loaded 12/12 chunks x 4 layers, bytes ok",
                      again.stdout)

    def test_an_unsaved_request_loads_nothing(self) -> None:
        loaded = self.run_example("load", "--request", "6")
        self.assertEqual(loaded.returncode, 0, loaded.stderr)
        self.assertIn("loaded 0/8 chunks", loaded.stdout)


if __name__ == "__main__":
    cxlp_test.main()
