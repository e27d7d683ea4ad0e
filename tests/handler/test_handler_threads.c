/*
 * test_handler_threads.c -- libcxlpool (handler.c, store.c, ops.c,
 * client.c) called from many threads at once against a real
 * cxlpool-metaserver process: a delete racing the store of its key,
 * threads sharing one handler, and threads whose large batches must
 * never mix their requests or replies. The one-thread tests of the same
 * suite are in test_handler.c.
 *
 * Each test starts its own metaserver on a fresh pool and a private ipc
 * socket (tests/support/server.h) and stops it at the end.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxlpool.h"
#include "handler_fixture.h"

#define PAGE (64u << 10)
#define REGION (2u << 20)

static void
setup(void)
{
	hfx_start(PAGE, REGION);
}

TestSuite(handler, .init = setup, .fini = hfx_stop, .timeout = 100);

/* One thread stores keys, another deletes each as soon as it exists, on
 * one handler: a delete often lands after the server registered a key and
 * before its store settled the page. That page must end free, not stay
 * registered with no key (it did: a few pages in 3000 leaked until
 * close). */
#define RACE_KEYS 3000
#define RACE_AHEAD 8 /* keys stored and not yet deleted, at most */

struct race {
	struct cxlp_handler *h;
	int stored, deleted; /* atomic: keys done */
	int errors;          /* atomic */
};

