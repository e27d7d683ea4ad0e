"""maru, served by cxlpool (``python3 -m cxlpool.maru_shim install``):
``from maru import MaruConfig, MaruHandler`` resolves to cxlpool.maru."""

from cxlpool.maru import (AllocHandle, MaruConfig, MaruHandler,  # noqa: F401
                          MemoryInfo)

__all__ = ["AllocHandle", "MaruConfig", "MaruHandler", "MemoryInfo"]
