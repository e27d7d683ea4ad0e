"""cxlpool.maru's view of a handler's own regions, as Maru's handler
exposes them (issue 29): ``handler.allocator`` (the first region's
PagedMemoryAllocator), ``handler.owned_region_manager`` (its
OwnedRegionManager) and ``handler._mapper`` / ``handler.mapper`` (its
DaxMapper), which Maru marks deprecated but its own tests and
maru_sglang's MaruHostTensorAllocator still use.

These are read-only views over cxlpool: the pages are cxlpool's (the C
handler's free lists), and the counts are cxlpool.maru's bookkeeping of
the pages it handed out (MaruHandler._used): a page is allocated from
alloc() until free(), until its store did not keep it (lost the race,
failed), or until delete() of its key. A page whose key the pool evicted
(eviction on), or that another handler deleted after this one closed,
stays counted until alloc() hands it out again: the counts are this
handler's, as Maru's are, and the pool's own are in get_stats()'s
"cxlpool" section (cxlpool's stats, one round trip).

Region order is the order the handler first saw its regions (the first
is the one connect took), as Maru's region order; a region given back
under pool pressure (cxlpool.maru's set_on_region_removed) leaves it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:  # pragma: no cover
    from typing import Protocol

    from .regions import RegionInfo

    class _Owner(Protocol):
        """What these views read of the handler that made them (the
        MaruHandler of cxlpool.maru, which this module does not import:
        it sits below it)."""

        handler: Any

        def _pages_used(self, region_id: int) -> int: ...

        def _own_regions(self) -> List[Any]: ...

        def get_chunk_size(self) -> int: ...

        def get_buffer_view(self, region_id: int, offset: int,
                            size: int) -> Any: ...


class RegionAllocator:
    """What Maru's PagedMemoryAllocator of one own region exposes: its
    region id, chunk size, page count, pool size (the region's bytes) and
    the live counts num_allocated and num_free_pages."""

    def __init__(self, owner: "_Owner", info: "RegionInfo") -> None:
        self._owner = owner
        self._region_id = int(info.region)
        self._pool_size = int(info.length)
        self._chunk_size = int(info.page_size)
        self._page_count = int(info.pages)

    @property
    def region_id(self) -> int:
        return self._region_id

    @property
    def chunk_size(self) -> int:
        return self._chunk_size

    @property
    def page_count(self) -> int:
        return self._page_count

    @property
    def pool_size(self) -> int:
        return self._pool_size

    @property
    def num_allocated(self) -> int:
        """Pages of this region handed out and not given back (above)."""
        return min(self._owner._pages_used(self._region_id),
                   self._page_count)

    @property
    def num_free_pages(self) -> int:
        return self._page_count - self.num_allocated

    def get_stats(self) -> Dict[str, Any]:
        """Maru's allocator stats, with cxlpool's "size" (= pool_size)."""
        used = self.num_allocated
        return {"pool_size": self._pool_size,
                "size": self._pool_size,
                "chunk_size": self._chunk_size,
                "page_count": self._page_count,
                "free_pages": self._page_count - used,
                "allocated_pages": used,
                "utilization": used / self._page_count
                if self._page_count else 0.0}

    def __repr__(self) -> str:
        return (f"RegionAllocator(region_id={self._region_id}, "
                f"page_count={self._page_count}, "
                f"num_allocated={self.num_allocated})")


class OwnedRegion:
    """Maru's OwnedRegion: the region's handle (cxlpool's RegionInfo:
    region, length, addr ...) and its allocator."""

    def __init__(self, owner: "_Owner", info: "RegionInfo") -> None:
        self.region_id = int(info.region)
        self.handle = info
        self.allocator = RegionAllocator(owner, info)


class OwnedRegionManager:
    """What Maru's OwnedRegionManager exposes of the handler's own
    regions. Obtained from ``MaruHandler.owned_region_manager`` (None
    when the handler is not connected); every call reads the regions the
    handler holds now."""

    def __init__(self, owner: "_Owner") -> None:
        self._owner = owner

    def _regions(self) -> List["RegionInfo"]:
        return self._owner._own_regions()

    def get_region_ids(self) -> List[int]:
        return [int(r.region) for r in self._regions()]

    def get_first_region_id(self) -> Optional[int]:
        ids = self.get_region_ids()
        return ids[0] if ids else None

    def is_owned(self, region_id: int) -> bool:
        return region_id in self.get_region_ids()

    def get_chunk_size(self) -> int:
        return self._owner.get_chunk_size()

    def get_owned_region(self, region_id: int) -> Optional[OwnedRegion]:
        for r in self._regions():
            if r.region == region_id:
                return OwnedRegion(self._owner, r)
        return None

    def get_first_allocator(self) -> Optional[RegionAllocator]:
        regions = self._regions()
        return RegionAllocator(self._owner, regions[0]) if regions else None

    def is_full(self) -> bool:
        """True when every own region's pages are allocated (the next
        alloc() takes a new region, auto_expand permitting)."""
        return all(RegionAllocator(self._owner, r).num_free_pages == 0
                   for r in self._regions())

    def get_stats(self) -> Dict[str, Any]:
        """Maru's keys: num_regions, total_pool_size, total_page_count,
        total_free_pages, total_allocated_pages, utilization, and per
        region (``regions``) the allocator's stats with region_id."""
        regions = []
        for r in self._regions():
            s = RegionAllocator(self._owner, r).get_stats()
            s["region_id"] = int(r.region)
            regions.append(s)
        pages = sum(s["page_count"] for s in regions)
        used = sum(s["allocated_pages"] for s in regions)
        return {"num_regions": len(regions),
                "total_pool_size": sum(s["pool_size"] for s in regions),
                "total_page_count": pages,
                "total_free_pages": pages - used,
                "total_allocated_pages": used,
                "utilization": used / pages if pages else 0.0,
                "regions": regions}


class Mapper:
    """What Maru's DaxMapper exposes to its integrations:
    ``get_buffer_view(region_id, offset, size)`` (writable for own
    regions, read-only for other handlers' (mapped on demand), None when
    the region is unknown or the range outside it) and ``get_region``
    (the region's RegionInfo, or None).

    A limit: an own region used as raw memory through get_buffer_view,
    as maru_sglang's MaruHostTensorAllocator uses its region for a
    tensor, holds no page the handler knows of, and the metaserver may
    ask such a region back under pool pressure (cxlpool.maru's module
    doc): its views then turn read-only and a write faults. A pool with
    room to spare never asks."""

    def __init__(self, owner: "_Owner") -> None:
        self._owner = owner

    def get_buffer_view(self, region_id: int, offset: int,
                        size: int) -> Optional[memoryview]:
        return self._owner.get_buffer_view(region_id, offset, size)

    def get_region(self, region_id: int) -> Optional["RegionInfo"]:
        try:
            return self._owner.handler.region_view(region_id)
        except Exception:
            return None
