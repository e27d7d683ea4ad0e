/*
 * test_race.c -- the register race (DESIGN contract 2 and 3): several
 * processes batch_store the same keys, each with its own bytes. Every call
 * must report true for every key; each key must be registered exactly once
 * and read back one writer's bytes intact; every loser's page must be free
 * again, as the handlers' and the pool's page counts show.
 */
#include <stdlib.h>

#include "itest.h"

#define NPROC 4
#define NKEYS 1000
#define BATCH 100

TestSuite(race, .init = itest_start, .fini = itest_stop, .timeout = 120);

struct race_result {
	uint32_t wins;       /* pages this writer kept registered */
	uint32_t false_keys; /* keys reported false */
	uint64_t pages_total, pages_free, pages_allocated, pages_registered;
};

/* Store keys in a writer-specific order, in batches, so that batches of
 * different writers interleave key by key. */
static void
key_order(uint32_t *order, uint32_t writer)
{
	for (uint32_t i = 0; i < NKEYS; i++) {
		order[i] = i;
	}
	srand(writer * 7919u + 1);
	for (uint32_t i = NKEYS - 1; i > 0; i--) {
		uint32_t j = (uint32_t)rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

static int
store_batch(struct cxlp_handler *h, const uint32_t *ids, uint32_t writer,
    struct race_result *r)
{
	char keys[BATCH][32];
	const void *kp[BATCH];
	size_t kl[BATCH], lens[BATCH];
	cxlp_page_t pages[BATCH];
	bool ok[BATCH];
	void *buf;

	for (int i = 0; i < BATCH; i++) {
		kl[i] = kv_key(keys[i], sizeof(keys[i]), "race", ids[i]);
		kp[i] = keys[i];
		lens[i] = 1024 + ids[i] % 3000;
		if (cxlp_alloc(h, &pages[i], &buf) != 0) {
			return 10;
		}
		kv_fill(buf, lens[i], writer, ids[i]);
	}
	if (cxlp_batch_store(h, BATCH, kp, kl, pages, lens, 0, ok) != 0) {
		return 11;
	}
	for (int i = 0; i < BATCH; i++) {
		r->false_keys += !ok[i];
	}
	return 0;
}

static int
racer(void *arg, int out_fd)
{
	uint32_t writer = (uint32_t)(uintptr_t)arg;
	uint32_t order[NKEYS];
	struct race_result r = { 0 };
	struct cxlp_handler *h = kv_connect(srv.url, 4096, 8 * MiB, true);
	struct cxlp_stats st;
	int rc;

	if (h == NULL) {
		return 100;
	}
	key_order(order, writer);
	for (int b = 0; b < NKEYS / BATCH; b++) {
		if ((rc = store_batch(h, order + b * BATCH, writer, &r)) != 0) {
			return rc;
		}
	}
	st = kv_stats(h);
	r.wins = (uint32_t)st.pages_registered;
	r.pages_total = st.pages_total;
	r.pages_free = st.pages_free;
	r.pages_allocated = st.pages_allocated;
	r.pages_registered = st.pages_registered;
	if (write(out_fd, &r, sizeof(r)) != sizeof(r)) {
		return 12;
	}
	cxlp_close(&h); /* keys stay: the regions become orphans */
	return 0;
}

/* Every key is present exactly once with one writer's intact bytes; count
 * whose bytes each key holds. */
static void
check_keys(struct cxlp_handler *h, uint32_t *held_by)
{
	for (uint32_t i = 0; i < NKEYS; i++) {
		uint32_t w = itest_get_check(h, "race", i);

		cr_assert_lt(w, NPROC, "key %u holds unknown writer %u", i, w);
		held_by[w]++;
	}
}

Test(race, concurrent_batch_stores_register_each_key_once_and_free_losers)
{
	struct itest_child c[NPROC];
	struct race_result r[NPROC];
	uint32_t held_by[NPROC] = { 0 }, total_wins = 0;
	struct cxlp_handler *h;
	struct cxlp_stats st;

	for (uintptr_t w = 0; w < NPROC; w++) {
		itest_spawn(&c[w], racer, (void *)w);
	}
	for (int w = 0; w < NPROC; w++) {
		itest_go(&c[w]);
	}
	for (int w = 0; w < NPROC; w++) {
		cr_assert(itest_read(&c[w], &r[w], sizeof(r[w])),
		    "writer %d died", w);
		cr_assert_eq(itest_wait(&c[w]), 0, "writer %d failed", w);
		cr_assert_eq(r[w].false_keys, 0, "writer %d: false keys", w);
		cr_assert_eq(r[w].pages_allocated, 0, "writer %d kept pages", w);
		cr_assert_eq(r[w].pages_free + r[w].pages_registered,
		    r[w].pages_total, "writer %d: loser pages not freed", w);
		total_wins += r[w].wins;
	}
	cr_assert_eq(total_wins, NKEYS, "keys registered %u times", total_wins);

	h = itest_connect();
	check_keys(h, held_by);
	for (int w = 0; w < NPROC; w++) {
		cr_assert_eq(held_by[w], r[w].wins,
		    "writer %d: pool holds %u of its pages, handler kept %u",
		    w, held_by[w], r[w].wins);
	}
	st = kv_stats(h);
	cr_assert_eq(st.keys, NKEYS);
	cxlp_close(&h);
}

/* After the race, deleting every key returns all writers' regions to the
 * pool: nothing a loser freed is still held anywhere. */
Test(race, deleting_all_raced_keys_returns_every_region)
{
	struct itest_child c[NPROC];
	struct race_result r[NPROC];
	struct cxlp_handler *h;
	struct cxlp_stats before, after;

	for (uintptr_t w = 0; w < NPROC; w++) {
		itest_spawn(&c[w], racer, (void *)w);
	}
	h = itest_connect();
	before = kv_stats(h);
	for (int w = 0; w < NPROC; w++) {
		itest_go(&c[w]);
	}
	for (int w = 0; w < NPROC; w++) {
		cr_assert(itest_read(&c[w], &r[w], sizeof(r[w])));
		cr_assert_eq(itest_wait(&c[w]), 0);
	}
	for (uint32_t i = 0; i < NKEYS; i++) {
		char k[32];
		size_t kl = kv_key(k, sizeof(k), "race", i);

		cr_assert_rc(cxlp_delete(h, k, kl), 0);
	}
	after = kv_stats(h);
	cr_assert_eq(after.keys, 0);
	cr_assert_eq(after.orphan_regions, 0, "orphan regions left");
	cr_assert_eq(after.free_bytes, before.free_bytes,
	    "free bytes %llu, were %llu", (unsigned long long)after.free_bytes,
	    (unsigned long long)before.free_bytes);
	cxlp_close(&h);
}
