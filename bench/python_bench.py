#!/usr/bin/env python3
"""cxlpool-bench for the Python binding: what a connector written in
Python (vLLM, LMCache, SGLang) pays per key and per chunk.

Runs against a metaserver it starts on a temporary /dev/shm pool (or one
given with --server) and prints a table, then the same numbers as JSON
(--json FILE, '-' for stdout):

* keys/s of batch_store (4 KiB pages, 64-byte values) with pages taken by
  alloc() one at a time and by alloc_pages(n), and of batch_retrieve and
  batch_exists (direct reads), at batches of 16, 256 and 1024;
* the data path: 64 KiB chunks written into pages through ``page.buf`` and
  registered by batch_store, and retrieved views copied out, in GB/s,
  against the same bytes copied between two bytearrays in the same run.

Usage: python3 bench/python_bench.py [--quick] [--json FILE]
       [--server URL | --metaserver PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

SRC = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(SRC / "bindings" / "python"))
if (SRC / "build" / "handler").is_dir():  # the build tree's library
    os.environ.setdefault("CXLP_LIBDIR", str(SRC / "build" / "handler"))

import cxlpool  # noqa: E402

KiB, MiB = 1024, 1024 * 1024
BATCHES = (16, 256, 1024)


def find_metaserver(given: Optional[str]) -> str:
    """--metaserver, $CXLP_METASERVER, or the build tree's binary."""
    if given is not None and not os.access(given, os.X_OK):
        print(f"python_bench: --metaserver {given}: not an executable",
              file=sys.stderr)
        sys.exit(2)  # a usage error, as argparse's
    for cand in (given, os.environ.get("CXLP_METASERVER"),
                 str(SRC / "build" / "metaserver" / "cxlpool-metaserver")):
        if cand and os.access(cand, os.X_OK):
            return cand
    sys.exit("python_bench: no cxlpool-metaserver (--metaserver PATH)")


