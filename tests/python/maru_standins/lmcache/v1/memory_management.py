"""Stand-in for lmcache.v1.memory_management: the types Maru's
CxlMemoryAdapter builds and subclasses, with the fields and the one
inherited helper (_adapt_shapes_and_dtypes) it uses."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, List, Optional


class MemoryFormat(enum.Enum):
    UNDEFINED = 0
    KV_T2D = 1  # (tokens, hidden): tokens are dimension 0

    def token_dim(self) -> int:
        return 0


@dataclass
class MemoryObjMetadata:
    shape: Any
    dtype: Any
    address: int
    phy_size: int
    ref_count: int
    fmt: MemoryFormat = MemoryFormat.UNDEFINED
    shapes: Optional[List[Any]] = None
    dtypes: Optional[List[Any]] = None


class MemoryObj:
    pass


class TensorMemoryObj(MemoryObj):
    def __init__(self, raw_data: Any, metadata: MemoryObjMetadata,
                 parent_allocator: Any = None) -> None:
        self.raw_data = raw_data
        self.metadata = metadata
        self.parent_allocator = parent_allocator

    @property
    def tensor(self) -> Any:
        return self.raw_data.view(self.metadata.dtype).view(
            self.metadata.shape)


class MemoryAllocatorInterface:
    def _adapt_shapes_and_dtypes(self, shapes: Any, dtypes: Any):
        if not isinstance(shapes, list):
            shapes = [shapes]
        if not isinstance(dtypes, list):
            dtypes = [dtypes]
        return shapes, dtypes
