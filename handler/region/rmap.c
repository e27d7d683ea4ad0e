/*
 * rmap.c -- the region map: every mapping a handler holds, own and
 * foreign, keyed by region id, and the read-only mappings of other
 * handlers' regions, made on first use (regions.c maps the own ones).
 *
 * Every mapping, own or foreign, sits in one small hash keyed by region id
 * under a rwlock (h->regions.map_lock). Retrieve only ever takes that
 * lock shared, and only to turn a (region, gen, off) location into a
 * pointer, so reads never wait for the page lock that serializes
 * allocation. A foreign region is mapped on first use and cached; a
 * location with a different gen means the region id was reused, and the
 * old mapping is replaced. A replaced mapping is retired, not unmapped,
 * until the handler closes: a pointer an earlier retrieve returned
 * (without a pin, its key since deleted) then reads stale bytes instead of
 * faulting -- the bytes of a deleted key are undefined, but a reader must
 * never crash on them. Own regions are entered in the same hash
 * (borrowing their mapping), so a key in one of my regions resolves to my
 * read-write mapping.
 *
 * The map also keeps the queue of its changes for the region callback
 * (regview.c has the views; cxlp_set_region_fn is here, with the queue).
 *
 * DESIGN NOTES
 * 1. No callback under a lock. The region map changes under map_lock held
 *    for writing, often with expand_lock held too (an alloc that adds a
 *    region). A callback that called back into the library from there
 *    would deadlock. So changes are queued [rmap_note, under map_lock
 *    and the queue's ev_lock, a leaf lock] and delivered later by
 *    rmap_drain, which the library calls where it holds no lock: at
 *    the end of every alloc (alloc_wait), retrieve (ops.c), region
 *    view, in the keeper thread after its work, and at close before the
 *    mappings go (rmap_fini). A call that hands out a pointer into a new
 *    region therefore returns only after that region's MAPPED was
 *    delivered (by itself, or by the thread already delivering: drain
 *    waits for deliver_lock).
 * 2. Order. One queue, filled under map_lock: events are delivered in the
 *    order the map changed, one at a time (deliver_lock), so every
 *    MAPPED of a region is followed by its UNMAPPING before any later
 *    MAPPED of the same id. Each event carries the function that was
 *    set when the map changed, and goes to that one.
 * 3. Re-entry. A callback may call the library; a drain on a thread
 *    that is delivering that handler's events returns at once (a
 *    thread-local stack of the handlers it delivers for marks it, so a
 *    callback of one handler may call another's, whose callback may call
 *    the first), and the events its calls queued are delivered by the
 *    outer loop right after the callback returns. cxlp_set_region_fn
 *    from a callback is refused with -EDEADLK; cxlp_close of h from one
 *    is refused (logged; h stays open): the call delivering goes on using
 *    h after the callback returns. A submit from one never waits for a
 *    slot (async.c note 2). Two threads each
 *    delivering one handler's events, whose callbacks call the other
 *    handler, wait for each other: a callback should not call into
 *    another handler that delivers on another thread.
 * 4. Replay. cxlp_set_region_fn, under deliver_lock, first delivers what
 *    is pending to the old function, then (map_lock held for writing)
 *    swaps the function and queues a MAPPED of every entry of the map,
 *    in region id order, for the new one: events queued before the swap
 *    still go to the old function (note 2), so neither misses a change
 *    nor hears one twice.
 * 5. Without a function set no event is queued (the queue's state is
 *    allocated at the first cxlp_set_region_fn and lives until the
 *    handler is freed).
 * 6. Fresh values [rmap_resolve_ptr]. On a pool of sw or sim coherence
 *    (DESIGN.md contract 11) a value may have been written by another
 *    host, and this host's cache may hold older bytes of its page (read
 *    before, or, in the simulator, loaded with the host's cache). So the
 *    lines of every value a retrieve hands out are dropped first, on the
 *    mapping the pointer lies in, under map_lock (shared), own regions
 *    included: a page of mine freed and reused since my last read of it
 *    may have been another host's meanwhile (a region given back and
 *    granted again), and the version check, run after the copy, must see
 *    the bytes the device holds. A range that outlives the retrieve (a
 *    device copy started later, a second read) is dropped again by
 *    cxlp_prepare_read (regview.c). On host and hw pools pmap_fresh is
 *    one test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "region.h"
#include "log.h"
#include "map.h"

static struct rmap_ent **
rmap_slot(struct cxlp_handler *h, uint32_t region)
{
	struct rmap_ent **pp = &h->regions.rmap[region % RMAP_BUCKETS];

	while (*pp != NULL && (*pp)->region != region) {
		pp = &(*pp)->next;
	}
	return pp;
}

static void
rmap_ent_free(struct cxlp_handler *h, struct rmap_ent *e)
{
	if (!e->own) {
		pmap_close(&e->map);
		h->regions.nforeign--;
	}
	free(e);
}

/* Take old out of service: own entries borrow their mapping and go; a
 * foreign mapping is kept on h->regions.retired until close. */
