"""cxlpool.errors and cxlpool._lib: every exception type, and the binding's
constants checked against include/cxlpool.h.

Error codes the handler API can produce are produced for real against a
metaserver; the rest (pool and server-side codes such as CXLP_E_BADMAGIC)
are checked through the mapping from the C library's own codes.
"""

from __future__ import annotations

import ctypes
import errno
import pickle
import re
import unittest

import cxlp_test
from cxlp_test import KiB, MiB, ServerTestCase, cxlpool

from cxlpool import _lib


def header() -> str:
    """Text of include/cxlpool.h."""
    return (cxlp_test.SRCDIR / "include" / "cxlpool.h").read_text()


class ConstantsMatchTheHeader(unittest.TestCase):
    def test_error_codes_are_those_of_the_header(self) -> None:
        found = {m[0]: int(m[1]) for m in re.findall(
            r"(CXLP_E_[A-Z]+)\s*=\s*(-\d+)", header())}
        found.pop("CXLP_E_LAST")
        self.assertEqual(found, _lib.ERROR_CODES)

    def test_limits_and_flags_are_those_of_the_header(self) -> None:
        text = header()

        def define(name: str) -> int:
            value = re.search(rf"#define {name}\s+(\w+?)u?\b", text)[1]
            return int(value, 0)

        self.assertEqual(define("CXLP_KEY_MAX"), cxlpool.KEY_MAX)
        self.assertEqual(define("CXLP_BATCH_MAX"), cxlpool.BATCH_MAX)
        self.assertEqual(define("CXLP_STORE_PIN"), _lib.STORE_PIN)
        self.assertEqual(define("CXLP_RETRIEVE_PIN"), _lib.RETRIEVE_PIN)

    def test_stats_fields_are_those_of_struct_cxlp_stats(self) -> None:
        body = re.search(r"struct cxlp_stats \{(.*?)\};", header(), re.S)[1]
        names = re.findall(r"uint64_t (\w+)[;\[]", body)
        self.assertEqual(names[-1], "reserved")
        self.assertEqual(tuple(names[:-1]), _lib.STATS_FIELDS)
        self.assertEqual(tuple(cxlpool.Stats.__dataclass_fields__),
                         _lib.STATS_FIELDS)
        nreserved = int(re.search(r"reserved\[(\d+)\]", body)[1])
        self.assertEqual(ctypes.sizeof(_lib.StatsStruct),
                         8 * (len(names) - 1 + nreserved))


class EveryCodeHasItsException(unittest.TestCase):
    def test_each_cxlp_code_maps_to_its_own_subclass(self) -> None:
        classes = set()
        for name, code in _lib.ERROR_CODES.items():
            err = cxlpool.error_from_code(code, "why")
            self.assertIsInstance(err, cxlpool.CxlpError)
            self.assertIsNot(type(err), cxlpool.CxlpError, name)
            self.assertEqual(type(err).CODE, code)
            self.assertEqual((err.code, err.name, err.message),
                             (code, name, "why"))
            self.assertEqual(str(err), f"{name}: why")
            # The C library names the code the same way.
            self.assertIn(name, err.description)
            classes.add(type(err))
        self.assertEqual(len(classes), len(_lib.ERROR_CODES))
        self.assertEqual(set(cxlpool.errors.BY_CODE.values()), classes)

    def test_every_exception_class_is_exported(self) -> None:
        for cls in cxlpool.errors.BY_CODE.values():
            self.assertIs(getattr(cxlpool, cls.__name__), cls)

    def test_einval_is_an_oserror_and_a_valueerror(self) -> None:
        err = cxlpool.error_from_code(-errno.EINVAL, "bad")
        self.assertIsInstance(err, cxlpool.InvalidArgumentError)
        self.assertIsInstance(err, OSError)
        self.assertIsInstance(err, ValueError)
        self.assertEqual((err.errno, err.name), (errno.EINVAL, "EINVAL"))

    def test_other_errnos_are_cxlp_oserrors(self) -> None:
        err = cxlpool.error_from_code(-errno.ENOMEM, "oom")
        self.assertIs(type(err), cxlpool.CxlpOSError)
        self.assertEqual((err.errno, err.strerror), (errno.ENOMEM, "oom"))
        self.assertEqual(str(err), "ENOMEM: oom")

    def test_an_unknown_code_is_a_plain_cxlp_error(self) -> None:
        err = cxlpool.error_from_code(-5000, "odd")
        self.assertIs(type(err), cxlpool.CxlpError)

    def test_exceptions_survive_pickling(self) -> None:
        err = cxlpool.error_from_code(_lib.ERROR_CODES["CXLP_E_UNKNOWN"],
                                      "lost")
        err.stored = [True, False]
        back = pickle.loads(pickle.dumps(err))
        self.assertIs(type(back), cxlpool.UnknownOutcomeError)
        self.assertEqual((back.code, back.message, back.stored),
                         (err.code, "lost", [True, False]))
        oserr = pickle.loads(pickle.dumps(
            cxlpool.error_from_code(-errno.EINVAL, "x")))
        self.assertEqual((oserr.errno, oserr.message), (errno.EINVAL, "x"))


