/*
 * test_async.c -- asynchronous batch_store and batch_retrieve
 * (handler/async.c) against a real metaserver behind a proxy that holds
 * replies back (a slow metaserver): the bound on requests in flight holds
 * at the proxy and at the callbacks, every callback runs exactly once,
 * nothing is lost (every key reads back with its bytes, page accounting
 * exact), pinned retrieves come back pinned, synchronous calls run beside
 * asynchronous ones, and a close lets every request submitted end first.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "clock.h"
#include "itest.h"
#include "leak.h"
#include "proto.h"
#include "proxy.h"

#define VLEN 1000

/* The slow metaserver: REGISTER and LOOKUP replies held for delay_ms in
 * the proxy, and the REGISTERs inside the proxy counted. */
static struct {
	pthread_mutex_t lock;
	unsigned delay_ms;
	int regs, regs_max; /* REGISTERs inside the proxy, most at once */
} slow = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };

static enum proxy_action
slow_hook(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	unsigned d;

	(void)arg, (void)req_id, (void)reply_len, (void)delay_ms;
	if (op != PROTO_OP_REGISTER && op != PROTO_OP_LOOKUP) {
		return PROXY_PASS;
	}
	pthread_mutex_lock(&slow.lock);
	if (reply == NULL) { /* request phase */
		if (op == PROTO_OP_REGISTER && ++slow.regs > slow.regs_max) {
			slow.regs_max = slow.regs;
		}
		pthread_mutex_unlock(&slow.lock);
		return PROXY_PASS;
	}
	d = slow.delay_ms;
	pthread_mutex_unlock(&slow.lock);
	usleep(d * 1000u); /* the reply waits here, counted */
	pthread_mutex_lock(&slow.lock);
	if (op == PROTO_OP_REGISTER) {
		slow.regs--;
	}
	pthread_mutex_unlock(&slow.lock);
	return PROXY_PASS;
}

static void
slow_set(unsigned delay_ms)
{
	pthread_mutex_lock(&slow.lock);
	slow.delay_ms = delay_ms;
	pthread_mutex_unlock(&slow.lock);
}

static int
slow_regs_max(void)
{
	int m;

	pthread_mutex_lock(&slow.lock);
	m = slow.regs_max;
	pthread_mutex_unlock(&slow.lock);
	return m;
}

static void
async_start(void)
{
	itest_proxy_start(slow_hook);
}

static void
async_stop_all(void)
{
	itest_proxy_stop();
	cr_assert_eq(leak_check(), 0, "leaks (see stderr)");
}

TestSuite(async, .init = async_start, .fini = async_stop_all,
    .timeout = 60);

/* A handler through the proxy with max_inflight n, or on srv directly. */
static struct cxlp_handler *
connect_n(unsigned n, bool direct)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, direct ? srv.url : px_url),
	    0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, 4096), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, 4 * MiB), 0);
	cr_assert_rc(cxlp_config_set_max_inflight(cfg, n), 0);
	cr_assert_rc(cxlp_connect(&h, cfg), 0);
	cxlp_config_delete(&cfg);
	return h;
}

/* ---- what the callbacks saw -------------------------------------------- */

#define NREQ_MAX 256
#define KPR 4 /* keys per request */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int calls[NREQ_MAX];  /* callbacks per request */
	int rcs[NREQ_MAX];    /* their rc */
	int notstored;        /* keys a callback saw not stored */
	int done;             /* callbacks in all */
	int outstanding;      /* submits returned - callbacks ended */
	int outstanding_max;
	int resubmit_rc;      /* what a callback's submit returned */
} cb = { .lock = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER };

static void
cb_reset(void)
{
	pthread_mutex_lock(&cb.lock);
	memset(cb.calls, 0, sizeof(cb.calls));
	memset(cb.rcs, 0, sizeof(cb.rcs));
	cb.notstored = cb.done = cb.outstanding = cb.outstanding_max = 0;
	cb.resubmit_rc = 1;
	pthread_mutex_unlock(&cb.lock);
}

/* A submit returned 0: one more in flight. */
static void
cb_submitted(void)
{
	pthread_mutex_lock(&cb.lock);
	if (++cb.outstanding > cb.outstanding_max) {
		cb.outstanding_max = cb.outstanding;
	}
	pthread_mutex_unlock(&cb.lock);
}

