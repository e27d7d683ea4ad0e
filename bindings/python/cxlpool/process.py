"""Process-wide helpers of the binding, tied to no handler: the address
behind a buffer (for a device copy from a view), and where the C
library's log lines go.
"""

from __future__ import annotations

import ctypes
from ctypes import byref, c_int, c_void_p
from typing import Any, Callable, Optional

from . import _lib


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer, to read the address behind a buffer."""

    _fields_ = [("buf", c_void_p), ("obj", ctypes.py_object),
                ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", c_int), ("ndim", c_int),
                ("format", ctypes.c_char_p), ("shape", c_void_p),
                ("strides", c_void_p), ("suboffsets", c_void_p),
                ("internal", c_void_p)]


def address_of(view: Any) -> int:
    """Address of the first byte of a buffer (CPython only).

    For a view from alloc() or retrieve() this is the C pointer into the
    shared mapping, e.g. for a device copy (``cudaMemcpy``) in a
    connector. Works on read-only views; raises ValueError on a released
    one. The address is only valid while the view is.
    """
    pybuf = _PyBuffer()
    _get_buffer(view, byref(pybuf), 0)  # PyBUF_SIMPLE; raises on failure
    try:
        return int(pybuf.buf or 0)
    finally:
        _release_buffer(byref(pybuf))


# Private prototypes, so as not to change ctypes.pythonapi's shared ones.
_get_buffer = ctypes.PYFUNCTYPE(c_int, ctypes.py_object,
                                ctypes.POINTER(_PyBuffer), c_int)(
    ("PyObject_GetBuffer", ctypes.pythonapi))
_release_buffer = ctypes.PYFUNCTYPE(None, ctypes.POINTER(_PyBuffer))(
    ("PyBuffer_Release", ctypes.pythonapi))


# Keep the log callback alive while the library may call it.
_log_callback: Optional[Any] = None


def set_log_handler(fn: Optional[Callable[[int, str], None]],
                    level: int = _lib.LOG_ERR) -> None:
    """Route the C library's log lines to fn(level, message).

    None restores the library's stderr default. level is one of LOG_OFF,
    LOG_ERR, LOG_INFO, LOG_DEBUG. Process-wide; call before connect. fn
    may be called from the library's own threads and must not raise.
    """
    global _log_callback
    if fn is None:
        cb = ctypes.cast(None, _lib.LOG_FN)
    else:
        def trampoline(lvl: int, msg: Optional[bytes], _arg: Any) -> None:
            try:
                fn(lvl, (msg or b"").decode("utf-8", "replace"))
            except Exception:  # an exception cannot cross into C
                pass
        cb = _lib.LOG_FN(trampoline)
    _lib.lib().cxlp_set_log_fn(cb, None, level)
    _log_callback = cb
