#!/usr/bin/env python3
"""A vLLM-style KV connector written against Maru's API, run on cxlpool.

It does what vLLM's MaruKVConnector does, through ``from maru import
MaruConfig, MaruHandler`` (bindings/python/maru_shim; without the shim on
the path it imports cxlpool.maru directly, the same classes):

* keys: one per prefix chunk of ``CHUNK_TOKENS`` tokens and per layer,
  ``model@rank@<hash of every token up to the chunk's end>@L<layer>``, so
  two requests sharing a prefix share keys;
* lookup: ``batch_exists`` of the chunks' keys (layer 0), and the stored
  prefix is the leading run of True: that many tokens need no prefill;
* save: the request's KV tensor, laid out ``[layer][token][bytes]`` as an
  engine's paged cache is per layer, stored layer by layer: for each
  layer, each new chunk's slice is written into a page (``alloc`` ->
  ``buf``; on a GPU the device-to-host copy lands straight there) and the
  layer's chunks go in one ``batch_store``;
* load (another process): the stored prefix found with ``batch_exists``,
  ``batch_retrieve`` of its keys layer by layer, each ``MemoryInfo.view``
  copied into the engine's tensor (on a GPU: a non-blocking host-to-device
  copy from the view's address, the region registered through
  ``set_on_region_added`` or cxlpool's region callback).

The KV bytes are deterministic, so ``load`` checks every byte it read:

    cxlpool-metaserver --pool /dev/shm/demo --listen ipc:///tmp/demo.sock &
    python3 maru_connector.py --url ipc:///tmp/demo.sock save --request 7
    python3 maru_connector.py --url ipc:///tmp/demo.sock load --request 7
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from typing import List, Sequence

try:
    from maru import MaruConfig, MaruHandler  # the shim, or Maru itself
except ImportError:
    from cxlpool.maru import MaruConfig, MaruHandler

CHUNK_TOKENS = 16    # tokens per chunk
LAYERS = 4           # layers of the demo model
TOKEN_BYTES = 1024   # K and V bytes of one token in one layer
CHUNK_BYTES = CHUNK_TOKENS * TOKEN_BYTES  # one page per (chunk, layer)


def request_tokens(request: int, ntokens: int) -> List[int]:
    """Token ids of a demo request: request r's first tokens are the same
    for every length, so a longer request extends a shorter one."""
    return [(request * 7919 + i * 31) % 32000 for i in range(ntokens)]


def fake_kv(tokens: Sequence[int]) -> bytearray:
    """The demo KV tensor of tokens: [layer][token][TOKEN_BYTES], each
    token's bytes a function of its position, id and layer."""
    kv = bytearray(LAYERS * len(tokens) * TOKEN_BYTES)
    for layer in range(LAYERS):
        for i, t in enumerate(tokens):
            seed = hashlib.blake2b(f"{layer}:{i}:{t}".encode(),
                                   digest_size=64).digest()
            at = (layer * len(tokens) + i) * TOKEN_BYTES
            kv[at:at + TOKEN_BYTES] = seed * (TOKEN_BYTES // 64)
    return kv


class MaruKVConnector:
    """Save and load a request's KV chunks through a MaruHandler."""

    def __init__(self, handler: MaruHandler, model: str, rank: int) -> None:
        self.h = handler
        self.prefix = f"{model}@{rank}@"

    def chunk_hashes(self, tokens: Sequence[int]) -> List[str]:
        """One prefix hash per full chunk of tokens."""
        out, digest = [], hashlib.sha256()
        for start in range(0, len(tokens) - CHUNK_TOKENS + 1, CHUNK_TOKENS):
            chunk = tokens[start:start + CHUNK_TOKENS]
            digest.update(b"".join(t.to_bytes(4, "little") for t in chunk))
            out.append(self.prefix + digest.copy().hexdigest()[:32])
        return out

    @staticmethod
    def key(chunk_hash: str, layer: int) -> str:
        return f"{chunk_hash}@L{layer}"

    def stored_prefix(self, tokens: Sequence[int]) -> int:
        """Chunks of tokens' prefix in the pool (the scheduler's lookup)."""
        found = self.h.batch_exists([self.key(c, 0)
                                     for c in self.chunk_hashes(tokens)])
        n = 0
        while n < len(found) and found[n]:
            n += 1
        return n

    def save(self, tokens: Sequence[int], kv: bytearray) -> int:
        """Store the chunks not stored yet, layer by layer; returns the
        chunks saved (each with all its layers)."""
        hashes = self.chunk_hashes(tokens)
        first = self.stored_prefix(tokens)
        ntok = len(tokens)
        for layer in range(LAYERS):
            keys, handles = [], []
            for c in range(first, len(hashes)):
                a = self.h.alloc(CHUNK_BYTES)
                at = (layer * ntok + c * CHUNK_TOKENS) * TOKEN_BYTES
                a.buf[:] = kv[at:at + CHUNK_BYTES]  # the engine's copy out
                keys.append(self.key(hashes[c], layer))
                handles.append(a)
            if keys and not all(self.h.batch_store(keys, handles)):
                return 0
        return len(hashes) - first

    def load(self, tokens: Sequence[int], kv: bytearray) -> int:
        """Copy the stored prefix's KV into kv; returns its chunks."""
        hashes = self.chunk_hashes(tokens)[:self.stored_prefix(tokens)]
        ntok = len(tokens)
        for layer in range(LAYERS):
            infos = self.h.batch_retrieve([self.key(c, layer)
                                           for c in hashes])
            for c, info in enumerate(infos):
                if info is None:  # evicted since the lookup
                    return c if layer == 0 else 0
                at = (layer * ntok + c * CHUNK_TOKENS) * TOKEN_BYTES
                kv[at:at + len(info.view)] = info.view  # the copy in
        return len(hashes)


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="ipc:///tmp/cxlpool.sock")
    ap.add_argument("--model", default="demo-model")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=8 * CHUNK_TOKENS)
    ap.add_argument("--request", type=int, default=1)
    ap.add_argument("op", choices=["save", "load"])
    args = ap.parse_args(argv)
    cfg = MaruConfig(server_url=args.url, chunk_size_bytes=CHUNK_BYTES,
                     pool_size=4 << 20)
    tokens = request_tokens(args.request, args.tokens)
    nchunks = len(tokens) // CHUNK_TOKENS
    with MaruHandler(cfg) as h:
        conn = MaruKVConnector(h, args.model, args.rank)
        if args.op == "save":
            had = conn.stored_prefix(tokens)
            saved = conn.save(tokens, fake_kv(tokens))
            print(f"prefix {had}/{nchunks} chunks stored before; saved "
                  f"{saved} chunks x {LAYERS} layers")
            return 0 if had + saved == nchunks else 1
        kv = bytearray(LAYERS * len(tokens) * TOKEN_BYTES)
        hit = conn.load(tokens, kv)
        want = fake_kv(tokens)
        ok = all(kv[(l * len(tokens)) * TOKEN_BYTES:
                    (l * len(tokens) + hit * CHUNK_TOKENS) * TOKEN_BYTES] ==
                 want[(l * len(tokens)) * TOKEN_BYTES:
                      (l * len(tokens) + hit * CHUNK_TOKENS) * TOKEN_BYTES]
                 for l in range(LAYERS))
        print(f"loaded {hit}/{nchunks} chunks x {LAYERS} layers, "
              f"{'bytes ok' if ok else 'BYTES DIFFER'}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
