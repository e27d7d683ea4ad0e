/*
 * regview.c -- region views (issue 19): where a value lives (region id and
 * offset), the regions a handler maps, a view of one region by id (mapped
 * on demand), a page handle from (region, index), and the region callback
 * a GPU connector registers its DMA mappings with.
 *
 * Why this shape. Every mapping a handler holds is an entry of the region
 * map (rmap.c), under map_lock; so the views read that map, and the
 * callback reports exactly the region map's changes: an entry put
 * (MAPPED) and an entry taken out (UNMAPPING: retired, unlinked, or about
 * to be unmapped at close). A region's mapping is never unmapped before
 * close (replaced and given-back mappings are retired, still mapped), so
 * "before unmap" only needs the close to deliver before it unmaps.
 *
 * The callback's queue of events and its delivery are the region map's
 * (rmap.c, its notes 1-5): every change of the map is queued there, and
 * rmap_drain delivers them.
 *
 * A connector that copies from these views by device DMA, or reads a
 * range again long after the retrieve, first drops its lines with
 * cxlp_prepare_read (here): on a pool of sw or sim coherence the copy
 * would otherwise be served this host's stale cached lines (DESIGN.md,
 * "Device DMA follows the same rules"; rmap.c note 6).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "region.h"
#include "kvread.h"
#include "layout.h"
#include "log.h"
#include "map.h"
#include "pool.h"

/* cxlp_region_list -- see cxlpool.h */
int
cxlp_region_list(struct cxlp_handler *h, struct cxlp_region_info out[],
    size_t cap)
{
	size_t n;
	int rc;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if (out == NULL && cap > 0) {
		return cxlp_fail(-EINVAL, "region_list: out is NULL");
	}
	pthread_rwlock_rdlock(&h->regions.map_lock);
	n = rmap_collect(h, out, cap);
	if (n > cap && cap > 0) { /* the lowest ids, not the first found */
		struct cxlp_region_info *all = calloc(n, sizeof(*all));

		if (all != NULL) {
			rmap_collect(h, all, n);
			memcpy(out, all, cap * sizeof(*out));
			free(all);
		}
	}
	pthread_rwlock_unlock(&h->regions.map_lock);
	return n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
}

/* The entry holding [p, p + 1); map_lock held. */
static const struct rmap_ent *
rmap_holding(struct cxlp_handler *h, const uint8_t *p)
{
	for (int i = 0; i < RMAP_BUCKETS; i++) {
		for (const struct rmap_ent *e = h->regions.rmap[i]; e != NULL;
		    e = e->next) {
			const uint8_t *base = pmap_addr(e->map);

			if (p >= base && p < base + e->region_len) {
				return e;
			}
		}
	}
	return NULL;
}

/* cxlp_batch_locate -- see cxlpool.h */
int
cxlp_batch_locate(struct cxlp_handler *h, size_t n, const void *const ptrs[],
    uint32_t regions[], uint64_t offsets[])
{
	const struct rmap_ent *last = NULL;
	size_t missing = 0;
	int rc;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if (n > 0 && (ptrs == NULL || regions == NULL || offsets == NULL)) {
		return cxlp_fail(-EINVAL, "locate: NULL array");
	}
	pthread_rwlock_rdlock(&h->regions.map_lock);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = ptrs[i], *base;

		if (last == NULL || p < (base = pmap_addr(last->map)) ||
		    p >= base + last->region_len) {
			last = p == NULL ? NULL : rmap_holding(h, p);
		}
		if (last == NULL) {
			regions[i] = UINT32_MAX;
			offsets[i] = UINT64_MAX;
			missing++;
			continue;
		}
		regions[i] = last->region;
		offsets[i] = (uint64_t)(p - (const uint8_t *)pmap_addr(
		    last->map));
	}
	pthread_rwlock_unlock(&h->regions.map_lock);
	if (missing > 0) {
		return cxlp_fail(CXLP_E_NOTFOUND, "locate: %zu of %zu "
		    "pointers in no region this handler maps", missing, n);
	}
	return 0;
}

/* cxlp_locate -- see cxlpool.h */
int
cxlp_locate(struct cxlp_handler *h, const void *ptr, uint32_t *region,
    uint64_t *offset)
{
	const void *ptrs[1] = {ptr};

	if (region == NULL || offset == NULL) {
		return cxlp_fail(-EINVAL, "locate: NULL argument");
	}
	return cxlp_batch_locate(h, 1, ptrs, region, offset);
}

/* cxlp_prepare_read -- see cxlpool.h. The mapping is found as locate
 * finds it; the drop (rmap.c note 6) runs under map_lock, shared. */
int
cxlp_prepare_read(struct cxlp_handler *h, const void *data, size_t len)
{
	const uint8_t *p = data;
	const struct rmap_ent *e;
	int rc;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if (p == NULL) {
		return cxlp_fail(-EINVAL, "prepare_read: data is NULL");
	}
	pthread_rwlock_rdlock(&h->regions.map_lock);
	if ((e = rmap_holding(h, p)) != NULL && len > e->region_len -
	    (uint64_t)(p - (const uint8_t *)pmap_addr(e->map))) {
		e = NULL; /* runs past the end of its region */
	}
	if (e != NULL) {
		pmap_fresh(e->map, p, len);
	}
	pthread_rwlock_unlock(&h->regions.map_lock);
	if (e == NULL) {
		return cxlp_fail(-EINVAL, "prepare_read: %zu bytes at %p are "
		    "not inside one region this handler maps", len, data);
	}
	return 0;
}

