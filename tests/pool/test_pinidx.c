/*
 * test_pinidx.c -- pool/pinidx.c: the pin table's DRAM index answers
 * held, per-key and per-session totals as the media says, under random
 * pins, unpins and session releases checked against a naive count
 * array, across a reopen that rebuilds it; and pool_check reports an
 * index that disagrees with the media (the DRAM damaged on purpose).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "pool.h"
#include "pool_int.h"
#include "pool_test.h"

/* NS sessions fill the session table, so that the session hash (as many
 * buckets as sessions) has collisions; the random test pins NSLOT keys,
 * the release test NPAIRS. */
#define NS 8
#define NSLOT 40
#define NPAIRS 1000

static char path[128];
static struct pool *p;
static uint64_t sess[NS];
static uint64_t slot[NPAIRS];

static void
setup(void)
{
	struct pool_params pp = { .size = 64ull << 20, .max_sessions = NS,
		.index_slots = 32768 };
	struct pool_region reg;

	test_pool_path(path, sizeof(path), "/dev/shm");
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0, "%s",
	    cxlp_errormsg());
	for (int s = 0; s < NS; s++) {
		struct pool_session r = { .token = 7, .pid = 1 };

		cr_assert_eq(pool_session_add(p, &r), 0);
		sess[s] = r.id;
	}
	cr_assert_eq(pool_region_alloc(p, sess[0], 4u << 20, 4096, &reg), 0);
	for (uint32_t i = 0; i < NPAIRS; i++) {
		struct pool_kv kv;
		char name[16];
		bool ins = false;

		snprintf(name, sizeof(name), "k%u", i);
		cr_assert_eq(pool_kv_insert(p, sess[0], name, strlen(name),
		    reg.id, reg.off + i * 4096ull, 10, &kv, &ins), 0);
		slot[i] = kv.slot;
	}
}

static void
teardown(void)
{
	pool_close(&p);
	unlink(path);
}

TestSuite(pinidx, .init = setup, .fini = teardown, .timeout = 60);

static int
change(int s, uint32_t k, int delta)
{
	static uint64_t req;
	bool applied = false;
	int rc = pool_pin_change(p, sess[s], slot[k], delta, ++req, 1,
	    &applied);

	cr_assert_eq(applied, rc == 0);
	return rc;
}

static uint64_t model[NS][NSLOT];

/* every answer of the index against the model, and pool_check clean */
static void
compare(void)
{
	uint64_t all = 0, by_sess[NS] = { 0 };
	struct pool_stats st;

	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	for (uint32_t k = 0; k < NSLOT; k++) {
		uint64_t tot = 0;

		for (int s = 0; s < NS; s++) {
			cr_assert_eq(pool_pin_held(p, sess[s], slot[k]),
			    model[s][k], "session %d key %u", s, k);
			tot += model[s][k];
			by_sess[s] += model[s][k];
		}
		cr_assert_eq(pool_pin_total(p, slot[k]), tot, "key %u", k);
		all += tot;
	}
	for (int s = 0; s < NS; s++) {
		cr_assert_eq(pool_pin_session_total(p, sess[s]), by_sess[s],
		    "session %d", s);
	}
	pool_stats(p, &st);
	cr_assert_eq(st.pins, all);
}

static void
random_op(unsigned *seed)
{
	int s = rand_r(seed) % NS;
	uint32_t k = (uint32_t)(rand_r(seed) % NSLOT);
	int op = rand_r(seed) % 100;

	if (op < 55) {
		cr_assert_eq(change(s, k, +1), 0, "%s", cxlp_errormsg());
		model[s][k]++;
	} else if (op < 97) {
		int want = model[s][k] > 0 ? 0 : CXLP_E_NOTPINNED;

		cr_assert_eq(change(s, k, -1), want);
		model[s][k] -= want == 0;
	} else {
		uint64_t sum = 0;

		for (uint32_t j = 0; j < NSLOT; j++) {
			sum += model[s][j];
			model[s][j] = 0;
		}
		cr_assert_eq(pool_pin_release_session(p, sess[s]), sum);
	}
}

