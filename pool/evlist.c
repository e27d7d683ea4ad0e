/*
 * evlist.c -- the eviction state the KV index keeps up to date: each
 * region's list of keys, and the access bytes readers set (evict.c has
 * the design notes: 4 and 5 for these).
 *
 * Why a module of its own: kv.c links and unlinks a key here whenever it
 * enters or leaves the index, and evict.c takes victims through kv.c
 * (kv_drop_slot); with the lists in evict.c the two files called each
 * other. Now kv.c and evict.c both call down into this one, which calls
 * nothing of the pool's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "pool_int.h"

/* evlist_init -- see pool_int.h */
int
evlist_init(struct pool *p)
{
	const struct pool_sb *sb = p->sb;
	struct evict_dram *e = &p->ev;
	uint64_t slots = sb->area[POOL_AREA_INDEX].count;

	memset(e, 0, sizeof(*e));
	e->nslots = slots;
	if (sb->compat & POOL_COMPAT_ACCESS) {
		e->access = p->base + sb->access.off;
	} else {
		e->access = calloc(slots, 1);
		e->access_dram = true;
	}
	e->next = malloc(slots * sizeof(*e->next));
	e->prev = malloc(slots * sizeof(*e->prev));
	e->head = malloc((p->nregions + 1) * sizeof(*e->head));
	if (e->access == NULL || e->next == NULL || e->prev == NULL ||
	    e->head == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for the eviction state "
		    "of %llu slots", (unsigned long long)slots);
	}
	memset(e->head, 0xff, (p->nregions + 1) * sizeof(*e->head));
	return 0;
}

/* evlist_fini -- see pool_int.h */
void
evlist_fini(struct pool *p)
{
	struct evict_dram *e = &p->ev;

	if (e->access_dram) {
		free(e->access);
	}
	free(e->next);
	free(e->prev);
	free(e->head);
	memset(e, 0, sizeof(*e));
}

/* evlist_link -- see pool_int.h */
void
evlist_link(struct pool *p, uint64_t slot, uint32_t region)
{
	struct evict_dram *e = &p->ev;
	uint32_t s = (uint32_t)slot;

	e->prev[s] = EV_NIL;
	e->next[s] = e->head[region];
	if (e->head[region] != EV_NIL) {
		e->prev[e->head[region]] = s;
	}
	e->head[region] = s;
}

/* evlist_unlink -- see pool_int.h */
void
evlist_unlink(struct pool *p, uint64_t slot, uint32_t region)
{
	struct evict_dram *e = &p->ev;
	uint32_t s = (uint32_t)slot;

	if (e->prev[s] == EV_NIL) {
		cxlp_assert(e->head[region] == s);
		e->head[region] = e->next[s];
	} else {
		e->next[e->prev[s]] = e->next[s];
	}
	if (e->next[s] != EV_NIL) {
		e->prev[e->next[s]] = e->prev[s];
	}
}

/* evlist_check -- see pool_int.h */
void
evlist_check(const struct pool *p, void (*bad)(void *arg, uint32_t region,
    uint64_t listed), void *arg)
{
	const struct evict_dram *e = &p->ev;

	for (uint32_t r = 0; e->head != NULL && r < p->nregions; r++) {
		uint64_t n = 0;

		for (uint32_t s = e->head[r]; s != EV_NIL &&
		    n <= p->reg[r].nkeys; s = e->next[s]) {
			n++;
		}
		if (n != (p->reg[r].live ? p->reg[r].nkeys : 0)) {
			bad(arg, r, n);
		}
	}
}

/* pool_access_touch -- see pool.h */
void
pool_access_touch(const struct pool *p, uint64_t slot)
{
	uint8_t *a = p->ev.access;

	if (a != NULL && slot < p->ev.nslots &&
	    __atomic_load_n(&a[slot], __ATOMIC_RELAXED) == 0) {
		__atomic_store_n(&a[slot], 1, __ATOMIC_RELAXED);
	}
}

/* pool_access_shared -- see pool.h */
bool
pool_access_shared(const struct pool *p)
{
	return !p->ev.access_dram;
}

/* pool_evict_set_order -- see pool.h */
void
pool_evict_set_order(struct pool *p, bool use_access)
{
	p->ev.ignore_access = !use_access;
}
