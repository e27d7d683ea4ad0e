/*
 * test_pages.c -- tests of handler/core/pages.c, the page table: O(1) LIFO free
 * lists, every state transition, every CXLP_E_BADPAGE case, the removal
 * of empty sets (only those) and the reuse of their slots, and a
 * differential run against a naive array model under random operations.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "handler.h"

static struct pagetab t;

static void
setup(void)
{
	pagetab_init(&t);
}

static void
teardown(void)
{
	pagetab_fini(&t);
}

TestSuite(pages, .init = setup, .fini = teardown);

static void
check(void)
{
	char why[128] = "";

	cr_assert_eq(pagetab_check(&t, why, sizeof(why)), 0, "%s", why);
}

Test(pages, alloc_hands_out_every_page_once_then_reports_nospace)
{
	uint32_t set;
	bool seen[8] = {false};
	cxlp_page_t pg;

	cr_assert_eq(pagetab_add(&t, 8, &set), 0);
	cr_assert_eq(set, 0);
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(pagetab_alloc(&t, &pg), 0);
		cr_assert_eq(page_set(pg), 0);
		cr_assert_lt(page_idx(pg), 8);
		cr_assert(!seen[page_idx(pg)], "page %u twice", page_idx(pg));
		seen[page_idx(pg)] = true;
		cr_assert_eq(pagetab_state(&t, pg), PAGE_ALLOCATED);
	}
	cr_assert_eq(pagetab_alloc(&t, &pg), CXLP_E_NOSPACE);
	cr_assert_eq(t.count[PAGE_ALLOCATED], 8);
	cr_assert_eq(t.count[PAGE_FREE], 0);
	check();
}

Test(pages, alloc_on_an_empty_table_reports_nospace)
{
	cxlp_page_t pg;

	cr_assert_eq(pagetab_alloc(&t, &pg), CXLP_E_NOSPACE);
}

Test(pages, free_list_is_lifo_so_a_freed_page_comes_back_first)
{
	uint32_t set;
	cxlp_page_t a, b, c;

	cr_assert_eq(pagetab_add(&t, 4, &set), 0);
	cr_assert_eq(pagetab_alloc(&t, &a), 0);
	cr_assert_eq(pagetab_alloc(&t, &b), 0);
	cr_assert_eq(pagetab_move(&t, a, PAGE_ALLOCATED, PAGE_FREE), 0);
	cr_assert_eq(pagetab_alloc(&t, &c), 0);
	cr_assert_eq(c, a);
	check();
}

Test(pages, a_full_table_uses_a_new_set_and_a_freed_page_in_an_old_one)
{
	uint32_t s0, s1;
	cxlp_page_t a, b, c, d;

	cr_assert_eq(pagetab_add(&t, 1, &s0), 0);
	cr_assert_eq(pagetab_alloc(&t, &a), 0);
	cr_assert_eq(pagetab_alloc(&t, &b), CXLP_E_NOSPACE);
	cr_assert_eq(pagetab_add(&t, 1, &s1), 0);
	cr_assert_eq(s1, 1);
	cr_assert_eq(pagetab_alloc(&t, &b), 0);
	cr_assert_eq(page_set(b), 1);
	cr_assert_eq(pagetab_alloc(&t, &c), CXLP_E_NOSPACE);
	cr_assert_eq(pagetab_move(&t, a, PAGE_ALLOCATED, PAGE_FREE), 0);
	cr_assert_eq(pagetab_alloc(&t, &d), 0);
	cr_assert_eq(d, a);
	check();
}

Test(pages, adding_an_empty_set_fails_with_einval)
{
	uint32_t set;

	cr_assert_eq(pagetab_add(&t, 0, &set), -EINVAL);
	cr_assert_eq(t.n, 0);
}

/* ---- empty sets and their removal (note 5) ---------------------------- */

