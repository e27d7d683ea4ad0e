/*
 * test_async.c -- asynchronous batch_store and batch_retrieve
 * (handler/async.c) against a real metaserver behind a proxy that holds
 * replies back (a slow metaserver): the bound on requests in flight holds
 * at the proxy and at the callbacks, every callback runs exactly once,
 * nothing is lost (every key reads back with its bytes, page accounting
 * exact), pinned retrieves come back pinned, synchronous calls run beside
 * asynchronous ones. Chained requests and closes: test_async_close.c.
 */
#include "async_fixture.h"


TestSuite(async, .init = async_start, .fini = async_stop_all,
    .timeout = 60);

/* ---- the bound --------------------------------------------------------- */

#define BOUND 3
#define SUBMITTERS 4
#define PER_THREAD 12

struct submitter {
	struct cxlp_handler *h;
	int t;
};

static void *
submitter_main(void *arg)
{
	struct submitter *s = arg;

	for (int i = 0; i < PER_THREAD; i++) {
		int idx = s->t * PER_THREAD + i;
		struct req r;

		req_fill(s->h, &r, "b", (uint32_t)idx * KPR);
		if (req_submit(s->h, &r, 0, idx) != 0) {
			return (void *)1; /* r is on the stack: it was copied */
		}
	}
	return NULL;
}

Test(async, on_a_slow_metaserver_the_bound_holds_and_nothing_is_lost)
{
	struct cxlp_handler *h = connect_n(BOUND, false);
	struct submitter s[SUBMITTERS];
	pthread_t t[SUBMITTERS];
	const int nreq = SUBMITTERS * PER_THREAD;
	struct cxlp_stats st;
	unsigned peak = 0;

	cb_reset();
	slow_set(40);
	for (int i = 0; i < SUBMITTERS; i++) {
		s[i] = (struct submitter){ h, i };
		cr_assert_eq(pthread_create(&t[i], NULL, submitter_main, &s[i]),
		    0);
	}
	for (int i = 0; i < SUBMITTERS; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		cr_assert_null(ret, "a submit failed: %s", cxlp_errormsg());
	}
	cb_wait(nreq);
	slow_set(0);
	cb_assert_each_once(nreq, 0);
	cr_assert_eq(cb.notstored, 0);
	cr_assert_leq(cb.outstanding_max, BOUND, "%d requests were in flight "
	    "at once, bound %d", cb.outstanding_max, BOUND);
	cr_assert_leq(slow_regs_max(), BOUND, "%d REGISTERs at the proxy at "
	    "once, bound %d", slow_regs_max(), BOUND);
	cr_assert_eq(slow_regs_max(), BOUND, "the requests did not run side "
	    "by side (%d at most)", slow_regs_max());
	wait_idle(h);
	cr_assert_rc(cxlp_async_inflight(h, &peak), 0);
	cr_assert_eq(peak, BOUND);
	st = kv_stats(h);
	cr_assert_eq(st.pages_allocated, 0, "pages left allocated");
	cr_assert_eq(st.pages_registered, (uint64_t)nreq * KPR);
	cr_assert_eq(st.keys, (uint64_t)nreq * KPR);
	cr_assert_eq(st.pages_free + st.pages_registered, st.pages_total);
	assert_keys(h, "b", (uint32_t)nreq * KPR);
	cxlp_close(&h);
}

Test(async, a_full_handler_refuses_a_nowait_submit_and_waits_otherwise)
{
	struct cxlp_handler *h = connect_n(1, false);
	struct req a, b;
	uint64_t t0;

	cb_reset();
	slow_set(150);
	req_fill(h, &a, "nw", 0);
	req_fill(h, &b, "nw", KPR);
	cr_assert_rc(req_submit(h, &a, 0, 0), 0);
	cr_assert_rc(req_submit(h, &b, CXLP_ASYNC_NOWAIT, 1), -EAGAIN);
	cr_assert_rc(cxlp_async_inflight(h, NULL), 1);
	t0 = cxlp_now_ms();
	cr_assert_rc(req_submit(h, &b, 0, 1), 0, "the pages of a refused "
	    "submit are still the caller's");
	cr_assert_geq(cxlp_now_ms() - t0, 50, "the submit did not wait for "
	    "the slot");
	cb_wait(2);
	slow_set(0);
	cb_assert_each_once(2, 0);
	assert_keys(h, "nw", 2 * KPR);
	cxlp_close(&h);
}

/* ---- errors of the submit itself --------------------------------------- */

