/*
 * test_giveback_threads.c -- issue 17 under load and under doubt: the
 * threads of one handler allocate, free, store and delete while its
 * regions come and go (handler/region/giveback.c), and nothing leaks or mixes;
 * a page whose REGISTER may still land keeps its region. One-thread
 * cases are in test_giveback.c.
 */
#include <pthread.h>
#include <stdlib.h>

#include "itest.h"
#include "proto.h"

#define PAGE (512u << 10)
#define REGION (2u << 20) /* 4 pages: regions empty and fill up often */
#define PER_REGION (REGION / PAGE)
#define WAIT_MS 20000      /* a give-back's bound here: a loaded machine */

#define THREADS 8
#define ROUNDS 1000
#define BATCH 4 /* pages a round takes, at most */
#define VALUE 4096 /* bytes stored in a page */

static void
start(void)
{
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	cr_assert_eq(test_server_start(&srv, 64 * MiB, NULL), 0,
	    "metaserver did not start");
}

TestSuite(giveback_threads, .init = start, .fini = itest_stop,
    .timeout = 150);

static struct cxlp_handler *
connect_reserve(const char *url, unsigned reserve, unsigned timeout_ms,
    unsigned retries)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, url), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, PAGE), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, REGION), 0);
	cr_assert_rc(cxlp_config_set_reserve_regions(cfg, reserve), 0);
	if (timeout_ms != 0) {
		cr_assert_rc(cxlp_config_set_timeout_ms(cfg, timeout_ms), 0);
		cr_assert_rc(cxlp_config_set_retries(cfg, retries), 0);
	}
	cr_assert_rc(cxlp_connect(&h, cfg), 0);
	cxlp_config_delete(&cfg);
	return h;
}

/* Poll until h owns `own` regions and the pool has `pool` in all. */
static bool
wait_regions(struct cxlp_handler *h, uint64_t own, uint64_t pool)
{
	for (unsigned ms = 0; ms < WAIT_MS; ms += 20) {
		struct cxlp_stats st = kv_stats(h);

		if (st.own_regions == own && st.regions == pool) {
			return true;
		}
		test_sleep_ms(20);
	}
	return false;
}

/* ---- many threads, one handler, regions coming and going -------------- */

struct churn {
	struct cxlp_handler *h;
	uint32_t id;
	int fails;
	char why[256]; /* the first failure */
};

static void
churn_fail(struct churn *c, const char *what, int rc)
{
	if (c->fails++ == 0) {
		snprintf(c->why, sizeof(c->why), "thread %u: %s: %s (%s)",
		    c->id, what, cxlp_strerror(rc), cxlp_errormsg());
	}
}

/* Check the m keys of a round, all mine, then delete them. */
static void
churn_check_delete(struct churn *c, uint32_t m, const void *const kp[],
    const size_t kl[], const uint32_t keyno[])
{
	int st[BATCH];
	int rc;

	for (uint32_t i = 0; i < m; i++) {
		const void *data;
		size_t len;
		uint32_t writer = 0;

		rc = cxlp_retrieve(c->h, kp[i], kl[i], 0, &data, &len);
		if (rc != 0) {
			churn_fail(c, "retrieve", rc);
		} else if (!kv_check(data, len, keyno[i], &writer) ||
		    writer != c->id) {
			churn_fail(c, "bytes of a stored key are wrong", 0);
		}
	}
	if ((rc = cxlp_batch_delete(c->h, m, kp, kl, st)) != 0) {
		churn_fail(c, "batch_delete", rc);
	}
	for (uint32_t i = 0; rc == 0 && i < m; i++) {
		if (st[i] != 0) {
			churn_fail(c, "delete", st[i]);
		}
	}
}

/* One round: take 1..BATCH pages, fill them, free one now and then,
 * store the rest in one batch, read each back, delete it. */
