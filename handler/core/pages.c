/*
 * pages.c -- the handler's page table: which pages of its own regions are
 * free, allocated, being registered, registered, or in doubt.
 *
 * It is a pure module (no locks, no I/O) so that it can be tested alone
 * and differentially against a naive model. Each region ("set") keeps an
 * array of next indices forming a LIFO free list and one state byte per
 * page, so alloc and free are O(1). Sets with free pages sit on an "avail"
 * stack; a set is pushed when its free count goes 0 -> 1 and popped lazily
 * when found full, so finding a set with room is amortized O(1) however
 * many regions there are. A set whose region goes back to the pool is
 * removed in place (its slot keeps its index, with no pages), so the
 * handles of the other sets' pages stay what they were; a later add
 * reuses the slot.
 *
 * DESIGN NOTES
 * 1. A page handle is (set << 32) | index and is checked on every use:
 *    out of range or in the wrong state is CXLP_E_BADPAGE (bad input from
 *    the caller, never an assertion).
 * 2. State transitions, and the function that makes each one:
 *      FREE -> ALLOCATED        [pagetab_alloc; cxlp_alloc]
 *      ALLOCATED -> FREE        [cxlp_free]
 *      ALLOCATED -> INFLIGHT    [store: pages taken for one REGISTER]
 *      INFLIGHT -> ALLOCATED    [store: argument check rolled back]
 *      INFLIGHT -> REGISTERED   [store: the key is at this page]
 *      INFLIGHT -> FREE         [store: lost the race, or not confirmed]
 *      INFLIGHT -> UNRESOLVED   [store: no reply after retries]
 *      UNRESOLVED -> REGISTERED [resolve_run: LOOKUP finds it here]
 *      UNRESOLVED -> FREE       [resolve_run: not here; or a delete
 *                                of its key, which shows the register
 *                                was applied, before resolve_run took
 *                                it up]
 *      REGISTERED -> FREE       [delete of the key]
 *      INFLIGHT -> INFLIGHT_DELETED [a delete of the key, by another
 *                                thread, before the store settled]
 *      INFLIGHT_DELETED -> FREE [store: registered, then deleted]
 *    Any other transition is a bug and asserts.
 * 3. A page is on its set's free list iff its state is FREE; nfree is the
 *    list's length; count[s] is the number of pages in state s.
 * 4. Taint (PAGE_TAINT, a bit beside the state) marks a page a REGISTER
 *    copy may still publish [pagetab_taint; doubt.c says when]. A move
 *    of a tainted page to FREE lands in QUARANTINED instead, which has
 *    no way out: the page is never handed out again by this table. FREE
 *    and ALLOCATED pages are never tainted (a tainted page going back to
 *    ALLOCATED is a bug and asserts); QUARANTINED ones always are.
 * 5. A set is empty when every one of its pages is FREE; nempty counts
 *    the empty sets, kept as pages come and go [pagetab_alloc,
 *    pagetab_move, pagetab_add], so the give-back (giveback.c) knows in
 *    O(1) whether the handler holds more empty regions than its
 *    reserve. Only an empty set can be removed [pagetab_remove]: a page
 *    in any other state (allocated, in flight, registered, unresolved,
 *    quarantined) keeps its region. A removed set is a slot of 0 pages,
 *    on no free list, never handed out from; every handle into it is
 *    CXLP_E_BADPAGE (note 1) until pagetab_add fills the slot again.
 *    nlive counts the sets that are not removed.
 * 6. A set asked back by the metaserver (giveback.c note 7) is retiring
 *    [pagetab_retire]: no page of it is handed out again (pagetab_alloc
 *    passes it over; its free list stays as note 3 says), and once every
 *    page of it is FREE or REGISTERED and untainted it may be removed
 *    with its keys registered [pagetab_remove_idle]: they stay in the
 *    pool, in a region no longer this handler's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "core.h"

/* legal[from][to]: the transitions pagetab_move may make (note 2). */
static const bool legal[PAGE_NSTATES][PAGE_NSTATES] = {
	[PAGE_ALLOCATED] = {[PAGE_FREE] = true, [PAGE_INFLIGHT] = true},
	[PAGE_INFLIGHT] = {[PAGE_ALLOCATED] = true, [PAGE_REGISTERED] = true,
	    [PAGE_FREE] = true, [PAGE_UNRESOLVED] = true,
	    [PAGE_INFLIGHT_DELETED] = true},
	[PAGE_UNRESOLVED] = {[PAGE_REGISTERED] = true, [PAGE_FREE] = true},
	[PAGE_REGISTERED] = {[PAGE_FREE] = true},
	[PAGE_INFLIGHT_DELETED] = {[PAGE_FREE] = true},
};

