/*
 * reclaim.c -- room from a full pool: when this handler's regions have no
 * free page, one RECLAIM round trip gets either a new region or, when the
 * pool has none, pages of this handler's own regions whose keys the
 * metaserver evicted for it (metaserver/evict.c note 2). Never a round
 * trip per page: one asks for a batch (want, below) and the pages that
 * come back serve the allocations after it from the free list.
 *
 * DESIGN NOTES
 *
 * 1. A page that comes back held a key of mine that is now durably gone
 *    from the index, so it is free again exactly as after a delete of that
 *    key (pagelife_key_gone): REGISTERED -> FREE, and a store still settling
 *    (INFLIGHT) or unresolved settles as its own rules say.
 *
 * 2. The gate. resolve_run registers again keys whose first register's
 *    outcome was lost, at the same pages. If an eviction of such a key
 *    raced with that re-register -- the server evicts the page, the
 *    re-register puts the key back at it and settles it REGISTERED, then
 *    the RECLAIM reply frees the page -- the page would be handed out
 *    while a key points at it. So RECLAIMs hold the gate shared from
 *    request to applied reply, and resolve_run holds it exclusive: each
 *    sees the other's effect whole.
 *
 * 3. CXLP_E_NOSPACE carries the metaserver's reason (what holds the
 *    pool: pinned keys, other handlers' regions, eviction off).
 *
 * 4. A RECLAIM whose reply is lost (timeout) may have evicted keys whose
 *    pages are then never returned; they stay REGISTERED (not free) until
 *    close. That costs room, never correctness; the next RECLAIM evicts
 *    others.
 *
 * 5. CXLP_E_BUSY: the server asked other handlers to give regions back
 *    (metaserver/asks.c), or a restarted server waits for leases its
 *    predecessor granted. The alloc waits and asks again, a few ms at
 *    first, then up to every 100 ms, for at most the request timeout;
 *    then CXLP_E_NOSPACE with the server's reason.
 *
 * 6. Waiting for room (cxlp_config_set_alloc_wait_ms). When nothing can
 *    be evicted, the alloc waits in the metaserver, in arrival order
 *    among the waiting handlers, until something makes room
 *    (metaserver/waitq.c). It waits in slices of at most WAIT_SLICE_MS
 *    (and half the request timeout, so a wait is never taken for a lost
 *    reply), each but the last marked PROTO_RECLAIM_MORE so that the
 *    handler keeps its place, and between slices it looks at its own free
 *    list: a page another thread of this process freed never reaches the
 *    server.
 *
 * 7. Refill ahead of need: the handler's side of the low watermark. Once
 *    a RECLAIM has answered with pages (the pool is full: no region was
 *    free), and with at least half the batch it asked for (so there are
 *    evictable keys to spare), an alloc that leaves fewer free pages than
 *    half a batch pokes the keeper thread, which makes the next RECLAIM
 *    itself [reclaim_refill], so stores find pages on the free list
 *    instead of waiting a round trip for them. The free pages the
 *    server's watermark keeps (metaserver/evict.c note 3) are whole
 *    regions, which a pool of live handlers has none of: the room they
 *    need is inside their own regions, so it is kept there, by the one
 *    who needs it. A refill never runs beside an alloc's RECLAIM (it only
 *    tries expand_lock), and a RECLAIM that finds a region, or fewer
 *    victims than that, ends the full state until one answers with a
 *    batch again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "err.h"
#include "region.h"
#include "log.h"

#define BUSY_NAP_MIN_MS 5u   /* first wait after CXLP_E_BUSY (note 5) */
#define BUSY_NAP_MAX_MS 100u /* and the longest */
#define WANT_SHARE 20 /* a RECLAIM asks for 1/20 of my pages, at least a
                       * region's worth */
#define WAIT_SLICE_MS 250u /* the longest wait one RECLAIM asks for */

