/*
 * test_retries.c -- DESIGN contract 4 for every operation that changes
 * state: a request whose reply comes back later than the client's timeout
 * is resent with the same request id, and a request that arrives twice is
 * applied once and answered with the first answer. A fault-injection proxy
 * (tests/support/proxy.h) between handler and metaserver delays replies
 * and duplicates requests; test_faults.c covers lost replies.
 */
#include <pthread.h>

#include "itest.h"
#include "proto.h"
#include "proxy.h"

#define TIMEOUT_MS 300
#define DELAY_MS 900 /* three timeouts */

struct retries {
	pthread_mutex_t lock;
	uint16_t op;            /* the op to disturb */
	enum proxy_action act;  /* PROXY_DELAY_REPLY or PROXY_DUP_REQUEST */
	int times;              /* how many more times (then pass) */
};

static struct retries fx = { PTHREAD_MUTEX_INITIALIZER, 0, PROXY_PASS, 0 };

static enum proxy_action
hook(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	enum proxy_action a = PROXY_PASS;
	bool reply_phase = reply != NULL;

	pthread_mutex_lock(&fx.lock);
	if (op == fx.op && fx.times > 0 &&
	    reply_phase == (fx.act == PROXY_DELAY_REPLY)) {
		a = fx.act;
		*delay_ms = DELAY_MS;
		fx.times--;
	}
	pthread_mutex_unlock(&fx.lock);
	return a;
}

static void
disturb(uint16_t op, enum proxy_action act)
{
	pthread_mutex_lock(&fx.lock);
	fx.op = op;
	fx.act = act;
	fx.times = 1;
	pthread_mutex_unlock(&fx.lock);
}

static void
retries_start(void)
{
	itest_proxy_start(hook);
}

TestSuite(retries, .init = retries_start, .fini = itest_proxy_stop,
    .timeout = 90);

/* Every page is in exactly one state and the request was retried. */
static struct cxlp_stats
pages_consistent(struct cxlp_handler *h)
{
	struct cxlp_stats st = kv_stats(h);

	cr_assert_eq(st.pages_free + st.pages_allocated + st.pages_registered +
	    st.pages_unresolved, st.pages_total, "a page is counted twice "
	    "or not at all");
	cr_assert_eq(st.pages_unresolved, 0);
	return st;
}

static void
assert_sent_twice(uint16_t op)
{
	cr_assert_geq(proxy_requests(px, op), 2, "the %s was not resent: "
	    "the fault never happened", proto_op_name(op));
}

#define NB 8

Test(retries, register_answered_after_the_timeout_is_applied_once)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 6);
	char keys[NB][16];
	const void *kp[NB];
	size_t kl[NB], lens[NB];
	cxlp_page_t pages[NB];
	bool ok[NB];
	struct cxlp_stats st;
	void *buf;

	for (uint32_t i = 0; i < NB; i++) {
		kl[i] = kv_key(keys[i], sizeof(keys[i]), "slow", i);
		kp[i] = keys[i];
		lens[i] = 512;
		cr_assert_rc(cxlp_alloc(h, &pages[i], &buf), 0);
		kv_fill(buf, 512, 1, i);
	}
	disturb(PROTO_OP_REGISTER, PROXY_DELAY_REPLY);
	cr_assert_rc(cxlp_batch_store(h, NB, kp, kl, pages, lens, 0, ok), 0);
	assert_sent_twice(PROTO_OP_REGISTER);
	for (int i = 0; i < NB; i++) {
		cr_assert(ok[i], "key %d reported false", i);
	}
	st = pages_consistent(h);
	cr_assert_eq(st.keys, NB);
	cr_assert_eq(st.pages_registered, NB, "the resent register was "
	    "answered as a loser and freed a registered page");
	for (uint32_t i = 0; i < NB; i++) {
		cr_assert_eq(itest_get_check(h, "slow", i), 1);
	}
	cxlp_close(&h);
}

Test(retries, pin_answered_after_the_timeout_pins_once)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 6);

	itest_put(h, "p", 1, 1, 64);
	disturb(PROTO_OP_PIN, PROXY_DELAY_REPLY);
	cr_assert_rc(cxlp_pin(h, "p-1", 3), 0);
	assert_sent_twice(PROTO_OP_PIN);
	cr_assert_eq(kv_stats(h).pins, 1, "the resent pin took a second pin");
	cr_assert_rc(cxlp_unpin(h, "p-1", 3), 0);
	cr_assert_rc(cxlp_delete(h, "p-1", 3), 0);
	cxlp_close(&h);
}

Test(retries, delete_answered_after_the_timeout_reports_success)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 6);
	struct cxlp_stats st0, st;

	st0 = pages_consistent(h);
	itest_put(h, "d", 1, 1, 64);
	disturb(PROTO_OP_DELETE, PROXY_DELAY_REPLY);
	cr_assert_rc(cxlp_delete(h, "d-1", 3), 0,
	    "the resent delete was applied again and found nothing");
	assert_sent_twice(PROTO_OP_DELETE);
	st = pages_consistent(h);
	cr_assert_eq(st.keys, 0);
	cr_assert_eq(st.pages_free, st0.pages_free, "page not freed once");
	cxlp_close(&h);
}