static void
churn_round(struct churn *c, uint32_t round, unsigned *seed)
{
	uint32_t n = 1 + (uint32_t)rand_r(seed) % BATCH, m = 0;
	char keys[BATCH][32];
	uint32_t keyno[BATCH];
	const void *kp[BATCH];
	size_t kl[BATCH], lens[BATCH];
	cxlp_page_t pg[BATCH];
	bool ok[BATCH];

	for (uint32_t i = 0; i < n; i++) {
		uint32_t key = (c->id << 24) | (round << 3) | i;
		void *buf;
		int rc = cxlp_alloc(c->h, &pg[m], &buf);

		if (rc != 0) {
			churn_fail(c, "alloc", rc);
			continue;
		}
		kv_fill(buf, VALUE, c->id, key);
		if (rand_r(seed) % 4 == 0) {
			if ((rc = cxlp_free(c->h, pg[m])) != 0) {
				churn_fail(c, "free", rc);
			}
			continue;
		}
		keyno[m] = key;
		kl[m] = kv_key(keys[m], sizeof(keys[m]), "c", key);
		kp[m] = keys[m];
		lens[m++] = VALUE;
	}
	if (m == 0) {
		return;
	}
	if (cxlp_batch_store(c->h, m, kp, kl, pg, lens, 0, ok) != 0) {
		churn_fail(c, "batch_store", -1);
		return;
	}
	for (uint32_t i = 0; i < m; i++) {
		if (!ok[i]) {
			churn_fail(c, "a key was not stored", 0);
			return;
		}
	}
	churn_check_delete(c, m, kp, kl, keyno);
}

static void *
churn_main(void *arg)
{
	struct churn *c = arg;
	unsigned seed = c->id * 7919u + 17;

	for (uint32_t r = 0; r < ROUNDS; r++) {
		churn_round(c, r, &seed);
	}
	return NULL;
}

static void
churn(unsigned reserve)
{
	struct cxlp_handler *h = connect_reserve(srv.url, reserve, 0, 0);
	struct churn c[THREADS];
	pthread_t t[THREADS];
	struct cxlp_stats st;

	for (uint32_t i = 0; i < THREADS; i++) {
		c[i] = (struct churn){ .h = h, .id = i + 1 };
		cr_assert_eq(pthread_create(&t[i], NULL, churn_main, &c[i]), 0);
	}
	for (uint32_t i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
	}
	for (uint32_t i = 0; i < THREADS; i++) {
		cr_assert_eq(c[i].fails, 0, "%d failures, first: %s",
		    c[i].fails, c[i].why);
	}
	cr_assert(wait_regions(h, reserve, reserve), "own %llu regions, "
	    "pool %llu, reserve %u",
	    (unsigned long long)kv_stats(h).own_regions,
	    (unsigned long long)kv_stats(h).regions, reserve);
	st = kv_stats(h);
	cr_assert_eq(st.keys, 0);
	cr_assert_eq(st.pages_total, reserve * PER_REGION);
	cr_assert_eq(st.pages_free, st.pages_total, "%llu of %llu pages free",
	    (unsigned long long)st.pages_free,
	    (unsigned long long)st.pages_total);
	cr_assert_eq(st.free_bytes, st.data_bytes - reserve * REGION,
	    "free %llu of %llu", (unsigned long long)st.free_bytes,
	    (unsigned long long)st.data_bytes);
	itest_assert_pool_checks();
	cxlp_close(&h);
}

Test(giveback_threads, churning_threads_leak_nothing_with_reserve_0)
{
	churn(0);
}

Test(giveback_threads, churning_threads_leak_nothing_with_reserve_1)
{
	churn(1);
}

/* ---- doubt: a proxy loses what the test says -------------------------- */

struct lose {
	pthread_mutex_t lock;
	uint16_t op;
	enum proxy_action act;
	int times;
};

static struct lose lose = { PTHREAD_MUTEX_INITIALIZER, 0, PROXY_PASS, 0 };