/* Differential: random pins, unpins and session releases against a
 * plain count array; every reopen must rebuild the same answers. */
Test(pinidx, random_operations_match_a_naive_model)
{
	unsigned seed = 4242;

	memset(model, 0, sizeof(model));
	for (int i = 1; i <= 20000; i++) {
		random_op(&seed);
		if (i % 500 == 0) {
			compare();
		}
		if (i % 5000 == 0) {
			cr_assert_gt(p->pin.records, NSLOT, "a reopen with "
			    "records to rebuild");
			pool_close(&p);
			cr_assert_eq(pool_open(&p, path, 0, NULL), 0, "%s",
			    cxlp_errormsg());
			compare();
		}
	}
}

Test(pinidx, release_session_drops_every_pin_of_that_session_only)
{
	for (uint32_t k = 0; k < NPAIRS; k++) {
		cr_assert_eq(change(1, k, +1), 0);
		cr_assert_eq(change(2, k, +1), 0);
		cr_assert_eq(change(1, k, +1), 0);
	}
	cr_assert_eq(pool_pin_session_total(p, sess[1]), 2 * NPAIRS);
	cr_assert_eq(pool_pin_release_session(p, sess[1]), 2 * NPAIRS);
	for (uint32_t k = 0; k < NPAIRS; k++) {
		cr_assert_eq(pool_pin_held(p, sess[1], slot[k]), 0);
		cr_assert_eq(pool_pin_held(p, sess[2], slot[k]), 1);
		cr_assert_eq(pool_pin_total(p, slot[k]), 1);
	}
	cr_assert_eq(pool_pin_session_total(p, sess[1]), 0);
	cr_assert_eq(pool_pin_session_total(p, sess[2]), NPAIRS);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	cr_assert_eq(pool_pin_release_session(p, sess[1]), 0);
	/* its records are free again: the whole table but sess[2]'s */
	cr_assert_eq(pool_pin_reserve(p, pool_pin_max(p) - NPAIRS), 0);
	cr_assert_eq(pool_pin_reserve(p, pool_pin_max(p) - NPAIRS + 1),
	    CXLP_E_NOSPACE);
}

Test(pinidx, an_unpin_releases_only_the_callers_own_pin)
{
	cr_assert_eq(change(1, 0, +1), 0);
	cr_assert_eq(change(2, 0, -1), CXLP_E_NOTPINNED);
	cr_assert_eq(pool_pin_total(p, slot[0]), 1);
	cr_assert_eq(change(1, 0, -1), 0);
	cr_assert_eq(change(1, 0, -1), CXLP_E_NOTPINNED);
	cr_assert_eq(pool_pin_total(p, slot[0]), 0);
	cr_assert_eq(pool_pin_session_total(p, sess[1]), 0);
}

/* A retired record (its last pin released) stays on its chains with
 * count 0: it adds nothing to a total, and is freed by a release. */
