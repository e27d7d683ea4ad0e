/*
 * test_late.c -- a very late copy of a REGISTER (issue 15, item 5): a
 * relay holds the copy across a metaserver restart, the server forgets
 * its request id, and the copy lands after its key was deleted and its
 * page could have been handed out again. The handler's guard
 * (handler/core/doubt.c) keeps such a page out of the free list, so the late
 * copy brings the key back with its own bytes at worst, and never binds
 * it to another key's bytes.
 *
 * Each test: the proxy holds the first copy of one REGISTER of key K on
 * page P (PROXY_HOLD_REQUEST); kill -9 and restart of the metaserver
 * (its reply cache is empty); the handler settles P, deletes K, takes a
 * page for K2 and writes K2's bytes into it; the proxy now delivers the
 * held copy; then K2 is stored. K must be absent or hold K's bytes, K2
 * must be stored with K2's bytes, and the pool must pass pool-inspect
 * check. Without the guard the page for K2 is P (the free list is LIFO):
 * the late copy binds K to P, K reads K2's bytes and K2's store is
 * refused (P already holds a key).
 */
#include <pthread.h>

#include "itest.h"
#include "proto.h"
#include "proxy.h"

#define TIMEOUT_MS 300
#define LEN 4096
#define K_WRITER 1
#define K2_WRITER 2

struct late {
	pthread_mutex_t lock;
	bool armed;       /* hold the next REGISTER */
	uint64_t held_id; /* its request id, once held */
	bool drop_copies; /* drop its resends too (else they pass) */
};

static struct late fx = { PTHREAD_MUTEX_INITIALIZER, false, 0, false };

static enum proxy_action
hook(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	enum proxy_action a = PROXY_PASS;

	if (reply != NULL || op != PROTO_OP_REGISTER) {
		return PROXY_PASS;
	}
	pthread_mutex_lock(&fx.lock);
	if (fx.armed) {
		fx.armed = false;
		fx.held_id = req_id;
		a = PROXY_HOLD_REQUEST;
	} else if (fx.drop_copies && req_id == fx.held_id) {
		a = PROXY_DROP_REQUEST;
	}
	pthread_mutex_unlock(&fx.lock);
	return a;
}

static void
hold_next_register(bool drop_copies)
{
	pthread_mutex_lock(&fx.lock);
	fx.armed = true;
	fx.held_id = 0;
	fx.drop_copies = drop_copies;
	pthread_mutex_unlock(&fx.lock);
}

static void
late_start(void)
{
	itest_proxy_start(hook);
}

TestSuite(late, .init = late_start, .fini = itest_proxy_stop,
    .timeout = 150);

/* kill -9 and restart: the server keeps no reply, knows no request id. */
static void
restart_server(void)
{
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, NULL), 0, "restart failed");
}

/* Healthchecks (each one settles parked pages, resolve_run) until no
 * page is unresolved; loose: the handler reattaches through the proxy
 * to a server that has just come back. */
static struct cxlp_stats
settle(struct cxlp_handler *h)
{
	struct cxlp_stats st = { 0 };

	for (int i = 0; i < 100; i++) {
		if (cxlp_healthcheck(h) == 0) {
			st = kv_stats(h);
			if (st.pages_unresolved == 0 && st.pages_total > 0) {
				return st;
			}
		}
		usleep(100 * 1000);
	}
	cr_assert_fail("pages still unresolved: %llu (%s)",
	    (unsigned long long)st.pages_unresolved, cxlp_errormsg());
	return st;
}

/* K is absent, or holds K's own bytes (K2 is key + 1). */
static void
assert_k_absent_or_own(struct cxlp_handler *h, const char *k, uint32_t key)
{
	const void *data;
	size_t len;
	uint32_t writer = 0;
	int rc = cxlp_retrieve(h, k, strlen(k), 0, &data, &len);

	if (rc == CXLP_E_NOTFOUND) {
		return;
	}
	cr_assert_rc(rc, 0, "retrieve of the deleted key");
	cr_assert(!kv_check(data, len, key + 1, &writer),
	    "the deleted key %s reads K2's bytes (writer %u): a late "
	    "REGISTER bound it to the page handed out for K2", k, writer);
	cr_assert(kv_check(data, len, key, &writer) && writer == K_WRITER,
	    "the deleted key %s came back with other bytes than its own",
	    k);
}

