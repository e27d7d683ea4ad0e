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


if __name__ == "__main__":
    cxlp_test.main()
