/*
 * test_evict.c -- DESIGN contract 9 with real processes: a full pool keeps
 * caching. One handler stores ten times the pool's capacity and every
 * store succeeds; the keys it keeps reading (directly, never through the
 * server) survive in CLOCK order and not in sweep order; a pool filled by
 * a handler that closed or was killed serves the next one at once; pinned
 * keys are never taken, and a pool of nothing but pinned keys answers
 * CXLP_E_NOSPACE until the pins go; with eviction off a full pool answers
 * CXLP_E_NOSPACE as before.
 */
#include <stdlib.h>

#include "evfill.h"

TestSuite(evict, .fini = itest_stop, .timeout = 120);

/* direct retrieve of hot keys [0, n): how many are there, intact */
static uint32_t
read_hot(struct cxlp_handler *h, uint32_t n)
{
	uint32_t found = 0;

	for (uint32_t k = 0; k < n; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "hot", k);
		const void *data;
		size_t len;
		uint32_t writer;
		int rc = cxlp_retrieve(h, key, kl, 0, &data, &len);

		cr_assert(rc == 0 || rc == CXLP_E_NOTFOUND, "retrieve: %s",
		    cxlp_strerror(rc));
		if (rc == 0) {
			cr_assert(kv_check(data, len, k, &writer),
			    "bytes of %s are wrong", key);
			found++;
		}
	}
	return found;
}

/* The churn: a hot set of 5% of the capacity, then 10x the capacity in
 * distinct keys, the hot set read between batches. Returns how many hot
 * keys survived. */
static uint32_t
churn(void)
{
	struct cxlp_handler *h = ev_connect(0);
	uint64_t cap = ev_capacity(h);
	uint32_t hot = (uint32_t)(cap / 20), survived;
	struct cxlp_stats st;

	for (uint32_t k = 0; k < hot; k += BATCH) {
		ev_store(h, "hot", k, hot - k < BATCH ? hot - k : BATCH, 0);
	}
	for (uint32_t k = 0; k < 10 * cap; k += BATCH) {
		ev_store(h, "cold", k, BATCH, 0);
		(void)read_hot(h, hot);
	}
	survived = read_hot(h, hot);
	st = kv_stats(h);
	cr_assert_gt(st.evicted_pressure, 8 * cap, "evicted %llu",
	    (unsigned long long)st.evicted_pressure);
	cr_assert_gt(st.pages_reclaimed, 8 * cap);
	/* one round trip per batch of pages, never one per page */
	cr_assert_lt(st.reclaims * 16, st.pages_reclaimed, "%llu reclaims "
	    "for %llu pages", (unsigned long long)st.reclaims,
	    (unsigned long long)st.pages_reclaimed);
	cr_assert_eq(st.pages_unresolved + st.pages_quarantined, 0);
	itest_assert_pool_checks();
	cxlp_close(&h);
	cr_log_info("hot keys surviving: %u of %u", survived, hot);
	return survived * 100 / hot;
}

Test(evict, churn_of_ten_times_the_pool_keeps_the_keys_read_directly)
{
	ev_start("clock", NULL);
	cr_assert_geq(churn(), 95, "the hot set did not survive");
}

Test(evict, churn_that_ignores_reads_loses_the_hot_set)
{
	ev_start("sweep", NULL);
	cr_assert_lt(churn(), 20, "reads were not what kept the hot set");
}

Test(evict, a_pool_filled_by_a_handler_that_closed_serves_the_next)
{
	struct cxlp_handler *a, *b;
	struct cxlp_stats st;

	ev_start("clock", NULL);
	a = ev_connect(0);
	cr_assert_gt(ev_fill(a, "a", 0), 0);
	cxlp_close(&a);
	b = ev_connect(0);
	ev_store(b, "b", 0, BATCH, 0);
	st = kv_stats(b);
	cr_assert_gt(st.evicted_orphan, 0);
	cr_assert_eq(st.evicted_pressure, 0, "the orphans should go first");
	cr_assert_eq(itest_get_check(b, "b", 7), 1);
	itest_assert_pool_checks();
	cxlp_close(&b);
}

/* Capacity that moves: A fills the pool and stays connected, idle (its
 * keeper heartbeats); B connects and stores twice the pool; every store
 * of B succeeds within the store timeout (regions asked back from A,
 * then B's own keys evicted), and then A stores again too. */