static void
cb_end(intptr_t idx, int rc, size_t n, const bool stored[])
{
	pthread_mutex_lock(&cb.lock);
	cb.calls[idx]++;
	cb.rcs[idx] = rc;
	for (size_t i = 0; stored != NULL && i < n; i++) {
		cb.notstored += !stored[i];
	}
	cb.outstanding--;
	cb.done++;
	pthread_cond_broadcast(&cb.cv);
	pthread_mutex_unlock(&cb.lock);
}

static void
stored_cb(void *arg, int rc, size_t n, const bool stored[],
    const int status[])
{
	(void)status;
	cb_end((intptr_t)arg, rc, n, stored);
}

static void
cb_wait(int want)
{
	uint64_t end = cxlp_now_ms() + 20000;

	pthread_mutex_lock(&cb.lock);
	while (cb.done < want && cxlp_now_ms() < end) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&cb.cv, &cb.lock, &ts);
	}
	pthread_mutex_unlock(&cb.lock);
	cr_assert_eq(cb.done, want, "%d of %d callbacks ran", cb.done, want);
}

/* A request is in flight until its callback has returned: wait for the
 * last one to (its cb_end ran just before). */
static void
wait_idle(struct cxlp_handler *h)
{
	uint64_t end = cxlp_now_ms() + 2000;

	while (cxlp_async_inflight(h, NULL) > 0 && cxlp_now_ms() < end) {
		usleep(1000);
	}
	cr_assert_rc(cxlp_async_inflight(h, NULL), 0);
}

static void
cb_assert_each_once(int nreq, int want_rc)
{
	for (int i = 0; i < nreq; i++) {
		cr_assert_eq(cb.calls[i], 1, "request %d: %d callbacks", i,
		    cb.calls[i]);
		cr_assert_eq(cb.rcs[i], want_rc, "request %d: rc %d (%s)", i,
		    cb.rcs[i], cxlp_strerror(cb.rcs[i]));
	}
}

/* ---- a request of KPR keys -------------------------------------------- */

struct req {
	char keys[KPR][24];
	const void *kp[KPR];
	size_t kl[KPR], lens[KPR];
	cxlp_page_t pages[KPR];
};

/* Pages written for keys prefix-(base + j), j < KPR. */
static void
req_fill(struct cxlp_handler *h, struct req *r, const char *prefix,
    uint32_t base)
{
	void *buf;

	for (uint32_t j = 0; j < KPR; j++) {
		r->kl[j] = kv_key(r->keys[j], sizeof(r->keys[j]), prefix,
		    base + j);
		r->kp[j] = r->keys[j];
		r->lens[j] = VLEN;
		cr_assert_rc(cxlp_alloc(h, &r->pages[j], &buf), 0);
		kv_fill(buf, VLEN, 7, base + j);
	}
}

static int
req_submit_cb(struct cxlp_handler *h, struct req *r, unsigned flags,
    cxlp_store_done_fn done, intptr_t idx)
{
	int rc = cxlp_batch_store_async(h, KPR, r->kp, r->kl, r->pages,
	    r->lens, flags, done, (void *)idx);

	if (rc == 0) {
		cb_submitted();
	}
	return rc;
}

static int
req_submit(struct cxlp_handler *h, struct req *r, unsigned flags,
    intptr_t idx)
{
	return req_submit_cb(h, r, flags, stored_cb, idx);
}

/* Every key prefix-k, k < nkeys, reads back with its bytes. */
static void
assert_keys(struct cxlp_handler *h, const char *prefix, uint32_t nkeys)
{
	for (uint32_t k = 0; k < nkeys; k++) {
		char key[24];
		size_t kl = kv_key(key, sizeof(key), prefix, k);
		const void *data;
		size_t len;
		uint32_t writer = 0;

		cr_assert_rc(cxlp_retrieve(h, key, kl, 0, &data, &len), 0,
		    "%s", key);
		cr_assert(len == VLEN && kv_check(data, len, k, &writer) &&
		    writer == 7, "bytes of %s", key);
	}
}

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

Test(async, a_callback_chains_a_request_with_one_slot_without_waiting)
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
Test(async, close_lets_every_request_submitted_end_first)
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

Test(async, close_runs_a_request_queued_behind_a_callback)
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

Test(async, a_callback_may_close_its_own_handler)
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
Test(async, a_worker_process_stores_asynchronously_beside_sync_calls)
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
