/*
 * test_evict.c -- eviction across hosts (issue 27 section 4, DESIGN
 * contract 9): the metaserver on host A evicts in CLOCK order, a writer
 * on host C stores a hot set and then ten times the pool's capacity in
 * other keys, and a reader on host D reads the hot set (direct reads)
 * between C's batches, in lock step through this process. D's reads are
 * what keep the hot set: its reference bytes must reach the server on
 * A, which no write of C's does. Without D's reads the hot set goes
 * (the second test), so the first one's survival is D's doing.
 */
#include "mhtest.h"

TestSuite(mh_evict, .fini = itest_stop, .timeout = 180);

#define POOL (64 * MiB)

/* C's churn of 10x the capacity, D reading the hot set after each batch
 * if reads; returns the hot keys D finds intact at the end, in % */
static uint32_t
churn(bool reads)
{
	const char *const args[] = { "--evict-order", "clock", NULL };
	struct test_child c, d;
	struct cxlp_handler *h;
	struct mh_hot hot = { 0 };
	struct cxlp_stats st;
	uint64_t cap;
	uint32_t nhot;
	char arg[16];

	mh_start(POOL, args);
	h = itest_connect(); /* this process: host "0", for the stats */
	cap = kv_stats(h).data_bytes / MH_EV_PAGE;
	nhot = (uint32_t)(cap / 20);
	snprintf(arg, sizeof(arg), "%u", nhot);
	mh_spawn(&c, "C", "churn", arg);
	mh_spawn(&d, "D", "hot-reader", arg);
	mh_say(&c, 'g');
	mh_say(&d, 'g');
	mh_hear(&c, 'h');
	for (uint64_t k = 0; k < 10 * cap; k += MH_EV_BATCH) {
		mh_say(&c, 'b');
		mh_hear(&c, 'k');
		if (reads) {
			mh_say(&d, 'r');
			cr_assert(test_child_read(&d, &hot, sizeof(hot)));
			cr_assert_eq(hot.wrong, 0, "D read %u hot keys with "
			    "bytes not C's", hot.wrong);
		}
	}
	mh_say(&d, 'r');
	cr_assert(test_child_read(&d, &hot, sizeof(hot)));
	cr_assert_eq(hot.wrong, 0, "D read %u hot keys with bytes not C's",
	    hot.wrong);
	st = kv_stats(h);
	cr_assert_gt(st.evicted_pressure, 8 * cap, "evicted %llu",
	    (unsigned long long)st.evicted_pressure);
	mh_say(&c, 'q');
	mh_say(&d, 'q');
	mh_wait_ok(&c, "churn on C");
	mh_wait_ok(&d, "hot reader on D");
	itest_assert_pool_checks();
	cxlp_close(&h);
	cr_log_info("hot keys D still finds: %u of %u", hot.found, nhot);
	return hot.found * 100 / nhot;
}

Test(mh_evict, a_readers_hot_keys_on_another_host_survive_the_churn)
{
	uint32_t pct = churn(true);

	cr_assert_geq(pct, 95, "only %u%% of the hot set survived D's reads",
	    pct);
}

Test(mh_evict, without_the_readers_reads_the_hot_set_goes)
{
	uint32_t pct = churn(false);

	cr_assert_lt(pct, 20, "%u%% of the hot set survived without reads: "
	    "reads were not what kept it", pct);
}
