"""Maru's own SGLang and LMCache integrations (maru_sglang: MaruStorage,
the HiCache L3 backend, and MaruHostTensorAllocator; maru_lmcache:
CxlMemoryAdapter), unchanged, on cxlpool.maru
(issue 29): through a stand-in of the one SGLang class it imports
(tests/python/maru_standins), on a tcp metaserver whose secret reaches
the handlers only through CXLP_SECRET_FILE (MaruStorage builds its
MaruConfig from SGLang's extra config, which has no secret), with a
chunk size that is no multiple of 4 KiB. One process stores (v1 set of
K+V host pages, the legacy set and batch_set) and takes a tensor from
MaruHostTensorAllocator; a second reads back (batch_exists, batch_get_v1
into its host pages, get, batch_get) and the bytes are checked.

Needs, or is skipped: CXLP_MARU_CHECKOUT (a Maru checkout, whose tree
is put on the path after cxlpool's shim, as an installed Maru would be
shadowed by it) and a Python with torch, msgpack and dacite (Maru's own
dependencies: this interpreter or /usr/bin/python3; Debian:
python3-torch python3-msgpack python3-dacite). Nothing is fetched.
LMCache's CxlMemoryAdapter is driven the same way (its allocate,
create_store_handle, free, get_by_location of another process's pages,
partial chunks) through a stand-in of lmcache.v1.memory_management, and
vLLM's MaruWorkerConnector (save_kv_layer of a flash-layout KV cache,
start_load_kv into another process's cache at other blocks, _DONE keys)
through stand-ins of the vLLM types it imports.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Dict, Optional

import cxlp_test

HERE = Path(__file__).resolve().parent

COMMON = r"""
import ctypes, json, os, sys
from types import SimpleNamespace
import torch
from maru_sglang.maru_storage import MaruStorage

HALF = 500  # K and V halves: 1000 bytes a key, the chunk size

class Host:
    # stand-in of SGLang's host KV pool, page_first layout: K and V of
    # page i are separate buffers (2 chunks per key, non-MLA)
    layout = "page_first_direct"
    def __init__(self, pages):
        self.k = torch.zeros(pages, HALF, dtype=torch.uint8)
        self.v = torch.zeros(pages, HALF, dtype=torch.uint8)
    def get_page_buffer_meta(self, indices):
        ptrs, sizes = [], []
        for i in indices.tolist():
            ptrs += [self.k[i].data_ptr(), self.v[i].data_ptr()]
            sizes += [HALF, HALF]
        return ptrs, sizes

cfg = SimpleNamespace(model_name="org/model", is_mla_model=False,
                      tp_rank=0, tp_size=1,
                      extra_config={"maru_server_url": sys.argv[1],
                                    "maru_pool_size": "2M",
                                    "maru_chunk_size_bytes": 1000})
st = MaruStorage(cfg, {})
host = Host(4)
st.register_mem_pool_host(host)
"""

WRITER = COMMON + r"""
for i in range(3):
    host.k[i].fill_(ord("a") + i)
    host.v[i].fill_(ord("A") + i)
out = {"v1": st.batch_set_v1(["h0", "h1", "h2"], torch.tensor([0, 1, 2])),
       "set": st.set("legacy", torch.arange(100, dtype=torch.uint8)),
       "batch_set": st.batch_set(["b0", "b1"], [
           torch.full((10,), 7, dtype=torch.uint8),
           torch.full((20,), 8, dtype=torch.uint8)])}
from maru_sglang.allocator import MaruHostTensorAllocator
alloc = MaruHostTensorAllocator()
t = alloc.allocate((3, 1000), torch.float16)  # 6000 bytes
t.fill_(1.5)
h = alloc.handler
rid = h.owned_region_manager.get_first_region_id()
out["tensor"] = [alloc.base_ptr == t.data_ptr(),
                 bytes(h.get_buffer_view(rid, 0, 2)).hex(),
                 list(t.shape), str(t.dtype)]
st.close()
print(json.dumps(out), flush=True)
"""

READER = COMMON + r"""
out = {"exists": st.batch_exists(["h0", "h1", "h2", "nope"]),
       "v1": st.batch_get_v1(["h0", "h1", "h2"], torch.tensor([2, 1, 0]))}
out["pages"] = [[chr(host.k[i][0]), chr(host.v[i][-1]),
                 int((host.k[i] == host.k[i][0]).all()),
                 int((host.v[i] == host.v[i][0]).all())] for i in range(3)]