/* After the held REGISTER of K is out of the handler's hands: delete K,
 * write K2 into a fresh page, deliver the held copy, store K2, check. */
static void
late_copy_lands(struct cxlp_handler *h, const char *k, const char *k2)
{
	cxlp_page_t q;
	bool ok = false;
	void *buf;

	cr_assert_eq(itest_get_check(h, "late", 1), K_WRITER);
	cr_assert_rc(cxlp_delete(h, k, strlen(k)), 0);
	cr_assert_rc(cxlp_alloc(h, &q, &buf), 0);
	kv_fill(buf, LEN, K2_WRITER, 2);
	cr_assert_eq(proxy_release_held(px, 20000), 1,
	    "the held REGISTER was not answered");
	assert_k_absent_or_own(h, k, 1);
	cr_assert_rc(cxlp_store(h, k2, strlen(k2), q, LEN, 0, &ok), 0);
	cr_assert(ok, "K2's store was refused: its page already holds a key "
	    "(%s)", cxlp_errormsg());
	cr_assert_eq(itest_get_check(h, "late", 2), K2_WRITER);
	assert_k_absent_or_own(h, k, 1);
	itest_assert_pool_checks();
}

/* Every page is counted once; one is quarantined (K's page). */
static void
assert_quarantined(struct cxlp_handler *h, uint64_t want)
{
	struct cxlp_stats st = kv_stats(h);

	cr_assert_eq(st.pages_free + st.pages_allocated + st.pages_registered +
	    st.pages_unresolved + st.pages_quarantined, st.pages_total);
	cr_assert_eq(st.pages_quarantined, want, "%llu pages quarantined",
	    (unsigned long long)st.pages_quarantined);
}

Test(late, parked_register_delivered_after_restart_never_binds_reused_page)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 1);
	char k[32], k2[32];
	cxlp_page_t p;
	bool ok = true;
	void *buf;

	kv_key(k, sizeof(k), "late", 1);
	kv_key(k2, sizeof(k2), "late", 2);
	cr_assert_rc(cxlp_alloc(h, &p, &buf), 0);
	kv_fill(buf, LEN, K_WRITER, 1);
	hold_next_register(true);
	cr_assert_rc(cxlp_store(h, k, strlen(k), p, LEN, 0, &ok),
	    CXLP_E_UNKNOWN);
	cr_assert(!ok);
	cr_assert_eq(proxy_held(px), 1);
	restart_server();
	(void)settle(h); /* resolve_run (after the restart, as a stats
	                  * call before it would): K registered at P again */
	late_copy_lands(h, k, k2);
	assert_quarantined(h, 1);
	cxlp_close(&h);
}

Test(late, resent_register_delivered_after_restart_never_binds_reused_page)
{
	struct cxlp_handler *h = itest_connect_via_proxy(TIMEOUT_MS, 2);
	char k[32], k2[32];
	cxlp_page_t p;
	bool ok = false;
	void *buf;

	kv_key(k, sizeof(k), "late", 1);
	kv_key(k2, sizeof(k2), "late", 2);
	cr_assert_rc(cxlp_alloc(h, &p, &buf), 0);
	kv_fill(buf, LEN, K_WRITER, 1);
	hold_next_register(false); /* the first copy is held, the resend
	                            * passes and is answered */
	cr_assert_rc(cxlp_store(h, k, strlen(k), p, LEN, 0, &ok), 0);
	cr_assert(ok);
	cr_assert_eq(proxy_held(px), 1);
	restart_server();
	(void)settle(h);
	late_copy_lands(h, k, k2);
	assert_quarantined(h, 1);
	cxlp_close(&h);
}
