/*
 * test_async_close.c -- asynchronous submit (handler/async.c), how
 * requests end: a callback that chains a request with one slot, a close
 * that lets every request submitted end first (also one queued behind a
 * callback that holds the only thread), a callback that closes its own
 * handler, and a worker process that stores asynchronously beside
 * synchronous calls (its point is the ThreadSanitizer run).
 */
#include "async_fixture.h"

TestSuite(async_close, .init = async_start, .fini = async_stop_all,
    .timeout = 60);

static struct cxlp_handler *chain_h;
static atomic_int chain_left, chain_eagain;

static void chain_cb(void *arg, int rc, size_t n, const bool stored[],
    const int status[]);

static void
chain_cb(void *arg, int rc, size_t n, const bool stored[],
    const int status[])
{
	intptr_t idx = (intptr_t)arg;

	(void)status;
	if (atomic_fetch_sub(&chain_left, 1) > 1) {
		struct req r;
		int rc2;

		/* no Criterion assert on a library thread: counted instead */
		req_fill(chain_h, &r, "ch", (uint32_t)(idx + 1) * KPR);
		if (req_submit_cb(chain_h, &r, 0, chain_cb, idx + 1) != 0) {
			atomic_fetch_add(&chain_eagain, 100);
		}
		/* the one slot is the follow-up's now: a second submit
		 * may not wait for it (it fails before the pages) */
		rc2 = req_submit_cb(chain_h, &r, 0, chain_cb, idx + 1);
		if (rc2 == -EAGAIN) {
			atomic_fetch_add(&chain_eagain, 1);
		}
	}
	cb_end(idx, rc, n, stored);
}

Test(async_close, a_callback_chains_a_request_with_one_slot_without_waiting)
{
	struct req r;

	cb_reset();
	chain_h = connect_n(1, false);
	atomic_store(&chain_left, 6);
	atomic_store(&chain_eagain, 0);
	slow_set(10);
	req_fill(chain_h, &r, "ch", 0);
	cr_assert_rc(cxlp_batch_store_async(chain_h, KPR, r.kp, r.kl,
	    r.pages, r.lens, 0, chain_cb, (void *)0), 0);
	cb_submitted();
	cb_wait(6);
	slow_set(0);
	cb_assert_each_once(6, 0);
	cr_assert_eq(atomic_load(&chain_eagain), 5, "a callback's second "
	    "submit did not return -EAGAIN at once");
	assert_keys(chain_h, "ch", 6 * KPR);
	cr_assert_eq(kv_stats(chain_h).pages_allocated, 0);
	cxlp_close(&chain_h);
}

/* ---- close -------------------------------------------------------------- */

static struct cxlp_handler *close_h, *close_raw;
#define NCLOSE 8

static void
resubmit_cb(void *arg, int rc, size_t n, const bool stored[],
    const int status[])
{
	intptr_t idx = (intptr_t)arg;

	(void)status;
	if (idx == NCLOSE - 1) { /* during the close: refused, no callback */
		const void *k = "late";
		size_t kl = 4, len = 1;
		cxlp_page_t pg;
		void *buf;
		int rc2 = cxlp_alloc(close_raw, &pg, &buf);

		if (rc2 == 0) {
			rc2 = cxlp_batch_store_async(close_raw, 1, &k, &kl, &pg,
			    &len, 0, stored_cb, (void *)(NREQ_MAX - 1));
		}
		pthread_mutex_lock(&cb.lock);
		cb.resubmit_rc = rc2;
		pthread_mutex_unlock(&cb.lock);
	}
	cb_end(idx, rc, n, stored);
}

/* cxlp_close with requests in flight and queued: each runs to its real
 * end and callback before the close returns; nothing leaks (ASan). */
Test(async_close, close_lets_every_request_submitted_end_first)
{
	struct cxlp_handler *h2;
	const int nreq = NCLOSE;

	cb_reset();
	close_raw = close_h = connect_n(4, false);
	slow_set(100);
	for (int i = 0; i < nreq; i++) {
		struct req r;

		req_fill(close_h, &r, "cl", (uint32_t)i * KPR);
		cr_assert_rc(cxlp_batch_store_async(close_h, KPR, r.kp, r.kl,
		    r.pages, r.lens, i < 4 ? CXLP_ASYNC_NOWAIT : 0,
		    resubmit_cb, (void *)(intptr_t)i), 0);
	}
	cxlp_close(&close_h); /* the last 4 still in flight */
	cr_assert_eq(cb.done, nreq, "%d of %d callbacks ran before close "
	    "returned", cb.done, nreq);
	slow_set(0);
	cb_assert_each_once(nreq, 0);
	cr_assert_eq(cb.notstored, 0);
	cr_assert_eq(cb.calls[NREQ_MAX - 1], 0);
	cr_assert_rc(cb.resubmit_rc, CXLP_E_CLOSED);
	h2 = connect_n(1, true);
	assert_keys(h2, "cl", (uint32_t)nreq * KPR); /* the keys outlive it */
	cxlp_close(&h2);
}

