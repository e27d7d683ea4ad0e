/*
 * regions.c -- the regions a handler owns, mapped read-write: asked for,
 * mapped, entered in the page table, the own-region table (owntab.c) and
 * the region map; cxlp_alloc/cxlp_free over them are alloc.c's. Other
 * handlers' regions, mapped read-only, are the region map's (rmap.c).
 *
 * Every mapping, own or foreign, sits in one hash keyed by region id,
 * the region map (rmap.c), through which retrieve turns a location into
 * a pointer without the page lock; own regions are entered there too, as
 * they are mapped here.
 *
 * Own regions are also indexed by local index in the own-region table
 * (owntab.c); a region that goes back to the pool leaves it (giveback.c,
 * which also retires the mapping). New regions are requested
 * under h->expand_lock so that two threads finding every region full
 * make one REGION_ALLOC, not two. cxlp_connect asks for a first region,
 * and a pool with no room for one now does not fail it: a handler
 * without a region can still read, and its first alloc asks again
 * (regions_init). Only a region larger than the pool's whole data area,
 * which no wait would make fit, fails the connect.
 *
 * The first touch of a shared page is slow, so every mapping is
 * prefaulted before it is used hard (pmap_prefault_walk: populate, then
 * one load per page, from the top down; pool/prefault.c says why both):
 * the first own region inside cxlp_connect, regions added later and
 * foreign regions by the prefaulter thread (prefaulter.c), since alloc
 * and retrieve are the hot path. (The metadata mapping of direct reads
 * has a walker of its own: direct.c.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "region.h"
#include "log.h"
#include "map.h"

static int
region_request(struct cxlp_handler *h, struct proto_loc *loc)
{
	uint64_t len = owntab_region_len(h);
	uint64_t id = h->regions.req ? h->regions.req : client_new_id(h->cl);
	struct creply rep;
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	proto_put_region_req(&b, len, h->cfg.page_size);
	rc = h_call_id(h, PROTO_OP_REGION_ALLOC, id, &b, &rep);
	pbuf_fini(&b);
	h->regions.req = rc == CXLP_E_TIMEOUT || rc == CXLP_E_CONN ? id : 0;
	if (rc == CXLP_E_NOSPACE) {
		return regfit_why(h, len);
	}
	if (rc != 0) {
		return rc;
	}
	rc = proto_get_loc(&rep.body, loc);
	if (rc == 0) {
		rc = preader_end(&rep.body);
	}
	client_reply_fini(&rep);
	if (rc != 0) {
		return cxlp_fail(CXLP_E_PROTO, "REGION_ALLOC: bad reply body");
	}
	return owntab_grant_check(h, loc);
}

static int
own_open(struct cxlp_handler *h, const struct proto_loc *loc,
    struct own_region **out, struct rmap_ent **ent)
{
	struct own_region *r = calloc(1, sizeof(*r));
	struct rmap_ent *e = calloc(1, sizeof(*e));
	int rc = 0;

	if (r == NULL || e == NULL) {
		rc = cxlp_fail(-ENOMEM, "region: out of memory");
		goto err_free;
	}
	r->loc = *loc;
	r->map = giveback_reuse(h, loc);
	if (r->map == NULL && (rc = pmap_open_coh(&r->map, h->pool_path,
	    loc->region_off, loc->region_len, true, h->coh)) == 0 &&
	    (rc = h_check_mapping(h, r->map)) != 0) {
		pmap_close(&r->map);
	}
	if (r->map == NULL) {
		log_err("region %u: cannot map %s: %s", loc->region,
		    h->pool_path, cxlp_errormsg());
		goto err_free;
	}
	r->base = pmap_addr(r->map);
	*e = (struct rmap_ent){.region = loc->region, .gen = loc->gen,
	    .region_off = loc->region_off, .region_len = loc->region_len,
	    .map = r->map, .own = true};
	*out = r;
	*ent = e;
	return 0;
err_free:
	free(e);
	free(r);
	return rc;
}

static void
own_free(struct own_region *r)
{
	pmap_close(&r->map);
	free(r);
}

/* Add r to the page table and h->regions.own, in the slot the page table
 * gives it; page_lock held. When pg is not NULL also take its first
 * page. */
