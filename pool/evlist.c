/*
 * evlist.c -- the eviction state the KV index keeps up to date: each
 * region's list of keys, the access bytes readers set, and in sw and sim
 * pools the host table that gives each host's readers a slice of their
 * own (evict.c has the design notes: 4, 5 and 8 for these).
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

#include "coh.h"
#include "err.h"
#include "persist.h"
#include "pool_int.h"

/* The slice of host table entry i starts being read: what it holds now
 * is what the hand saw last (counts from before this open do not
 * count). The whole metadata area was dropped at open (poolcoh.c note
 * 3); a slice taken at a HELLO is dropped here. 0 or -ENOMEM. */
static int
slice_watch(struct pool *p, uint32_t i, bool drop)
{
	struct evict_dram *e = &p->ev;
	const uint8_t *slice = e->slices + i * e->stride;

	if ((e->seen[i] = malloc(e->nslots)) == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for the access counters "
		    "of host slice %u", i);
	}
	if (drop) {
		pool_fresh(p, slice, e->nslots);
	}
	memcpy(e->seen[i], slice, e->nslots);
	if (p->sb->hosts[i] == coh_host_hash()) {
		e->self = i;
	}
	return 0;
}

/* sw and sim: the slices of the hosts in the table (evict.c note 8); the
 * server's own lookups count in DRAM */
static int
slices_init(struct pool *p)
{
	const struct pool_sb *sb = p->sb;
	struct evict_dram *e = &p->ev;
	int rc;

	e->slices = p->base + sb->access.off;
	e->stride = layout_access_stride(sb);
	e->nhosts = sb->access_hosts;
	for (uint32_t i = 0; i < e->nhosts; i++) {
		if (sb->hosts[i] != 0 && (rc = slice_watch(p, i, false)) != 0) {
			return rc;
		}
	}
	return 0;
}

/* evlist_init -- see pool_int.h */
int
evlist_init(struct pool *p)
{
	const struct pool_sb *sb = p->sb;
	struct evict_dram *e = &p->ev;
	uint64_t slots = sb->area[POOL_AREA_INDEX].count;

	memset(e, 0, sizeof(*e));
	e->nslots = slots;
	e->self = UINT32_MAX;
	e->fresh = UINT64_MAX;
	if ((sb->compat & POOL_COMPAT_ACCESS) && sb->access_hosts == 0) {
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
	return sb->access_hosts > 0 ? slices_init(p) : 0;
}

/* evlist_fini -- see pool_int.h */
void
evlist_fini(struct pool *p)
{
	struct evict_dram *e = &p->ev;

	if (e->access_dram) {
		free(e->access);
	}
	for (uint32_t i = 0; i < POOL_HOSTS_MAX; i++) {
		free(e->seen[i]);
	}
	free(e->next);
	free(e->prev);
	free(e->head);
	memset(e, 0, sizeof(*e));
}

/* pool_host_slice -- see pool.h */
int
pool_host_slice(struct pool *p, uint64_t host)
{
	struct pool_sb *sb = p->sb;
	uint32_t i, free_at = UINT32_MAX;
	int rc;

	if (host == 0 || p->rdonly) {
		return cxlp_fail(-EINVAL, "host table: %s", host == 0 ?
		    "host 0" : "read-only pool");
	}
	if (p->ev.slices == NULL) {
		return 0; /* one slice, every host's */
	}
	for (i = 0; i < sb->access_hosts; i++) {
		if (sb->hosts[i] == host) {
			return (int)i;
		}
		if (sb->hosts[i] == 0 && free_at == UINT32_MAX) {
			free_at = i;
		}
	}
	if (free_at == UINT32_MAX) {
		return cxlp_fail(CXLP_E_NOSPACE, "host table full: %u hosts "
		    "have access slices (their readers' direct reads count "
		    "in the eviction order; this host's do not)",
		    sb->access_hosts);
	}
	if ((rc = slice_watch(p, free_at, true)) != 0) {
		return rc;
	}
	/* quiet, as open_nonce: a HELLO's, not the workload's crash point */
	pool_set8(&sb->hosts[free_at], host);
	pool_persist_quiet(p, &sb->hosts[free_at], sizeof(uint64_t));
	return (int)free_at;
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
	return !p->ev.access_dram || p->ev.slices != NULL;
}

/* pool_evict_set_order -- see pool.h */
void
pool_evict_set_order(struct pool *p, bool use_access)
{
	p->ev.ignore_access = !use_access;
}
