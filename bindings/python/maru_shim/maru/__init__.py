"""maru, served by cxlpool: ``from maru import MaruConfig, MaruHandler``
resolves to cxlpool.maru (bindings/python/maru_shim, README.md)."""

from cxlpool.maru import (AllocHandle, MaruConfig, MaruHandler,  # noqa: F401
                          MemoryInfo)

__all__ = ["AllocHandle", "MaruConfig", "MaruHandler", "MemoryInfo"]
