"""maru_handler.memory, served by cxlpool: AllocHandle, MemoryInfo and
the region views of cxlpool.maru under Maru's names."""

from cxlpool._maru_regions import (Mapper as DaxMapper,  # noqa: F401
                                   OwnedRegion, OwnedRegionManager,
                                   RegionAllocator as PagedMemoryAllocator)
from cxlpool.maru import AllocHandle, MemoryInfo  # noqa: F401

__all__ = ["AllocHandle", "DaxMapper", "MemoryInfo", "OwnedRegion",
           "OwnedRegionManager", "PagedMemoryAllocator"]
