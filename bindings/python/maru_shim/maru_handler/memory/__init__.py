"""maru_handler.memory, served by cxlpool: AllocHandle and MemoryInfo."""

from cxlpool.maru import AllocHandle, MemoryInfo  # noqa: F401

__all__ = ["AllocHandle", "MemoryInfo"]
