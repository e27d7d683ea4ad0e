#!/usr/bin/env python3
"""A minimal KV-cache connector on cxlpool, the shape a vLLM, LMCache or
SGLang connector takes.

A request's token ids are cut into fixed-size chunks. Each chunk's KV cache
is one page of the pool, named by a prefix hash so that two requests
sharing a prefix share keys: ``model@rank@<hash of tokens so far>``.

* ``save``: write every chunk's KV bytes straight into pages (no staging
  buffer), then register them all with one ``batch_store``. A chunk that
  another engine stored first is reported True and our page is freed.
* ``load``: ``batch_retrieve`` the chunks with ``pin=True`` (so no one can
  delete them while we copy), copy each prefix hit into the engine's own
  buffer (here a bytearray; on a GPU this is the host-to-device copy from
  ``cxlpool.address_of(view)``), then unpin.

Real KV tensors are replaced by deterministic bytes derived from the key,
so that ``load`` can check what it read. Run it in two processes:

    cxlpool-metaserver --pool /dev/shm/demo --listen ipc:///tmp/demo.sock &
    python3 kv_connector.py --url ipc:///tmp/demo.sock save --request 7
    python3 kv_connector.py --url ipc:///tmp/demo.sock load --request 7
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from typing import List, Sequence

import cxlpool

CHUNK_TOKENS = 256          # tokens per chunk
CHUNK_BYTES = 64 * 1024     # KV bytes per chunk (one page)


def request_tokens(request: int, ntokens: int) -> List[int]:
    """Token ids of a demo request (a stand-in for the engine's)."""
    return [(request * 7919 + i * 31) % 32000 for i in range(ntokens)]


class CxlKVConnector:
    """Stores and loads a request's KV chunks through one Handler."""

    def __init__(self, handler: cxlpool.Handler, model: str,
                 rank: int) -> None:
        self.h = handler
        self.prefix = f"{model}@{rank}@"

    def chunk_keys(self, tokens: Sequence[int]) -> List[str]:
        """One key per full chunk: a hash of every token up to its end."""
        keys, digest = [], hashlib.sha256()
        for start in range(0, len(tokens) - CHUNK_TOKENS + 1, CHUNK_TOKENS):
            chunk = tokens[start:start + CHUNK_TOKENS]
            digest.update(b"".join(t.to_bytes(4, "little") for t in chunk))
            keys.append(self.prefix + digest.copy().hexdigest()[:32])
        return keys

    @staticmethod
    def fake_kv(key: str, out: memoryview) -> None:
        """Fill out with the demo KV bytes of key (in place: no copy)."""
        seed = hashlib.blake2b(key.encode(), digest_size=64).digest()
        n = len(out)
        out[:n] = (seed * (n // len(seed) + 1))[:n]

    def save(self, tokens: Sequence[int]) -> List[bool]:
        """Write each chunk into its page and store them in one batch."""
        keys = self.chunk_keys(tokens)
        pages = self.h.alloc_pages(len(keys))
        try:
            for key, page in zip(keys, pages):
                self.fake_kv(key, page.buf[:CHUNK_BYTES])
        except BaseException:
            for page in pages:
                self.h.free(page)
            raise
        return self.h.batch_store(keys, pages, [CHUNK_BYTES] * len(keys))

    def load(self, tokens: Sequence[int], dst: bytearray) -> int:
        """Copy the longest stored prefix of chunks into dst.

        Returns the number of chunks loaded. The chunks are pinned while
        they are copied, so no other handler can delete them meanwhile.
        """
        keys = self.chunk_keys(tokens)
        views = self.h.batch_retrieve(keys, pin=True)
        hit = 0
        try:
            for i, view in enumerate(views):
                if not isinstance(view, memoryview):
                    break  # first miss ends the prefix
                dst[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES] = view
                hit += 1
        finally:
            pinned = [k for k, v in zip(keys, views)
                      if isinstance(v, memoryview)]
            for v in views:
                if isinstance(v, memoryview):
                    v.release()
            if pinned:
                self.h.batch_unpin(pinned)
        return hit


def check(connector: CxlKVConnector, tokens: Sequence[int],
          dst: bytearray, hit: int) -> bool:
    """True if the first hit chunks of dst hold the expected KV bytes."""
    want = bytearray(CHUNK_BYTES)
    for i, key in enumerate(connector.chunk_keys(tokens)[:hit]):
        connector.fake_kv(key, memoryview(want))
        if dst[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES] != want:
            return False
    return True


def main(argv: Sequence[str]) -> int:
    """Command line: save or load one demo request."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default=cxlpool.DEFAULT_SERVER_URL)
    ap.add_argument("--model", default="demo-model")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=8 * CHUNK_TOKENS)
    ap.add_argument("op", choices=["save", "load"])
    ap.add_argument("--request", type=int, default=1)
    args = ap.parse_args(argv)
    cfg = cxlpool.Config(server_url=args.url, page_size=CHUNK_BYTES,
                         region_size=4 << 20)
    tokens = request_tokens(args.request, args.tokens)
    with cxlpool.Handler(cfg) as h:
        conn = CxlKVConnector(h, args.model, args.rank)
        if args.op == "save":
            stored = conn.save(tokens)
            print(f"saved {sum(stored)}/{len(stored)} chunks")
            return 0 if all(stored) else 1
        dst = bytearray(len(conn.chunk_keys(tokens)) * CHUNK_BYTES)
        hit = conn.load(tokens, dst)
        ok = check(conn, tokens, dst, hit)
        print(f"loaded {hit}/{len(conn.chunk_keys(tokens))} chunks, "
              f"{'bytes ok' if ok else 'BYTES DIFFER'}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
