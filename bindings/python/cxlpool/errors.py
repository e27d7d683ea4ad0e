"""Exceptions raised by the cxlpool binding.

Every negative return of the C library becomes an exception here. The C
API has two kinds of error codes, and so do we:

* a ``CXLP_E_*`` code -> one subclass of :class:`CxlpError` per code
  (``CXLP_E_NOTFOUND`` -> :class:`NotFoundError`, ...);
* ``-errno`` -> :class:`CxlpOSError`, also an :class:`OSError` whose
  ``errno`` is the positive value; ``-EINVAL`` is
  :class:`InvalidArgumentError`, also a :class:`ValueError`.

Every exception carries ``code`` (the negative C value), ``name`` (the
symbolic name, ``"CXLP_E_NOTFOUND"`` or ``"EINVAL"``), ``message`` (why the
call failed: ``cxlp_errormsg()`` of the failing call, or the binding's own
text for checks done in Python) and ``description`` (``cxlp_strerror()``).
``str(e)`` is ``"NAME: message"``.

Calls that report per-key results in the C API (``batch_retrieve``,
``batch_unpin``, ``batch_delete``) do not raise for a failed key: they
return the exception *instance* in that key's slot, the way
``asyncio.gather(..., return_exceptions=True)`` does.
"""

from __future__ import annotations

import errno as _errno
from typing import Any, Dict, List, Optional, Tuple, Type

from . import _lib


class CxlpError(Exception):
    """Base of every cxlpool error: a negative code from the C library.

    Attributes: ``code`` (int, negative), ``name`` (symbolic name),
    ``message`` (why), ``description`` (what the code means).
    """

    #: The CXLP_E_* value of this class (0 for classes covering many codes).
    CODE = 0

    def __init__(self, code: int, name: str, message: str,
                 description: str = "") -> None:
        Exception.__init__(self, code, name, message, description)
        self.code = code
        self.name = name
        self.message = message
        self.description = description

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"

    def __reduce__(self) -> Tuple[Any, ...]:
        # Rebuild from our own arguments (OSError rewrites self.args) and
        # keep extra attributes such as UnknownOutcomeError.stored.
        return (type(self), (self.code, self.name, self.message,
                             self.description), dict(self.__dict__))


class CxlpOSError(CxlpError, OSError):
    """An OS error (-errno) from the C library; ``errno`` is positive."""

    def __init__(self, code: int, name: str, message: str,
                 description: str = "") -> None:
        OSError.__init__(self, -code, message)
        self.code = code
        self.name = name
        self.message = message
        self.description = description

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


class InvalidArgumentError(CxlpOSError, ValueError):
    """-EINVAL: an argument out of range (also a ValueError)."""

    CODE = -_errno.EINVAL


def _cls(name: str, code_name: str, doc: str) -> Type[CxlpError]:
    """Make the CxlpError subclass for one CXLP_E_* code."""
    return type(name, (CxlpError,), {
        "__doc__": f"{code_name}: {doc}",
        "CODE": _lib.ERROR_CODES[code_name],
        "__module__": __name__,
    })


BadMagicError = _cls("BadMagicError", "CXLP_E_BADMAGIC",
                     "file or device is not a cxlpool pool")
VersionError = _cls("VersionError", "CXLP_E_VERSION",
                    "pool layout or protocol version mismatch")
ChecksumError = _cls("ChecksumError", "CXLP_E_CHECKSUM",
                     "on-media record fails its checksum")
CorruptError = _cls("CorruptError", "CXLP_E_CORRUPT",
                    "pool metadata inconsistent")
NoSpaceError = _cls("NoSpaceError", "CXLP_E_NOSPACE",
                    "no free region, page or index slot")
NotFoundError = _cls("NotFoundError", "CXLP_E_NOTFOUND",
                     "key not in the pool")
PinnedError = _cls("PinnedError", "CXLP_E_PINNED",
                   "delete refused: the key is pinned")
NotPinnedError = _cls("NotPinnedError", "CXLP_E_NOTPINNED",
                      "unpin: the caller holds no pin")
PermError = _cls("PermError", "CXLP_E_PERM",
                 "not the owner (region or live key)")
BoundsError = _cls("BoundsError", "CXLP_E_BOUNDS",
                   "location outside the region or page")
ProtocolError = _cls("ProtocolError", "CXLP_E_PROTO",
                     "malformed or unexpected frame")
BadOpError = _cls("BadOpError", "CXLP_E_BADOP", "unknown operation")
KeyLengthError = _cls("KeyLengthError", "CXLP_E_KEYLEN",
                      "key empty or longer than KEY_MAX")
BatchSizeError = _cls("BatchSizeError", "CXLP_E_BATCH",
                      "batch empty or larger than BATCH_MAX")
SessionError = _cls("SessionError", "CXLP_E_SESSION",
                    "unknown session or wrong token")
