"""cxlpool: a thin ctypes binding over libcxlpool.so.

A KV-cache pool on CXL (or file-backed) shared memory for inference
connectors. Write a chunk straight into a page of the pool, register its
key, and read it in place from any other process: only metadata crosses a
socket, and no byte is copied between the pool and Python.

    import cxlpool
    cfg = cxlpool.Config(server_url="ipc:///tmp/cxlpool.sock",
                         page_size=256 * 1024)
    with cxlpool.Handler(cfg) as h:
        page = h.alloc()
        page.buf[:3] = b"abc"
        h.store("model@0@hash", page, 3)
        view = h.retrieve("model@0@hash")   # read-only memoryview

The C API is ``include/cxlpool.h``; each Handler method mirrors one of its
functions. See README.md for the rules on views.
"""

from ._lib import (BATCH_MAX, KEY_MAX, LOG_DEBUG, LOG_ERR, LOG_INFO, LOG_OFF,
                   ERROR_CODES)
from .config import DEFAULT_SERVER_URL, Config
from .errors import (BadMagicError, BadOpError, BadPageError, BatchSizeError,
                     BoundsError, BusyError, CanceledError, ChangedError,
                     ChecksumError, GroupError, HostError,
                     ClosedError, ConnectError, CorruptError, CxlpError,
                     CxlpOSError, InvalidArgumentError, KeyLengthError,
                     NoSpaceError, NotFoundError, NotPinnedError,
                     NoVersionError, PermError, PinnedError, ProtocolError,
                     ServerTimeoutError, SessionError, StaleError,
                     TooBigError, UnknownOutcomeError, VersionError,
                     error_from_code)
from .handler import (Handler, KeyLike, Page, Stats, address_of,
                      set_log_handler)
from .groups import Group
from .reservations import Reservation
from .versions import Version
from .regions import RegionInfo, RegionListener

__version__ = "0.2.0"

__all__ = [
    "BATCH_MAX", "KEY_MAX", "LOG_DEBUG", "LOG_ERR", "LOG_INFO", "LOG_OFF",
    "ERROR_CODES", "DEFAULT_SERVER_URL",
    "Config", "Group", "Handler", "KeyLike", "Page", "Reservation", "Stats",
    "Version", "RegionInfo", "RegionListener",
    "address_of",
    "set_log_handler",
    "error_from_code",
    "CxlpError", "CxlpOSError", "InvalidArgumentError",
    "BadMagicError", "VersionError", "ChecksumError", "CorruptError",
    "NoSpaceError", "NotFoundError", "PinnedError", "NotPinnedError",
    "PermError", "BoundsError", "ProtocolError", "BadOpError",
    "KeyLengthError", "BatchSizeError", "SessionError",
    "ServerTimeoutError", "ClosedError", "ConnectError", "BadPageError",
    "StaleError", "BusyError", "TooBigError", "UnknownOutcomeError",
    "ChangedError", "NoVersionError", "GroupError", "CanceledError",
    "HostError",
]
