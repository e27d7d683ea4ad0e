/*
 * test_lease.c -- pool/lease.c: a lease holds its key out of eviction
 * until its time, renewal moves the time, release and a session's end
 * drop it, expiry counts, the table grows past its first size, and the
 * durable horizon covers every lease granted (and survives a reopen).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "pool.h"
#include "pool_int.h"
#include "pool_test.h"

#define PAGES 64

static char path[128];
static struct pool *p;
static uint64_t sess;
static uint64_t slot_of[PAGES];

static void
setup(void)
{
	struct pool_region reg;

	p = test_pool_keys(path, sizeof(path), &sess, &reg, slot_of, PAGES);
}

static void
teardown(void)
{
	pool_close(&p);
	unlink(path);
}

TestSuite(lease, .init = setup, .fini = teardown);

static uint64_t
keys(void)
{
	struct pool_stats st;

	pool_stats(p, &st);
	return st.keys;
}

Test(lease, a_leased_key_is_no_victim_until_its_time)
{
	struct evict_ops ops = { .now_ms = 1000 };

	cr_assert_eq(pool_lease_set(p, sess, slot_of[0], 2000, 5), 0);
	cr_assert(pool_leased(p, slot_of[0], 1999));
	cr_assert(!pool_leased(p, slot_of[0], 2000));
	cr_assert(!pool_leased(p, slot_of[1], 1000));
	cr_assert_eq(pool_evict_clock(p, PAGES, POOL_EVICT_PRESSURE, &ops),
	    PAGES - 1);
	cr_assert_eq(keys(), 1);
	ops.now_ms = 2000; /* its time came */
	cr_assert_eq(pool_evict_clock(p, PAGES, POOL_EVICT_PRESSURE, &ops), 1);
	cr_assert_eq(keys(), 0);
}

Test(lease, renewal_moves_the_time_and_release_ends_it)
{
	uint64_t active, expired;

	cr_assert_eq(pool_lease_set(p, sess, slot_of[2], 100, 0), 0);
	cr_assert_eq(pool_lease_set(p, sess, slot_of[2], 500, 0), 0);
	cr_assert(pool_leased(p, slot_of[2], 400));
	pool_lease_stats(p, &active, &expired);
	cr_assert_eq(active, 1, "a renewal is not a second lease");
	cr_assert_eq(pool_lease_set(p, sess, slot_of[2], 0, 0), 0);
	cr_assert(!pool_leased(p, slot_of[2], 0));
	cr_assert_eq(pool_lease_set(p, sess, slot_of[2], 0, 0),
	    CXLP_E_NOTPINNED);
	cr_assert_eq(pool_lease_set(p, sess + 1, slot_of[3], 100, 0), 0);
	cr_assert_eq(pool_lease_set(p, sess, slot_of[3], 0, 0),
	    CXLP_E_NOTPINNED, "another session's lease is not mine");
}

Test(lease, expiry_and_a_sessions_end_drop_leases)
{
	uint64_t active, expired;

	for (int i = 0; i < PAGES; i++) {
		cr_assert_eq(pool_lease_set(p, 1 + (uint64_t)(i % 2),
		    slot_of[i], i < 10 ? 50 : 5000, 0), 0);
	}
	cr_assert_eq(pool_lease_expire(p, 100), 10);
	pool_lease_stats(p, &active, &expired);
	cr_assert_eq(active, PAGES - 10);
	cr_assert_eq(expired, 10);
	cr_assert_eq(pool_lease_release_session(p, 1), (PAGES - 10) / 2);
	for (int i = 10; i < PAGES; i++) {
		cr_assert_eq(pool_leased(p, slot_of[i], 100), i % 2 == 1,
		    "key %d", i);
	}
}

Test(lease, the_table_grows_and_keeps_every_lease)
{
	/* 64 keys x 40 sessions: past the first 256 entries, rehashed */
	for (uint64_t s = 1; s <= 40; s++) {
		for (int i = 0; i < PAGES; i++) {
			cr_assert_eq(pool_lease_set(p, s, slot_of[i],
			    1000 + s, 0), 0);
		}
	}
	for (uint64_t s = 1; s <= 40; s++) {
		cr_assert_eq(pool_lease_release_session(p, s), PAGES);
		for (int i = 0; i < PAGES; i++) {
			cr_assert_eq(pool_leased(p, slot_of[i], 0), s < 40);
		}
	}
}

Test(lease, the_durable_horizon_covers_every_lease_and_survives)
{
	cr_assert_eq(pool_lease_horizon_ns(p), 0);
	cr_assert_eq(pool_lease_set(p, sess, slot_of[0], 10, 5000000000ull), 0);
	cr_assert_geq(pool_lease_horizon_ns(p), 5000000000ull);
	cr_assert_eq(pool_lease_set(p, sess, slot_of[1], 10, 4000000000ull), 0);
	cr_assert_geq(pool_lease_horizon_ns(p), 5000000000ull, "lowered");
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0, "%s", cxlp_errormsg());
	cr_assert_geq(pool_lease_horizon_ns(p), 5000000000ull);
	cr_assert(!pool_leased(p, slot_of[0], 0), "entries are DRAM");
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(lease, the_table_is_bounded_and_refuses_past_it)
{
	uint64_t limit = p->ev.nslots * POOL_LEASES_PER_SLOT, n = 0;
	int rc = 0;

	/* every key leased by ever more sessions: refused past the bound */
	for (uint64_t s = 1; rc == 0 && n <= limit; s++) {
		for (int i = 0; i < PAGES && rc == 0; i++) {
			rc = pool_lease_set(p, s, slot_of[i], 1000, 0);
			n += rc == 0;
		}
	}
	cr_assert_eq(rc, CXLP_E_NOSPACE);
	cr_assert_leq(n, limit);
	cr_assert_geq(n, limit / 2, "refused at %llu of %llu",
	    (unsigned long long)n, (unsigned long long)limit);
	cr_assert(pool_leased(p, slot_of[0], 0), "a lease was lost");
}