Test(pages, only_a_set_whose_every_page_is_free_can_be_removed)
{
	uint32_t set;
	cxlp_page_t pg, other;

	cr_assert_eq(pagetab_add(&t, 4, &set), 0);
	cr_assert_eq(t.nempty, 1);
	cr_assert_eq(pagetab_alloc(&t, &pg), 0);
	cr_assert(!pagetab_empty(&t, set));
	cr_assert_eq(t.nempty, 0);
	cr_assert_eq(pagetab_remove(&t, set), CXLP_E_BUSY);
	cr_assert_eq(pagetab_state(&t, pg), PAGE_ALLOCATED, "changed");
	check();
	cr_assert_eq(pagetab_move(&t, pg, PAGE_ALLOCATED, PAGE_FREE), 0);
	cr_assert(pagetab_empty(&t, set));
	cr_assert_eq(t.nempty, 1);
	cr_assert_eq(pagetab_remove(&t, set), 0);
	cr_assert_eq(t.nempty, 0);
	cr_assert_eq(t.nlive, 0);
	cr_assert_eq(t.count[PAGE_FREE], 0);
	cr_assert_eq(pagetab_state(&t, pg), CXLP_E_BADPAGE);
	cr_assert_eq(pagetab_move(&t, pg, PAGE_ALLOCATED, PAGE_FREE),
	    CXLP_E_BADPAGE);
	cr_assert_eq(pagetab_alloc(&t, &other), CXLP_E_NOSPACE,
	    "a page of a removed set was handed out");
	cr_assert_eq(pagetab_remove(&t, set), -EINVAL);
	cr_assert_eq(pagetab_remove(&t, 9), -EINVAL);
	check();
}

/* Every state but FREE keeps a set: in flight, registered, unresolved,
 * quarantined. */
Test(pages, a_page_in_any_state_but_free_keeps_its_set)
{
	static const enum page_state path[] = {PAGE_INFLIGHT,
		PAGE_UNRESOLVED, PAGE_REGISTERED, PAGE_FREE};
	uint32_t set;
	cxlp_page_t pg;

	cr_assert_eq(pagetab_add(&t, 2, &set), 0);
	cr_assert_eq(pagetab_alloc(&t, &pg), 0);
	cr_assert_eq(pagetab_move(&t, pg, PAGE_ALLOCATED, PAGE_INFLIGHT), 0);
	pagetab_taint(&t, pg);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pagetab_remove(&t, set), CXLP_E_BUSY, "%s",
		    i == 0 ? "in flight" : i == 1 ? "unresolved" :
		    "registered");
		cr_assert_eq(pagetab_move(&t, pg, path[i], path[i + 1]), 0);
	}
	cr_assert_eq(pagetab_state(&t, pg), PAGE_QUARANTINED);
	cr_assert(!pagetab_empty(&t, set));
	cr_assert_eq(t.nempty, 0);
	cr_assert_eq(pagetab_remove(&t, set), CXLP_E_BUSY, "quarantined");
	check();
}

/* A removed set's slot is the next set's; the other sets' handles are
 * what they were. */
Test(pages, a_removed_sets_slot_is_reused_and_other_handles_stay)
{
	uint32_t a, b, c;
	cxlp_page_t pb, pc;

	cr_assert_eq(pagetab_add(&t, 2, &a), 0);
	cr_assert_eq(pagetab_add(&t, 3, &b), 0);
	cr_assert_eq(pagetab_alloc(&t, &pb), 0);
	cr_assert_eq(page_set(pb), b);
	cr_assert_eq(pagetab_remove(&t, a), 0);
	cr_assert_eq(pagetab_add(&t, 5, &c), 0);
	cr_assert_eq(c, a, "slot %u not reused", a);
	cr_assert_eq(t.n, 2);
	cr_assert_eq(t.nlive, 2);
	cr_assert_eq(pagetab_state(&t, pb), PAGE_ALLOCATED);
	for (int i = 0; i < 5 + 2; i++) {
		cr_assert_eq(pagetab_alloc(&t, &pc), 0);
	}
	cr_assert_eq(pagetab_alloc(&t, &pc), CXLP_E_NOSPACE);
	cr_assert_eq(t.count[PAGE_ALLOCATED], 8);
	check();
}

