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
  ``register(addr, length, info)`` for every region the handler maps
  (replayed for those mapped now) and ``unregister(addr, length, info)``
  before one goes, in pieces of at most ``piece`` bytes (recent CUDA
  drivers refuse a single ``cudaHostRegister`` of 512 GiB or more);
  ``info.writable`` is False for other handlers' regions, mapped
  read-only. Return codes are checked (logged, kept, raised where they
  can be). :func:`register_cuda` is it with cudaHostRegister, adding
  cudaHostRegisterReadOnly for read-only regions. It is one listener of
  the handler's region events: cxlpool.maru's hooks and
  set_region_callback keep theirs.

The GPU recipe (README.md, "cxlpool.torch"): register the regions through
:func:`register_cuda` (``cudaHostRegister`` / ``cudaHostUnregister``),
then copy with ``gpu_tensor.copy_(as_tensor(view), non_blocking=True)``;
keep the key pinned (``pin=True``), leased, or take a version
(``retrieve_v``) and ``validate`` it after the copy's stream is
synchronized. On a pool several hosts share without hardware coherence
(``sw``), a copy of a view kept since an earlier retrieve is preceded by
``h.prepare_read(view)`` (a retrieve's own views are fresh already).
"""

from __future__ import annotations

import logging
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch as _torch

from .process import address_of
from .regions import RegionInfo

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


#: cudaHostRegisterReadOnly: the flag cudaHostRegister needs for memory
#: mapped read-only (other handlers' regions); without it the call fails.
#: Needs a device with cudaDevAttrHostRegisterReadOnlySupported.
CUDA_HOST_REGISTER_READ_ONLY = 0x08

_log = logging.getLogger("cxlpool.torch")


class RegistrationError(RuntimeError):
    """register_regions could not register a region mapped when it was
    called; ``errors`` lists the failures (see Registration.errors)."""

    def __init__(self, message: str, errors: List["Failure"]) -> None:
        super().__init__(message)
        self.errors = errors


@dataclass(frozen=True)
class Failure:
    """One register or unregister call that failed: which (``"register"``
    or ``"unregister"``), the piece, the region, and the non-zero code it
    returned (a cudaError_t) or the exception it raised."""

    call: str
    addr: int
    length: int
    info: RegionInfo
    error: Any


def _code(rc: Any) -> int:
    """0 for success (None, 0, cudaSuccess), else the error code."""
    if rc is None:
        return 0
    try:
        return int(getattr(rc, "value", rc))
    except (TypeError, ValueError):
        return -1


class Registration:
    """What register_regions set up: the pieces registered, by region,
    and every failure (``errors``). :meth:`remove` stops it and
    unregisters what is still registered."""

    def __init__(self, handler: Any, register: Callable[..., Any],
                 unregister: Callable[..., Any], piece: int) -> None:
        self._handler = handler
        self._register = register
        self._unregister = unregister
        self._piece = piece
        self._lock = threading.RLock()
        self.registered: Dict[int, Tuple[RegionInfo,
                                         List[Tuple[int, int]]]] = {}
        self.errors: List[Failure] = []
        self.token: Any = None

    def _call(self, call: str, fn: Callable[..., Any], a: int, n: int,
              info: RegionInfo) -> bool:
        try:
            rc = _code(fn(a, n, info))
            err: Any = rc if rc != 0 else None
        except Exception as exc:  # reported, never into C
            err = exc
        if err is None:
            return True
        self.errors.append(Failure(call, a, n, info, err))
        _log.error("%s of region %d (%s) piece %#x+%d failed: %r",
                   call, info.region,
                   "read-write" if info.writable else "read-only",
                   a, n, err)
        return False

    def _on_region(self, event: str, info: RegionInfo) -> None:
        with self._lock:
            if event == "mapped":
                done = [(a, n) for a, n in pieces(info.addr, info.length,
                                                  self._piece)
                        if self._call("register", self._register, a, n,
                                      info)]
                self.registered[info.region] = (info, done)
            elif event == "unmapping":
                _, done = self.registered.pop(info.region, (info, []))
                for a, n in done:  # only what was registered
                    self._call("unregister", self._unregister, a, n, info)

    def remove(self) -> None:
        """Stop registering and unregister every piece still registered.
        Idempotent."""
        with self._lock:
            token, self.token = self.token, None
            if token is not None:
                self._handler.remove_region_listener(token)
            for region in list(self.registered):
                info, _ = self.registered[region]
                self._on_region("unmapping", info)

    def check(self) -> None:
        """Raise RegistrationError if any call has failed so far."""
        with self._lock:
            if self.errors:
                raise RegistrationError(
                    f"{len(self.errors)} region registration call(s) "
                    f"failed, first: {self.errors[0]}", list(self.errors))


def register_regions(handler: Any, register: Callable[[int, int, RegionInfo],
                                                      Any],
                     unregister: Callable[[int, int, RegionInfo], Any], *,
                     piece: int = PIECE_MAX) -> Registration:
    """Have register(addr, length, info) called for every piece of every
    region handler (a cxlpool.Handler) maps, now and as they are mapped,
    and unregister(addr, length, info) for each piece registered before
    its region goes (at close at the latest). info is the region's
    RegionInfo: ``info.writable`` is False for other handlers' regions,
    which are mapped read-only (cudaHostRegister needs
    CUDA_HOST_REGISTER_READ_ONLY for them, see register_cuda).

    Return codes are checked: register and unregister return None or 0
    on success, anything else (a cudaError_t) is a failure, as is an
    exception. A failure is logged (logger "cxlpool.torch", ERROR) and
    kept in the Registration's ``errors``; a piece that failed to
    register is not unregistered. A failure for a region mapped when
    register_regions is called raises RegistrationError (after undoing
    what was registered); a later one (a region mapped by an alloc or a
    retrieve, reported on that call's thread or the library's) cannot
    raise into the library: check ``errors`` or call ``check()``.

    It is one listener of the handler's region events
    (Handler.add_region_listener): it does not replace
    set_region_callback nor cxlpool.maru's hooks. ``remove()`` stops it.
    """
    reg = Registration(handler, register, unregister, piece)
    if piece <= 0:
        raise ValueError("piece must be > 0")
    reg.token = handler.add_region_listener(reg._on_region)
    if reg.errors:
        errors = list(reg.errors)
        reg.remove()
        raise RegistrationError(
            f"register_regions: {len(errors)} piece(s) of the regions "
            f"mapped now failed to register, first: {errors[0]}", errors)
    return reg


def register_cuda(handler: Any, cudart: Any = None, *, flags: int = 0,
                  piece: int = PIECE_MAX) -> Registration:
    """register_regions with cudaHostRegister / cudaHostUnregister
    (cudart: ``torch.cuda.cudart()`` by default): own regions with flags,
    other handlers' (read-only) regions with flags |
    CUDA_HOST_REGISTER_READ_ONLY. The cudaError_t codes are checked as
    register_regions says."""
    rt = cudart if cudart is not None else _torch.cuda.cudart()

    def register(a: int, n: int, info: RegionInfo) -> Any:
        f = flags if info.writable else flags | CUDA_HOST_REGISTER_READ_ONLY
        return rt.cudaHostRegister(a, n, f)

    def unregister(a: int, n: int, info: RegionInfo) -> Any:
        return rt.cudaHostUnregister(a)
    return register_regions(handler, register, unregister, piece=piece)


def same_memory(t: "_torch.Tensor", view: Any) -> bool:
    """True if tensor t starts at view's first byte (no copy was made)."""
    return int(t.data_ptr()) == address_of(view)


__all__ = ["CUDA_HOST_REGISTER_READ_ONLY", "Failure", "PIECE_MAX",
           "Registration", "RegistrationError", "as_tensor", "is_readonly",
           "pieces", "register_cuda", "register_regions", "same_memory"]