/* reclaim_init -- see region.h */
void
reclaim_init(struct reclaimer *r)
{
	cxlp_assert(pthread_rwlock_init(&r->gate, NULL) == 0);
	cxlp_assert(pthread_mutex_init(&r->refill_lock, NULL) == 0);
	r->pages = r->calls = r->refills = 0;
	r->full = false;
	r->low = 0;
}

/* reclaim_fini -- see region.h */
void
reclaim_fini(struct reclaimer *r)
{
	cxlp_assert(pthread_rwlock_destroy(&r->gate) == 0);
	cxlp_assert(pthread_mutex_destroy(&r->refill_lock) == 0);
}

/* reclaim_gate_lock -- see region.h */
void
reclaim_gate_lock(struct cxlp_handler *h)
{
	cxlp_assert(pthread_rwlock_wrlock(&h->reclaim.gate) == 0);
}

/* reclaim_gate_unlock -- see region.h */
void
reclaim_gate_unlock(struct cxlp_handler *h)
{
	cxlp_assert(pthread_rwlock_unlock(&h->reclaim.gate) == 0);
}

/* pages to ask for: a region's worth, or 1/WANT_SHARE of what I own */
static uint32_t
want_pages(struct cxlp_handler *h)
{
	uint64_t per_region = owntab_region_len(h) / h->cfg.page_size;
	uint64_t mine;

	pthread_mutex_lock(&h->page_lock);
	mine = 0;
	for (uint32_t i = 0; i < h->pages.n; i++) {
		mine += h->pages.sets[i].npages;
	}
	pthread_mutex_unlock(&h->page_lock);
	if (per_region < mine / WANT_SHARE) {
		per_region = mine / WANT_SHARE;
	}
	if (per_region == 0) {
		per_region = 1;
	}
	return per_region > PROTO_RECLAIM_MAX ? PROTO_RECLAIM_MAX :
	    (uint32_t)per_region;
}

/* the RECLAIM call: 0 and *m (pages malloc'd), or an error */
static int
reclaim_call(struct cxlp_handler *h, uint64_t len, uint32_t want,
    uint32_t wait, struct proto_reclaimed *m)
{
	uint64_t id = h->regions.req ? h->regions.req : client_new_id(h->cl);
	struct creply rep;
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	proto_put_reclaim_req(&b, len, h->cfg.page_size, want, wait);
	rc = h_call_id(h, PROTO_OP_RECLAIM, id, &b, &rep);
	pbuf_fini(&b);
	h->regions.req = rc == CXLP_E_TIMEOUT || rc == CXLP_E_CONN ? id : 0;
	__atomic_add_fetch(&h->reclaim.calls, 1, __ATOMIC_RELAXED);
	if (rc != 0) {
		return rc;
	}
	rc = proto_get_reclaimed(&rep.body, m);
	client_reply_fini(&rep);
	if (rc != 0) {
		return cxlp_fail(CXLP_E_PROTO, "RECLAIM: bad reply body");
	}
	return m->kind == PROTO_RECLAIM_REGION ?
	    owntab_grant_check(h, &m->loc) : 0;
}

/* note 1: each page back is free again; returns how many were mine */
static uint32_t
pages_back(struct cxlp_handler *h, const struct proto_reclaimed *m)
{
	uint32_t mine = 0;

	for (uint32_t i = 0; i < m->n; i++) {
		const struct proto_page *pp = &m->pages[i];
		struct proto_loc loc = { .region = pp->region, .gen = pp->gen };
		int set;

		pthread_mutex_lock(&h->page_lock);
		set = owntab_find(h, pp->region, pp->gen);
		if (set >= 0) {
			loc.region_off = h->regions.own[set]->loc.region_off;
			loc.off = loc.region_off +
			    (uint64_t)pp->page * h->cfg.page_size;
		}
		pthread_mutex_unlock(&h->page_lock);
		if (set < 0) {
			log_err("reclaim: page %u of region %u gen %u is not "
			    "mine; ignored", pp->page, pp->region, pp->gen);
			continue;
		}
		pagelife_key_gone(h, &loc);
		mine++;
	}
	return mine;
}