ServerTimeoutError = _cls("ServerTimeoutError", "CXLP_E_TIMEOUT",
                          "no reply from the metaserver in time")
ClosedError = _cls("ClosedError", "CXLP_E_CLOSED",
                   "handler closed or closing")
ConnectError = _cls("ConnectError", "CXLP_E_CONN",
                    "cannot reach the metaserver")
BadPageError = _cls("BadPageError", "CXLP_E_BADPAGE",
                    "page not allocated by this handler")
StaleError = _cls("StaleError", "CXLP_E_STALE",
                  "volatile pool from an earlier boot, or the pool file "
                  "replaced under its metaserver")
BusyError = _cls("BusyError", "CXLP_E_BUSY",
                 "page already holds a registered key")
TooBigError = _cls("TooBigError", "CXLP_E_TOOBIG",
                   "value longer than the page")
ChangedError = _cls("ChangedError", "CXLP_E_CHANGED",
                    "the key changed or went since the retrieve")
NoVersionError = _cls("NoVersionError", "CXLP_E_NOVERSION",
                      "the retrieve took no version to check")
GroupError = _cls("GroupError", "CXLP_E_GROUP",
                  "request group refused: no total, past its total, "
                  "id in use, or not open")
CanceledError = _cls("CanceledError", "CXLP_E_CANCELED",
                     "request group rolled back")
HostError = _cls("HostError", "CXLP_E_HOST",
                 "the pool serves one host, not this one")


class UnknownOutcomeError(CxlpError):
    """CXLP_E_UNKNOWN: the outcome of a request is unknown.

    Its reply was lost, or a retry found the request applied once and its
    reply no longer kept by the metaserver (then any call can raise it:
    ``delete``, ``pin``... were applied once, never twice).

    Raised mostly by ``store``/``batch_store``. ``stored`` holds the per-key
    results the C call returned (False for every key whose outcome is
    unknown). The pages are no longer the caller's: the handler keeps them
    until it can resolve the outcome (``Stats.pages_unresolved``), so the
    caller's page handles are consumed just as after a successful store.
    Retrying the store with fresh pages, or checking ``exists``, is up to
    the caller.
    """

    CODE = _lib.ERROR_CODES["CXLP_E_UNKNOWN"]

    def __init__(self, code: int, name: str, message: str,
                 description: str = "") -> None:
        super().__init__(code, name, message, description)
        self.stored: List[bool] = []


# Exceptions that carry a partial result set these attributes:
#   NotFoundError from batch_pin: npinned (keys pinned before the miss).

#: CXLP_E_* value -> exception class, covering every code of the header.
BY_CODE: Dict[int, Type[CxlpError]] = {
    cls.CODE: cls for cls in (
        BadMagicError, VersionError, ChecksumError, CorruptError,
        NoSpaceError, NotFoundError, PinnedError, NotPinnedError, PermError,
        BoundsError, ProtocolError, BadOpError, KeyLengthError,
        BatchSizeError, SessionError, ServerTimeoutError, ClosedError,
        ConnectError, BadPageError, StaleError, BusyError, TooBigError,
        UnknownOutcomeError, ChangedError, NoVersionError, GroupError,
        CanceledError, HostError)
}

_NAME_BY_CODE = {v: k for k, v in _lib.ERROR_CODES.items()}


def code_name(code: int) -> str:
    """Symbolic name of a negative code: CXLP_E_* or the errno name."""
    if code in _NAME_BY_CODE:
        return _NAME_BY_CODE[code]
    return _errno.errorcode.get(-code, f"E{-code}")


def error_from_code(code: int, message: Optional[str] = None) -> CxlpError:
    """Build the exception for a negative C return code.

    message defaults to ``cxlp_errormsg()``: call this on the thread that
    made the failing call, before any other cxlpool call. The description
    is ``cxlp_strerror(code)`` (empty if the library cannot be loaded).
    """
    if code >= 0:
        raise ValueError(f"not an error code: {code}")
    try:
        description = _lib.strerror(code)
    except OSError:  # library missing: only for codes made in Python
        description = ""
    if message is None:
        message = _lib.errormsg() or description
    name = code_name(code)
    if code in BY_CODE:
        return BY_CODE[code](code, name, message, description)
    if code == -_errno.EINVAL:
        return InvalidArgumentError(code, name, message, description)
    if -code in _errno.errorcode or code > -1000:
        return CxlpOSError(code, name, message, description)
    return CxlpError(code, name, message, description)


def check(rc: int) -> int:
    """Return rc if it is not negative, else raise its exception."""
    if rc < 0:
        raise error_from_code(rc)
    return rc


def make(cls: Type[CxlpError], message: str) -> CxlpError:
    """An error of class cls raised by the binding itself (no C call)."""
    return error_from_code(cls.CODE, message)
