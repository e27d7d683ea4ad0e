/*
 * regions.c -- the regions a handler owns, mapped read-write: asked for,
 * mapped, entered in the page table and the region map; plus
 * cxlp_alloc/cxlp_free over them. Other handlers' regions, mapped
 * read-only, are the region map's (rmap.c).
 *
 * Every mapping, own or foreign, sits in one hash keyed by region id,
 * the region map (rmap.c), through which retrieve turns a location into
 * a pointer without the page lock; own regions are entered there too, as
 * they are mapped here.
 *
 * Own regions are also indexed by local index (the high half of a page
 * handle) in h->regions.own, guarded by h->page_lock with the page table;
 * a slot is NULL while no region fills it (its region went back to the
 * pool: giveback.c, which also retires the mapping). New regions are requested
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
#include "handler_int.h"
#include "log.h"
#include "map.h"

/* regions_loc_ok -- see handler_int.h */
bool
regions_loc_ok(const struct cxlp_handler *h, const struct proto_loc *loc)
{
	return loc->region_len > 0 && loc->region_off % 4096 == 0 &&
	    loc->region_len % 4096 == 0 && loc->region_off < h->pool_size &&
	    loc->region_len <= h->pool_size - loc->region_off;
}

/* regions_len -- see handler_int.h */
uint64_t
regions_len(const struct cxlp_handler *h)
{
	uint64_t align = h->align ? h->align : 4096;

	return (h->cfg.region_size + align - 1) / align * align;
}

static int
region_request(struct cxlp_handler *h, struct proto_loc *loc)
{
	uint64_t len = regions_len(h);
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
	return regions_grant_check(h, loc);
}

