/*
 * test_redial.c -- a connection that stays up but answers nothing (a hung
 * peer, or nng 1.5's ipc dialer that never redials a restarted server) is
 * replaced: after two timeouts in a row on one socket the handler dials a
 * fresh one and resends there with the same request id. The proxy's
 * proxy_stall_seen makes every connection it has seen so far swallow its
 * requests; a new connection passes. Without the redial every call after
 * the stall would time out for good.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "itest.h"
#include "proto.h"
#include "proxy.h"
#include "worker.h"

#define TIMEOUT_MS 200
#define NB 8

static atomic_int slow_replies; /* replies still to hold past the timeout */

static enum proxy_action
hook(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	(void)arg, (void)op, (void)req_id, (void)reply_len;
	if (reply != NULL && atomic_fetch_sub(&slow_replies, 1) > 0) {
		*delay_ms = TIMEOUT_MS + 150;
		return PROXY_DELAY_REPLY;
	}
	return PROXY_PASS;
}

static void
redial_start(void)
{
	itest_proxy_start(hook);
}

TestSuite(redial, .init = redial_start, .fini = itest_proxy_stop,
    .timeout = 90);

/* Store NB keys prefix-0..NB-1 in one batch; returns batch_store's rc. */
static int
store_batch(struct cxlp_handler *h, const char *prefix, uint32_t writer)
{
	char keys[NB][32];
	const void *kp[NB];
	size_t kl[NB], lens[NB];
	cxlp_page_t pages[NB];
	bool ok[NB];
	void *buf;
	int rc;

	for (uint32_t i = 0; i < NB; i++) {
		kl[i] = kv_key(keys[i], sizeof(keys[i]), prefix, i);
		kp[i] = keys[i];
		lens[i] = 256;
		cr_assert_rc(cxlp_alloc(h, &pages[i], &buf), 0);
		kv_fill(buf, 256, writer, i);
	}
	rc = cxlp_batch_store(h, NB, kp, kl, pages, lens, 0, ok);
	for (uint32_t i = 0; i < NB && rc == 0; i++) {
		cr_assert(ok[i], "key %u reported false", i);
	}
	return rc;
}

static void
assert_batch_readable(struct cxlp_handler *h, const char *prefix,
    uint32_t writer)
{
	for (uint32_t i = 0; i < NB; i++) {
		cr_assert_eq(itest_get_check(h, prefix, i), writer);
	}
}

Test(redial, call_on_a_hung_connection_lands_over_a_fresh_one)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 4);
	uint64_t sent;
	struct cxlp_stats st;

	cr_assert_rc(store_batch(h, "before", 1), 0);
	proxy_stall_seen(px);
	sent = proxy_requests(px, PROTO_OP_REGISTER);
	cr_assert_rc(store_batch(h, "after", 2), 0);
	cr_assert_geq(proxy_requests(px, PROTO_OP_REGISTER), sent + 3,
	    "the register was not sent twice into the hung connection and "
	    "once more: the stall never happened");
	st = kv_stats(h);
	cr_assert_geq(st.redials, 1, "the hung socket was never replaced");
	cr_assert_eq(st.keys, 2 * NB);
	cr_assert_eq(st.sessions, 1, "the fresh connection opened a second "
	    "session instead of carrying the first");
	cr_assert_eq(st.pages_registered, 2 * NB);
	cr_assert_eq(st.pages_unresolved, 0);
	assert_batch_readable(h, "before", 1);
	assert_batch_readable(h, "after", 2);
	cxlp_close(&h);
}

Test(redial, timeouts_of_separate_calls_add_up_to_a_redial)
{
	/* One try per call: no single call times out twice. */
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 0);
	struct cxlp_stats st;

	cr_assert_rc(cxlp_healthcheck(h), 0);
	proxy_stall_seen(px);
	cr_assert_rc(cxlp_healthcheck(h), CXLP_E_TIMEOUT);
	cr_assert_rc(store_batch(h, "lost", 3), CXLP_E_UNKNOWN);
	cr_assert_rc(cxlp_healthcheck(h), 0, "the third call still went "
	    "into the hung connection");
	st = kv_stats(h);
	cr_assert_geq(st.redials, 1);
	/* The register that went into the hang was never applied; its pages
	 * were kept, and settling them registered the keys. */
	cr_assert_eq(st.pages_unresolved, 0);
	cr_assert_eq(st.keys, NB);
	cr_assert_eq(st.pages_registered, NB);
	cr_assert_eq(st.pages_free + st.pages_registered, st.pages_total,
	    "a page is lost or counted twice");
	assert_batch_readable(h, "lost", 3);
	cxlp_close(&h);
}