/* The location of live region id from the pool's region table (direct
 * reads): 0 and *loc; CXLP_E_NOTFOUND when the table says the region is
 * not live; -EAGAIN when it cannot say (no direct reads, a record
 * changing or damaged). */
static int
table_loc(struct cxlp_handler *h, uint32_t region, struct proto_loc *loc)
{
	const struct kvread *kr = direct_reader(h);
	struct pool_rrec copy;
	uint64_t word;

	if (kr == NULL) {
		return cxlp_fail(-EAGAIN, "region %u: not mapped by this "
		    "handler, and without direct reads its location cannot be "
		    "read from the pool", region);
	}
	if (region >= kr->nregions) {
		return cxlp_fail(CXLP_E_NOTFOUND, "region %u: the pool has "
		    "%u region records", region, kr->nregions);
	}
	/* the metaserver's record, maybe from another host (kvread.c
	 * note 9): read on lines dropped first */
	kvread_fresh(kr, &kr->rtab[region], sizeof(copy));
	word = __atomic_load_n(&kr->rtab[region].word, __ATOMIC_ACQUIRE);
	memcpy(&copy, &kr->rtab[region], sizeof(copy));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	kvread_fresh(kr, &kr->rtab[region].word, sizeof(word));
	if (__atomic_load_n(&kr->rtab[region].word, __ATOMIC_RELAXED) !=
	    word) {
		return cxlp_fail(-EAGAIN, "region %u: record changing", region);
	}
	if (rrec_state(word) == POOL_REGION_FREE) {
		return cxlp_fail(CXLP_E_NOTFOUND, "region %u: not live",
		    region);
	}
	copy.word = word;
	if (layout_rrec_checksum(&copy) != copy.checksum ||
	    copy.off < kr->data_off || copy.len == 0 ||
	    copy.len > kr->data_len || copy.off - kr->data_off >
	    kr->data_len - copy.len) {
		return cxlp_fail(-EAGAIN, "region %u: record changing or "
		    "damaged", region);
	}
	memset(loc, 0, sizeof(*loc));
	loc->region = region;
	loc->gen = rrec_gen(word);
	loc->region_off = loc->off = copy.off;
	loc->region_len = copy.len;
	return 0;
}

/* The region map's entry of id as *out; map_lock taken. */
static bool
rmap_info(struct cxlp_handler *h, uint32_t region,
    struct cxlp_region_info *out)
{
	bool found = false;

	pthread_rwlock_rdlock(&h->regions.map_lock);
	for (const struct rmap_ent *e = h->regions.rmap[region % RMAP_BUCKETS];
	    e != NULL; e = e->next) {
		if (e->region == region) {
			rmap_ent_info(h, e, out);
			found = true;
			break;
		}
	}
	pthread_rwlock_unlock(&h->regions.map_lock);
	return found;
}

/* cxlp_region_view -- see cxlpool.h */
int
cxlp_region_view(struct cxlp_handler *h, uint32_t region,
    struct cxlp_region_info *out)
{
	struct proto_loc loc;
	const void *p;
	int rc;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if (out == NULL) {
		return cxlp_fail(-EINVAL, "region_view: out is NULL");
	}
	if (rmap_info(h, region, out)) {
		if (out->writable) {
			return 0; /* our own */
		}
		rc = table_loc(h, region, &loc);
		if (rc == -EAGAIN || (rc == 0 && loc.gen == out->gen)) {
			return 0; /* mapped at the gen the table has, or the
			           * table cannot say */
		}
		if (rc != 0) {
			return rc; /* gone from the pool: not a live view */
		}
	}
	if ((rc = table_loc(h, region, &loc)) == -EAGAIN) {
		char why[200];

		snprintf(why, sizeof(why), "%s", cxlp_errormsg());
		return cxlp_fail(CXLP_E_NOTFOUND, "%s", why);
	}
	if (rc != 0) {
		return rc;
	}
	if ((rc = rmap_resolve_ptr(h, &loc, false, &p)) != 0) {
		return rc;
	}
	rmap_drain(h);
	if (!rmap_info(h, region, out)) {
		return cxlp_fail(CXLP_E_NOTFOUND, "region %u: went while "
		    "mapped", region);
	}
	return 0;
}

/* cxlp_page_at -- see cxlpool.h */
int
cxlp_page_at(struct cxlp_handler *h, uint32_t region, uint32_t index,
    cxlp_page_t *page, void **buf)
{
	int set, rc;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if (page == NULL) {
		return cxlp_fail(-EINVAL, "page_at: page is NULL");
	}
	if ((rc = h_check_session(h)) != 0) {
		return rc; /* its regions may be another's now */
	}
	pthread_mutex_lock(&h->page_lock);
	for (set = 0; set < (int)h->regions.nown; set++) {
		if (h->regions.own[set] != NULL &&
		    h->regions.own[set]->loc.region == region) {
			break;
		}
	}
	if (set == (int)h->regions.nown) {
		rc = cxlp_fail(CXLP_E_NOTFOUND, "page_at: region %u is not "
		    "one of this handler's", region);
	} else if (index >= h->pages.sets[set].npages) {
		rc = cxlp_fail(CXLP_E_BOUNDS, "page_at: page %u of region "
		    "%u, which has %u", index, region,
		    h->pages.sets[set].npages);
	} else {
		*page = page_make((uint32_t)set, index);
		if (buf != NULL) {
			*buf = owntab_page_addr(h, *page, NULL);
		}
	}
	pthread_mutex_unlock(&h->page_lock);
	return rc;
}
