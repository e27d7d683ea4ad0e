/*
 * test_death.c -- DESIGN contracts 5 and 6 with real processes killed by
 * SIGKILL at bad moments: in the middle of a batch_store loop, and while
 * holding pins and pages it allocated but never registered.
 *
 * After each death the test waits for the metaserver to end the session,
 * then checks what must hold: the pool passes `pool-inspect check` (run on
 * the live pool file, which it opens read-only), no pin is left, every key
 * the dead handler had acknowledged is there with its bytes, any handler
 * may delete those keys, and once they are deleted the dead handler's
 * regions are back in the free pool (free bytes return to where they
 * started).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "itest.h"
#include "worker.h"

TestSuite(death, .init = itest_start, .fini = itest_stop, .timeout = 120);

/* Wait until the server counts `want` live sessions. */
static struct cxlp_stats
wait_sessions(struct cxlp_handler *h, uint64_t want)
{
	struct cxlp_stats st = kv_stats(h);

	for (int i = 0; i < 1000 && st.sessions != want; i++) {
		usleep(10000);
		st = kv_stats(h);
	}
	cr_assert_eq(st.sessions, want, "the dead handler's session was not "
	    "ended (%llu live)", (unsigned long long)st.sessions);
	return st;
}

/* Every key prefix-0 .. n-1 is there, written by DEATH_WRITER. */
static void
assert_keys_intact(struct cxlp_handler *h, const char *prefix, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		char k[64];
		size_t kl = kv_key(k, sizeof(k), prefix, i);
		const void *d = NULL;
		size_t len = 0;
		uint32_t w = 0;

		cr_assert_rc(cxlp_retrieve(h, k, kl, 0, &d, &len), 0,
		    "acknowledged key %s is missing", k);
		cr_assert(kv_check(d, len, i, &w) && w == DEATH_WRITER,
		    "bytes of %s are wrong", k);
	}
}

/* Delete prefix-0 .. n-1 from h; each is deleted or was never there.
 * Returns how many were deleted. */
static uint32_t
delete_prefix(struct cxlp_handler *h, const char *prefix, uint32_t n)
{
	uint32_t deleted = 0;

	for (uint32_t i = 0; i < n; i++) {
		char k[64];
		size_t kl = kv_key(k, sizeof(k), prefix, i);
		int rc = cxlp_delete(h, k, kl);

		cr_assert(rc == 0 || rc == CXLP_E_NOTFOUND, "delete %s: %s "
		    "(%s)", k, cxlp_strerror(rc), cxlp_errormsg());
		deleted += rc == 0;
	}
	return deleted;
}

/* The pool is back where it was before the dead handler came. */
static void
assert_back_to(struct cxlp_handler *h, const struct cxlp_stats *st0)
{
	struct cxlp_stats st = kv_stats(h);

	cr_assert_eq(st.pins, 0, "pins left: %llu",
	    (unsigned long long)st.pins);
	cr_assert_eq(st.keys, st0->keys);
	cr_assert_eq(st.orphan_regions, 0, "orphan regions left");
	cr_assert_eq(st.regions, st0->regions, "regions left: %llu, want "
	    "%llu", (unsigned long long)st.regions,
	    (unsigned long long)st0->regions);
	cr_assert_eq(st.free_bytes, st0->free_bytes, "free bytes %llu, "
	    "want %llu: the dead handler's regions leaked",
	    (unsigned long long)st.free_bytes,
	    (unsigned long long)st0->free_bytes);
}

/* Run one store-loop child, let it acknowledge at least min_acks keys,
 * then SIGKILL it after a further delay of up to max_us. Returns the
 * count it had acknowledged. */
static uint32_t
kill_mid_batch(const char *prefix, uint32_t min_acks, unsigned max_us)
{
	struct test_child c;
	uint32_t acked = 0, a;

	itest_spawn(&c, "store-loop", prefix);
	itest_go(&c);
	while (acked < min_acks) {
		cr_assert(test_child_read(&c, &a, sizeof(a)), "store-loop died "
		    "early");
		acked = a;
	}
	usleep((useconds_t)(max_us > 0 ? (unsigned)rand() % max_us : 0));
	kill(c.pid, SIGKILL);
	/* acknowledgements written before the kill still count */
	while (test_child_read(&c, &a, sizeof(a))) {
		acked = a;
	}
	cr_assert_eq(itest_wait(&c), 128 + SIGKILL);
	return acked;
}