Test(retries, unpin_answered_after_the_timeout_releases_one_pin)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 6);

	itest_put(h, "u", 1, 1, 64);
	cr_assert_rc(cxlp_pin(h, "u-1", 3), 0);
	cr_assert_rc(cxlp_pin(h, "u-1", 3), 0);
	disturb(PROTO_OP_UNPIN, PROXY_DELAY_REPLY);
	cr_assert_rc(cxlp_unpin(h, "u-1", 3), 0);
	assert_sent_twice(PROTO_OP_UNPIN);
	cr_assert_eq(kv_stats(h).pins, 1, "the resent unpin released two");
	cr_assert_rc(cxlp_delete(h, "u-1", 3), CXLP_E_PINNED);
	cxlp_close(&h);
}

Test(retries, duplicated_delete_is_applied_once)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 6);
	struct cxlp_stats st0, st;

	st0 = pages_consistent(h);
	itest_put(h, "dd", 1, 1, 64);
	disturb(PROTO_OP_DELETE, PROXY_DUP_REQUEST);
	cr_assert_rc(cxlp_delete(h, "dd-1", 4), 0, "the second copy was "
	    "applied and answered NOTFOUND");
	st = pages_consistent(h);
	cr_assert_eq(st.keys, 0);
	cr_assert_eq(st.pages_free, st0.pages_free);
	cxlp_close(&h);
}

Test(retries, duplicated_unpin_releases_one_pin)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 6);

	itest_put(h, "du", 1, 1, 64);
	cr_assert_rc(cxlp_pin(h, "du-1", 4), 0);
	cr_assert_rc(cxlp_pin(h, "du-1", 4), 0);
	disturb(PROTO_OP_UNPIN, PROXY_DUP_REQUEST);
	cr_assert_rc(cxlp_unpin(h, "du-1", 4), 0);
	cr_assert_eq(kv_stats(h).pins, 1, "one unpin released two pins");
	cr_assert_rc(cxlp_delete(h, "du-1", 4), CXLP_E_PINNED);
	cr_assert_rc(cxlp_unpin(h, "du-1", 4), 0);
	cr_assert_rc(cxlp_delete(h, "du-1", 4), 0);
	cxlp_close(&h);
}

Test(retries, duplicated_pin_takes_one_pin)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 6);

	itest_put(h, "dp", 1, 1, 64);
	disturb(PROTO_OP_PIN, PROXY_DUP_REQUEST);
	cr_assert_rc(cxlp_pin(h, "dp-1", 4), 0);
	cr_assert_eq(kv_stats(h).pins, 1, "one pin request took two pins");
	cr_assert_rc(cxlp_unpin(h, "dp-1", 4), 0);
	cr_assert_rc(cxlp_unpin(h, "dp-1", 4), CXLP_E_NOTPINNED);
	cr_assert_rc(cxlp_delete(h, "dp-1", 4), 0);
	cxlp_close(&h);
}

Test(retries, duplicated_region_alloc_takes_one_region)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 6);
	struct cxlp_stats st0 = kv_stats(h), st;
	cxlp_page_t pg;
	void *buf;

	disturb(PROTO_OP_REGION_ALLOC, PROXY_DUP_REQUEST);
	for (uint64_t i = 0; i <= st0.pages_free; i++) { /* one more region */
		cr_assert_rc(cxlp_alloc(h, &pg, &buf), 0);
	}
	st = kv_stats(h);
	cr_assert_eq(st.own_regions, st0.own_regions + 1);
	cr_assert_eq(st.regions, st0.regions + 1,
	    "the repeated REGION_ALLOC took a region nobody owns");
	cxlp_close(&h);
}

/* The HELLO and its copy land on one session: a second one would live,
 * unused, until the connection closes. */
static void
assert_one_session(struct cxlp_handler *h)
{
	struct cxlp_stats st = kv_stats(h);

	cr_assert_eq(st.sessions, 1, "one connect made %llu sessions",
	    (unsigned long long)st.sessions);
	itest_put(h, "hs", 1, 1, 64);
	cr_assert_eq(itest_get_check(h, "hs", 1), 1);
}

Test(retries, hello_answered_after_the_timeout_makes_one_session)
{
	struct cxlp_handler *h;

	disturb(PROTO_OP_HELLO, PROXY_DELAY_REPLY);
	h = itest_connect_via_proxy(TIMEOUT_MS, 6);
	assert_sent_twice(PROTO_OP_HELLO);
	assert_one_session(h);
	cxlp_close(&h);
}

Test(retries, duplicated_hello_makes_one_session)
{
	struct cxlp_handler *h;

	disturb(PROTO_OP_HELLO, PROXY_DUP_REQUEST);
	h = itest_connect_via_proxy(TIMEOUT_MS, 6);
	assert_one_session(h);
	cxlp_close(&h);
}