Test(pinidx, a_retired_record_counts_nothing)
{
	cr_assert_eq(change(3, 5, +1), 0);
	cr_assert_eq(change(4, 5, +1), 0);
	cr_assert_eq(change(3, 5, -1), 0);
	cr_assert_eq(pool_pin_total(p, slot[5]), 1);
	cr_assert_eq(pool_pin_session_total(p, sess[3]), 0);
	cr_assert_eq(p->pin.records, 2);
	cr_assert_eq(pool_pin_release_session(p, sess[3]), 0);
	cr_assert_eq(p->pin.records, 1);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

/* ---- pool_check against a damaged index -------------------------------- */

static char reports[2048];

static void
collect(void *arg, const char *problem)
{
	size_t n = strlen(reports);

	(void)arg;
	snprintf(reports + n, sizeof(reports) - n, "%s\n", problem);
}

/* pool_check finds problems, one of which says want */
static void
check_reports(const char *want)
{
	reports[0] = '\0';
	cr_assert_gt(pool_check(p, collect, NULL), 0);
	cr_assert(strstr(reports, want) != NULL, "want \"%s\" in:\n%s", want,
	    reports);
}

/* two sessions on key 0, one also on key 1; returns the record of
 * (sess[0], key 0) */
static uint32_t
pin_some(void)
{
	cr_assert_eq(change(0, 0, +1), 0);
	cr_assert_eq(change(1, 0, +1), 0);
	cr_assert_eq(change(0, 1, +1), 0);
	cr_assert_eq(change(0, 1, +1), 0);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	return pinidx_find(p, sess[0], slot[0]);
}

/* take record i out of by's chain alone, as a lost link would */
static void
drop_link(enum pin_by by, uint32_t i)
{
	struct pin_chain *c = &p->pin.by[by];

	if (c->prev[i] == PIN_NONE) {
		for (uint32_t b = 0; b <= c->mask; b++) {
			if (c->head[b] == i) {
				c->head[b] = c->next[i];
			}
		}
	} else {
		c->next[c->prev[i]] = c->next[i];
	}
	if (c->next[i] != PIN_NONE) {
		c->prev[c->next[i]] = c->prev[i];
	}
}

Test(pinidx, check_reports_a_key_total_that_disagrees_with_the_media)
{
	uint32_t i = pin_some();

	drop_link(PIN_BY_SLOT, i);
	cr_assert_eq(pool_pin_total(p, slot[0]), 1); /* should be 2 */
	check_reports("slot");
	check_reports("2 pins on media, 1 in the index");
	check_reports("is on no chain");
}

Test(pinidx, check_reports_a_session_total_that_disagrees_with_the_media)
{
	uint32_t i = pin_some();

	drop_link(PIN_BY_SESSION, i);
	cr_assert_eq(pool_pin_session_total(p, sess[0]), 2); /* not 3 */
	check_reports("3 pins on media, 2 in the index");
	check_reports("pins by session: live record");
}

Test(pinidx, check_reports_a_record_lost_from_the_pair_chain)
{
	uint32_t i = pin_some();

	drop_link(PIN_BY_PAIR, i);
	cr_assert_eq(pool_pin_held(p, sess[0], slot[0]), 0); /* lost */
	check_reports("pins by pair: live record");
}

/* a record in another bucket than its words hash to: the walk that
 * should find it does not */
Test(pinidx, check_reports_a_record_in_the_wrong_bucket)
{
	uint32_t i = pin_some();
	struct pin_chain *c = &p->pin.by[PIN_BY_SLOT];
	uint32_t b = 0;

	/* its own bucket still holds sess[1]'s record on key 0: an empty
	 * one is another */
	drop_link(PIN_BY_SLOT, i);
	while (c->head[b] != PIN_NONE) {
		b++;
	}
	c->head[b] = i;
	c->next[i] = c->prev[i] = PIN_NONE;
	check_reports("pins by slot: record");
	check_reports("is in bucket");
}

Test(pinidx, check_reports_a_broken_back_link)
{
	uint32_t i = pin_some();
	struct pin_chain *c = &p->pin.by[PIN_BY_SESSION];
	uint32_t j = c->next[i] != PIN_NONE ? c->next[i] : c->prev[i];

	cr_assert_neq(j, PIN_NONE, "sess[0]'s two records share a chain");
	c->prev[j] = j;
	check_reports("links back to");
}

Test(pinidx, check_reports_a_cycle_instead_of_walking_it)
{
	uint32_t i = pin_some();
	struct pin_chain *c = &p->pin.by[PIN_BY_SESSION];

	c->next[i] = i;
	check_reports("a second time");
}

Test(pinidx, check_reports_a_free_record_left_on_a_chain)
{
	uint32_t i = pin_some();

	p->ptab[i].session = 0; /* freed on media, as if DRAM missed it */
	check_reports("free on media");
}

Test(pinidx, check_reports_a_wrong_pin_count)
{
	pin_some();
	p->pin.pins++;
	check_reports("4 pins on media");
}
