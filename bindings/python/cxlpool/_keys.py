"""Keys as the C calls take them, and per-key errors as batches return
them: shared by :mod:`cxlpool.handler`, :mod:`cxlpool.pages` and
:mod:`cxlpool.versions`."""

from __future__ import annotations

from typing import Iterable, List, Union

from . import _lib
from .errors import CxlpError, error_from_code

#: What a key may be given as.
KeyLike = Union[bytes, bytearray, memoryview, str]


def key(k: KeyLike) -> bytes:
    """Key as bytes: str is UTF-8 encoded, bytes-like objects copied."""
    if isinstance(k, bytes):
        return k
    if isinstance(k, str):
        return k.encode("utf-8")
    if isinstance(k, (bytearray, memoryview)):
        return bytes(k)
    raise TypeError(f"key must be bytes or str, not {type(k).__name__}")


def keys(ks: Iterable[KeyLike]) -> List[bytes]:
    """A list of keys as bytes."""
    if isinstance(ks, (bytes, str)):
        raise TypeError("keys must be a sequence of keys, not one key")
    return [key(k) for k in ks]


def key_error(code: int, k: bytes) -> CxlpError:
    """A per-key error instance (not raised), naming the key."""
    err = error_from_code(code, message=f"{_lib.strerror(code)} "
                          f"(key {k[:64]!r})")
    err.key = k  # type: ignore[attr-defined]
    return err