out["get"] = st.get("legacy").tolist()
out["batch_get"] = [x.tolist() for x in st.batch_get(["b0", "b1"])]
out["miss"] = st.get("nope") is None
st.close()
print(json.dumps(out), flush=True)
"""


LMCACHE = r"""
import json, sys
import torch
from maru import MaruConfig, MaruHandler
from maru_lmcache import CxlMemoryAdapter
from lmcache.v1.memory_management import MemoryFormat

TOKENS, HIDDEN = 16, 64        # float16: 2048-byte chunks
CHUNK = TOKENS * HIDDEN * 2
h = MaruHandler(MaruConfig(server_url=sys.argv[1], pool_size=2 << 20,
                           chunk_size_bytes=CHUNK))
assert h.connect()  # as LMCache's MaruBackend does before the adapter
adapter = CxlMemoryAdapter(h, [torch.Size([TOKENS, HIDDEN])],
                           [torch.float16], MemoryFormat.KV_T2D, CHUNK)
out = {}
if sys.argv[2] == "store":
    full = adapter.allocate(torch.Size([TOKENS, HIDDEN]), torch.float16)
    full.raw_data.fill_(2.0)
    part = adapter.allocate(torch.Size([5, HIDDEN]), torch.float16)
    part.raw_data.fill_(-3.0)
    out["shapes"] = [list(full.tensor.shape), list(part.tensor.shape)]
    out["stored"] = [h.store("lm-full", adapter.create_store_handle(full)),
                     h.store("lm-part", adapter.create_store_handle(part))]
    spare = adapter.allocate(torch.Size([TOKENS, HIDDEN]), torch.float16)
    before = h.allocator.num_allocated
    adapter.free(spare)
    out["freed"] = before - h.allocator.num_allocated
else:
    for key in ("lm-full", "lm-part"):
        info = h.retrieve(key)
        obj = adapter.get_by_location(info.region_id, info.page_index,
                                      len(info.view), CHUNK // TOKENS)
        t = obj.tensor
        out[key] = [list(t.shape), float(t.min()), float(t.max())]
adapter.close()
h.close()
print(json.dumps(out), flush=True)
"""


VLLM = r"""
import json, sys
from types import SimpleNamespace
import torch
from maru_vllm.connector import (MaruConnectorMetadata, MaruReqMeta,
                                 MaruWorkerConnector)

# flash layout [2, pages, page_size, heads * dim]: 4 pages of 4 tokens,
# chunks of 8 tokens (2 pages), float32: 2 * 8 * 6 * 4 = 384 bytes a
# chunk and layer, the Maru chunk size (no multiple of 4 KiB)
LAYERS = ["model.layers.0.self_attn", "model.layers.1.self_attn"]
def layer(i):
    return (torch.arange(2 * 16 * 6, dtype=torch.float32) + 1000 * i
            ).reshape(2, 4, 4, 6)
def slots(blocks):
    return [b * 4 + o for b in blocks for o in range(4)]
extra = {"maru_server_url": sys.argv[1], "maru_pool_size": "2M",
         "maru_chunk_size": 384}
tokens = list(range(100, 116))
w = MaruWorkerConnector(block_size=4, kv_chunk_tokens=8, extra_config=extra)
flash = object()  # neither MLA nor Triton metadata: the flash layout
out = {}
if sys.argv[2] == "save":
    caches = {n: layer(i) for i, n in enumerate(LAYERS)}
    w.register_kv_caches(caches)
    meta = MaruConnectorMetadata(requests=[MaruReqMeta(
        req_id="r", token_ids=tokens, block_ids=[0, 1, 2, 3],
        is_store=True, num_scheduled_tokens=16)])
    for n in LAYERS:
        w.save_kv_layer(n, caches[n], flash, meta)
    out["stored"] = sorted(w._stored_keys)
else:
    caches = {n: torch.zeros(2, 4, 4, 6) for n in LAYERS}
    w.register_kv_caches(caches)
    ctx = SimpleNamespace(attn_metadata=flash, virtual_engine=0,
                          no_compile_layers={n: SimpleNamespace(
                              kv_cache=[caches[n]]) for n in LAYERS})
    meta = MaruConnectorMetadata(requests=[MaruReqMeta(
        req_id="r2", token_ids=tokens, block_ids=[3, 2, 1, 0],
        is_store=False, num_matched_chunks=2)])
    w.start_load_kv(ctx, meta)
    # token t went to slot t of the writer, slot slots([3,2,1,0])[t] here
    got = [bool((caches[n].reshape(2, 16, 6)[:, slots([3, 2, 1, 0])] ==
                 layer(i).reshape(2, 16, 6)[:, slots([0, 1, 2, 3])]).all())
           for i, n in enumerate(LAYERS)]
    out["loaded"] = got
    out["done"] = [w._handler.exists(k.rsplit("_L", 1)[0] + "_DONE")
                   for k in sys.argv[3].split(",")]
w.shutdown()
print(json.dumps(out), flush=True)
"""


def torch_python() -> Optional[str]:
    """An interpreter with torch, msgpack and dacite."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import torch, msgpack, dacite"],
                capture_output=True).returncode == 0:
            return exe
    return None