class TlsFieldsReachTheLibrary(unittest.TestCase):
    """Config's tls_* fields are passed to the C setters (the TLS
    handshakes themselves: tests/integration/test_tls.c)."""

    def test_a_tls_url_without_tls_ca_is_refused(self) -> None:
        cfg = cxlpool.Config(server_url="tls+tcp://127.0.0.1:1")
        with self.assertRaises(cxlpool.InvalidArgumentError) as cm:
            cxlpool.Handler(cfg).connect()
        self.assertIn("cxlp_config_set_tls_ca", str(cm.exception))

    def test_a_cert_without_its_key_is_refused(self) -> None:
        cfg = cxlpool.Config(server_url="tls+tcp://127.0.0.1:1",
                             tls_ca="/x", tls_cert="/y")
        with self.assertRaises(cxlpool.InvalidArgumentError) as cm:
            cxlpool.Handler(cfg).connect()
        self.assertIn("needs its key", str(cm.exception))

    def test_tls_fields_on_a_tcp_url_are_refused(self) -> None:
        cfg = cxlpool.Config(server_url="tcp://127.0.0.1:1",
                             tls_server_name="localhost")
        with self.assertRaises(cxlpool.InvalidArgumentError) as cm:
            cxlpool.Handler(cfg).connect()
        self.assertIn("not a tls+tcp:// URL", str(cm.exception))

    def test_a_missing_ca_file_is_named(self) -> None:
        cfg = cxlpool.Config(server_url="tls+tcp://127.0.0.1:1",
                             tls_ca="/nonexistent/ca.pem")
        with self.assertRaises(cxlpool.errors.CxlpOSError) as cm:
            cxlpool.Handler(cfg).connect()
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        self.assertIn("/nonexistent/ca.pem", str(cm.exception))