/* Walk one page through a path of transitions; counts follow. */
static void
walk(const enum page_state *path, int n)
{
	uint32_t set;
	cxlp_page_t pg;

	cr_assert_eq(pagetab_add(&t, 2, &set), 0);
	cr_assert_eq(pagetab_alloc(&t, &pg), 0);
	for (int i = 0; i + 1 < n; i++) {
		cr_assert_eq(pagetab_move(&t, pg, path[i], path[i + 1]), 0,
		    "%d -> %d", path[i], path[i + 1]);
		cr_assert_eq(pagetab_state(&t, pg), path[i + 1]);
		cr_assert_eq(t.count[path[i + 1]],
		    path[i + 1] == PAGE_FREE ? 2 : 1);
		check();
	}
}

Test(pages, free_of_an_allocated_page_makes_it_free)
{
	enum page_state p[] = {PAGE_ALLOCATED, PAGE_FREE};

	walk(p, 2);
}

Test(pages, a_store_that_wins_registers_then_delete_frees)
{
	enum page_state p[] = {PAGE_ALLOCATED, PAGE_INFLIGHT, PAGE_REGISTERED,
	    PAGE_FREE};

	walk(p, 4);
}

Test(pages, a_store_that_loses_frees_the_page)
{
	enum page_state p[] = {PAGE_ALLOCATED, PAGE_INFLIGHT, PAGE_FREE};

	walk(p, 3);
}

Test(pages, a_rolled_back_store_gives_the_page_back_allocated)
{
	enum page_state p[] = {PAGE_ALLOCATED, PAGE_INFLIGHT, PAGE_ALLOCATED,
	    PAGE_FREE};

	walk(p, 4);
}

Test(pages, an_unresolved_page_resolves_to_registered)
{
	enum page_state p[] = {PAGE_ALLOCATED, PAGE_INFLIGHT, PAGE_UNRESOLVED,
	    PAGE_REGISTERED, PAGE_FREE};

	walk(p, 5);
}

Test(pages, an_unresolved_page_resolves_to_free)
{
	enum page_state p[] = {PAGE_ALLOCATED, PAGE_INFLIGHT, PAGE_UNRESOLVED,
	    PAGE_FREE};

	walk(p, 4);
}

/* Note 4: a tainted page that would go FREE is QUARANTINED, for good:
 * every way to FREE from a state a page can be tainted in. */
Test(pages, a_tainted_page_is_quarantined_not_freed_and_never_handed_out)
{
	static const enum page_state paths[][4] = {
		{PAGE_INFLIGHT, PAGE_FREE},
		{PAGE_INFLIGHT, PAGE_REGISTERED, PAGE_FREE},
		{PAGE_INFLIGHT, PAGE_UNRESOLVED, PAGE_FREE},
		{PAGE_INFLIGHT, PAGE_UNRESOLVED, PAGE_REGISTERED, PAGE_FREE},
		{PAGE_INFLIGHT, PAGE_INFLIGHT_DELETED, PAGE_FREE},
	};
	static const int len[] = {2, 3, 3, 4, 3};
	const int npaths = (int)(sizeof(len) / sizeof(len[0]));
	uint32_t set;
	cxlp_page_t pg, other;

	cr_assert_eq(pagetab_add(&t, (uint32_t)npaths + 1, &set), 0);
	for (int k = 0; k < npaths; k++) {
		cr_assert_eq(pagetab_alloc(&t, &pg), 0);
		cr_assert_eq(pagetab_move(&t, pg, PAGE_ALLOCATED,
		    PAGE_INFLIGHT), 0);
		pagetab_taint(&t, pg);
		for (int i = 0; i + 1 < len[k]; i++) {
			cr_assert_eq(pagetab_move(&t, pg, paths[k][i],
			    paths[k][i + 1]), 0);
		}
		cr_assert_eq(pagetab_state(&t, pg), PAGE_QUARANTINED);
		cr_assert(pagetab_tainted(&t, pg));
		cr_assert_eq(t.count[PAGE_QUARANTINED], (uint64_t)k + 1);
		check();
	}
	/* one page left free; then none, though none was ever freed */
	cr_assert_eq(pagetab_alloc(&t, &other), 0);
	cr_assert_eq(pagetab_alloc(&t, &other), CXLP_E_NOSPACE);
	check();
}

