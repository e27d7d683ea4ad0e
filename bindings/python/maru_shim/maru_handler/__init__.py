"""maru_handler, served by cxlpool (see maru_shim/README.md)."""

from cxlpool._maru_regions import OwnedRegionManager  # noqa: F401
from cxlpool.maru import MaruHandler  # noqa: F401

__all__ = ["MaruHandler", "OwnedRegionManager"]
