"""cxlpool.futures: batch_store_async and batch_retrieve_async against a
real metaserver; each future settles as the synchronous call returns or
raises (the C behaviour in full, a slow metaserver and the bound, is
tests/integration/test_async.c)."""

from __future__ import annotations

import asyncio
import errno
import threading
import time
from concurrent.futures import Future
from typing import List

import cxlp_test
from cxlp_test import ServerTestCase, cxlpool


class AsyncCalls(ServerTestCase):
    def pages(self, h: cxlpool.Handler, tag: str, n: int
              ) -> "tuple[List[bytes], List[cxlpool.Page]]":
        keys = [self.key(f"{tag}{i}") for i in range(n)]
        pages = h.alloc_pages(n)
        for i, page in enumerate(pages):
            page.buf[:4] = b"v%03d" % i
        return keys, pages

    def test_futures_settle_as_the_synchronous_calls_return(self) -> None:
        h = self.handler()
        keys, pages = self.pages(h, "s", 4)
        sync = h.batch_store(keys[:2], pages[:2], [4, 4])
        losers = h.alloc_pages(2)  # keys[0:2] are there already
        fut = h.batch_store_async(keys, losers + pages[2:], [4, 4, 4, 4])
        self.assertIsInstance(fut, Future)
        self.assertFalse(fut.cancel(), "a submitted call was cancelled")
        # first writer wins: True, as the sync call says
        self.assertEqual(fut.result(timeout=10), sync + [True, True])
        self.assertFalse(any(p.live for p in pages + losers),
                         "pages not consumed")
        missing = self.key("missing")
        want = h.batch_retrieve(keys + [missing])
        got = h.batch_retrieve_async(keys + [missing]).result(timeout=10)
        self.assertEqual([bytes(v) for v in got[:2]],
                         [bytes(v) for v in want[:2]])
        self.assertEqual(bytes(got[3]), b"v003")
        self.assertIsInstance(got[4], cxlpool.NotFoundError)
        self.assertEqual(got[4].key, missing)
        for k in keys:  # pinned by the async retrieve
            with self.assertRaises(cxlpool.PinnedError):
                h.delete(k)
        self.assertEqual(h.batch_unpin(keys), [None] * 4)
        self.assertEqual(h.async_inflight()[0], 0)

    def test_an_asyncio_loop_awaits_them(self) -> None:
        h = self.handler()

        async def main() -> List[List[bool]]:
            futs = []
            for b in range(3):
                keys, pages = self.pages(h, f"a{b}-", 3)
                futs.append(asyncio.wrap_future(
                    h.batch_store_async(keys, pages, [4] * 3)))
            return list(await asyncio.gather(*futs))

        self.assertEqual(asyncio.run(main()), [[True] * 3] * 3)
        self.assertEqual(bytes(h.retrieve(self.key("a2-1"))), b"v001")

    def test_submit_errors_are_raised_at_once_and_leave_the_pages(
            self) -> None:
        h = self.handler()
        keys, pages = self.pages(h, "e", 2)
        with self.assertRaises(cxlpool.InvalidArgumentError):
            h.batch_store_async(keys, pages[:1])
        with self.assertRaises(cxlpool.TooBigError):
            h.batch_store_async(keys, pages, [4, h.page_size + 1])
        with self.assertRaises(cxlpool.BadPageError):
            h.batch_store_async(keys, [pages[0], pages[0]])
        self.assertTrue(all(p.live for p in pages))
        self.assertEqual(h.batch_store_async(keys, pages, [4, 4]).result(
            timeout=10), [True, True])
        with self.assertRaises(cxlpool.BadPageError):  # consumed
            h.batch_store_async(keys[:1], pages[:1])
        with self.assertRaises(cxlpool.KeyLengthError):
            h.batch_retrieve_async([b""])

    def test_the_bound_holds_and_close_waits_for_every_call(self) -> None:
        h = self.handler(max_inflight=2)
        self.server.pause()
        try:
            futs = []
            for b in range(2):
                keys, pages = self.pages(h, f"w{b}-", 2)
                futs.append(h.batch_store_async(keys, pages, [4, 4],
                                                wait=False))
            keys, pages = self.pages(h, "w2-", 2)
            with self.assertRaises(cxlpool.CxlpOSError) as cm:
                h.batch_store_async(keys, pages, wait=False)
            self.assertEqual(cm.exception.errno, errno.EAGAIN)
            self.assertTrue(all(p.live for p in pages))
            self.assertEqual(h.async_inflight(), (2, 2))
            self.assertFalse(any(f.done() for f in futs))
            threading.Timer(0.3, self.server.resume).start()
            t0 = time.monotonic()
            h.close()  # lets both end first
            self.assertGreater(time.monotonic() - t0, 0.2)
        finally:
            self.server.resume()
        self.assertTrue(all(f.done() for f in futs))
        self.assertEqual([f.result() for f in futs], [[True, True]] * 2)
        with self.assertRaises(cxlpool.ClosedError):
            h.batch_store_async(keys, pages)
        other = self.handler()
        self.assertEqual(bytes(other.retrieve(self.key("w1-1"))), b"v001")

    def test_a_lost_reply_raises_unknown_outcome_from_the_future(
            self) -> None:
        h = self.handler(timeout_ms=300, retries=0)
        keys, pages = self.pages(h, "u", 2)
        self.server.pause()
        try:
            fut = h.batch_store_async(keys, pages, [4, 4])
            err = fut.exception(timeout=10)
        finally:
            self.server.resume()
        self.assertIsInstance(err, cxlpool.UnknownOutcomeError)
        self.assertEqual(err.stored, [False, False])
        self.assertFalse(any(p.live for p in pages))
        self.assertTrue(h.healthcheck())

    def test_an_exception_in_the_callback_is_set_on_the_future(
            self) -> None:
        h = self.handler()
        keys, pages = self.pages(h, "x", 1)

        def broken(*args: object) -> None:
            raise RuntimeError("broken on the library's thread")

        h._store_outcome = broken  # type: ignore[method-assign]
        fut = h.batch_store_async(keys, pages, [4])
        with self.assertRaisesRegex(RuntimeError, "library's thread"):
            fut.result(timeout=10)
        del h._store_outcome
        h.close()  # the session was given back: close does not hang

    def test_a_done_callback_may_submit_again(self) -> None:
        h = self.handler(max_inflight=1)
        keys, pages = self.pages(h, "c", 2)
        second: "Future[Future[List[bool]]]" = Future()

        def chain(_: object) -> None:
            try:
                second.set_result(h.batch_store_async(keys[1:], pages[1:],
                                                      [4]))
            except BaseException as e:
                second.set_exception(e)

        h.batch_store_async(keys[:1], pages[:1], [4]).add_done_callback(
            chain)
        self.assertEqual(second.result(timeout=10).result(timeout=10),
                         [True])
        self.assertEqual(bytes(h.retrieve(keys[1])), b"v001")


if __name__ == "__main__":
    cxlp_test.main()