Test(async, a_submit_that_fails_calls_nothing_and_leaves_the_pages)
{
	struct cxlp_handler *h = connect_n(4, true);
	struct req r;
	cxlp_page_t twice[2], bogus = 0xdead0000beefull;
	size_t big[KPR] = { VLEN, 5000, VLEN, VLEN };
	size_t zero = 0;

	cb_reset();
	req_fill(h, &r, "err", 0);
	cr_assert_rc(cxlp_batch_store_async(h, KPR, r.kp, r.kl, r.pages,
	    r.lens, 0, NULL, NULL), -EINVAL);
	cr_assert_rc(cxlp_batch_store_async(h, 0, r.kp, r.kl, r.pages,
	    r.lens, 0, stored_cb, NULL), -EINVAL);
	cr_assert_rc(cxlp_batch_store_async(h, KPR, r.kp, r.kl, r.pages,
	    r.lens, 0x80, stored_cb, NULL), -EINVAL);
	cr_assert_rc(cxlp_batch_store_async(h, KPR, r.kp, r.kl, r.pages, big,
	    0, stored_cb, NULL), CXLP_E_TOOBIG);
	cr_assert_rc(cxlp_batch_store_async(h, 1, r.kp, &zero, r.pages,
	    r.lens, 0, stored_cb, NULL), CXLP_E_KEYLEN);
	cr_assert_rc(cxlp_batch_store_async(h, 1, r.kp, r.kl, &bogus, r.lens,
	    0, stored_cb, NULL), CXLP_E_BADPAGE);
	twice[0] = twice[1] = r.pages[0];
	cr_assert_rc(cxlp_batch_store_async(h, 2, r.kp, r.kl, twice, r.lens,
	    0, stored_cb, NULL), CXLP_E_BADPAGE);
	cr_assert_rc(cxlp_batch_retrieve_async(h, 0, r.kp, r.kl, 0, NULL,
	    NULL), -EINVAL);
	cr_assert_rc(cxlp_batch_retrieve_async(h, CXLP_BATCH_MAX + 1, r.kp,
	    r.kl, CXLP_RETRIEVE_PIN, (cxlp_retrieve_done_fn)1, NULL),
	    CXLP_E_BATCH);
	usleep(100 * 1000);
	cr_assert_eq(cb.done, 0, "a failed submit called back");
	cr_assert_eq(kv_stats(h).pages_allocated, KPR);
	for (int j = 0; j < KPR; j++) {
		cr_assert_rc(cxlp_free(h, r.pages[j]), 0, "page %d is not the "
		    "caller's after a failed submit", j);
	}
	cxlp_close(&h);
	cr_assert_rc(cxlp_config_set_max_inflight(NULL, 4), -EINVAL);
}

/* While a request waits for the slow metaserver, its pages are its own:
 * a free, a synchronous store and a second submit of one fail BADPAGE. */
Test(async, the_pages_of_a_request_in_flight_are_not_the_callers)
{
	struct cxlp_handler *h = connect_n(2, false);
	struct req a, b;
	cxlp_page_t b0;
	bool ok = false;

	cb_reset();
	slow_set(300);
	req_fill(h, &a, "own", 0);
	req_fill(h, &b, "own", KPR);
	cr_assert_rc(req_submit(h, &a, 0, 0), 0);
	cr_assert_rc(cxlp_free(h, a.pages[0]), CXLP_E_BADPAGE);
	cr_assert_rc(cxlp_store(h, "x", 1, a.pages[1], 1, 0, &ok),
	    CXLP_E_BADPAGE);
	b0 = b.pages[KPR - 1];
	b.pages[KPR - 1] = a.pages[KPR - 1];
	cr_assert_rc(req_submit(h, &b, 0, 1), CXLP_E_BADPAGE);
	cr_assert_rc(cxlp_async_inflight(h, NULL), 1, "a refused submit "
	    "kept its slot");
	cb_wait(1);
	slow_set(0);
	cb_assert_each_once(1, 0);
	cr_assert_eq(cb.notstored, 0);
	b.pages[KPR - 1] = b0;
	for (int j = 0; j < KPR; j++) {
		cr_assert_rc(cxlp_free(h, b.pages[j]), 0, "a refused submit "
		    "kept page %d", j);
	}
	cr_assert_eq(kv_stats(h).pages_allocated, 0);
	cr_assert_eq(kv_stats(h).pages_registered, KPR);
	assert_keys(h, "own", KPR);
	cxlp_close(&h);
}

/* ---- pinned retrieve --------------------------------------------------- */

static struct {
	pthread_mutex_t lock;
	int calls, rc;
	int status[KPR + 1];
	bool bytes_ok[KPR + 1];
} rv = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void
retrieved_cb(void *arg, int rc, size_t n, const void *const data[],
    const size_t lens[], const int status[])
{
	(void)arg;
	pthread_mutex_lock(&rv.lock);
	rv.calls++;
	rv.rc = rc;
	for (size_t i = 0; i < n && i < KPR + 1; i++) {
		rv.status[i] = status[i];
		rv.bytes_ok[i] = status[i] == 0 && lens[i] == VLEN &&
		    kv_check(data[i], lens[i], (uint32_t)i, NULL);
	}
	pthread_mutex_unlock(&rv.lock);
	cb_end(0, rc, 0, NULL);
}

