/*
 * lease.c -- leases: pins with a time limit, so that a reader that dies
 * or forgets cannot hold a key, and its space, for ever.
 *
 * Why DRAM, with one durable word: a lease is renewed on hot paths (every
 * leased retrieve) and lasts seconds, so writing each one to media would
 * cost a persist per read for state that is stale a few seconds later.
 * What must survive a crash is only the promise: no key leased before a
 * kill -9 may be evicted by the restarted server while its lease could
 * still run. So the pool keeps one word, the superblock's lease_until_ns
 * (wall-clock ns), raised before any lease that would outlast it is
 * granted [pool_lease_set], and a restarted server evicts nothing before
 * it passes (the metaserver's rule, evict.c). Raising it with a second of
 * slack makes it one persisted store per second of steady leasing.
 *
 * DESIGN NOTES
 *
 * 1. Entry: (session, slot) -> until, monotonic ms of the caller's clock;
 *    at most one per (session, slot): a lease taken again is renewed (its
 *    until replaced). Entries hang off hash buckets by slot, so "is this
 *    key leased" [pool_leased] walks the few entries of one bucket.
 *
 * 2. Expiry is exact without a timer: pool_leased ignores entries whose
 *    until has passed; pool_lease_expire drops them (the reaper's pass).
 *    A released or expired lease is gone; a session's end drops its own.
 *
 * 3. The table grows by doubling (rehashing), up to POOL_LEASES_PER_SLOT
 *    entries per index slot (POOL_LEASES_MIN at least): sessions that
 *    lease every key again and again cannot make the server's memory
 *    grow without bound. Past that a lease is refused (CXLP_E_NOSPACE),
 *    never a lease silently lost.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "persist.h"
#include "pool_int.h"

#define LEASE_NIL UINT32_MAX
#define HORIZON_SLACK_NS 1000000000ull /* note: one store per second */

static uint32_t
lease_bucket(uint64_t slot, uint32_t mask)
{
	uint64_t h = slot * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32) & mask;
}

/* the most entries the table may hold (note 3) */
static uint64_t
lease_limit(const struct pool *p)
{
	uint64_t n = p->ev.nslots * POOL_LEASES_PER_SLOT;

	return n < POOL_LEASES_MIN ? POOL_LEASES_MIN : n;
}

/* lease_fini -- see pool_int.h */
void
lease_fini(struct pool *p)
{
	free(p->lease.ent);
	free(p->lease.head);
	memset(&p->lease, 0, sizeof(p->lease));
}

/* rehash into a table of cap entries (a power of two) */
static int
lease_grow(struct lease_dram *l, uint32_t cap)
{
	struct lease_ent *ent = calloc(cap, sizeof(*ent));
	uint32_t *head = malloc(cap * sizeof(*head));
	uint32_t n = 0;

	if (ent == NULL || head == NULL) {
		free(ent);
		free(head);
		return cxlp_fail(-ENOMEM, "no memory for %u leases", cap);
	}
	memset(head, 0xff, cap * sizeof(*head));
	for (uint32_t b = 0; b < l->cap; b++) {
		for (uint32_t i = l->head[b]; i != LEASE_NIL;
		    i = l->ent[i].next) {
			uint32_t nb = lease_bucket(l->ent[i].slot, cap - 1);

			ent[n] = l->ent[i];
			ent[n].next = head[nb];
			head[nb] = n++;
		}
	}
	for (uint32_t i = n; i < cap; i++) {
		ent[i].next = i + 1 < cap ? i + 1 : LEASE_NIL;
	}
	free(l->ent);
	free(l->head);
	l->ent = ent;
	l->head = head;
	l->free = n < cap ? n : LEASE_NIL;
	l->cap = cap;
	return 0;
}

/* the entry of (session, slot), its bucket link in *pp; or LEASE_NIL */
static uint32_t
lease_find(const struct lease_dram *l, uint64_t session, uint64_t slot,
    uint32_t **pp)
{
	uint32_t *link;

	if (l->cap == 0) {
		return LEASE_NIL;
	}
	link = &l->head[lease_bucket(slot, l->cap - 1)];
	while (*link != LEASE_NIL && (l->ent[*link].session != session ||
	    l->ent[*link].slot != slot)) {
		link = &l->ent[*link].next;
	}
	if (pp != NULL) {
		*pp = link;
	}
	return *link;
}