static enum proxy_action
lose_hook(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	bool in_request = lose.act == PROXY_DROP_REQUEST;
	enum proxy_action a = PROXY_PASS;

	(void)arg, (void)req_id, (void)reply_len, (void)delay_ms;
	pthread_mutex_lock(&lose.lock);
	if (op == lose.op && lose.times > 0 && (reply == NULL) == in_request) {
		a = lose.act;
		lose.times--;
	}
	pthread_mutex_unlock(&lose.lock);
	return a;
}

static void
lose_next(uint16_t op, enum proxy_action act, int times)
{
	pthread_mutex_lock(&lose.lock);
	lose.op = op;
	lose.act = act;
	lose.times = times;
	pthread_mutex_unlock(&lose.lock);
}

static void
doubt_start(void)
{
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	itest_proxy_start(lose_hook);
}

TestSuite(giveback_doubt, .init = doubt_start, .fini = itest_proxy_stop,
    .timeout = 90);

/* A page whose REGISTER reply was lost, then whose key was deleted, is
 * quarantined (handler/core/doubt.c): a late copy of that REGISTER could
 * bring the key back into it, so its region is never empty and never
 * given back, though every other page of it is free. */
Test(giveback_doubt, a_region_with_a_quarantined_page_is_kept)
{
	/* 4 tries of 300 ms: no call but the REGISTERs may time out */
	struct cxlp_handler *h = connect_reserve(px_url, 0, 300, 3);
	cxlp_page_t pg[PER_REGION + 1];
	struct cxlp_stats st;
	bool ok = true;
	void *buf;

	cr_assert_rc(cxlp_alloc(h, &pg[0], &buf), 0);
	kv_fill(buf, VALUE, 1, 0);
	lose_next(PROTO_OP_REGISTER, PROXY_DROP_REPLY, 4);
	cr_assert_rc(cxlp_store(h, "q-0", 3, pg[0], VALUE, 0, &ok),
	    CXLP_E_UNKNOWN);
	cr_assert_rc(cxlp_healthcheck(h), 0); /* resolved: registered */
	cr_assert_rc(cxlp_delete(h, "q-0", 3), 0);
	cr_assert_eq(kv_stats(h).pages_quarantined, 1);
	/* a second region, emptied: the give-back runs and keeps the first */
	for (uint32_t i = 1; i <= PER_REGION; i++) {
		cr_assert_rc(cxlp_alloc(h, &pg[i], &buf), 0);
	}
	cr_assert_eq(kv_stats(h).own_regions, 2);
	for (uint32_t i = 1; i <= PER_REGION; i++) {
		cr_assert_rc(cxlp_free(h, pg[i]), 0);
	}
	cr_assert(wait_regions(h, 1, 1), "own %llu regions, pool %llu",
	    (unsigned long long)kv_stats(h).own_regions,
	    (unsigned long long)kv_stats(h).regions);
	st = kv_stats(h);
	cr_assert_eq(st.pages_quarantined, 1);
	cr_assert_eq(st.pages_free, PER_REGION - 1);
	cxlp_close(&h);
}

/* A REGION_FREE that never reached the server is asked again, and the
 * region does go back (the keeper retries after a second). */
Test(giveback_doubt, a_give_back_that_got_no_answer_is_asked_again)
{
	struct cxlp_handler *h = connect_reserve(px_url, 0, 300, 1);
	cxlp_page_t pg;
	void *buf;

	cr_assert_rc(cxlp_alloc(h, &pg, &buf), 0);
	lose_next(PROTO_OP_REGION_FREE, PROXY_DROP_REQUEST, 2); /* both */
	cr_assert_rc(cxlp_free(h, pg), 0);
	cr_assert(wait_regions(h, 0, 0), "own %llu regions, pool %llu",
	    (unsigned long long)kv_stats(h).own_regions,
	    (unsigned long long)kv_stats(h).regions);
	cr_assert_geq(proxy_requests(px, PROTO_OP_REGION_FREE), 3);
	cxlp_close(&h);
}