Test(evict, a_handler_gets_regions_from_a_live_handler_that_filled_the_pool)
{
	struct cxlp_handler *a, *b;
	struct cxlp_stats sa, sb;
	uint64_t cap;

	ev_start("clock", NULL);
	a = ev_connect(0);
	cr_assert_gt(ev_fill(a, "a", 0), 0);
	cap = ev_capacity(a);
	sa = kv_stats(a);
	b = ev_connect(0);
	cr_assert_eq(kv_stats(b).own_regions, 0);
	for (uint32_t k = 0; k < 2 * cap; k += BATCH) {
		ev_store(b, "b", k, BATCH, 0);
	}
	sb = kv_stats(b);
	cr_assert_gt(sb.own_regions, 1, "B got %llu regions",
	    (unsigned long long)sb.own_regions);
	cr_assert_lt(kv_stats(a).own_regions, sa.own_regions);
	cr_assert_gt(sb.evicted_orphan, 0, "A's regions came back as orphans");
	ev_store(a, "a2", 0, BATCH, 0);
	itest_assert_pool_checks();
	cxlp_close(&b);
	cxlp_close(&a);
}

Test(evict, orphans_are_evicted_in_the_background_down_to_the_mark)
{
	const char *args[] = { "--evict-free", "10", NULL };
	struct cxlp_handler *a, *b;
	struct cxlp_stats st;

	cr_assert_eq(test_server_start(&srv, POOL, args), 0);
	a = ev_connect(0);
	cr_assert_gt(ev_fill(a, "a", 0), 0);
	st = kv_stats(a);
	cr_assert_eq(st.evicted_orphan, 0, "a live handler's keys went");
	cxlp_close(&a);
	b = ev_connect(0); /* its first region empties one orphan */
	for (int i = 0; i < 200; i++) {
		st = kv_stats(b);
		if (st.free_bytes >= st.data_bytes / 10) {
			break;
		}
		usleep(50 * 1000);
	}
	cr_assert_geq(st.free_bytes, st.data_bytes / 10, "free %llu of %llu",
	    (unsigned long long)st.free_bytes,
	    (unsigned long long)st.data_bytes);
	cr_assert_gt(st.orphan_regions, 0, "it evicted past the mark");
	cr_assert_eq(st.evicted_pressure, 0);
	/* what the reaper evicted went to keep free space, and the stats
	 * say so (b's region may have taken an orphan too: cause orphan) */
	cr_assert_gt(st.evicted_watermark, 0, "background evictions counted "
	    "as orphan (%llu)", (unsigned long long)st.evicted_orphan);
	cxlp_close(&b);
}

/* Stores rarely wait on a full pool of live handlers (reclaim.c note 6):
 * once a RECLAIM has answered with pages, the keeper makes the next one
 * before the free list runs dry, so the allocs themselves seldom do. The
 * pause between batches stands for the application's own work. */
Test(evict, on_a_full_pool_the_keeper_refills_before_the_stores_wait)
{
	struct cxlp_handler *h;
	struct cxlp_stats s0, st;
	uint64_t cap, inline_calls;

	ev_start("clock", NULL);
	h = ev_connect(0);
	cap = ev_fill(h, "a", 0);
	ev_store(h, "b", 0, BATCH, 0); /* the first RECLAIM: pages */
	s0 = kv_stats(h);
	for (uint32_t k = BATCH; k < cap; k += BATCH) {
		ev_store(h, "b", k, BATCH, 0);
		usleep(20 * 1000);
	}
	st = kv_stats(h);
	inline_calls = (st.reclaims - st.refills) - (s0.reclaims - s0.refills);
	cr_log_info("refills %llu, allocs that waited for a RECLAIM %llu",
	    (unsigned long long)(st.refills - s0.refills),
	    (unsigned long long)inline_calls);
	cr_assert_geq(st.refills - s0.refills, 10, "the keeper made %llu "
	    "refills", (unsigned long long)(st.refills - s0.refills));
	cr_assert_lt(inline_calls, st.refills - s0.refills, "%llu allocs "
	    "waited for a RECLAIM", (unsigned long long)inline_calls);
	cr_assert_eq(st.evicted_orphan + st.evicted_watermark, 0);
	cr_assert_eq(st.pages_unresolved + st.pages_quarantined, 0);
	itest_assert_pool_checks();
	cxlp_close(&h);
}