class Integrations(unittest.TestCase):
    def setUp(self) -> None:
        checkout = os.environ.get("CXLP_MARU_CHECKOUT")
        if not checkout or not (Path(checkout) / "maru_sglang").is_dir():
            self.skipTest("CXLP_MARU_CHECKOUT (a Maru checkout) is not set")
        exe = torch_python()
        if exe is None:
            self.skipTest("no Python with torch, msgpack and dacite")
        self.exe = exe
        d = tempfile.mkdtemp(prefix="cxlp-maru-int-")
        self.addCleanup(shutil.rmtree, d)
        secret = os.path.join(d, "secret")
        with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600),
                  "w") as f:
            f.write("sglang\n")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"tcp://127.0.0.1:{port}"
        srv = cxlp_test.MetaServer(["--listen", self.url, "--secret-file",
                                    secret]).start()
        self.addCleanup(srv.stop)
        env = cxlp_test.child_env()
        env["PYTHONPATH"] = os.pathsep.join([
            str(cxlp_test.PYDIR), str(cxlp_test.PYDIR / "maru_shim"),
            str(HERE / "maru_standins"), checkout])
        env.update(CXLP_SECRET_FILE=secret, MARU_SERVER_URL=self.url)
        self.env: Dict[str, str] = env

    def run_child(self, code: str, *args: str) -> dict:
        done = subprocess.run([self.exe, "-c", code, self.url, *args],
                              env=self.env, capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            raise AssertionError(done.stderr[-3000:])
        return json.loads(done.stdout.strip().splitlines()[-1])

    def test_store_in_one_process_and_read_back_in_another(self) -> None:
        w = self.run_child(WRITER)
        self.assertEqual(w["v1"], [True, True, True])
        self.assertTrue(w["set"], "set: store(key, data=memoryview)")
        self.assertTrue(w["batch_set"], "batch_set: batch_store of views")
        self.assertEqual(w["tensor"], [True, "003e", [3, 1000],
                                       "torch.float16"])  # 1.5 is 0x3e00
        r = self.run_child(READER)
        self.assertEqual(r["exists"], 3)
        self.assertEqual(r["v1"], [True, True, True])
        # key hN went to host page 2-N, K then V, each whole
        self.assertEqual(r["pages"], [["c", "C", 1, 1], ["b", "B", 1, 1],
                                      ["a", "A", 1, 1]])
        self.assertEqual(r["get"], list(range(100)))
        self.assertEqual(r["batch_get"], [[7] * 10, [8] * 20])
        self.assertTrue(r["miss"])


    def test_lmcache_cxl_memory_adapter_stores_and_another_loads(
            self) -> None:
        probe = subprocess.run([self.exe, "-c", "import torch; "
                                "torch.float16.itemsize"],
                               capture_output=True)
        if probe.returncode != 0:  # Debian 12's is 1.13
            self.skipTest("maru_lmcache needs torch >= 2.1 (dtype.itemsize)")
        w = self.run_child(LMCACHE, "store")
        self.assertEqual(w["shapes"], [[16, 64], [5, 64]])
        self.assertEqual(w["stored"], [True, True])
        self.assertEqual(w["freed"], 1)
        r = self.run_child(LMCACHE, "load")
        self.assertEqual(r["lm-full"], [[16, 64], 2.0, 2.0])
        self.assertEqual(r["lm-part"], [[5, 64], -3.0, -3.0])


    def test_vllm_worker_connector_saves_and_another_loads(self) -> None:
        w = self.run_child(VLLM, "save")
        self.assertEqual(len(w["stored"]), 4, w)  # 2 chunks x 2 layers
        r = self.run_child(VLLM, "load", ",".join(w["stored"]))
        self.assertEqual(r["loaded"], [True, True])
        self.assertEqual(r["done"], [True] * 4, "each chunk's _DONE key")


if __name__ == "__main__":
    cxlp_test.main()