static void
rmap_retire(struct cxlp_handler *h, struct rmap_ent *old)
{
	if (old->own) {
		rmap_ent_free(h, old);
		return;
	}
	h->regions.nforeign--;
	old->next = h->regions.retired;
	h->regions.retired = old;
}

/* rmap_put -- see region.h */
void
rmap_put(struct cxlp_handler *h, struct rmap_ent *e)
{
	struct rmap_ent **pp = rmap_slot(h, e->region);

	if (*pp != NULL) {
		struct rmap_ent *old = *pp;

		rmap_note(h, old, CXLP_REGION_UNMAPPING);
		e->next = old->next;
		rmap_retire(h, old);
	} else {
		e->next = NULL;
	}
	*pp = e;
	if (!e->own) {
		h->regions.nforeign++;
	}
	rmap_note(h, e, CXLP_REGION_MAPPED);
}

/* rmap_fini -- see region.h */
void
rmap_fini(struct cxlp_handler *h)
{
	/* the region callback hears of every mapping before it goes */
	for (int i = 0; i < RMAP_BUCKETS; i++) {
		for (struct rmap_ent *e = h->regions.rmap[i]; e != NULL;
		    e = e->next) {
			rmap_note(h, e, CXLP_REGION_UNMAPPING);
		}
	}
	rmap_drain(h);
	for (int i = 0; i < RMAP_BUCKETS; i++) {
		while (h->regions.rmap[i] != NULL) {
			struct rmap_ent *e = h->regions.rmap[i];

			h->regions.rmap[i] = e->next;
			rmap_ent_free(h, e);
		}
	}
	while (h->regions.retired != NULL) {
		struct rmap_ent *e = h->regions.retired;

		h->regions.retired = e->next;
		pmap_close(&e->map);
		free(e);
	}
}

/* rmap_own_unlink -- see region.h */
void
rmap_own_unlink(struct cxlp_handler *h, const struct proto_loc *loc)
{
	struct rmap_ent **pp, *e;

	pthread_rwlock_wrlock(&h->regions.map_lock);
	pp = rmap_slot(h, loc->region);
	if ((e = *pp) != NULL && e->own && e->gen == loc->gen) {
		rmap_note(h, e, CXLP_REGION_UNMAPPING);
		*pp = e->next;
		rmap_ent_free(h, e);
	}
	pthread_rwlock_unlock(&h->regions.map_lock);
}

/* Pointer for loc if its region is cached with the same gen; map_lock
 * held (shared is enough). */
static const void *
rmap_lookup(struct cxlp_handler *h, const struct proto_loc *loc)
{
	struct rmap_ent *e = *rmap_slot(h, loc->region);

	if (e == NULL || e->gen != loc->gen ||
	    e->region_off != loc->region_off ||
	    e->region_len != loc->region_len) {
		return NULL;
	}
	return (const uint8_t *)pmap_addr(e->map) +
	    (loc->off - loc->region_off);
}

/* rmap_lookup, and the value's lines dropped unless the lookup's proof
 * dropped them (note 6); map_lock held */
static const void *
rmap_lookup_fresh(struct cxlp_handler *h, const struct proto_loc *loc,
    bool dropped)
{
	const void *p = rmap_lookup(h, loc);

	if (p != NULL && !dropped) {
		pmap_fresh((*rmap_slot(h, loc->region))->map, p, loc->len);
	}
	return p;
}

/* loc's value lies inside its region, as the index says it must (a
 * location from a stale or damaged slot may not) */