/* note 7: what a RECLAIM's answer says of the pool; want is what it
 * asked for */
static void
full_note(struct cxlp_handler *h, int rc, const struct proto_reclaimed *m,
    uint32_t want)
{
	/* full of evictable keys: a RECLAIM that found fewer than half
	 * what it asked for (the rest pinned, leased, or others') says a
	 * refill would only take the last few keys there are */
	bool full = rc == 0 && m->kind == PROTO_RECLAIM_PAGES &&
	    m->n >= want / 2;

	if (rc == 0 || rc == CXLP_E_NOSPACE) {
		__atomic_store_n(&h->reclaim.low, full ? want / 2 : 0,
		    __ATOMIC_RELAXED);
		__atomic_store_n(&h->reclaim.full, full, __ATOMIC_RELAXED);
	}
}

/* note 6: the wait the next RECLAIM may ask for, until room_until */
static uint32_t
wait_slice(const struct cxlp_handler *h, uint64_t room_until)
{
	uint64_t now = cxlp_now_ms(), cap = h->cfg.timeout_ms / 2;

	cap = cap < WAIT_SLICE_MS ? cap : WAIT_SLICE_MS;
	if (now >= room_until || cap == 0) {
		return 0;
	}
	return room_until - now > cap ? (uint32_t)cap | PROTO_RECLAIM_MORE :
	    (uint32_t)(room_until - now);
}

/* one RECLAIM that may wait for room until room_until (0: not at all),
 * and what its reply gives: a page into *pg, or with pg NULL (a refill)
 * only the room */
static int
reclaim_once(struct cxlp_handler *h, cxlp_page_t *pg, bool grow,
    uint64_t room_until, uint32_t need)
{
	uint32_t want = want_pages(h);
	struct proto_reclaimed m;
	int rc;

	if (need > want) { /* a reservation's pages in one round trip */
		want = need < PROTO_RECLAIM_MAX ? need : PROTO_RECLAIM_MAX;
	}
	grow = grow && owntab_may_grow(h);
	cxlp_assert(pthread_rwlock_rdlock(&h->reclaim.gate) == 0);
	rc = reclaim_call(h, grow ? owntab_region_len(h) : 0, want,
	    wait_slice(h, room_until), &m);
	if (rc == 0 && m.kind == PROTO_RECLAIM_PAGES) {
		__atomic_add_fetch(&h->reclaim.pages, pages_back(h, &m),
		    __ATOMIC_RELAXED);
	}
	cxlp_assert(pthread_rwlock_unlock(&h->reclaim.gate) == 0);
	full_note(h, rc, &m, want);
	if (rc == CXLP_E_NOSPACE && !grow) {
		return cxlp_fail(CXLP_E_NOSPACE, "alloc: all regions full, %s, "
		    "and none of their keys can be evicted",
		    h->cfg.auto_expand ? "max_regions reached" :
		    "auto-expand is off");
	}
	if (rc != 0) {
		return rc;
	}
	if (m.kind == PROTO_RECLAIM_REGION) {
		return regions_enter(h, &m.loc, pg);
	}
	free(m.pages);
	if (pg == NULL) {
		return 0;
	}
	pthread_mutex_lock(&h->page_lock);
	rc = pagetab_alloc(&h->pages, pg);
	pthread_mutex_unlock(&h->page_lock);
	return rc == 0 ? 0 : cxlp_fail(CXLP_E_NOSPACE, "alloc: eviction "
	    "freed %u pages and other threads took them all", m.n);
}

/* a page from my own free list (other threads freed one meanwhile) */
static bool
local_page(struct cxlp_handler *h, cxlp_page_t *pg)
{
	int rc;

	pthread_mutex_lock(&h->page_lock);
	rc = pagetab_alloc(&h->pages, pg);
	pthread_mutex_unlock(&h->page_lock);
	return rc == 0;
}

