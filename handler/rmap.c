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
 */
#include <errno.h>
#include <stdlib.h>

#include "err.h"
#include "handler_int.h"
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

/* rmap_put -- see handler_int.h */
void
rmap_put(struct cxlp_handler *h, struct rmap_ent *e)
{
	struct rmap_ent **pp = rmap_slot(h, e->region);

	if (*pp != NULL) {
		struct rmap_ent *old = *pp;

		regview_note(h, old, CXLP_REGION_UNMAPPING);
		e->next = old->next;
		rmap_retire(h, old);
	} else {
		e->next = NULL;
	}
	*pp = e;
	if (!e->own) {
		h->regions.nforeign++;
	}
	regview_note(h, e, CXLP_REGION_MAPPED);
}

/* rmap_fini -- see handler_int.h */
void
rmap_fini(struct cxlp_handler *h)
{
	/* the region callback hears of every mapping before it goes */
	for (int i = 0; i < RMAP_BUCKETS; i++) {
		for (struct rmap_ent *e = h->regions.rmap[i]; e != NULL;
		    e = e->next) {
			regview_note(h, e, CXLP_REGION_UNMAPPING);
		}
	}
	regview_drain(h);
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

/* regions_own_unlink -- see handler_int.h */
void
regions_own_unlink(struct cxlp_handler *h, const struct proto_loc *loc)
{
	struct rmap_ent **pp, *e;

	pthread_rwlock_wrlock(&h->regions.map_lock);
	pp = rmap_slot(h, loc->region);
	if ((e = *pp) != NULL && e->own && e->gen == loc->gen) {
		regview_note(h, e, CXLP_REGION_UNMAPPING);
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
	rc = pmap_open(&e->map, h->pool_path, loc->region_off,
	    loc->region_len, false);
	if (rc == 0 && (rc = h_poolid_check(h, e->map)) != 0) {
		pmap_close(&e->map);
	}
	if (rc != 0) {
		free(e);
		return rc;
	}
	*e = (struct rmap_ent){.region = loc->region, .gen = loc->gen,
	    .region_off = loc->region_off, .region_len = loc->region_len,
	    .map = e->map,
	    .page_size = regview_page_size(h, loc->region, loc->gen)};
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

/* regions_resolve_ptr -- turn a key location into a pointer into the
 * shared mapping, mapping the region read-only on first use. Returns 0 and
 * *data, CXLP_E_BOUNDS / CXLP_E_PROTO for a location that makes no sense,
 * or the mapping's error. */
int
regions_resolve_ptr(struct cxlp_handler *h, const struct proto_loc *loc,
    const void **data)
{
	if (!regions_loc_ok(h, loc) || loc->off < loc->region_off ||
	    loc->off - loc->region_off > loc->region_len ||
	    loc->len > loc->region_len - (loc->off - loc->region_off)) {
		return cxlp_fail(CXLP_E_BOUNDS, "location %llu+%llu outside "
		    "region %u (%llu+%llu)", (unsigned long long)loc->off,
		    (unsigned long long)loc->len, loc->region,
		    (unsigned long long)loc->region_off,
		    (unsigned long long)loc->region_len);
	}
	pthread_rwlock_rdlock(&h->regions.map_lock);
	*data = rmap_lookup(h, loc);
	pthread_rwlock_unlock(&h->regions.map_lock);
	if (*data != NULL) {
		return 0;
	}
	return foreign_map(h, loc, data);
}

/* regions_foreign_count -- read-only mappings cached. */
uint64_t
regions_foreign_count(struct cxlp_handler *h)
{
	uint64_t n;

	pthread_rwlock_rdlock(&h->regions.map_lock);
	n = h->regions.nforeign;
	pthread_rwlock_unlock(&h->regions.map_lock);
	return n;
}