static bool
loc_inside(const struct cxlp_handler *h, const struct proto_loc *loc)
{
	return owntab_loc_ok(h, loc) && loc->off >= loc->region_off &&
	    loc->off - loc->region_off <= loc->region_len &&
	    loc->len <= loc->region_len - (loc->off - loc->region_off);
}

/* rmap_drop_value_lines -- see region.h */
bool
rmap_drop_value_lines(struct cxlp_handler *h, const struct proto_loc *loc)
{
	const void *p = loc_inside(h, loc) ? rmap_lookup(h, loc) : NULL;

	if (p != NULL) {
		pmap_fresh_lines((*rmap_slot(h, loc->region))->map, p,
		    loc->len);
	}
	return p != NULL;
}

static int
foreign_map(struct cxlp_handler *h, const struct proto_loc *loc,
    const void **data)
{
	struct rmap_ent *e = calloc(1, sizeof(*e)), *cur;
	const struct pmap *fresh = NULL;
	int rc;

	if (e == NULL) {
		return cxlp_fail(-ENOMEM, "region: out of memory");
	}
	rc = pmap_open_coh(&e->map, h->pool_path, loc->region_off,
	    loc->region_len, false, h->coh);
	if (rc == 0 && (rc = h_check_mapping(h, e->map)) != 0) {
		pmap_close(&e->map);
	}
	if (rc != 0) {
		free(e);
		return rc;
	}
	*e = (struct rmap_ent){.region = loc->region, .gen = loc->gen,
	    .region_off = loc->region_off, .region_len = loc->region_len,
	    .map = e->map,
	    .page_size = direct_page_size(h, loc->region, loc->gen)};
	pthread_rwlock_wrlock(&h->regions.map_lock);
	*data = rmap_lookup(h, loc);
	cur = *rmap_slot(h, loc->region);
	if (*data == NULL && cur != NULL && cur->own) {
		rc = cxlp_fail(CXLP_E_PROTO, "location in my region %u with "
		    "gen %u, region is gen %u", loc->region, loc->gen,
		    cur->gen);
	} else if (*data == NULL) {
		rmap_put(h, e);
		fresh = e->map; /* retired, never closed, before close */
		e = NULL;
		*data = rmap_lookup(h, loc);
	}
	if (*data != NULL) {
		pmap_fresh((*rmap_slot(h, loc->region))->map, *data,
		    loc->len);
	}
	pthread_rwlock_unlock(&h->regions.map_lock);
	if (e != NULL) {
		pmap_close(&e->map);
		free(e);
	}
	if (fresh != NULL) {
		prefault_queue(h, fresh, false);
	}
	return rc;
}

/* rmap_resolve_ptr -- turn a key location into a pointer into the
 * shared mapping, mapping the region read-only on first use, its lines
 * dropped (note 6) unless dropped says the lookup did. Returns 0 and
 * *data, CXLP_E_BOUNDS / CXLP_E_PROTO for a location that makes no sense,
 * or the mapping's error. */
int
rmap_resolve_ptr(struct cxlp_handler *h, const struct proto_loc *loc,
    bool dropped, const void **data)
{
	if (!loc_inside(h, loc)) {
		return cxlp_fail(CXLP_E_BOUNDS, "location %llu+%llu outside "
		    "region %u (%llu+%llu)", (unsigned long long)loc->off,
		    (unsigned long long)loc->len, loc->region,
		    (unsigned long long)loc->region_off,
		    (unsigned long long)loc->region_len);
	}
	pthread_rwlock_rdlock(&h->regions.map_lock);
	*data = rmap_lookup_fresh(h, loc, dropped);
	pthread_rwlock_unlock(&h->regions.map_lock);
	if (*data != NULL) {
		return 0;
	}
	return foreign_map(h, loc, data);
}

/* rmap_foreign_count -- read-only mappings cached. */
uint64_t
rmap_foreign_count(struct cxlp_handler *h)
{
	uint64_t n;

	pthread_rwlock_rdlock(&h->regions.map_lock);
	n = h->regions.nforeign;
	pthread_rwlock_unlock(&h->regions.map_lock);
	return n;
}

/* ---- the callback's queue (notes 1-5) ---------------------------------- */

struct rv_event {
	int kind; /* CXLP_REGION_MAPPED or CXLP_REGION_UNMAPPING */
	struct cxlp_region_info info;
	cxlp_region_fn fn; /* the function set when the map changed */
	void *arg;
	struct rv_event *next;
};