static void *
race_storer(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < RACE_KEYS; i++) {
		char key[32];
		int n = snprintf(key, sizeof(key), "race-%d", i);
		cxlp_page_t pg;
		void *buf;
		bool stored = false;

		while (i - __atomic_load_n(&r->deleted, __ATOMIC_ACQUIRE) >
		    RACE_AHEAD) {
			sched_yield();
		}
		if (cxlp_alloc(r->h, &pg, &buf) != 0 ||
		    cxlp_store(r->h, key, (size_t)n, pg, 64, 0, &stored) != 0 ||
		    !stored) {
			__atomic_add_fetch(&r->errors, 1, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&r->stored, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *
race_deleter(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < RACE_KEYS; i++) {
		char key[32];
		int n = snprintf(key, sizeof(key), "race-%d", i), rc;

		while ((rc = cxlp_delete(r->h, key, (size_t)n)) ==
		    CXLP_E_NOTFOUND) {
			if (__atomic_load_n(&r->stored, __ATOMIC_ACQUIRE) > i) {
				continue; /* stored: this delete must find it */
			}
		}
		if (rc != 0) {
			__atomic_add_fetch(&r->errors, 1, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&r->deleted, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

Test(handler, a_delete_racing_the_store_of_its_key_leaks_no_page)
{
	struct race r = { .h = hfx_connect() };
	struct cxlp_stats st;
	pthread_t s, d;

	cr_assert_eq(pthread_create(&s, NULL, race_storer, &r), 0);
	cr_assert_eq(pthread_create(&d, NULL, race_deleter, &r), 0);
	pthread_join(s, NULL);
	pthread_join(d, NULL);
	cr_assert_eq(r.errors, 0);
	st = hfx_stats_ok(r.h);
	cr_assert_eq(st.keys, 0);
	cr_assert_eq(st.pages_registered, 0, "%llu pages registered with no "
	    "key", (unsigned long long)st.pages_registered);
	cr_assert_eq(st.pages_allocated, 0);
	cr_assert_eq(st.pages_free, st.pages_total);
	cxlp_close(&r.h);
}

struct worker {
	struct cxlp_handler *h;
	int id;
	int fails;
};

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 50; i++) {
		char key[32];
		cxlp_page_t pg;
		void *buf;
		bool stored = false;
		const void *data;
		size_t len;

		snprintf(key, sizeof(key), "w%d-%d", w->id, i);
		if (cxlp_alloc(w->h, &pg, &buf) != 0) {
			w->fails++;
			continue;
		}
		memset(buf, w->id + i, 256);
		if (cxlp_store(w->h, key, strlen(key), pg, 256, 0,
			&stored) != 0 || !stored ||
		    cxlp_retrieve(w->h, key, strlen(key), 0, &data,
			&len) != 0 || len != 256 ||
		    ((const unsigned char *)data)[255] !=
			(unsigned char)(w->id + i)) {
			w->fails++;
		}
	}
	return NULL;
}

Test(handler, many_threads_share_one_handler)
{
	struct cxlp_handler *h = hfx_connect();
	pthread_t th[4];
	struct worker w[4];
	struct cxlp_stats st;

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){.h = h, .id = i};
		cr_assert_eq(pthread_create(&th[i], NULL, worker_main, &w[i]),
		    0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(w[i].fails, 0, "worker %d failed %d times", i,
		    w[i].fails);
	}
	st = hfx_stats_ok(h);
	cr_assert_eq(st.pages_registered, 200);
	cr_assert_eq(st.keys, 200);
	cr_assert_geq(st.own_regions, 7);
	cxlp_close(&h);
}

/* Threads sharing one handler, each storing, reading back, checking and
 * deleting batches of its own keys whose sizes change every round: the
 * batch calls' reusable memory (handler/core/scratch.c) is taken and grown by
 * many threads at once, and a request built in memory another thread also
 * uses would store or read the wrong keys or bytes. */
#define BT_THREADS 12
#define BT_ROUNDS 40
#define BT_MAX 150

struct bthread {
	struct cxlp_handler *h;
	int id;
	char why[160];
};

static size_t
bt_batch_size(int id, int round)
{
	return 20 + (size_t)(id * 37 + round * 53) % (BT_MAX - 19);
}

/* store n pages stamped (id, round, i); 0 or -1 with why */
static int
bt_store(struct bthread *t, int round, size_t n, const void **kp,
    const size_t *kl)
{
	cxlp_page_t pg[BT_MAX];
	size_t lens[BT_MAX];
	bool stored[BT_MAX];

	for (size_t i = 0; i < n; i++) {
		uint32_t stamp[3] = {(uint32_t)t->id, (uint32_t)round,
			(uint32_t)i};
		void *buf;

		if (cxlp_alloc(t->h, &pg[i], &buf) != 0) {
			snprintf(t->why, sizeof(t->why), "alloc: %s",
			    cxlp_errormsg());
			return -1;
		}
		memcpy(buf, stamp, sizeof(stamp));
		lens[i] = sizeof(stamp) + i;
	}
	if (cxlp_batch_store(t->h, n, kp, kl, pg, lens, 0, stored) != 0) {
		snprintf(t->why, sizeof(t->why), "store: %s", cxlp_errormsg());
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (!stored[i]) {
			snprintf(t->why, sizeof(t->why), "key %zu not stored",
			    i);
			return -1;
		}
	}
	return 0;
}

/* read every key back and check its stamp and length */
static int
bt_check(struct bthread *t, int round, size_t n, const void **kp,
    const size_t *kl)
{
	const void *data[BT_MAX];
	size_t lens[BT_MAX];
	int st[BT_MAX];
	bool ex[BT_MAX];

	if (cxlp_batch_retrieve(t->h, n, kp, kl, 0, data, lens, st) != 0 ||
	    cxlp_batch_exists(t->h, n, kp, kl, ex) != 0) {
		snprintf(t->why, sizeof(t->why), "read: %s", cxlp_errormsg());
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t want[3] = {(uint32_t)t->id, (uint32_t)round,
			(uint32_t)i};

		if (st[i] != 0 || !ex[i] || lens[i] != sizeof(want) + i ||
		    memcmp(data[i], want, sizeof(want)) != 0) {
			snprintf(t->why, sizeof(t->why), "round %d key %zu: "
			    "status %d, exists %d, %zu bytes, wrong stamp %d",
			    round, i, st[i], ex[i], lens[i], st[i] == 0 &&
			    memcmp(data[i], want, sizeof(want)) != 0);
			return -1;
		}
	}
	return 0;
}

static void *
bt_main(void *arg)
{
	struct bthread *t = arg;
	char keys[BT_MAX][40];
	const void *kp[BT_MAX];
	size_t kl[BT_MAX];
	int st[BT_MAX];

	for (int round = 0; round < BT_ROUNDS; round++) {
		size_t n = bt_batch_size(t->id, round);

		for (size_t i = 0; i < n; i++) {
			kl[i] = (size_t)snprintf(keys[i], sizeof(keys[i]),
			    "bt-%d-%d-%zu-%.*s", t->id, round, i,
			    (int)(i % 17), "padding-padding-p");
			kp[i] = keys[i];
		}
		if (bt_store(t, round, n, kp, kl) != 0 ||
		    bt_check(t, round, n, kp, kl) != 0) {
			return t;
		}
		if (cxlp_batch_delete(t->h, n, kp, kl, st) != 0) {
			snprintf(t->why, sizeof(t->why), "delete: %s",
			    cxlp_errormsg());
			return t;
		}
		for (size_t i = 0; i < n; i++) {
			if (st[i] != 0) {
				snprintf(t->why, sizeof(t->why), "delete key "
				    "%zu: %d", i, st[i]);
				return t;
			}
		}
	}
	return NULL;
}

Test(handler, threads_with_large_batches_never_mix_their_requests)
{
	struct cxlp_handler *h[2];
	struct bthread t[BT_THREADS];
	pthread_t th[BT_THREADS];
	struct cxlp_stats st;

	h[0] = hfx_connect(); /* direct reads */
	cr_assert_eq(cxlp_config_set_direct_reads(cfg, false), 0);
	h[1] = hfx_connect(); /* every lookup through the server */
	for (int i = 0; i < BT_THREADS; i++) {
		t[i] = (struct bthread){.h = h[i % 2], .id = i};
		cr_assert_eq(pthread_create(&th[i], NULL, bt_main, &t[i]), 0);
	}
	for (int i = 0; i < BT_THREADS; i++) {
		void *rv;

		pthread_join(th[i], &rv);
		cr_expect_null(rv, "thread %d: %s", i, t[i].why);
	}
	for (int k = 0; k < 2; k++) {
		st = hfx_stats_ok(h[k]);
		cr_assert_eq(st.pages_registered, 0);
		cr_assert_eq(st.pages_allocated, 0);
		cxlp_close(&h[k]);
	}
	st = (struct cxlp_stats){0};
	h[0] = hfx_connect();
	st = hfx_stats_ok(h[0]);
	cr_assert_eq(st.keys, 0, "%llu keys left", (unsigned long long)st.keys);
	cxlp_close(&h[0]);
}