static atomic_int queued_b; /* 1: B submitted, 2: B's submit failed */

/* A's callback queues B behind itself (the one slot passed on) and
 * keeps the only thread a while, so that B has not started when the
 * close begins; B's callback tries once more, during the close. */
static void
queue_cb(void *arg, int rc, size_t n, const bool stored[],
    const int status[])
{
	intptr_t idx = (intptr_t)arg;

	if (idx == 0) {
		struct req r;

		req_fill(close_raw, &r, "q", KPR);
		atomic_store(&queued_b, req_submit_cb(close_raw, &r, 0,
		    queue_cb, 1) == 0 ? 1 : 2);
		usleep(300 * 1000);
		cb_end(idx, rc, n, stored);
		return;
	}
	resubmit_cb((void *)(intptr_t)(NCLOSE - 1), rc, n, stored, status);
}

Test(async_close, close_runs_a_request_queued_behind_a_callback)
{
	struct cxlp_handler *h2;
	struct req a;
	uint64_t end;

	cb_reset();
	close_raw = close_h = connect_n(1, false);
	slow_set(50);
	req_fill(close_h, &a, "q", 0);
	cr_assert_rc(req_submit_cb(close_h, &a, 0, queue_cb, 0), 0);
	end = cxlp_now_ms() + 5000;
	while (atomic_load(&queued_b) == 0 && cxlp_now_ms() < end) {
		usleep(1000);
	}
	cr_assert_eq(atomic_load(&queued_b), 1, "B was not submitted");
	cr_assert_eq(cb.done, 0);
	cxlp_close(&close_h); /* A in its callback, B queued, not started */
	cr_assert_eq(cb.done, 2, "%d of 2 callbacks ran before close "
	    "returned", cb.done);
	slow_set(0);
	cr_assert_eq(cb.calls[0], 1);
	cr_assert_eq(cb.calls[NCLOSE - 1], 1, "B's callback");
	cr_assert_rc(cb.rcs[NCLOSE - 1], 0, "B did not run to its end");
	cr_assert_eq(cb.notstored, 0);
	cr_assert_rc(cb.resubmit_rc, CXLP_E_CLOSED);
	h2 = connect_n(1, true);
	assert_keys(h2, "q", 2 * KPR);
	cxlp_close(&h2);
}

static struct cxlp_handler *self_h;

static void
self_close_cb(void *arg, int rc, size_t n, const bool stored[],
    const int status[])
{
	(void)status;
	cxlp_close(&self_h); /* returns at once; closed by a thread */
	cb_end((intptr_t)arg, rc, n, stored);
}

Test(async_close, a_callback_may_close_its_own_handler)
{
	struct cxlp_handler *h2 = connect_n(1, true);
	struct req r;
	uint64_t end;

	cb_reset();
	self_h = connect_n(2, true);
	cr_assert_eq(kv_stats(h2).sessions, 2);
	req_fill(self_h, &r, "self", 0);
	cr_assert_rc(cxlp_batch_store_async(self_h, KPR, r.kp, r.kl, r.pages,
	    r.lens, 0, self_close_cb, (void *)0), 0);
	cb_wait(1);
	cr_assert_null(self_h);
	end = cxlp_now_ms() + 5000;
	while (kv_stats(h2).sessions != 1 && cxlp_now_ms() < end) {
		usleep(20 * 1000);
	}
	cr_assert_eq(kv_stats(h2).sessions, 1, "the handler was not closed");
	assert_keys(h2, "self", KPR);
	cxlp_close(&h2);
	usleep(100 * 1000); /* the closer thread is detached: let it end */
}

/* The same in an itest-worker process, which scripts/test.sh builds with
 * ThreadSanitizer (worker.c, async-storer). */
Test(async_close, a_worker_process_stores_asynchronously_beside_sync_calls)
{
	struct test_child c;
	struct cxlp_handler *h;
	int st;

	slow_set(10);
	itest_spawn(&c, "async-storer", px_url);
	itest_go(&c);
	st = itest_wait(&c);
	slow_set(0);
	cr_assert_eq(st, 0, "async-storer exit %d", st);
	cr_assert_leq(slow_regs_max(), 3, "2 asynchronous REGISTERs and a "
	    "synchronous one at most");
	h = connect_n(1, true);
	cr_assert_eq(kv_stats(h).keys, 96 + 20);
	for (uint32_t k = 0; k < 96; k++) {
		char key[24];
		size_t kl = kv_key(key, sizeof(key), "as", k);
		const void *data;
		size_t len;

		cr_assert_rc(cxlp_retrieve(h, key, kl, 0, &data, &len), 0);
		cr_assert(kv_check(data, len, k, NULL), "bytes of %s", key);
	}
	cxlp_close(&h);
}