static const char *const state_names[PAGE_NSTATES] = {
	[PAGE_FREE] = "free",
	[PAGE_ALLOCATED] = "allocated",
	[PAGE_INFLIGHT] = "in flight",
	[PAGE_REGISTERED] = "registered",
	[PAGE_UNRESOLVED] = "unresolved",
	[PAGE_INFLIGHT_DELETED] = "in flight, deleted",
	[PAGE_QUARANTINED] = "quarantined",
};

#define PAGE_TAINT 0x80u /* note 4; the low bits are the state */

static inline int
st_of(uint8_t b)
{
	return b & ~PAGE_TAINT;
}

/* pagetab_init -- an empty table. */
void
pagetab_init(struct pagetab *t)
{
	memset(t, 0, sizeof(*t));
}

/* pagetab_fini -- free every set; t may be reused after pagetab_init. */
void
pagetab_fini(struct pagetab *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		free(t->sets[i].next);
		free(t->sets[i].state);
	}
	free(t->sets);
	free(t->avail);
	memset(t, 0, sizeof(*t));
}

static int
pagetab_grow(struct pagetab *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 4;
	struct pageset *sets;
	uint32_t *avail;

	if (t->n < t->cap) {
		return 0;
	}
	sets = realloc(t->sets, cap * sizeof(*sets));
	if (sets == NULL) {
		return -ENOMEM;
	}
	t->sets = sets;
	avail = realloc(t->avail, cap * sizeof(*avail));
	if (avail == NULL) {
		return -ENOMEM;
	}
	t->avail = avail;
	t->cap = cap;
	return 0;
}

static void
avail_push(struct pagetab *t, uint32_t set)
{
	if (!t->sets[set].in_avail) {
		cxlp_assert(t->navail < t->n);
		t->sets[set].in_avail = true;
		t->avail[t->navail++] = set;
	}
}

/* The first slot a removed set left (note 5), or t->n for a new one. */
static uint32_t
free_slot(const struct pagetab *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		if (t->sets[i].npages == 0) {
			return i;
		}
	}
	return t->n;
}

/* pagetab_add -- add a set of npages FREE pages; *set is its index: the
 * first slot a removed set left, else a new one at the end. Returns 0,
 * -EINVAL (npages 0) or -ENOMEM (table unchanged). */
int
pagetab_add(struct pagetab *t, uint32_t npages, uint32_t *set)
{
	struct pageset s = {.npages = npages, .nfree = npages, .head = 0};
	uint32_t slot = free_slot(t);

	if (npages == 0 || npages == PAGE_NONE || slot == UINT32_MAX) {
		return cxlp_fail(-EINVAL, "pages: bad region of %u pages",
		    npages);
	}
	if (slot == t->n && pagetab_grow(t) != 0) {
		return cxlp_fail(-ENOMEM, "pages: out of memory");
	}
	s.next = malloc(npages * sizeof(*s.next));
	s.state = calloc(npages, 1);
	if (s.next == NULL || s.state == NULL) {
		free(s.next);
		free(s.state);
		return cxlp_fail(-ENOMEM, "pages: out of memory");
	}
	for (uint32_t i = 0; i < npages; i++) {
		s.next[i] = i + 1 < npages ? i + 1 : PAGE_NONE;
	}
	if (slot == t->n) {
		t->n++;
	} else {
		s.in_avail = t->sets[slot].in_avail; /* maybe still stacked */
	}
	t->sets[slot] = s;
	*set = slot;
	t->count[PAGE_FREE] += npages;
	t->nempty++;
	t->nlive++;
	avail_push(t, slot);
	return 0;
}

/* pagetab_empty -- set holds pages and every one is FREE (note 5). */
bool
pagetab_empty(const struct pagetab *t, uint32_t set)
{
	return set < t->n && t->sets[set].npages > 0 &&
	    t->sets[set].nfree == t->sets[set].npages;
}

/* pagetab_remove -- take an empty set out (note 5): its pages leave the
 * table and its slot is left for pagetab_add. Returns 0, CXLP_E_BUSY
 * (nothing changed) when a page of it is not FREE, or -EINVAL when set
 * names no set with pages. */
int
pagetab_remove(struct pagetab *t, uint32_t set)
{
	struct pageset *s;

	if (set >= t->n || t->sets[set].npages == 0) {
		return cxlp_fail(-EINVAL, "pages: no set %u", set);
	}
	s = &t->sets[set];
	if (s->nfree != s->npages) {
		return cxlp_fail(CXLP_E_BUSY, "pages: set %u has %u of %u "
		    "pages in use", set, s->npages - s->nfree, s->npages);
	}
	t->count[PAGE_FREE] -= s->npages;
	t->nempty--;
	t->nlive--;
	t->nretiring -= s->retiring;
	free(s->next);
	free(s->state);
	/* in_avail is kept: pagetab_alloc pops the slot lazily (nfree 0) */
	*s = (struct pageset){.head = PAGE_NONE, .in_avail = s->in_avail};
	return 0;
}