/* reclaim -- see region.h (notes 5, 6). expand_lock is let go while
 * it naps, so the keeper can give back regions asked of this handler. */
int
reclaim(struct cxlp_handler *h, cxlp_page_t *pg, bool grow,
    unsigned wait_ms, uint32_t need)
{
	uint64_t start = cxlp_now_ms();
	uint64_t room_until = start + (h->cfg.timeout_ms >= 2 ? wait_ms : 0);
	uint64_t until = start + (h->cfg.timeout_ms > wait_ms ?
	    h->cfg.timeout_ms : wait_ms);
	unsigned nap = BUSY_NAP_MIN_MS;
	int rc;

	for (;;) {
		uint64_t t0 = cxlp_now_ms();
		unsigned pause;

		rc = reclaim_once(h, pg, grow, room_until, need);
		if (rc == CXLP_E_NOSPACE && cxlp_now_ms() < room_until) {
			/* the server waited a slice; one answered at once (a
			 * server shutting down) is not asked again at once */
			pause = cxlp_now_ms() - t0 < WAIT_SLICE_MS / 4 ?
			    BUSY_NAP_MIN_MS : 0;
		} else if (rc == CXLP_E_BUSY && cxlp_now_ms() + nap < until) {
			pause = nap;
			nap = nap * 2 > BUSY_NAP_MAX_MS ? BUSY_NAP_MAX_MS :
			    nap * 2;
		} else {
			break;
		}
		/* between tries the keeper may give back what the server
		 * asked of me (giveback.c), and my threads may free pages */
		pthread_mutex_unlock(&h->expand_lock);
		cxlp_sleep_ms(pause);
		pthread_mutex_lock(&h->expand_lock);
		if (local_page(h, pg)) {
			return 0; /* the server drops my place (waitq.c) */
		}
	}
	if (rc == CXLP_E_BUSY) {
		char why[256];

		snprintf(why, sizeof(why), "%s", cxlp_errormsg());
		return cxlp_fail(CXLP_E_NOSPACE, "alloc: pool full for %llu ms: "
		    "%s", (unsigned long long)(cxlp_now_ms() - start), why);
	}
	return rc;
}

/* reclaim_low_locked -- see region.h (note 7) */
bool
reclaim_low_locked(const struct cxlp_handler *h)
{
	return __atomic_load_n(&h->reclaim.full, __ATOMIC_RELAXED) &&
	    h->pages.count[PAGE_FREE] <
	    __atomic_load_n(&h->reclaim.low, __ATOMIC_RELAXED);
}

/* The keeper's RECLAIM ahead of need (note 7). */
static void
reclaim_refill(struct cxlp_handler *h)
{
	bool low;
	int rc;

	if (pthread_mutex_trylock(&h->expand_lock) != 0) {
		return; /* an alloc is making room itself */
	}
	pthread_mutex_lock(&h->page_lock);
	low = reclaim_low_locked(h) && h_check_session(h) == 0;
	pthread_mutex_unlock(&h->page_lock);
	if (low) {
		__atomic_add_fetch(&h->reclaim.refills, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&h->reclaim.refill_lock);
		rc = reclaim_once(h, NULL, h->cfg.auto_expand, 0, 0);
		pthread_mutex_unlock(&h->reclaim.refill_lock);
		if (rc != 0) {
			/* BUSY or lost: the next alloc that needs room asks */
			__atomic_store_n(&h->reclaim.full, false,
			    __ATOMIC_RELAXED);
			log_info("refill: %s", cxlp_errormsg());
		}
	}
	pthread_mutex_unlock(&h->expand_lock);
}

static uint64_t
refill_due(struct cxlp_handler *h)
{
	(void)h;
	return UINT64_MAX; /* when poked only */
}

static bool
refill_run(struct cxlp_handler *h)
{
	reclaim_refill(h);
	rmap_drain(h);
	return true;
}

/* reclaim_refill_task -- see region.h */
const struct keeper_task reclaim_refill_task = { refill_due, refill_run };