struct regview {
	pthread_mutex_t deliver_lock; /* held while delivering (note 2) */
	pthread_mutex_t ev_lock;      /* leaf: the queue, fn, arg */
	cxlp_region_fn fn;
	void *arg;
	struct rv_event *head, **tail;
	uint64_t lost; /* events dropped for lack of memory */
};

/* the handlers whose callbacks this thread is running, innermost last
 * (note 3): a callback of one handler may call another's, whose
 * callback may call the first */
#define RV_NEST_MAX 8
static _Thread_local struct cxlp_handler *in_callback[RV_NEST_MAX];
static _Thread_local unsigned in_callbacks;

/* rmap_delivering -- see region.h */
bool
rmap_delivering(const struct cxlp_handler *h)
{
	for (unsigned i = 0; i < in_callbacks; i++) {
		if (in_callback[i] == h) {
			return true;
		}
	}
	return false;
}

static struct regview *
rv_get(struct cxlp_handler *h)
{
	return __atomic_load_n(&h->regview, __ATOMIC_ACQUIRE);
}

/* rmap_ent_info -- see region.h */
void
rmap_ent_info(const struct cxlp_handler *h, const struct rmap_ent *e,
    struct cxlp_region_info *out)
{
	memset(out, 0, sizeof(*out));
	out->region = e->region;
	out->gen = e->gen;
	out->addr = pmap_addr(e->map);
	out->len = (size_t)e->region_len;
	out->page_size = e->own ? h->cfg.page_size : (size_t)e->page_size;
	out->pages = out->page_size == 0 ? 0 :
	    (uint32_t)(e->region_len / out->page_size);
	out->writable = e->own;
}

/* Append an event; ev_lock held. */
static void
rv_push(struct regview *rv, int kind, const struct cxlp_region_info *info)
{
	struct rv_event *ev = malloc(sizeof(*ev));

	if (ev == NULL) {
		rv->lost++;
		log_err("region callback: out of memory, event of region %u "
		    "lost", info->region);
		return;
	}
	ev->kind = kind;
	ev->info = *info;
	ev->fn = rv->fn;
	ev->arg = rv->arg;
	ev->next = NULL;
	*rv->tail = ev;
	rv->tail = &ev->next;
}

/* rmap_note -- see region.h */
void
rmap_note(struct cxlp_handler *h, const struct rmap_ent *e, int kind)
{
	struct regview *rv = rv_get(h);
	struct cxlp_region_info info;

	if (rv == NULL) {
		return;
	}
	rmap_ent_info(h, e, &info);
	pthread_mutex_lock(&rv->ev_lock);
	if (rv->fn != NULL) {
		rv_push(rv, kind, &info);
	}
	pthread_mutex_unlock(&rv->ev_lock);
}

/* Deliver every queued event; deliver_lock held. */
static void
drain_locked(struct cxlp_handler *h, struct regview *rv)
{
	char saved[256];

	/* a callback's failing calls must not change the message of the
	 * call that delivers */
	snprintf(saved, sizeof(saved), "%s", cxlp_errormsg());
	for (;;) {
		struct rv_event *ev;

		pthread_mutex_lock(&rv->ev_lock);
		if ((ev = rv->head) != NULL) {
			rv->head = ev->next;
			if (rv->head == NULL) {
				rv->tail = &rv->head;
			}
		}
		pthread_mutex_unlock(&rv->ev_lock);
		if (ev == NULL) {
			break;
		}
		if (ev->fn != NULL) {
			in_callback[in_callbacks++] = h;
			ev->fn(ev->arg, ev->kind, &ev->info);
			in_callbacks--;
		}
		free(ev);
	}
	if (saved[0] != '\0') {
		(void)cxlp_fail(0, "%s", saved);
	} else {
		cxlp_errmsg_clear();
	}
}

/* rmap_drain -- see region.h */
void
rmap_drain(struct cxlp_handler *h)
{
	struct regview *rv = rv_get(h);

	if (rv == NULL || rmap_delivering(h) ||
	    in_callbacks == RV_NEST_MAX) {
		return; /* nothing set; or an outer loop delivers (note 3) */
	}
	pthread_mutex_lock(&rv->deliver_lock);
	drain_locked(h, rv);
	pthread_mutex_unlock(&rv->deliver_lock);
}

