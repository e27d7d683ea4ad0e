"""Python processes forked after the parent connected (multiprocessing's
fork start method, Linux's default before Python 3.14): each child
connects, stores and reads; the parent's handler raises ClosedError in a
child; an inherited Handler connects anew there (handler/core/fork.c and
cxlpool._session). Before the fix the children died by SIGABRT in nng
(exit codes -6, -6, -6)."""

from __future__ import annotations

import multiprocessing
import os
import threading

import cxlp_test
from cxlp_test import ServerTestCase, cxlpool

FORK = multiprocessing.get_context("fork")


def _child(cfg: cxlpool.Config, parent: cxlpool.Handler, tag: str,
           parent_key: bytes) -> None:
    """In a forked child: the parent's handler is closed here; a handler
    of the child's own stores and reads. Any failure raises (exit code
    1, traceback on stderr)."""
    try:
        parent.exists(parent_key)
        raise AssertionError("the parent's handler worked in the child")
    except cxlpool.ClosedError:
        pass
    assert not parent.connected
    with cxlpool.Handler(cfg) as h:
        page = h.alloc()
        value = f"{tag} from {os.getpid()}".encode()
        page.buf[:len(value)] = value
        assert h.store(tag.encode(), page, len(value))
        assert bytes(h.retrieve(tag.encode())) == value
        assert bytes(h.retrieve(parent_key)) == b"parent's"
    parent.close()  # forgets it: the parent's session goes on


def _inherited(parent: cxlpool.Handler, tag: str) -> None:
    """In a forked child: connect() of the parent's Handler object opens
    a session of the child's own."""
    parent.connect()
    assert parent.connected
    page = parent.alloc()
    page.buf[:2] = b"ok"
    assert parent.store(tag.encode(), page, 2)
    parent.close()


class ForkedChildren(ServerTestCase):
    def parent(self) -> cxlpool.Handler:
        """A connected handler holding one key, so nng was used before
        any fork."""
        h = self.handler()
        page = h.alloc()
        page.buf[:8] = b"parent's"
        self.assertTrue(h.store(self.key("parent"), page, 8))
        return h

    def join(self, procs: "list[multiprocessing.process.BaseProcess]",
             timeout: float = 60.0) -> "list[int | None]":
        """Exit codes; a child still running after timeout is killed (a
        skip under ASan, as in test_handler.wait_child: GCC 12's libasan
        may hang a child forked while a thread was in malloc)."""
        codes = []
        hung = False
        for p in procs:
            p.join(0 if hung else timeout)
            if p.exitcode is None:  # every child is ended before a skip:
                p.kill()            # one left running hangs the exit
                p.join()
                hung = True
                codes.append(None)
            else:
                codes.append(p.exitcode)
        if hung and os.environ.get("CXLP_PY_ASAN_ORIG") is not None:
            self.skipTest("a forked child hung under ASan")
        return codes

    def test_three_children_each_connect_store_and_read(self) -> None:
        h = self.parent()
        tags = [self.key(f"child{i}").decode() for i in range(3)]
        procs = [FORK.Process(target=_child,
                              args=(self.config(), h, t,
                                    self.key("parent")))
                 for t in tags]
        for p in procs:
            p.start()
        self.assertEqual(self.join(procs), [0, 0, 0])
        self.assertTrue(h.healthcheck())
        for t, p in zip(tags, procs):
            self.assertEqual(bytes(h.retrieve(t.encode())),
                             f"{t} from {p.pid}".encode())

    def test_children_in_a_row_while_a_thread_of_the_parent_stores(
            self) -> None:
        h = self.parent()
        stop = threading.Event()
        errors: "list[BaseException]" = []

        def busy() -> None:
            i = 0
            while not stop.is_set():
                try:
                    key = self.key(f"busy{i}")
                    page = h.alloc()
                    page.buf[:1] = b"b"
                    h.store(key, page, 1)
                    h.retrieve(key)
                    h.delete(key)
                except BaseException as e:  # reported by the test
                    errors.append(e)
                    return
                i += 1

        t = threading.Thread(target=busy)
        t.start()
        try:
            for i in range(3):
                tag = self.key(f"row{i}").decode()
                p = FORK.Process(target=_child, args=(
                    self.config(), h, tag, self.key("parent")))
                p.start()
                self.assertEqual(self.join([p]), [0], f"child {i}")
        finally:
            stop.set()
            t.join()
        self.assertEqual(errors, [])
        self.assertTrue(h.healthcheck())

    def test_an_inherited_handler_connects_anew_in_the_child(self) -> None:
        h = self.parent()
        tag = self.key("inherited").decode()
        p = FORK.Process(target=_inherited, args=(h, tag))
        p.start()
        self.assertEqual(self.join([p]), [0])
        self.assertTrue(h.connected)
        self.assertTrue(h.healthcheck())
        self.assertEqual(bytes(h.retrieve(tag.encode())), b"ok")


if __name__ == "__main__":
    cxlp_test.main()
