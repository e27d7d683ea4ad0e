"""The plain types of cxlpool.maru (see its module doc): MaruConfig,
AllocHandle, MemoryInfo, and how an over-long key is named."""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from . import _lib
from .config import Config

KiB = 1024
MiB = 1024 * KiB
_PAGE_MIN = 64  # the smallest page libcxlpool takes (handler/core/config.c)
_DIGEST = 32  # bytes of the blake2b digest of an over-long key


@dataclass
class MaruConfig:
    """Maru's handler configuration, field for field.

    server_url, timeout_ms, instance_id, max_inflight and auto_expand are
    cxlpool's; chunk_size_bytes is the page size (at least 64 bytes, any
    size above); the regions are expand_size bytes (default pool_size).
    use_async_rpc, eager_map, rm_address and enable_stats are accepted
    and have no effect (cxlpool reads without RPC where it can, maps on
    first use, and keeps its statistics always); the environment's
    MARU_EAGER_MAP and MARU_STAT set eager_map and enable_stats as in
    Maru (1/0, true/false, yes/no, on/off; anything else: ValueError).
    cxlpool_options: further :class:`cxlpool.Config` fields (e.g.
    ``{"alloc_wait_ms": 100}``); a tcp:// metaserver's secret comes from
    ``{"secret": ...}`` or, for an integration that builds the config
    itself, from the file the environment's CXLP_SECRET_FILE names
    (libcxlpool reads it at connect).
    """

    server_url: str = "tcp://localhost:5555"
    instance_id: Optional[str] = None
    pool_size: int = 100 * MiB
    chunk_size_bytes: int = 1 * MiB
    auto_connect: bool = True
    timeout_ms: int = 2000
    use_async_rpc: bool = True
    max_inflight: int = 64
    eager_map: bool = True
    auto_expand: bool = True
    expand_size: Optional[int] = None
    rm_address: Optional[str] = None
    enable_stats: bool = False
    cxlpool_options: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Maru's checks, in Maru's order and words (its tests match them)
        if self.instance_id is None:
            self.instance_id = str(uuid.uuid4())
        eager_map = _env_bool("MARU_EAGER_MAP")
        if eager_map is not None:
            self.eager_map = eager_map
        stats = _env_bool("MARU_STAT")
        if stats is not None:
            self.enable_stats = stats
        if (isinstance(self.chunk_size_bytes, bool) or
                not isinstance(self.chunk_size_bytes, int) or
                self.chunk_size_bytes <= 0):
            raise ValueError(f"chunk_size_bytes must be positive, got "
                             f"{self.chunk_size_bytes!r}")
        if self.chunk_size_bytes < _PAGE_MIN:
            raise ValueError(
                f"chunk_size_bytes={self.chunk_size_bytes}: cxlpool pages "
                f"are at least {_PAGE_MIN} bytes (one cache line, the unit "
                f"of flush and of the pool's page records); any size from "
                f"{_PAGE_MIN} up is accepted")
        if self.pool_size < self.chunk_size_bytes:
            raise ValueError(f"pool_size ({self.pool_size}) must be >= "
                             f"chunk_size_bytes ({self.chunk_size_bytes})")
        if self.expand_size is not None:
            if not self.auto_expand:
                raise ValueError("expand_size requires auto_expand=True")
            if self.expand_size < self.chunk_size_bytes:
                raise ValueError(f"expand_size ({self.expand_size}) must "
                                 f"be >= chunk_size_bytes "
                                 f"({self.chunk_size_bytes})")

    @property
    def chunk_size(self) -> int:
        """Alias of chunk_size_bytes."""
        return self.chunk_size_bytes

    def to_cxlpool(self) -> Config:
        """The cxlpool.Config these settings make."""
        opts: Dict[str, Any] = dict(
            server_url=self.server_url,
            page_size=self.chunk_size_bytes,
            region_size=self.expand_size or self.pool_size,
            auto_expand=self.auto_expand,
            timeout_ms=self.timeout_ms,
            instance_id=_instance_number(str(self.instance_id)),
            max_inflight=max(1, min(int(self.max_inflight), 1024)),
            # no region is given back when its pages are freed (Maru
            # keeps its regions); the metaserver can still ask regions
            # back under pool pressure (PROTO_HELLO_GIVEBACK,
            # handler/region/giveback.c note 7), whatever this says: such a
            # region goes once no page of it is in use, and
            # set_on_region_removed tells of it
            reserve_regions=0xFFFFFFFF)
        opts.update(self.cxlpool_options)
        return Config(**opts)


def _env_bool(name: str) -> Optional[bool]:
    """An optional boolean environment variable, parsed as Maru parses
    MARU_EAGER_MAP and MARU_STAT: None when unset."""
    raw = os.environ.get(name)
    if raw is None:
        return None
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"{name} must be one of: 1/0, true/false, yes/no, "
                     f"on/off (got {raw!r})")


def _instance_number(instance_id: str) -> int:
    """The 64-bit instance id cxlpool reports for a Maru instance id."""
    digest = hashlib.blake2b(instance_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def pool_key(key: Any) -> bytes:
    """The key stored in the pool for a Maru key: its UTF-8 bytes, or, past
    cxlpool.KEY_MAX bytes, its first bytes, '#' and a 256-bit digest of
    the whole (KEY_MAX bytes in all)."""
    k = key.encode() if isinstance(key, str) else bytes(key)
    if len(k) <= _lib.KEY_MAX:
        return k
    digest = hashlib.blake2b(k, digest_size=_DIGEST).hexdigest().encode()
    return k[:_lib.KEY_MAX - len(digest) - 1] + b"#" + digest


class AllocHandle:
    """A page from :meth:`MaruHandler.alloc`: ``buf`` is a writable view
    of exactly ``size`` bytes of it. Callers may also build one, as
    Maru's allocator adapters do, from a page they took with alloc():
    ``AllocHandle(buf=..., _region_id=r, _page_index=i, _size=n)``."""

    __slots__ = ("buf", "_region_id", "_page_index", "_size")

    def __init__(self, buf: Any, _region_id: int, _page_index: int,
                 _size: int) -> None:
        self.buf = buf
        self._region_id = _region_id
        self._page_index = _page_index
        self._size = _size

    @property
    def region_id(self) -> int:
        return self._region_id

    @property
    def page_index(self) -> int:
        return self._page_index

    @property
    def size(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return (f"AllocHandle(region_id={self._region_id}, "
                f"page_index={self._page_index}, size={self._size})")


@dataclass
class MemoryInfo:
    """A retrieved value: ``view`` (zero copy, len = stored length; its
    buffer says writable, and a write through it faults on another
    handler's region: see cxlpool.maru's module doc) and where it
    lives."""

    view: memoryview
    region_id: int
    page_index: int


class _Live:
    """A page alloc() handed out, until store, free or close."""

    __slots__ = ("page", "xid")

    def __init__(self, page: Any, xid: int) -> None:
        self.page = page
        self.xid = xid
