"""maru_handler, served by cxlpool (``python3 -m cxlpool.maru_shim
install``)."""

from cxlpool._maru_regions import OwnedRegionManager  # noqa: F401
from cxlpool.maru import MaruHandler  # noqa: F401

__all__ = ["MaruHandler", "OwnedRegionManager"]