/* An untainted page is freed as before, and reused first (LIFO). */
Test(pages, an_untainted_page_is_freed_and_reused)
{
	uint32_t set;
	cxlp_page_t pg, again;

	cr_assert_eq(pagetab_add(&t, 4, &set), 0);
	cr_assert_eq(pagetab_alloc(&t, &pg), 0);
	cr_assert_eq(pagetab_move(&t, pg, PAGE_ALLOCATED, PAGE_INFLIGHT), 0);
	cr_assert_eq(pagetab_move(&t, pg, PAGE_INFLIGHT, PAGE_REGISTERED), 0);
	cr_assert(!pagetab_tainted(&t, pg));
	cr_assert_eq(pagetab_move(&t, pg, PAGE_REGISTERED, PAGE_FREE), 0);
	cr_assert_eq(pagetab_alloc(&t, &again), 0);
	cr_assert_eq(again, pg);
	check();
}

Test(pages, tainting_a_free_page_is_a_bug_and_aborts, .signal = SIGABRT)
{
	uint32_t set;

	cr_assert_eq(pagetab_add(&t, 1, &set), 0);
	pagetab_taint(&t, page_make(0, 0));
}

Test(pages, a_page_of_no_set_is_badpage)
{
	uint32_t set;

	cr_assert_eq(pagetab_state(&t, page_make(0, 0)), CXLP_E_BADPAGE);
	cr_assert_eq(pagetab_add(&t, 4, &set), 0);
	cr_assert_eq(pagetab_state(&t, page_make(1, 0)), CXLP_E_BADPAGE);
	cr_assert_eq(pagetab_move(&t, page_make(1, 0), PAGE_ALLOCATED,
	    PAGE_FREE), CXLP_E_BADPAGE);
	cr_assert_eq(pagetab_move(&t, page_make(UINT32_MAX, 0),
	    PAGE_ALLOCATED, PAGE_FREE), CXLP_E_BADPAGE);
}

Test(pages, a_page_index_past_the_set_is_badpage)
{
	uint32_t set;

	cr_assert_eq(pagetab_add(&t, 4, &set), 0);
	cr_assert_eq(pagetab_state(&t, page_make(0, 4)), CXLP_E_BADPAGE);
	cr_assert_eq(pagetab_move(&t, page_make(0, 4), PAGE_ALLOCATED,
	    PAGE_FREE), CXLP_E_BADPAGE);
	cr_assert_eq(pagetab_move(&t, page_make(0, UINT32_MAX),
	    PAGE_ALLOCATED, PAGE_FREE), CXLP_E_BADPAGE);
}

/* Every legal transition, tried from every wrong state, is BADPAGE and
 * changes nothing. */