Test(death, handler_killed_mid_batch_leaves_a_clean_pool)
{
	struct cxlp_handler *h = itest_connect();
	struct cxlp_stats st0 = kv_stats(h);

	srand((unsigned)time(NULL));
	for (uint32_t round = 0; round < 4; round++) {
		char prefix[16];
		uint32_t acked, deleted;
		struct cxlp_stats st;

		snprintf(prefix, sizeof(prefix), "mid%u", round);
		/* round 0 dies in its first batches, later ones after
		 * growing into several regions */
		acked = kill_mid_batch(prefix, 1 + round * 400, 20000);
		st = wait_sessions(h, 1);
		cr_assert_eq(st.pins, 0);
		itest_assert_pool_checks();
		assert_keys_intact(h, prefix, acked);
		deleted = delete_prefix(h, prefix, acked + 2 * LOOP_BATCH);
		cr_assert_geq(deleted, acked);
		cr_assert_leq(deleted, acked + LOOP_BATCH, "more keys than "
		    "one batch in flight");
		assert_back_to(h, &st0);
		itest_assert_pool_checks();
	}
	cxlp_close(&h);
}

Test(death, killed_holder_releases_pins_and_unregistered_pages)
{
	struct cxlp_handler *h = itest_connect();
	struct cxlp_stats st0, st;
	struct hold_report r;
	struct test_child c;

	itest_put(h, "mine", 1, 1, 64);
	st0 = kv_stats(h);
	itest_spawn(&c, "hold", "held:mine-1");
	itest_go(&c);
	cr_assert(test_child_read(&c, &r, sizeof(r)), "holder failed (exit %d)",
	    itest_wait(&c));
	st = kv_stats(h);
	cr_assert_eq(st.pins, r.pins);
	cr_assert_eq(r.regions, 2);
	cr_assert_eq(st.regions, st0.regions + 2);
	cr_assert_rc(cxlp_delete(h, "mine-1", 6), CXLP_E_PINNED);
	cr_assert_rc(cxlp_delete(h, "held-0", 6), CXLP_E_PINNED);

	kill(c.pid, SIGKILL);
	cr_assert_eq(itest_wait(&c), 128 + SIGKILL);
	st = wait_sessions(h, 1);
	cr_assert_eq(st.pins, 0, "a dead session's pins were kept");
	/* the region with keys lives on, the one with only unregistered
	 * pages went back to the pool at once */
	cr_assert_eq(st.orphan_regions, 1);
	cr_assert_eq(st.regions, st0.regions + 1,
	    "unregistered pages of a dead handler were not reclaimed");
	itest_assert_pool_checks();
	cr_assert_rc(cxlp_delete(h, "mine-1", 6), 0, "my key stayed pinned");
	assert_keys_intact(h, "held", r.keys);
	cr_assert_eq(delete_prefix(h, "held", r.keys), r.keys,
	    "a dead handler's keys could not be deleted by another");
	st0.keys--; /* mine-1 is gone too */
	assert_back_to(h, &st0);
	itest_assert_pool_checks();
	cxlp_close(&h);
}

Test(death, many_deaths_in_a_row_leak_nothing)
{
	struct cxlp_handler *h = itest_connect();
	struct cxlp_stats st0 = kv_stats(h);
	uint32_t acked[6];
	char prefix[6][16];

	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	/* die one after another without cleaning up in between: orphans
	 * pile up, then all go at once */
	for (int i = 0; i < 6; i++) {
		snprintf(prefix[i], sizeof(prefix[i]), "many%d", i);
		acked[i] = kill_mid_batch(prefix[i], 1 + (uint32_t)i * 50,
		    5000);
	}
	wait_sessions(h, 1);
	itest_assert_pool_checks();
	for (int i = 0; i < 6; i++) {
		assert_keys_intact(h, prefix[i], acked[i]);
		delete_prefix(h, prefix[i], acked[i] + 2 * LOOP_BATCH);
	}
	assert_back_to(h, &st0);
	cxlp_close(&h);
}