/* regions_grant_check -- see handler_int.h */
int
regions_grant_check(const struct cxlp_handler *h, const struct proto_loc *loc)
{
	if (!regions_loc_ok(h, loc) || loc->region_len < h->cfg.page_size ||
	    loc->region_len / h->cfg.page_size >= PAGE_NONE) {
		return cxlp_fail(CXLP_E_PROTO, "region %u granted at "
		    "%llu+%llu does not fit", loc->region,
		    (unsigned long long)loc->region_off,
		    (unsigned long long)loc->region_len);
	}
	return 0;
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
	if (r->map == NULL && (rc = pmap_open(&r->map, h->pool_path,
	    loc->region_off, loc->region_len, true)) == 0 &&
	    (rc = h_poolid_check(h, r->map)) != 0) {
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

/* Regions this handler holds (page_lock taken). */
static uint32_t
own_live(struct cxlp_handler *h)
{
	uint32_t n;

	pthread_mutex_lock(&h->page_lock);
	n = h->pages.nlive;
	pthread_mutex_unlock(&h->page_lock);
	return n;
}

/* regions_add -- request, map and enter one more own region; with pg not
 * NULL, take its first page. Returns 0 or an error (CXLP_E_NOSPACE when
 * max_regions is reached or the pool is full). Caller holds expand_lock,
 * not page_lock. */
static int
regions_add(struct cxlp_handler *h, cxlp_page_t *pg)
{
	struct proto_loc loc;
	int rc;

	if (!regions_may_grow(h)) {
		return cxlp_fail(CXLP_E_NOSPACE, "alloc: all %u regions full "
		    "(max_regions)", h->cfg.max_regions);
	}
	if ((rc = region_request(h, &loc)) != 0) {
		return rc;
	}
	return regions_enter(h, &loc, pg);
}

/* regions_may_grow -- see handler_int.h */
bool
regions_may_grow(struct cxlp_handler *h)
{
	return h->cfg.max_regions == 0 || own_live(h) < h->cfg.max_regions;
}

/* regions_enter -- see handler_int.h */
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
	regions_own_unlink(h, &loc);
	giveback_retire(h, r); /* unmapped at close, after its UNMAPPING */
err_giveback:
	(void)giveback_call(h, &loc);
	return rc;
}

/* regions_state_init -- see handler_int.h */
void
regions_state_init(struct regions *rg)
{
	memset(rg, 0, sizeof(*rg));
	pthread_rwlock_init(&rg->map_lock, NULL);
}

/* regions_state_fini -- see handler_int.h */
void
regions_state_fini(struct regions *rg)
{
	cxlp_assert(rg->own == NULL && rg->prefaulter == NULL);
	pthread_rwlock_destroy(&rg->map_lock);
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

/* regions_own_find -- local index of my region (id, gen) or -1. */
int
regions_own_find(const struct cxlp_handler *h, uint32_t region, uint32_t gen)
{
	for (uint32_t i = 0; i < h->regions.nown; i++) {
		if (h->regions.own[i] != NULL &&
		    h->regions.own[i]->loc.region == region &&
		    h->regions.own[i]->loc.gen == gen) {
			return (int)i;
		}
	}
	return -1;
}

/* regions_page_of -- my page at loc (page_lock held): 0 and *pg, or
 * CXLP_E_NOTFOUND when loc is not the start of a page of mine. */
int
regions_page_of(const struct cxlp_handler *h, const struct proto_loc *loc,
    cxlp_page_t *pg)
{
	int set = regions_own_find(h, loc->region, loc->gen);
	const struct own_region *r;
	uint64_t rel;

	if (set < 0) {
		return CXLP_E_NOTFOUND;
	}
	r = h->regions.own[set];
	if (loc->off < r->loc.region_off) {
		return CXLP_E_NOTFOUND;
	}
	rel = loc->off - r->loc.region_off;
	if (rel % h->cfg.page_size != 0 ||
	    rel / h->cfg.page_size >= h->pages.sets[set].npages) {
		return CXLP_E_NOTFOUND;
	}
	*pg = page_make((uint32_t)set, (uint32_t)(rel / h->cfg.page_size));
	return 0;
}

/* regions_page_addr -- RW address of own page pg and its pool offset
 * (page_lock held; pg valid). */
uint8_t *
regions_page_addr(const struct cxlp_handler *h, cxlp_page_t pg,
    uint64_t *pool_off)
{
	const struct own_region *r = h->regions.own[page_set(pg)];
	uint64_t rel = (uint64_t)page_idx(pg) * h->cfg.page_size;

	if (pool_off != NULL) {
		*pool_off = r->loc.region_off + rel;
	}
	return r->base + rel;
}

/* cxlp_page_size -- the handler's page size in bytes (0 for NULL). */
size_t
cxlp_page_size(const struct cxlp_handler *h)
{
	return h == NULL ? 0 : h->cfg.page_size;
}

/* Every region is full (or there is none): once more under expand_lock,
 * then a new region when auto-expand is on or the handler holds none
 * (connect found no room, or its regions went back: giveback.c). */
static int
alloc_expand(struct cxlp_handler *h, cxlp_page_t *pg, unsigned wait_ms,
    uint32_t need)
{
	uint32_t nlive;
	int rc;

	pthread_mutex_lock(&h->expand_lock);
	pthread_mutex_lock(&h->page_lock);
	rc = pagetab_alloc(&h->pages, pg);
	nlive = h->pages.nlive;
	pthread_mutex_unlock(&h->page_lock);
	if (rc == CXLP_E_NOSPACE) {
		rc = reclaim(h, pg, h->cfg.auto_expand || nlive == 0,
		    wait_ms, need);
	}
	if (rc == CXLP_E_BADOP && (h->cfg.auto_expand || nlive == 0)) {
		/* a metaserver without RECLAIM */
		rc = regions_add(h, pg);
	} else if (rc == CXLP_E_BADOP) {
		rc = cxlp_fail(CXLP_E_NOSPACE, "alloc: all %u regions full "
		    "and auto-expand is off", nlive);
	}
	pthread_mutex_unlock(&h->expand_lock);
	return rc;
}

/* regions_alloc -- see handler_int.h */
int
regions_alloc(struct cxlp_handler *h, cxlp_page_t *page, void **buf,
    unsigned wait_ms, uint32_t need)
{
	cxlp_page_t pg;
	bool low;
	int rc;

	if (page == NULL || buf == NULL) {
		return cxlp_fail(-EINVAL, "alloc: NULL argument");
	}
	if ((rc = h_check_open(h)) != 0 || (rc = h_check_session(h)) != 0) {
		return rc;
	}
	pthread_mutex_lock(&h->page_lock);
	rc = pagetab_alloc(&h->pages, &pg);
	low = reclaim_low_locked(h);
	pthread_mutex_unlock(&h->page_lock);
	if (rc == CXLP_E_NOSPACE) {
		rc = alloc_expand(h, &pg, wait_ms, need);
	}
	if (rc != 0) {
		return rc;
	}
	if (low) {
		keeper_poke_refill(h); /* reclaim.c note 7 */
	}
	pthread_mutex_lock(&h->page_lock);
	*buf = regions_page_addr(h, pg, NULL);
	pthread_mutex_unlock(&h->page_lock);
	*page = pg;
	regview_drain(h); /* a new region's MAPPED before its page */
	return 0;
}

/* cxlp_alloc -- take a free page (O(1)); see cxlpool.h. */
int
cxlp_alloc(struct cxlp_handler *h, cxlp_page_t *page, void **buf)
{
	return regions_alloc(h, page, buf, h == NULL ? 0 :
	    h->cfg.alloc_wait_ms, 1);
}

/* cxlp_free -- give back an allocated, unregistered page. */
int
cxlp_free(struct cxlp_handler *h, cxlp_page_t page)
{
	int rc;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	pthread_mutex_lock(&h->page_lock);
	rc = pagetab_move(&h->pages, page, PAGE_ALLOCATED, PAGE_FREE);
	giveback_page_unlock(h);
	return rc;
}