Test(pages, every_transition_from_a_wrong_state_is_badpage)
{
	static const enum page_state reach[PAGE_NSTATES][4] = {
		[PAGE_FREE] = {PAGE_FREE},
		[PAGE_ALLOCATED] = {PAGE_ALLOCATED},
		[PAGE_INFLIGHT] = {PAGE_ALLOCATED, PAGE_INFLIGHT},
		[PAGE_REGISTERED] = {PAGE_ALLOCATED, PAGE_INFLIGHT,
		    PAGE_REGISTERED},
		[PAGE_UNRESOLVED] = {PAGE_ALLOCATED, PAGE_INFLIGHT,
		    PAGE_UNRESOLVED},
		[PAGE_INFLIGHT_DELETED] = {PAGE_ALLOCATED, PAGE_INFLIGHT,
		    PAGE_INFLIGHT_DELETED},
	};
	static const int reach_len[PAGE_NSTATES] = {1, 1, 2, 3, 3, 3};
	static const enum page_state moves[][2] = {
		{PAGE_ALLOCATED, PAGE_FREE}, {PAGE_ALLOCATED, PAGE_INFLIGHT},
		{PAGE_INFLIGHT, PAGE_ALLOCATED}, {PAGE_INFLIGHT, PAGE_FREE},
		{PAGE_INFLIGHT, PAGE_REGISTERED},
		{PAGE_INFLIGHT, PAGE_UNRESOLVED},
		{PAGE_UNRESOLVED, PAGE_REGISTERED},
		{PAGE_UNRESOLVED, PAGE_FREE}, {PAGE_REGISTERED, PAGE_FREE},
		{PAGE_INFLIGHT, PAGE_INFLIGHT_DELETED},
		{PAGE_INFLIGHT_DELETED, PAGE_FREE},
	};
	uint32_t set;

	cr_assert_eq(pagetab_add(&t, PAGE_NSTATES, &set), 0);
	for (int s = 0; s < PAGE_QUARANTINED; s++) { /* tainted_* below */
		cxlp_page_t pg = page_make(0, (uint32_t)s);

		if (s != PAGE_FREE) {
			cr_assert_eq(pagetab_alloc(&t, &pg), 0);
		}
		for (int k = 0; k + 1 < reach_len[s]; k++) {
			cr_assert_eq(pagetab_move(&t, pg, reach[s][k],
			    reach[s][k + 1]), 0);
		}
		if (s == PAGE_FREE) {
			/* the last page left free */
			pg = page_make(0, PAGE_NSTATES - 1);
			continue;
		}
		cr_assert_eq(pagetab_state(&t, pg), s);
		for (size_t m = 0; m < sizeof(moves) / sizeof(moves[0]); m++) {
			if (moves[m][0] == (enum page_state)s) {
				continue;
			}
			cr_assert_eq(pagetab_move(&t, pg, moves[m][0],
			    moves[m][1]), CXLP_E_BADPAGE, "state %d, move %zu",
			    s, m);
			cr_assert_eq(pagetab_state(&t, pg), s);
		}
	}
	/* and a FREE page: every move is BADPAGE */
	for (size_t m = 0; m < sizeof(moves) / sizeof(moves[0]); m++) {
		cxlp_page_t pg = page_make(0, PAGE_NSTATES - 1);

		cr_assert_eq(pagetab_state(&t, pg), PAGE_FREE);
		cr_assert_eq(pagetab_move(&t, pg, moves[m][0], moves[m][1]),
		    CXLP_E_BADPAGE);
	}
	check();
}

Test(pages, an_illegal_transition_is_a_bug_and_aborts, .signal = SIGABRT)
{
	uint32_t set;
	cxlp_page_t pg;

	cr_assert_eq(pagetab_add(&t, 1, &set), 0);
	cr_assert_eq(pagetab_alloc(&t, &pg), 0);
	pagetab_move(&t, pg, PAGE_ALLOCATED, PAGE_REGISTERED);
}

/* ---- differential test against a naive model -------------------------- */

#define MODEL_SETS 6
#define MODEL_PAGES 9

static const bool model_legal[PAGE_NSTATES][PAGE_NSTATES] = {
	[PAGE_ALLOCATED] = {[PAGE_FREE] = true, [PAGE_INFLIGHT] = true},
	[PAGE_INFLIGHT] = {[PAGE_ALLOCATED] = true, [PAGE_REGISTERED] = true,
	    [PAGE_FREE] = true, [PAGE_UNRESOLVED] = true,
	    [PAGE_INFLIGHT_DELETED] = true},
	[PAGE_UNRESOLVED] = {[PAGE_REGISTERED] = true, [PAGE_FREE] = true},
	[PAGE_REGISTERED] = {[PAGE_FREE] = true},
	[PAGE_INFLIGHT_DELETED] = {[PAGE_FREE] = true},
};

struct model {
	int nsets;
	int npages[MODEL_SETS];
	int state[MODEL_SETS][MODEL_PAGES];
	bool taint[MODEL_SETS][MODEL_PAGES];
};

/* A slot a removed set left, or m->nsets (note 5). */
static int
model_slot(const struct model *m)
{
	for (int s = 0; s < m->nsets; s++) {
		if (m->npages[s] == 0) {
			return s;
		}
	}
	return m->nsets;
}

static bool
model_empty(const struct model *m, int s)
{
	for (int i = 0; i < m->npages[s]; i++) {
		if (m->state[s][i] != PAGE_FREE) {
			return false;
		}
	}
	return m->npages[s] > 0;
}

