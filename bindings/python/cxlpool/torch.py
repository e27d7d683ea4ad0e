"""cxlpool.torch: tensors over pages and retrieved values, with no copy
(issue 19). Import it only where torch is installed (``import cxlpool``
never imports torch).

* :func:`as_tensor` -- ``torch.frombuffer`` over a page's ``buf``, a
  retrieved view, a ``buffer_view`` or a Maru ``AllocHandle.buf`` /
  ``MemoryInfo.view``: the tensor's ``data_ptr()`` is the address in the
  shared mapping. The tensor keeps the view's memory mapped (the binding
  cannot release a view a tensor holds; the handler's mappings stay until
  the last such tensor is gone).
* Read-only where the view is: torch has no read-only tensors, so a
  tensor over a read-only view (a retrieved value, another handler's
  region) is marked ``tensor.cxlpool_readonly = True`` and lies over
  memory mapped read-only: a write through it faults (SIGSEGV). Copy it
  (``.clone()``, ``.to(device)``) to get a tensor you may write.
* :func:`register_regions` -- for GPU connectors: calls
  ``register(addr, length)`` for every region the handler maps (replayed
  for those mapped now) and ``unregister(addr, length)`` before one goes,
  in pieces of at most ``piece`` bytes (recent CUDA drivers refuse a
  single ``cudaHostRegister`` of 512 GiB or more).

The GPU recipe (README.md, "cxlpool.torch"): register the regions through
:func:`register_regions` (``cudaHostRegister`` / ``cudaHostUnregister``),
then copy with ``gpu_tensor.copy_(as_tensor(view), non_blocking=True)``;
keep the key pinned (``pin=True``), leased, or take a version
(``retrieve_v``) and ``validate`` it after the copy's stream is
synchronized.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch as _torch

from .process import address_of

GiB = 1 << 30
#: Largest piece register_regions hands to register (below 512 GiB).
PIECE_MAX = 256 * GiB


def as_tensor(view: Any, dtype: Any = _torch.uint8,
              shape: Optional[Sequence[int]] = None) -> "_torch.Tensor":
    """A tensor over view's bytes (no copy), of dtype and, if given,
    shape; ``len(view)`` must be a multiple of the dtype's size. Marked
    ``cxlpool_readonly`` when view is read-only (a write faults)."""
    mv = memoryview(view)
    readonly = mv.readonly
    if len(mv) == 0:
        t = _torch.empty(0, dtype=dtype)
    else:
        with warnings.catch_warnings():
            # frombuffer warns that a read-only buffer is not writable:
            # the mark below says so, and the mapping enforces it
            warnings.simplefilter("ignore", UserWarning)
            t = _torch.frombuffer(mv, dtype=dtype)
    if shape is not None:
        t = t.view(*shape)
    t.cxlpool_readonly = readonly  # type: ignore[attr-defined]
    return t


def is_readonly(t: "_torch.Tensor") -> bool:
    """True for a tensor as_tensor made over a read-only view."""
    return bool(getattr(t, "cxlpool_readonly", False))


def pieces(addr: int, length: int,
           piece: int = PIECE_MAX) -> List[Tuple[int, int]]:
    """[addr, addr + length) cut into (address, length) pieces of at most
    piece bytes."""
    if piece <= 0:
        raise ValueError("piece must be > 0")
    return [(addr + off, min(piece, length - off))
            for off in range(0, length, piece)]


def register_regions(handler: Any, register: Callable[[int, int], None],
                     unregister: Callable[[int, int], None], *,
                     piece: int = PIECE_MAX) -> None:
    """Have register(addr, length) called for every piece of every region
    handler (a cxlpool.Handler) maps, now and as they are mapped, and
    unregister(addr, length) for each before a region goes (at close at
    the latest). For CUDA::

        cudart = torch.cuda.cudart()
        register_regions(h, lambda a, n: cudart.cudaHostRegister(a, n, 0),
                         lambda a, n: cudart.cudaHostUnregister(a))
    """
    def on_region(event: str, info: Any) -> None:
        fn = register if event == "mapped" else unregister
        for a, n in pieces(info.addr, info.length, piece):
            fn(a, n)
    handler.set_region_callback(on_region)


def same_memory(t: "_torch.Tensor", view: Any) -> bool:
    """True if tensor t starts at view's first byte (no copy was made)."""
    return int(t.data_ptr()) == address_of(view)


__all__ = ["PIECE_MAX", "as_tensor", "is_readonly", "pieces",
           "register_regions", "same_memory"]