/* pagetab_retire -- see core.h (note 6). */
void
pagetab_retire(struct pagetab *t, uint32_t set)
{
	if (set < t->n && t->sets[set].npages > 0 && !t->sets[set].retiring) {
		t->sets[set].retiring = true;
		t->nretiring++;
	}
}

/* pagetab_idle -- see core.h (note 6). */
bool
pagetab_idle(const struct pagetab *t, uint32_t set)
{
	const struct pageset *s = &t->sets[set];

	if (set >= t->n || s->npages == 0) {
		return false;
	}
	for (uint32_t i = 0; i < s->npages; i++) {
		if (s->state[i] != PAGE_FREE && s->state[i] != PAGE_REGISTERED) {
			return false; /* in use, or tainted (note 4) */
		}
	}
	return true;
}

/* pagetab_remove_idle -- see core.h (note 6). */
int
pagetab_remove_idle(struct pagetab *t, uint32_t set, uint32_t *registered)
{
	struct pageset *s;
	uint32_t reg;

	if (!pagetab_idle(t, set)) {
		return cxlp_fail(CXLP_E_BUSY, "pages: set %u is in use", set);
	}
	s = &t->sets[set];
	reg = s->npages - s->nfree;
	t->count[PAGE_FREE] -= s->nfree;
	t->count[PAGE_REGISTERED] -= reg;
	t->nempty -= reg == 0;
	t->nlive--;
	t->nretiring -= s->retiring;
	free(s->next);
	free(s->state);
	*s = (struct pageset){.head = PAGE_NONE, .in_avail = s->in_avail};
	*registered = reg;
	return 0;
}

/* pagetab_alloc -- take a FREE page, now ALLOCATED. Returns 0 and *pg, or
 * CXLP_E_NOSPACE when every set is full. */
int
pagetab_alloc(struct pagetab *t, cxlp_page_t *pg)
{
	while (t->navail > 0) {
		uint32_t set = t->avail[t->navail - 1];
		struct pageset *s = &t->sets[set];
		uint32_t idx;

		if (s->nfree == 0 || s->retiring) {
			s->in_avail = false;
			t->navail--;
			continue;
		}
		idx = s->head;
		cxlp_assert(idx < s->npages && s->state[idx] == PAGE_FREE);
		if (s->nfree == s->npages) {
			t->nempty--; /* note 5 */
		}
		s->head = s->next[idx];
		s->nfree--;
		s->state[idx] = PAGE_ALLOCATED;
		t->count[PAGE_FREE]--;
		t->count[PAGE_ALLOCATED]++;
		*pg = page_make(set, idx);
		return 0;
	}
	return cxlp_fail(CXLP_E_NOSPACE, "pages: all %u regions are full",
	    t->n);
}

/* pagetab_state -- the page's state, or CXLP_E_BADPAGE if pg names no
 * page of this table. */
int
pagetab_state(const struct pagetab *t, cxlp_page_t pg)
{
	uint32_t set = page_set(pg), idx = page_idx(pg);

	if (set >= t->n || idx >= t->sets[set].npages) {
		return cxlp_fail(CXLP_E_BADPAGE, "page %#llx: no such page",
		    (unsigned long long)pg);
	}
	return st_of(t->sets[set].state[idx]);
}

/* pagetab_taint -- see core.h (note 4). */
void
pagetab_taint(struct pagetab *t, cxlp_page_t pg)
{
	int st = pagetab_state(t, pg);

	cxlp_assert(st >= 0 && st != PAGE_FREE && st != PAGE_ALLOCATED);
	t->sets[page_set(pg)].state[page_idx(pg)] |= PAGE_TAINT;
}

/* pagetab_tainted -- see core.h. */
bool
pagetab_tainted(const struct pagetab *t, cxlp_page_t pg)
{
	cxlp_assert(pagetab_state(t, pg) >= 0);
	return (t->sets[page_set(pg)].state[page_idx(pg)] & PAGE_TAINT) != 0;
}

/* pagetab_move -- move pg from state `from` to `to` (a transition of note
 * 2); a tainted page moved to FREE goes QUARANTINED (note 4). Returns 0,
 * or CXLP_E_BADPAGE (nothing changed) if pg is out of range or not in
 * state `from`. */