static int
own_add_locked(struct cxlp_handler *h, struct own_region *r,
    cxlp_page_t *pg)
{
	uint32_t set;
	int rc;

	if (h->regions.nown == h->regions.cap_own) {
		uint32_t cap = h->regions.cap_own ? h->regions.cap_own * 2 : 4;
		struct own_region **own = realloc(h->regions.own,
		    cap * sizeof(*own));

		if (own == NULL) {
			return cxlp_fail(-ENOMEM, "region: out of memory");
		}
		h->regions.own = own;
		h->regions.cap_own = cap;
	}
	rc = pagetab_add(&h->pages,
	    (uint32_t)(r->loc.region_len / h->cfg.page_size), &set);
	if (rc != 0) {
		return rc;
	}
	cxlp_assert(set <= h->regions.nown &&
	    (set == h->regions.nown || h->regions.own[set] == NULL));
	if (set == h->regions.nown) {
		h->regions.nown++;
	}
	h->regions.own[set] = r;
	if (pg != NULL) {
		rc = pagetab_alloc(&h->pages, pg);
		cxlp_assert(rc == 0);
	}
	return 0;
}

/* regions_add -- request, map and enter one more own region; with pg not
 * NULL, take its first page. Returns 0 or an error (CXLP_E_NOSPACE when
 * max_regions is reached or the pool is full). Caller holds expand_lock,
 * not page_lock. */
/* regions_add -- see region.h */
int
regions_add(struct cxlp_handler *h, cxlp_page_t *pg)
{
	struct proto_loc loc;
	int rc;

	if (!owntab_may_grow(h)) {
		return cxlp_fail(CXLP_E_NOSPACE, "alloc: all %u regions full "
		    "(max_regions)", h->cfg.max_regions);
	}
	if ((rc = region_request(h, &loc)) != 0) {
		return rc;
	}
	return regions_enter(h, &loc, pg);
}

/* regions_enter -- see region.h */
int
regions_enter(struct cxlp_handler *h, const struct proto_loc *lp,
    cxlp_page_t *pg)
{
	struct proto_loc loc = *lp;
	struct own_region *r = NULL;
	struct rmap_ent *e = NULL;
	int rc;

	if ((rc = own_open(h, &loc, &r, &e)) != 0) {
		goto err_giveback;
	}
	pthread_rwlock_wrlock(&h->regions.map_lock);
	rmap_put(h, e);
	pthread_rwlock_unlock(&h->regions.map_lock);
	pthread_mutex_lock(&h->page_lock);
	rc = own_add_locked(h, r, pg);
	pthread_mutex_unlock(&h->page_lock);
	if (rc != 0) {
		goto err_unmap;
	}
	if (pg == NULL) {
		/* in connect: off the hot path */
		pmap_prefault_walk(r->map, false, NULL);
	} else {
		prefault_queue(h, r->map, true);
	}
	log_info("region %u gen %u: %llu bytes at %llu", loc.region, loc.gen,
	    (unsigned long long)loc.region_len,
	    (unsigned long long)loc.region_off);
	return 0;
err_unmap:
	rmap_own_unlink(h, &loc);
	giveback_retire(h, r); /* unmapped at close, after its UNMAPPING */
err_giveback:
	(void)giveback_call(h, &loc);
	return rc;
}

/* regions_init -- empty tables, then the first region; a pool with no
 * room for it now leaves the handler without one (0), to ask again at
 * its first alloc. */
int
regions_init(struct cxlp_handler *h)
{
	int rc;

	pagetab_init(&h->pages);
	pthread_mutex_lock(&h->expand_lock);
	h->regions.unfit = false;
	rc = regions_add(h, NULL);
	if ((rc == CXLP_E_NOSPACE || rc == CXLP_E_BUSY) && !h->regions.unfit) {
		log_info("connect: no region yet, the first alloc asks "
		    "again: %s", cxlp_errormsg());
		rc = 0;
	}
	pthread_mutex_unlock(&h->expand_lock);
	return rc;
}

/* regions_fini -- unmap every region, own and foreign. */
void
regions_fini(struct cxlp_handler *h)
{
	prefaulter_stop(h);
	rmap_fini(h);
	for (uint32_t i = 0; i < h->regions.nown; i++) {
		if (h->regions.own[i] != NULL) {
			own_free(h->regions.own[i]);
		}
	}
	giveback_fini(h);
	free(h->regions.own);
	h->regions.own = NULL;
	h->regions.nown = h->regions.cap_own = 0;
	pagetab_fini(&h->pages);
}