class ErrorsRaisedByTheLibrary(ServerTestCase):
    """Each error the handler API can return, produced for real; the
    message is the C library's cxlp_errormsg()."""

    def stored_key(self, h: cxlpool.Handler, tag: str) -> bytes:
        key = self.key(tag)
        page = h.alloc()
        page.buf[:3] = b"abc"
        self.assertTrue(h.store(key, page, 3))
        return key

    def test_connect_to_nothing_raises_connect_error(self) -> None:
        cfg = cxlpool.Config(server_url="ipc:///tmp/cxlp-py-nobody.sock",
                             timeout_ms=500, retries=0)
        with self.assertRaises(cxlpool.ConnectError) as cm:
            cxlpool.Handler(cfg).connect()
        self.assertTrue(cm.exception.message)

    def test_a_config_value_the_library_refuses_is_invalid(self) -> None:
        with self.assertRaises(cxlpool.InvalidArgumentError) as cm:
            cxlpool.Handler(self.config(page_size=3)).connect()
        self.assertIn("page_size", cm.exception.message)
        with self.assertRaises(cxlpool.InvalidArgumentError):
            cxlpool.Handler(self.config(timeout_ms=-1)).connect()
        with self.assertRaises(cxlpool.InvalidArgumentError):
            cxlpool.Handler(self.config(keepalive_ms=-1)).connect()
        with self.assertRaises(cxlpool.InvalidArgumentError):
            cxlpool.Handler(self.config(reserve_regions=-1)).connect()

    def test_keepalive_can_be_off(self) -> None:
        h = self.handler(keepalive_ms=0)
        self.assertTrue(h.exists(self.stored_key(h, "ka")))

    def test_retrieving_a_missing_key_raises_not_found(self) -> None:
        h = self.handler()
        with self.assertRaises(cxlpool.NotFoundError) as cm:
            h.retrieve(self.key("missing"))
        self.assertEqual(cm.exception.code, cxlpool.NotFoundError.CODE)
        self.assertTrue(cm.exception.message)
        for op in (h.pin, h.unpin, h.delete):
            with self.assertRaises(cxlpool.NotFoundError):
                op(self.key("missing"))

    def test_deleting_a_pinned_key_raises_pinned(self) -> None:
        h = self.handler()
        key = self.stored_key(h, "k")
        h.pin(key)
        with self.assertRaises(cxlpool.PinnedError):
            h.delete(key)
        h.unpin(key)
        h.delete(key)

    def test_unpinning_without_a_pin_raises_not_pinned(self) -> None:
        h = self.handler()
        key = self.stored_key(h, "k")
        with self.assertRaises(cxlpool.NotPinnedError):
            h.unpin(key)

    def test_deleting_a_live_handlers_key_raises_perm(self) -> None:
        owner, other = self.handler(), self.handler()
        key = self.stored_key(owner, "k")
        with self.assertRaises(cxlpool.PermError):
            other.delete(key)
        self.assertTrue(other.exists(key))

    def test_bad_key_lengths_raise_key_length(self) -> None:
        h = self.handler()
        for key in (b"", b"k" * (cxlpool.KEY_MAX + 1)):
            with self.assertRaises(cxlpool.KeyLengthError):
                h.exists(key)
            page = h.alloc()
            with self.assertRaises(cxlpool.KeyLengthError):
                h.store(key, page, 1)
            self.assertTrue(page.live)  # refused before consuming it
            h.free(page)

    def test_bad_batch_sizes_raise(self) -> None:
        h = self.handler()
        with self.assertRaises(cxlpool.BatchSizeError):
            h.batch_exists([])
        with self.assertRaises(cxlpool.BatchSizeError):
            h.batch_exists([b"k%d" % i
                            for i in range(cxlpool.BATCH_MAX + 1)])
        with self.assertRaises(cxlpool.InvalidArgumentError):
            h.batch_store([], [])  # cxlp_batch_store says -EINVAL

    def test_a_value_longer_than_the_page_raises_too_big(self) -> None:
        h = self.handler()
        page = h.alloc()
        with self.assertRaises(cxlpool.TooBigError):
            h.store(self.key("k"), page, h.page_size + 1)
        self.assertTrue(page.live)
        h.free(page)

    def test_a_page_given_back_raises_bad_page(self) -> None:
        h = self.handler()
        page = h.alloc()
        h.free(page)
        with self.assertRaises(cxlpool.BadPageError):
            h.free(page)
        with self.assertRaises(cxlpool.BadPageError):
            h.store(self.key("k"), page, 1)
        other = self.handler()
        foreign = other.alloc()
        with self.assertRaises(cxlpool.BadPageError):
            h.store(self.key("k"), foreign, 1)
        self.assertTrue(foreign.live)

    def test_a_full_handler_raises_no_space(self) -> None:
        h = self.handler(auto_expand=False, max_regions=1)
        pages = []
        with self.assertRaises(cxlpool.NoSpaceError):
            for _ in range(2 * MiB // (64 * KiB) + 1):
                pages.append(h.alloc())
        self.assertGreater(len(pages), 0)
        for page in pages:
            h.free(page)

    def test_calls_on_a_closed_handler_raise_closed(self) -> None:
        h = cxlpool.Handler(self.config())
        with self.assertRaises(cxlpool.ClosedError):
            h.alloc()  # never connected
        h.connect()
        h.close()
        with self.assertRaises(cxlpool.ClosedError):
            h.exists(b"k")
        with self.assertRaises(cxlpool.ClosedError):
            h.stats()

    def test_a_silent_server_raises_timeout_and_unknown(self) -> None:
        h = self.handler(timeout_ms=300, retries=0)
        page = h.alloc()
        page.buf[:1] = b"x"
        self.server.pause()
        try:
            with self.assertRaises(cxlpool.ServerTimeoutError):
                h.healthcheck()
            with self.assertRaises(cxlpool.UnknownOutcomeError) as cm:
                h.store(self.key("k"), page, 1)
        finally:
            self.server.resume()
        self.assertEqual(cm.exception.stored, [False])
        self.assertFalse(page.live)  # the handler keeps it, not the caller
        with self.assertRaises(ValueError):
            page.buf[0]
        self.assertTrue(h.healthcheck())


if __name__ == "__main__":
    cxlp_test.main()
