/*
 * test_race.c -- the register race (DESIGN contract 2 and 3): several
 * processes (itest-worker racer) batch_store the same keys, each with its
 * own bytes. Every call must report true for every key; each key must be
 * registered exactly once and read back one writer's bytes intact; every
 * loser's page must be free again, as the handlers' and the pool's page
 * counts show.
 */
#include "itest.h"
#include "worker.h"

#define NPROC 4

TestSuite(race, .init = itest_start, .fini = itest_stop, .timeout = 120);

/* run_race -- start NPROC racers at once and collect their results. */
static void
run_race(struct race_result *r)
{
	struct test_child c[NPROC];
	char arg[16];

	for (int w = 0; w < NPROC; w++) {
		snprintf(arg, sizeof(arg), "%d", w);
		itest_spawn(&c[w], "racer", arg);
	}
	for (int w = 0; w < NPROC; w++) {
		itest_go(&c[w]);
	}
	for (int w = 0; w < NPROC; w++) {
		cr_assert(test_child_read(&c[w], &r[w], sizeof(r[w])),
		    "writer %d died", w);
		cr_assert_eq(itest_wait(&c[w]), 0, "writer %d failed", w);
	}
}

Test(race, concurrent_batch_stores_register_each_key_once_and_free_losers)
{
	struct race_result r[NPROC];
	uint32_t held_by[NPROC] = { 0 };
	uint64_t total_wins = 0;
	struct cxlp_handler *h;

	run_race(r);
	for (int w = 0; w < NPROC; w++) {
		cr_assert_eq(r[w].false_keys, 0, "writer %d: false keys", w);
		cr_assert_eq(r[w].pages_allocated, 0, "writer %d kept pages", w);
		cr_assert_eq(r[w].pages_free + r[w].pages_registered,
		    r[w].pages_total, "writer %d: loser pages not freed", w);
		total_wins += r[w].pages_registered;
	}
	cr_assert_eq(total_wins, RACE_KEYS, "keys registered %llu times",
	    (unsigned long long)total_wins);

	h = itest_connect();
	for (uint32_t i = 0; i < RACE_KEYS; i++) {
		uint32_t w = itest_get_check(h, "race", i);

		cr_assert_lt(w, NPROC, "key %u holds unknown writer %u", i, w);
		held_by[w]++;
	}
	for (int w = 0; w < NPROC; w++) {
		cr_assert_eq(held_by[w], r[w].pages_registered,
		    "writer %d: pool holds %u of its pages, handler kept %llu",
		    w, held_by[w],
		    (unsigned long long)r[w].pages_registered);
	}
	cr_assert_eq(kv_stats(h).keys, RACE_KEYS);
	cxlp_close(&h);
}

/* After the race, deleting every key returns all writers' regions to the
 * pool: no page a loser freed is still held anywhere. */
Test(race, deleting_all_raced_keys_returns_every_region)
{
	struct race_result r[NPROC];
	struct cxlp_handler *h = itest_connect();
	struct cxlp_stats before, after;

	before = kv_stats(h);
	run_race(r);
	for (uint32_t i = 0; i < RACE_KEYS; i++) {
		char k[32];
		size_t kl = kv_key(k, sizeof(k), "race", i);

		cr_assert_rc(cxlp_delete(h, k, kl), 0);
	}
	after = kv_stats(h);
	cr_assert_eq(after.keys, 0);
	cr_assert_eq(after.orphan_regions, 0, "orphan regions left");
	cr_assert_eq(after.regions, before.regions);
	cr_assert_eq(after.free_bytes, before.free_bytes,
	    "free bytes %llu, were %llu", (unsigned long long)after.free_bytes,
	    (unsigned long long)before.free_bytes);
	cxlp_close(&h);
}