int
pagetab_move(struct pagetab *t, cxlp_page_t pg, enum page_state from,
    enum page_state to)
{
	int st = pagetab_state(t, pg);
	struct pageset *s;
	uint32_t set = page_set(pg), idx = page_idx(pg);

	cxlp_assert(from < PAGE_NSTATES && to < PAGE_NSTATES);
	cxlp_assert(legal[from][to]);
	if (st < 0) {
		return st;
	}
	if (st != (int)from) {
		return cxlp_fail(CXLP_E_BADPAGE, "page %#llx is %s, not %s",
		    (unsigned long long)pg, state_names[st],
		    state_names[from]);
	}
	s = &t->sets[set];
	/* a REGISTER of a tainted page went out: no store rolls it back */
	cxlp_assert(!(to == PAGE_ALLOCATED && (s->state[idx] & PAGE_TAINT)));
	if (to == PAGE_FREE && (s->state[idx] & PAGE_TAINT)) {
		to = PAGE_QUARANTINED; /* note 4 */
	}
	s->state[idx] = (uint8_t)((s->state[idx] & PAGE_TAINT) | to);
	t->count[from]--;
	t->count[to]++;
	if (to == PAGE_FREE) {
		s->next[idx] = s->head;
		s->head = idx;
		if (s->nfree++ == 0 && !s->retiring) {
			avail_push(t, set);
		}
		if (s->nfree == s->npages) {
			t->nempty++; /* note 5 */
		}
	}
	return 0;
}

static int
set_check(const struct pageset *s, uint32_t set, uint64_t *counts,
    char *why, size_t n)
{
	uint32_t seen = 0;

	if (s->npages == 0 && (s->nfree != 0 || s->head != PAGE_NONE ||
	    s->next != NULL || s->state != NULL)) {
		snprintf(why, n, "set %u: removed, but has pages", set);
		return CXLP_E_CORRUPT;
	}
	for (uint32_t i = 0; i < s->npages; i++) {
		int st = st_of(s->state[i]);
		bool taint = (s->state[i] & PAGE_TAINT) != 0;

		if (st >= PAGE_NSTATES || (taint && (st == PAGE_FREE ||
		    st == PAGE_ALLOCATED)) || (!taint &&
		    st == PAGE_QUARANTINED)) {
			snprintf(why, n, "set %u page %u: bad state %#x", set,
			    i, s->state[i]);
			return CXLP_E_CORRUPT;
		}
		counts[st]++;
	}
	for (uint32_t i = s->head; i != PAGE_NONE; i = s->next[i]) {
		if (i >= s->npages || s->state[i] != PAGE_FREE ||
		    ++seen > s->nfree) {
			snprintf(why, n, "set %u: free list broken at %u", set,
			    i);
			return CXLP_E_CORRUPT;
		}
	}
	if (seen != s->nfree) {
		snprintf(why, n, "set %u: %u on free list, nfree %u", set,
		    seen, s->nfree);
		return CXLP_E_CORRUPT;
	}
	if (s->nfree > 0 && !s->in_avail) {
		snprintf(why, n, "set %u: has free pages, not on avail", set);
		return CXLP_E_CORRUPT;
	}
	return 0;
}

/* nempty and nlive against the sets (note 5) */
static int
sets_count_check(const struct pagetab *t, char *why, size_t n)
{
	uint32_t empty = 0, live = 0;

	for (uint32_t i = 0; i < t->n; i++) {
		empty += pagetab_empty(t, i);
		live += t->sets[i].npages > 0;
	}
	if (empty != t->nempty || live != t->nlive) {
		snprintf(why, n, "%u empty and %u live sets, counted %u and %u",
		    empty, live, t->nempty, t->nlive);
		return CXLP_E_CORRUPT;
	}
	return 0;
}

/* pagetab_check -- verify notes 1-5; 0 or CXLP_E_CORRUPT with a reason
 * in why (may be NULL). */
int
pagetab_check(const struct pagetab *t, char *why, size_t n)
{
	uint64_t counts[PAGE_NSTATES] = {0};
	char dummy[1];
	int rc;

	if (why == NULL) {
		why = dummy;
		n = sizeof(dummy);
	}
	for (uint32_t i = 0; i < t->n; i++) {
		rc = set_check(&t->sets[i], i, counts, why, n);
		if (rc != 0) {
			return rc;
		}
	}
	if ((rc = sets_count_check(t, why, n)) != 0) {
		return rc;
	}
	for (int s = 0; s < PAGE_NSTATES; s++) {
		if (counts[s] != t->count[s]) {
			snprintf(why, n, "count[%s] %llu, really %llu",
			    state_names[s], (unsigned long long)t->count[s],
			    (unsigned long long)counts[s]);
			return CXLP_E_CORRUPT;
		}
	}
	return 0;
}