Test(redial, timeouts_with_answers_between_keep_the_connection)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 2);

	for (int i = 0; i < 3; i++) {
		atomic_store(&slow_replies, 1);
		/* first try times out, the retry is answered */
		cr_assert_rc(cxlp_healthcheck(h), 0);
		cr_assert_leq(atomic_load(&slow_replies), 0, "no reply was "
		    "held back: the timeout never happened");
	}
	cr_assert_eq(kv_stats(h).redials, 0, "timeouts that were not in a "
	    "row replaced a working connection");
	cxlp_close(&h);
}

#define NTHREADS 8
#define ROUNDS 40

struct caller {
	struct cxlp_handler *h;
	uint32_t id;
	int failures;
	int first_rc;          /* the first failure's code and message */
	char first_msg[160];
};

static void
caller_failed(struct caller *c, int rc)
{
	if (c->failures++ == 0) {
		c->first_rc = rc;
		snprintf(c->first_msg, sizeof(c->first_msg), "%s",
		    cxlp_errormsg());
	}
}

/* Each thread stores its own keys; every call must land, whether it
 * started before the stall, during it or after the redial. Thread 1 stalls
 * the connection halfway through its rounds, so the stall falls while
 * the others are busy too. */
static void *
caller_main(void *arg)
{
	struct caller *c = arg;
	char prefix[16];

	snprintf(prefix, sizeof(prefix), "t%u", c->id);
	for (uint32_t k = 0; k < ROUNDS; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), prefix, k);
		cxlp_page_t pg;
		bool stored = false;
		void *buf;

		if (c->id == 1 && k == ROUNDS / 2) {
			proxy_stall_seen(px);
		}
		int rc = cxlp_alloc(c->h, &pg, &buf);

		if (rc != 0) {
			caller_failed(c, rc);
			continue;
		}
		kv_fill(buf, 128, c->id, k);
		if ((rc = cxlp_store(c->h, key, kl, pg, 128, 0,
		    &stored)) != 0 || (rc = stored ? 0 : -1) != 0 ||
		    (rc = cxlp_healthcheck(c->h)) != 0) {
			caller_failed(c, rc);
		}
	}
	return NULL;
}

Test(redial, calls_from_many_threads_move_to_the_fresh_connection)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 6);
	struct caller c[NTHREADS];
	pthread_t t[NTHREADS];
	struct cxlp_stats st;

	for (uint32_t i = 0; i < NTHREADS; i++) {
		c[i] = (struct caller){ .h = h, .id = i + 1 };
		cr_assert_eq(pthread_create(&t[i], NULL, caller_main, &c[i]),
		    0);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(c[i].failures, 0, "thread %d: %d calls failed, "
		    "the first with %d (%s)", i, c[i].failures,
		    c[i].first_rc, c[i].first_msg);
	}
	st = kv_stats(h);
	cr_assert_geq(st.redials, 1, "the stall never hit a call");
	cr_assert_eq(st.sessions, 1);
	cr_assert_eq(st.keys, NTHREADS * ROUNDS);
	cr_assert_eq(st.pages_registered, NTHREADS * ROUNDS);
	cr_assert_eq(st.pages_unresolved, 0);
	for (uint32_t i = 0; i < NTHREADS; i++) {
		char prefix[16];

		snprintf(prefix, sizeof(prefix), "t%u", i + 1);
		for (uint32_t k = 0; k < ROUNDS; k++) {
			cr_assert_eq(itest_get_check(h, prefix, k), i + 1);
		}
	}
	cxlp_close(&h);
}

/* The same in an itest-worker process, so that scripts/test.sh's
 * ThreadSanitizer pass (a TSan-built worker) watches the socket swap and
 * its reference counts under many threads. */
Test(redial, worker_threads_ride_through_a_stall)
{
	struct test_child c;
	struct stall_result r;
	struct cxlp_handler *h;
	char ready = 0;

	itest_spawn(&c, "stall-threads", px_url);
	itest_go(&c);
	cr_assert(test_child_read(&c, &ready, 1) && ready == STALL_READY,
	    "the worker did not get halfway (exit %d)", itest_wait(&c));
	proxy_stall_seen(px);
	cr_assert(test_child_read(&c, &r, sizeof(r)), "no result (exit %d)",
	    itest_wait(&c));
	cr_assert_eq(itest_wait(&c), 0);
	cr_assert_eq(r.failures, 0, "%u calls failed", r.failures);
	cr_assert_geq(r.redials, 1, "the stall never hit the worker");
	cr_assert_eq(r.unresolved, 0);
	h = itest_connect();
	cr_assert_eq(kv_stats(h).keys, r.stored, "stored keys went missing "
	    "or appeared twice");
	cxlp_close(&h);
}
