/*
 * pages.h -- the page table (pages.c): every page of the handler's
 * regions and its state, with O(1) alloc and free. Private to the handler
 * library (handler_int.h includes it); apart so that pages.c and its test
 * read it whole.
 */
#ifndef CXLP_HANDLER_PAGES_H
#define CXLP_HANDLER_PAGES_H

#include <stdbool.h>
#include <stdint.h>

#include "cxlpool.h"

enum page_state {
	PAGE_FREE = 0,
	PAGE_ALLOCATED = 1,
	PAGE_INFLIGHT = 2,
	PAGE_REGISTERED = 3,
	PAGE_UNRESOLVED = 4,
	PAGE_INFLIGHT_DELETED = 5, /* in flight, its key already deleted */
	PAGE_QUARANTINED = 6, /* out of use until close (doubt.c) */
	PAGE_NSTATES = 7,
};

#define PAGE_NONE UINT32_MAX

struct pageset {
	uint32_t npages; /* 0: a removed set's slot (pages.c note 5) */
	uint32_t nfree;
	uint32_t head;  /* first free page or PAGE_NONE */
	uint32_t *next; /* next[i]: free page after i (only for FREE pages) */
	uint8_t *state; /* enum page_state per page | PAGE_TAINT */
	bool in_avail;  /* on pagetab.avail */
	bool retiring;  /* asked back: no page handed out (note 6) */
};

struct pagetab {
	struct pageset *sets; /* indexed by local region index */
	uint32_t n, cap;
	uint32_t *avail; /* stack of set indices that may have free pages */
	uint32_t navail;
	uint64_t count[PAGE_NSTATES]; /* pages per state, all sets */
	uint32_t nempty; /* sets whose every page is FREE (note 5) */
	uint32_t nlive;  /* sets not removed */
	uint32_t nretiring; /* sets asked back, not yet removed (note 6) */
};

static inline cxlp_page_t
page_make(uint32_t set, uint32_t idx)
{
	return ((uint64_t)set << 32) | idx;
}

static inline uint32_t
page_set(cxlp_page_t pg)
{
	return (uint32_t)(pg >> 32);
}

static inline uint32_t
page_idx(cxlp_page_t pg)
{
	return (uint32_t)pg;
}

void pagetab_init(struct pagetab *t);
void pagetab_fini(struct pagetab *t);
int pagetab_add(struct pagetab *t, uint32_t npages, uint32_t *set);
/* pagetab_empty -- set holds pages, all FREE. */
bool pagetab_empty(const struct pagetab *t, uint32_t set);
/* pagetab_remove -- take an empty set out, leaving its slot for a later
 * pagetab_add: 0, CXLP_E_BUSY (a page not FREE; nothing changed) or
 * -EINVAL (no such set). */
int pagetab_remove(struct pagetab *t, uint32_t set);
/* pagetab_retire -- hand out no page of set again (pages.c note 6). */
void pagetab_retire(struct pagetab *t, uint32_t set);
/* pagetab_idle -- every page of set is FREE or REGISTERED, untainted. */
bool pagetab_idle(const struct pagetab *t, uint32_t set);
/* pagetab_remove_idle -- take an idle set out, its registered pages with
 * it (*registered: how many); CXLP_E_BUSY when it is not idle. */
int pagetab_remove_idle(struct pagetab *t, uint32_t set,
    uint32_t *registered);
int pagetab_alloc(struct pagetab *t, cxlp_page_t *pg);
int pagetab_state(const struct pagetab *t, cxlp_page_t pg);
int pagetab_move(struct pagetab *t, cxlp_page_t pg, enum page_state from,
    enum page_state to);
int pagetab_check(const struct pagetab *t, char *why, size_t n);
/* pagetab_taint -- mark pg (in flight, unresolved, registered or already
 * quarantined) as one that a late REGISTER copy may still publish: from
 * now on a move of it to FREE makes it QUARANTINED (doubt.c). */
void pagetab_taint(struct pagetab *t, cxlp_page_t pg);
/* pagetab_tainted -- pg is marked (pg valid). */
bool pagetab_tainted(const struct pagetab *t, cxlp_page_t pg);

#endif /* CXLP_HANDLER_PAGES_H */