/* rmap_events_fini -- see region.h */
void
rmap_events_fini(struct cxlp_handler *h)
{
	struct regview *rv = rv_get(h);

	if (rv == NULL) {
		return;
	}
	while (rv->head != NULL) {
		struct rv_event *ev = rv->head;

		rv->head = ev->next;
		free(ev);
	}
	pthread_mutex_destroy(&rv->ev_lock);
	pthread_mutex_destroy(&rv->deliver_lock);
	free(rv);
	h->regview = NULL;
}

/* The queue's state, made once (note 5); NULL without memory. */
static struct regview *
rv_make(struct cxlp_handler *h)
{
	struct regview *rv = rv_get(h), *fresh;

	if (rv != NULL) {
		return rv;
	}
	if ((fresh = calloc(1, sizeof(*fresh))) == NULL) {
		return NULL;
	}
	pthread_mutex_init(&fresh->deliver_lock, NULL);
	pthread_mutex_init(&fresh->ev_lock, NULL);
	fresh->tail = &fresh->head;
	if (!__atomic_compare_exchange_n(&h->regview, &rv, fresh, false,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		pthread_mutex_destroy(&fresh->ev_lock);
		pthread_mutex_destroy(&fresh->deliver_lock);
		free(fresh);
		return rv;
	}
	return fresh;
}

static int
info_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct cxlp_region_info *)a)->region;
	uint32_t y = ((const struct cxlp_region_info *)b)->region;

	return x < y ? -1 : x > y;
}

/* rmap_collect -- see region.h */
size_t
rmap_collect(struct cxlp_handler *h, struct cxlp_region_info *out,
    size_t cap)
{
	size_t n = 0;

	for (int i = 0; i < RMAP_BUCKETS; i++) {
		for (const struct rmap_ent *e = h->regions.rmap[i]; e != NULL;
		    e = e->next) {
			if (n < cap) {
				rmap_ent_info(h, e, &out[n]);
			}
			n++;
		}
	}
	if (out != NULL && cap > 1) {
		qsort(out, n < cap ? n : cap, sizeof(*out), info_cmp);
	}
	return n;
}

static size_t
rmap_count(struct cxlp_handler *h)
{
	return rmap_collect(h, NULL, 0);
}

/* Queue a MAPPED of every entry (note 4); map_lock held for writing. */
static int
replay_locked(struct cxlp_handler *h, struct regview *rv)
{
	size_t n = rmap_count(h);
	struct cxlp_region_info *all = calloc(n ? n : 1, sizeof(*all));

	if (all == NULL) {
		return cxlp_fail(-ENOMEM, "set_region_fn: out of memory");
	}
	rmap_collect(h, all, n);
	for (size_t i = 0; i < n; i++) {
		rv_push(rv, CXLP_REGION_MAPPED, &all[i]);
	}
	free(all);
	return 0;
}

/* cxlp_set_region_fn -- see cxlpool.h */
int
cxlp_set_region_fn(struct cxlp_handler *h, cxlp_region_fn fn, void *arg)
{
	struct regview *rv;
	int rc = 0;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if (rmap_delivering(h)) {
		return cxlp_fail(-EDEADLK, "set_region_fn: called from the "
		    "region callback");
	}
	if (in_callbacks == RV_NEST_MAX) {
		return cxlp_fail(-EDEADLK, "set_region_fn: called from region "
		    "callbacks of %d handlers nested in each other",
		    RV_NEST_MAX);
	}
	if ((rv = rv_make(h)) == NULL) {
		return cxlp_fail(-ENOMEM, "set_region_fn: out of memory");
	}
	pthread_mutex_lock(&rv->deliver_lock);
	drain_locked(h, rv);
	pthread_rwlock_wrlock(&h->regions.map_lock);
	pthread_mutex_lock(&rv->ev_lock);
	{
		cxlp_region_fn old_fn = rv->fn;
		void *old_arg = rv->arg;

		rv->fn = fn; /* events queued from now on are fn's */
		rv->arg = arg;
		if (fn != NULL && (rc = replay_locked(h, rv)) != 0) {
			rv->fn = old_fn;
			rv->arg = old_arg;
		}
	}
	pthread_mutex_unlock(&rv->ev_lock);
	pthread_rwlock_unlock(&h->regions.map_lock);
	drain_locked(h, rv);
	pthread_mutex_unlock(&rv->deliver_lock);
	return rc;
}
