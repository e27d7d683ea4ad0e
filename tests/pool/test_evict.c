/*
 * test_evict.c -- pool/evict.c: the CLOCK gives referenced keys a second
 * chance and takes the cold ones, never a pinned key nor one the caller's
 * filter refuses, and a writer of every access byte cannot stop it; a region's keys go together and an orphan region left
 * empty is freed; the region lists survive a reopen and pool_check
 * catches a broken one; the access bytes are in the pool's mapping.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "layout.h"
#include "pool.h"
#include "pool_int.h"
#include "pool_test.h"

#define PAGES 64

static char path[128];
static struct pool *p;
static uint64_t sess;
static struct pool_region reg;
static uint64_t slot_of[PAGES];

static void
keyname(char *k, size_t n, int i)
{
	snprintf(k, n, "key-%03d", i);
}

static void
setup(void)
{
	p = test_pool_keys(path, sizeof(path), &sess, &reg, slot_of, PAGES);
}

static void
teardown(void)
{
	pool_close(&p);
	unlink(path);
}

TestSuite(evict, .init = setup, .fini = teardown);

static bool
present(int i)
{
	struct pool_kv kv;
	char k[16];

	keyname(k, sizeof(k), i);
	return pool_kv_lookup(p, k, strlen(k), &kv) == 0;
}

struct seen {
	int n;
	uint64_t bytes;
};

static void
count_gone(void *arg, const struct pool_kv *kv)
{
	struct seen *s = arg;

	s->n++;
	s->bytes += kv->len;
	/* the removal is durable and visible before we are told */
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(evict, clock_takes_cold_keys_and_spares_referenced_ones)
{
	struct seen s = { 0 };
	struct evict_ops ops = { .gone = count_gone, .arg = &s };
	struct pool_evict_stats st;

	for (int i = 0; i < PAGES; i += 2) {
		pool_access_touch(p, slot_of[i]); /* the even keys are hot */
	}
	cr_assert_eq(pool_evict_clock(p, PAGES / 2, POOL_EVICT_PRESSURE,
	    &ops), PAGES / 2);
	cr_assert_eq(s.n, PAGES / 2);
	cr_assert_eq(s.bytes, 100ull * PAGES / 2);
	for (int i = 0; i < PAGES; i++) {
		cr_assert_eq(present(i), i % 2 == 0, "key %d", i);
	}
	pool_evict_stats(p, &st);
	cr_assert_eq(st.keys[POOL_EVICT_PRESSURE], PAGES / 2);
	cr_assert_eq(st.bytes[POOL_EVICT_PRESSURE], 100ull * PAGES / 2);
	cr_assert(st.access_shared);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(evict, a_second_chance_is_one_round_only)
{
	int left = 0;

	for (int i = 0; i < PAGES; i++) {
		pool_access_touch(p, slot_of[i]);
	}
	/* every key referenced: one sweep clears them, the next takes */
	cr_assert_eq(pool_evict_clock(p, 5, POOL_EVICT_PRESSURE, NULL), 5);
	for (int i = 0; i < PAGES; i++) {
		left += present(i);
	}
	cr_assert_eq(left, PAGES - 5);
}

Test(evict, ignoring_the_access_bytes_takes_keys_in_index_order)
{
	int kept = 0;

	for (int i = 0; i < PAGES; i += 2) {
		pool_access_touch(p, slot_of[i]);
	}
	pool_evict_set_order(p, false);
	cr_assert_eq(pool_evict_clock(p, PAGES / 2, POOL_EVICT_PRESSURE,
	    NULL), PAGES / 2);
	for (int i = 0; i < PAGES; i += 2) {
		kept += present(i);
	}
	cr_assert_lt(kept, PAGES / 2, "the hot keys all survived anyway");
}

/* A writer of the access area that sets every byte between any two steps
 * of the hand (issue 25 item 3: a handler doing so in a loop): asked
 * about each key before its byte is looked at, it sets them all again. */
static bool
set_every_byte(void *arg, const struct pool_kv *kv)
{
	(void)arg;
	(void)kv;
	memset(p->ev.access, 1, p->ev.nslots);
	return true;
}

Test(evict, a_writer_setting_every_access_byte_cannot_stop_eviction)
{
	struct seen s = { 0 };
	struct evict_ops ops = { .may = set_every_byte, .gone = count_gone,
		.arg = &s };
	struct pool_evict_stats st;
	int left = 0;

	/* every key evictable: each call takes what it asks for */
	for (int round = 0; round < 4; round++) {
		cr_assert_eq(pool_evict_clock(p, 5, POOL_EVICT_PRESSURE, &ops),
		    5, "round %d: a full pool with evictable keys gave up",
		    round);
	}
	for (int i = 0; i < PAGES; i++) {
		left += present(i);
	}
	cr_assert_eq(left, PAGES - 20);
	pool_evict_stats(p, &st);
	cr_assert_eq(st.forced, 20);
	cr_assert_eq(st.keys[POOL_EVICT_PRESSURE], 20);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

static bool
odd_only(void *arg, const struct pool_kv *kv)
{
	(void)arg;
	for (int i = 0; i < PAGES; i++) {
		if (slot_of[i] == kv->slot) {
			return i % 2 == 1;
		}
	}
	return false;
}

Test(evict, pinned_and_refused_keys_are_never_victims)
{
	struct evict_ops ops = { .may = odd_only };
	bool applied;

	cr_assert_eq(pool_pin_change(p, sess, slot_of[1], 1, 0, 0, &applied),
	    0);
	/* asks for everything: gets the odd keys but the pinned one */
	cr_assert_eq(pool_evict_clock(p, PAGES, POOL_EVICT_PRESSURE, &ops),
	    PAGES / 2 - 1);
	for (int i = 0; i < PAGES; i++) {
		cr_assert_eq(present(i), i % 2 == 0 || i == 1, "key %d", i);
	}
	/* nothing left to take: three sweeps, then it gives up */
	cr_assert_eq(pool_evict_clock(p, 1, POOL_EVICT_PRESSURE, &ops), 0);
	cr_assert_eq(pool_evict_region(p, reg.id, POOL_EVICT_ORPHAN, &ops), 0);
	cr_assert_eq(pool_pin_change(p, sess, slot_of[1], -1, 0, 0, &applied),
	    0);
	cr_assert_eq(pool_evict_clock(p, 1, POOL_EVICT_PRESSURE, &ops), 1);
	cr_assert(!present(1));
}

Test(evict, an_emptied_orphan_region_is_freed)
{
	struct pool_stats before, after;
	struct pool_region r;

	pool_stats(p, &before);
	cr_assert_eq(pool_region_disown(p, reg.id), 0);
	cr_assert_eq(pool_region_get(p, reg.id, &r), 0);
	cr_assert_eq(r.state, POOL_REGION_ORPHAN);
	cr_assert_eq(pool_evict_region(p, reg.id, POOL_EVICT_ORPHAN, NULL),
	    PAGES);
	cr_assert_eq(pool_region_get(p, reg.id, &r), CXLP_E_NOTFOUND);
	pool_stats(p, &after);
	cr_assert_eq(after.keys, 0);
	cr_assert_eq(after.free_bytes, before.free_bytes + reg.len);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	/* as pool-inspect finds it: a read-only open beside the server */
	{
		struct pool *ro;

		cr_assert_eq(pool_open(&ro, path, POOL_RDONLY, NULL), 0);
		cr_assert_eq(pool_check(ro, NULL, NULL), 0);
		pool_close(&ro);
	}
}

Test(evict, region_lists_are_rebuilt_at_open)
{
	cr_assert_eq(pool_evict_clock(p, 10, POOL_EVICT_PRESSURE, NULL), 10);
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0, "%s", cxlp_errormsg());
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	cr_assert_eq(pool_evict_region(p, reg.id, POOL_EVICT_PRESSURE, NULL),
	    PAGES - 10);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

static void
note(void *arg, const char *problem)
{
	*(int *)arg += strstr(problem, "eviction list") != NULL;
}

Test(evict, check_reports_a_broken_region_list)
{
	int listed = 0;

	p->ev.head[reg.id] = p->ev.next[p->ev.head[reg.id]]; /* drop one */
	cr_assert_gt(pool_check(p, note, &listed), 0);
	cr_assert_eq(listed, 1);
}

Test(evict, access_bytes_live_in_the_mapping)
{
	const uint8_t *a = (const uint8_t *)p->base + p->sb->access.off;

	cr_assert_eq(a[slot_of[3]], 0);
	pool_access_touch(p, slot_of[3]);
	cr_assert_eq(a[slot_of[3]], 1);
}