def _die_with_parent() -> None:
    """In the server child: SIGTERM when this bench dies, even by a crash
    that skips its cleanup (PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)


class Server:
    """A metaserver on a private 2 GiB pool, removed at exit."""

    def __init__(self, exe: str) -> None:
        tag = f"cxlp-pybench-{os.getpid()}"
        self.pool = f"/dev/shm/{tag}.pool"
        self.url = f"ipc:///tmp/{tag}.sock"
        self.proc = subprocess.Popen(
            [exe, "--pool", self.pool, "--size", "2G", "--listen", self.url,
             "--log-level", "err"], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            preexec_fn=_die_with_parent)
        assert self.proc.stderr is not None
        seen = []
        for line in self.proc.stderr:  # log lines, then the ready line
            seen.append(line)
            if "cxlpool-metaserver: ready" in line:
                return
        self.stop()
        sys.exit("python_bench: metaserver did not start:\n" +
                 "".join(seen))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        for path in (self.pool, self.url[len("ipc://"):]):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


def rate(n: int, fn: Callable[[], None]) -> float:
    """n / seconds taken by fn()."""
    t0 = time.perf_counter()
    fn()
    return n / (time.perf_counter() - t0)


class Bench:
    def __init__(self, url: str, quick: bool) -> None:
        self.url = url
        self.quick = quick
        self.rows: List[Dict[str, Any]] = []
        self.errors = 0

    def handler(self, page: int, region: int) -> cxlpool.Handler:
        cfg = cxlpool.Config(server_url=self.url, page_size=page,
                             region_size=region)
        return cxlpool.Handler(cfg).connect()

    def keys_row(self, h: cxlpool.Handler, batch: int, total: int) -> None:
        """One batch size: store (two ways), retrieve, exists."""
        keys = [b"pyb-%06d-%022d" % (batch, i) for i in range(total)]
        chunks = [keys[i:i + batch] for i in range(0, total, batch)]
        value = b"v" * 64
        row: Dict[str, Any] = {"batch": batch}

        def store(bulk: bool) -> None:
            for ks in chunks:
                pages = (h.alloc_pages(len(ks)) if bulk else
                         [h.alloc() for _ in ks])
                for p in pages:
                    p.buf[:64] = value
                self.errors += sum(not s for s in
                                   h.batch_store(ks, pages, [64] * len(ks)))

        def delete() -> None:
            for ks in chunks:
                self.errors += sum(e is not None for e in h.batch_delete(ks))

        def retrieve() -> None:
            for ks in chunks:
                for v in h.batch_retrieve(ks):
                    if not isinstance(v, memoryview) or len(v) != 64:
                        self.errors += 1

        def exists() -> None:
            for ks in chunks:
                self.errors += sum(not e for e in h.batch_exists(ks))

        row["store_alloc"] = rate(total, lambda: store(False))
        delete()
        row["store_alloc_pages"] = rate(total, lambda: store(True))
        row["retrieve"] = rate(total, retrieve)
        row["exists"] = rate(total, exists)
        delete()
        self.rows.append(row)

    def keys_section(self) -> None:
        total = 1024 if self.quick else 16384
        h = self.handler(4 * KiB, 256 * MiB)
        try:
            for b in BATCHES:
                self.keys_row(h, b, total)
        finally:
            h.close()
        print("## keys/s through the Python binding, 4 KiB pages, 32-byte "
              "keys, 64-byte values")
        print("%6s %14s %14s %14s %14s" % ("batch", "store+alloc",
              "store+pages", "retrieve", "exists"))
        for r in self.rows:
            print("%6d %14.0f %14.0f %14.0f %14.0f" % (
                r["batch"], r["store_alloc"], r["store_alloc_pages"],
                r["retrieve"], r["exists"]))

    def datapath_section(self) -> Dict[str, float]:
        """64 KiB chunks, 256 per batch: write+store and retrieve+copy."""
        page, batch = 64 * KiB, 256
        npages = batch * (2 if self.quick else 16)
        chunk = bytes(range(256)) * (page // 256)
        dst = bytearray(page * npages)
        keys = [b"pyd-%028d" % i for i in range(npages)]
        h = self.handler(page, page * npages)

        def copy() -> None:
            for i in range(npages):
                dst[i * page:(i + 1) * page] = chunk

        def store() -> None:
            for i in range(0, npages, batch):
                pages = h.alloc_pages(batch)
                for p in pages:
                    p.buf[:] = chunk
                self.errors += sum(not s for s in
                                   h.batch_store(keys[i:i + batch], pages))

        def load() -> None:
            for i in range(0, npages, batch):
                for j, v in enumerate(h.batch_retrieve(keys[i:i + batch])):
                    if not isinstance(v, memoryview):
                        self.errors += 1
                        continue
                    dst[(i + j) * page:(i + j + 1) * page] = v

        try:
            nbytes = page * npages
            copy()
            mc = rate(nbytes, copy) / 1e9
            st = rate(nbytes, store) / 1e9
            rd = rate(nbytes, load) / 1e9
            for i in range(0, npages, batch):
                h.batch_delete(keys[i:i + batch])
            st2 = rate(nbytes, store) / 1e9
        finally:
            h.close()
        print("\n## data path through the Python binding: 64 KiB chunks, "
              "256 per batch, %d MiB per pass" % (page * npages // MiB))
        print("%-22s %8s" % ("", "GB/s"))
        for name, v in (("bytearray copy", mc), ("write+store, first", st),
                        ("write+store, steady", st2),
                        ("retrieve+copy", rd)):
            print("%-22s %8.2f  %4.0f%%" % (name, v, 100 * v / mc))
        return {"copy_gbs": mc, "store_first_gbs": st,
                "store_steady_gbs": st2, "retrieve_gbs": rd}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--server")
    ap.add_argument("--metaserver")
    args = ap.parse_args()
    out = sys.stderr if args.json == "-" else sys.stdout
    server = None if args.server else Server(find_metaserver(args.metaserver))
    url = args.server or server.url
    b = Bench(url, args.quick)
    try:
        with contextlib.redirect_stdout(out):
            print("# python3 " + " ".join(sys.argv))
            b.keys_section()
            dp = b.datapath_section()
    finally:
        if server is not None:
            server.stop()
    doc = {"quick": args.quick, "keys": b.rows, "datapath": dp,
           "errors": b.errors}
    if args.json == "-":
        json.dump(doc, sys.stdout)
    elif args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if b.errors:
        print(f"python_bench: {b.errors} keys failed", file=sys.stderr)
    return 1 if b.errors else 0


if __name__ == "__main__":
    sys.exit(main())