/* Remove a random set: only an empty one goes. */
static void
random_remove(struct model *m)
{
	int s = rand() % (MODEL_SETS + 1);
	int rc = pagetab_remove(&t, (uint32_t)s);

	if (s >= m->nsets || m->npages[s] == 0) {
		cr_assert_eq(rc, -EINVAL);
	} else if (!model_empty(m, s)) {
		cr_assert_eq(rc, CXLP_E_BUSY);
	} else {
		cr_assert_eq(rc, 0);
		m->npages[s] = 0;
		memset(m->taint[s], 0, sizeof(m->taint[s]));
	}
}

static bool
model_has_free(const struct model *m)
{
	for (int s = 0; s < m->nsets; s++) {
		for (int i = 0; i < m->npages[s]; i++) {
			if (m->state[s][i] == PAGE_FREE) {
				return true;
			}
		}
	}
	return false;
}

static void
random_alloc(struct model *m)
{
	cxlp_page_t pg;
	int rc = pagetab_alloc(&t, &pg);

	if (!model_has_free(m)) {
		cr_assert_eq(rc, CXLP_E_NOSPACE);
		return;
	}
	cr_assert_eq(rc, 0);
	cr_assert_lt(page_set(pg), (uint32_t)m->nsets);
	cr_assert_lt(page_idx(pg), (uint32_t)m->npages[page_set(pg)]);
	cr_assert_eq(m->state[page_set(pg)][page_idx(pg)], PAGE_FREE);
	m->state[page_set(pg)][page_idx(pg)] = PAGE_ALLOCATED;
}

static void
random_move(struct model *m)
{
	uint32_t s = (uint32_t)(rand() % (MODEL_SETS + 1));
	uint32_t i = (uint32_t)(rand() % (MODEL_PAGES + 1));
	enum page_state from, to;
	bool valid;
	int rc;

	do {
		from = (enum page_state)(rand() % PAGE_NSTATES);
		to = (enum page_state)(rand() % PAGE_NSTATES);
	} while (!model_legal[from][to]);
	valid = (int)s < m->nsets && (int)i < m->npages[s] &&
	    m->state[s][i] == (int)from;
	if (valid && to == PAGE_ALLOCATED && m->taint[s][i]) {
		return; /* a bug (note 4): asserts */
	}
	rc = pagetab_move(&t, page_make(s, i), from, to);
	cr_assert_eq(rc, valid ? 0 : CXLP_E_BADPAGE);
	if (valid) {
		m->state[s][i] = to == PAGE_FREE && m->taint[s][i] ?
		    PAGE_QUARANTINED : (int)to;
	}
}

/* Taint a random page where taint is allowed (note 4). */
static void
random_taint(struct model *m)
{
	int s = rand() % (m->nsets > 0 ? m->nsets : 1);
	int i = rand() % MODEL_PAGES;
	int st;

	if (s >= m->nsets || i >= m->npages[s]) {
		return;
	}
	st = m->state[s][i];
	if (st != PAGE_FREE && st != PAGE_ALLOCATED) {
		pagetab_taint(&t, page_make((uint32_t)s, (uint32_t)i));
		m->taint[s][i] = true;
	}
}

Test(pages, matches_a_naive_model_under_random_operations)
{
	struct model m = {0};

	srand(12345);
	for (int step = 0; step < 20000; step++) {
		int op = rand() % 100;

		int slot = model_slot(&m);

		if (op < 3 && slot < MODEL_SETS) {
			uint32_t set;
			int n = 1 + rand() % MODEL_PAGES;

			cr_assert_eq(pagetab_add(&t, (uint32_t)n, &set), 0);
			cr_assert_eq(set, (uint32_t)slot);
			m.npages[slot] = n;
			memset(m.state[slot], 0, sizeof(m.state[slot]));
			m.nsets += slot == m.nsets;
		} else if (op < 5) {
			random_remove(&m);
		} else if (op < 40) {
			random_alloc(&m);
		} else if (op < 42) {
			random_taint(&m);
		} else {
			random_move(&m);
		}
		for (int s = 0; s < m.nsets; s++) {
			for (int i = 0; i < m.npages[s]; i++) {
				cr_assert_eq(pagetab_state(&t,
				    page_make((uint32_t)s, (uint32_t)i)),
				    m.state[s][i]);
			}
		}
		check();
	}
}