/* unlink the entry *link points at and put it on the free list */
static void
lease_drop(struct lease_dram *l, uint32_t *link)
{
	uint32_t i = *link;

	*link = l->ent[i].next;
	l->ent[i].next = l->free;
	l->free = i;
	l->n--;
}

/* raise the durable horizon to cover until_ns (note: before the lease) */
static void
horizon_cover(struct pool *p, uint64_t until_ns)
{
	if (until_ns > p->sb->lease_until_ns) {
		pool_store8(p, &p->sb->lease_until_ns,
		    until_ns + HORIZON_SLACK_NS);
	}
}

/* pool_lease_set -- see pool.h */
int
pool_lease_set(struct pool *p, uint64_t session, uint64_t slot,
    uint64_t until_ms, uint64_t until_ns)
{
	struct lease_dram *l = &p->lease;
	uint32_t *link, i = lease_find(l, session, slot, &link);
	uint32_t b;
	int rc;

	if (p->rdonly) {
		return cxlp_fail(-EROFS, "%s: opened read-only", p->path);
	}
	if (until_ms == 0) { /* release */
		if (i == LEASE_NIL) {
			return cxlp_fail(CXLP_E_NOTPINNED, "session %llu holds "
			    "no lease on slot %llu", (unsigned long long)session,
			    (unsigned long long)slot);
		}
		lease_drop(l, link);
		return 0;
	}
	horizon_cover(p, until_ns);
	if (i != LEASE_NIL) {
		l->ent[i].until_ms = until_ms; /* renewed */
		return 0;
	}
	if (l->cap == 0 || l->free == LEASE_NIL) {
		if (l->cap >= lease_limit(p)) {
			return cxlp_fail(CXLP_E_NOSPACE, "lease table full: %u "
			    "leases", l->n);
		}
		if ((rc = lease_grow(l, l->cap ? 2 * l->cap : 256)) != 0) {
			return rc;
		}
	}
	i = l->free;
	l->free = l->ent[i].next;
	b = lease_bucket(slot, l->cap - 1);
	l->ent[i] = (struct lease_ent){ .session = session, .slot = slot,
		.until_ms = until_ms, .next = l->head[b] };
	l->head[b] = i;
	l->n++;
	return 0;
}

/* pool_leased -- see pool.h */
bool
pool_leased(const struct pool *p, uint64_t slot, uint64_t now_ms)
{
	const struct lease_dram *l = &p->lease;

	if (l->n == 0) {
		return false;
	}
	for (uint32_t i = l->head[lease_bucket(slot, l->cap - 1)];
	    i != LEASE_NIL; i = l->ent[i].next) {
		if (l->ent[i].slot == slot && l->ent[i].until_ms > now_ms) {
			return true;
		}
	}
	return false;
}

/* drop the entries pred says go; returns how many */
static uint64_t
lease_sweep(struct lease_dram *l, bool (*pred)(const struct lease_ent *,
    uint64_t), uint64_t arg)
{
	uint64_t n = 0;

	for (uint32_t b = 0; l->n > 0 && b < l->cap; b++) {
		uint32_t *link = &l->head[b];

		while (*link != LEASE_NIL) {
			if (pred(&l->ent[*link], arg)) {
				lease_drop(l, link);
				n++;
			} else {
				link = &l->ent[*link].next;
			}
		}
	}
	return n;
}

static bool
of_session(const struct lease_ent *e, uint64_t session)
{
	return e->session == session;
}

static bool
expired(const struct lease_ent *e, uint64_t now_ms)
{
	return e->until_ms <= now_ms;
}

/* pool_lease_release_session -- see pool.h */
uint64_t
pool_lease_release_session(struct pool *p, uint64_t session)
{
	return lease_sweep(&p->lease, of_session, session);
}

/* pool_lease_expire -- see pool.h */
uint64_t
pool_lease_expire(struct pool *p, uint64_t now_ms)
{
	uint64_t n = lease_sweep(&p->lease, expired, now_ms);

	p->lease.expired += n;
	return n;
}

/* pool_lease_stats -- see pool.h */
void
pool_lease_stats(const struct pool *p, uint64_t *active, uint64_t *expired)
{
	*active = p->lease.n;
	*expired = p->lease.expired;
}

/* pool_lease_horizon_ns -- see pool.h */
uint64_t
pool_lease_horizon_ns(const struct pool *p)
{
	return p->sb->lease_until_ns;
}
