/*
 * owntab.c -- the table of the regions a handler owns: its own regions
 * indexed by local index (the high half of a page handle) in
 * h->regions.own, guarded by h->page_lock with the page table; a slot is
 * NULL while no region fills it (its region went back to the pool:
 * giveback.c). Lookups only: regions.c maps regions and enters them
 * here, alloc.c hands their pages out. Calls nothing of the handler's.
 */
#include <string.h>

#include "err.h"
#include "region.h"

/* owntab_loc_ok -- see region.h */
bool
owntab_loc_ok(const struct cxlp_handler *h, const struct proto_loc *loc)
{
	return loc->region_len > 0 && loc->region_off % 4096 == 0 &&
	    loc->region_len % 4096 == 0 && loc->region_off < h->pool_size &&
	    loc->region_len <= h->pool_size - loc->region_off;
}

/* owntab_region_len -- see region.h */
uint64_t
owntab_region_len(const struct cxlp_handler *h)
{
	uint64_t align = h->align ? h->align : 4096;

	return (h->cfg.region_size + align - 1) / align * align;
}

/* owntab_grant_check -- see region.h */
int
owntab_grant_check(const struct cxlp_handler *h, const struct proto_loc *loc)
{
	if (!owntab_loc_ok(h, loc) || loc->region_len < h->cfg.page_size ||
	    loc->region_len / h->cfg.page_size >= PAGE_NONE) {
		return cxlp_fail(CXLP_E_PROTO, "region %u granted at "
		    "%llu+%llu does not fit", loc->region,
		    (unsigned long long)loc->region_off,
		    (unsigned long long)loc->region_len);
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

/* owntab_may_grow -- see region.h */
bool
owntab_may_grow(struct cxlp_handler *h)
{
	return h->cfg.max_regions == 0 || own_live(h) < h->cfg.max_regions;
}

/* owntab_state_init -- see region.h */
void
owntab_state_init(struct regions *rg)
{
	memset(rg, 0, sizeof(*rg));
	pthread_rwlock_init(&rg->map_lock, NULL);
}

/* owntab_state_fini -- see region.h */
void
owntab_state_fini(struct regions *rg)
{
	cxlp_assert(rg->own == NULL && rg->prefaulter == NULL);
	pthread_rwlock_destroy(&rg->map_lock);
}

/* owntab_find -- local index of my region (id, gen) or -1. */
int
owntab_find(const struct cxlp_handler *h, uint32_t region, uint32_t gen)
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

/* owntab_page_of -- my page at loc (page_lock held): 0 and *pg, or
 * CXLP_E_NOTFOUND when loc is not the start of a page of mine. */
int
owntab_page_of(const struct cxlp_handler *h, const struct proto_loc *loc,
    cxlp_page_t *pg)
{
	int set = owntab_find(h, loc->region, loc->gen);
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

/* owntab_page_addr -- RW address of own page pg and its pool offset
 * (page_lock held; pg valid). */
uint8_t *
owntab_page_addr(const struct cxlp_handler *h, cxlp_page_t pg,
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