Test(async, a_pinned_retrieve_comes_back_pinned)
{
	struct cxlp_handler *h = connect_n(2, false);
	const void *kp[KPR + 1];
	size_t kl[KPR + 1];
	char keys[KPR + 1][24];
	int st[KPR + 1];

	cb_reset();
	for (uint32_t k = 0; k < KPR; k++) {
		itest_put(h, "pin", 7, k, VLEN);
	}
	for (uint32_t k = 0; k <= KPR; k++) { /* the last one is missing */
		kl[k] = kv_key(keys[k], sizeof(keys[k]), "pin", k);
		kp[k] = keys[k];
	}
	slow_set(50);
	cr_assert_rc(cxlp_batch_retrieve_async(h, KPR + 1, kp, kl,
	    CXLP_RETRIEVE_PIN, retrieved_cb, NULL), 0);
	memset(keys, 0, sizeof(keys)); /* the submit copied them */
	cb_wait(1);
	slow_set(0);
	cr_assert_eq(rv.calls, 1);
	cr_assert_rc(rv.rc, 0);
	for (uint32_t k = 0; k < KPR; k++) {
		cr_assert_eq(rv.status[k], 0, "key %u: %s", k,
		    cxlp_strerror(rv.status[k]));
		cr_assert(rv.bytes_ok[k], "bytes of key %u", k);
	}
	cr_assert_eq(rv.status[KPR], CXLP_E_NOTFOUND);
	for (uint32_t k = 0; k <= KPR; k++) {
		kl[k] = kv_key(keys[k], sizeof(keys[k]), "pin", k);
	}
	cr_assert_rc(cxlp_batch_delete(h, KPR, kp, kl, st), 0);
	for (uint32_t k = 0; k < KPR; k++) {
		cr_assert_eq(st[k], CXLP_E_PINNED, "key %u deleted while it "
		    "should be pinned", k);
	}
	cr_assert_rc(cxlp_unpin(h, keys[KPR], kl[KPR]), CXLP_E_NOTFOUND);
	cr_assert_rc(cxlp_batch_unpin(h, KPR, kp, kl, st), 0);
	for (uint32_t k = 0; k < KPR; k++) {
		cr_assert_eq(st[k], 0, "key %u: no pin to release", k);
		cr_assert_rc(cxlp_delete(h, keys[k], kl[k]), 0);
	}
	cxlp_close(&h);
}

/* ---- sync beside async ------------------------------------------------- */

static void *
sync_main(void *arg)
{
	struct cxlp_handler *h = arg;

	for (uint32_t k = 0; k < 40; k++) {
		char key[24];
		size_t kl = kv_key(key, sizeof(key), "s", k);
		cxlp_page_t pg;
		void *buf;
		bool ok = false;
		const void *data;
		size_t len;

		if (cxlp_alloc(h, &pg, &buf) != 0) {
			return (void *)1;
		}
		kv_fill(buf, VLEN, 7, k);
		if (cxlp_store(h, key, kl, pg, VLEN, 0, &ok) != 0 || !ok ||
		    cxlp_retrieve(h, key, kl, CXLP_RETRIEVE_PIN, &data,
		    &len) != 0 || !kv_check(data, len, k, NULL) ||
		    cxlp_unpin(h, key, kl) != 0) {
			return (void *)2;
		}
		if (k % 4 == 3 && cxlp_delete(h, key, kl) != 0) {
			return (void *)3;
		}
	}
	return NULL;
}

Test(async, synchronous_calls_run_beside_asynchronous_ones)
{
	struct cxlp_handler *h = connect_n(2, false);
	struct submitter s = { h, 0 };
	pthread_t ts, ta;
	void *ret_s, *ret_a;
	struct cxlp_stats st;

	cb_reset();
	slow_set(10);
	cr_assert_eq(pthread_create(&ta, NULL, submitter_main, &s), 0);
	cr_assert_eq(pthread_create(&ts, NULL, sync_main, h), 0);
	pthread_join(ta, &ret_a);
	pthread_join(ts, &ret_s);
	cr_assert_null(ret_a, "a submit failed");
	cr_assert_null(ret_s, "a synchronous call failed (%p)", ret_s);
	cb_wait(PER_THREAD);
	slow_set(0);
	cb_assert_each_once(PER_THREAD, 0);
	cr_assert_eq(cb.notstored, 0);
	assert_keys(h, "b", PER_THREAD * KPR);
	st = kv_stats(h);
	cr_assert_eq(st.pages_allocated, 0);
	cr_assert_eq(st.pages_registered, PER_THREAD * KPR + 30);
	cr_assert_eq(st.keys, PER_THREAD * KPR + 30);
	cxlp_close(&h);
}

/* ---- callbacks that call in ----------------------------------------- */