Test(evict, a_pool_filled_by_a_handler_that_was_killed_serves_the_next)
{
	struct test_child c;
	struct cxlp_handler *b;
	struct cxlp_stats st;
	char f = 0;

	ev_start("clock", NULL);
	itest_spawn(&c, "fill-and-wait", "-");
	itest_go(&c);
	cr_assert(test_child_read(&c, &f, 1) && f == 'f', "the filler did "
	    "not report");
	kill(c.pid, SIGKILL);
	cr_assert_eq(itest_wait(&c), 128 + SIGKILL);
	b = ev_connect(0);
	ev_store(b, "b", 0, BATCH, 0);
	st = kv_stats(b);
	cr_assert_gt(st.evicted_orphan, 0);
	itest_assert_pool_checks();
	cxlp_close(&b);
}

Test(evict, pinned_keys_are_never_evicted_and_a_pool_of_them_is_full)
{
	struct cxlp_handler *h;
	cxlp_page_t pg;
	void *buf;
	uint64_t n;

	ev_start("clock", NULL);
	h = ev_connect(0);
	n = ev_fill(h, "pin", CXLP_STORE_PIN);
	cr_assert_rc(cxlp_alloc(h, &pg, &buf), CXLP_E_NOSPACE);
	cr_assert(strstr(cxlp_errormsg(), "evict") != NULL ||
	    strstr(cxlp_errormsg(), "pinned") != NULL, "message: %s",
	    cxlp_errormsg());
	for (uint32_t k = 0; k < n; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "pin", k);

		cr_assert_rc(cxlp_exists(h, key, kl), 1, "pinned %s went",
		    key);
	}
	for (uint32_t k = 0; k < 10; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "pin", k);

		cr_assert_rc(cxlp_unpin(h, key, kl), 0);
	}
	/* the ten unpinned keys are the only victims there are */
	ev_store(h, "new", 0, 10, 0);
	for (uint32_t k = 0; k < n; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "pin", k);

		cr_assert_rc(cxlp_exists(h, key, kl), k >= 10, "%s", key);
	}
	itest_assert_pool_checks();
	cxlp_close(&h);
}

Test(evict, with_eviction_off_a_full_pool_answers_nospace)
{
	const char *args[] = { "--evict", "off", NULL };
	struct cxlp_handler *h;
	cxlp_page_t pg;
	void *buf;

	cr_assert_eq(test_server_start(&srv, 64 * MiB, args), 0);
	h = ev_connect(0);
	(void)ev_fill(h, "x", 0);
	cr_assert_rc(cxlp_alloc(h, &pg, &buf), CXLP_E_NOSPACE);
	cr_assert_eq(kv_stats(h).evicted_pressure, 0);
	cxlp_close(&h);
}

/* --evict off, and a pool its handler filled and left: the next handler
 * connects (without a region) and gets none, until the operator restarts
 * the metaserver with --drain-orphans; nothing is reformatted. */
Test(evict, drain_orphans_empties_a_pool_left_full_with_eviction_off)
{
	const char *off[] = { "--evict", "off", NULL };
	const char *drain[] = { "--evict", "off", "--drain-orphans", NULL };
	struct cxlp_handler *a, *b;
	cxlp_page_t pg;
	void *buf;

	cr_assert_eq(test_server_start(&srv, 64 * MiB, off), 0);
	a = ev_connect(0);
	(void)ev_fill(a, "x", 0);
	cxlp_close(&a); /* its keys stay, orphaned */
	b = ev_connect(0);
	cr_assert_rc(cxlp_alloc(b, &pg, &buf), CXLP_E_NOSPACE);
	cr_assert_eq(itest_get_check(b, "x", 3), 1, "the orphans are read");
	cxlp_close(&b);
	test_server_kill(&srv, SIGTERM);
	cr_assert_eq(test_server_restart(&srv, drain), 0);
	b = ev_connect(0);
	cr_assert_rc(cxlp_alloc(b, &pg, &buf), 0);
	cr_assert_gt(kv_stats(b).evicted_orphan, 0);
	cr_assert_eq(kv_stats(b).keys, 0, "an orphaned key stayed");
	cxlp_close(&b);
}
