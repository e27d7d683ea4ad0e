/*
 * alloc.c -- the allocation policy: cxlp_alloc and cxlp_free over the
 * pages of the regions a handler owns (owntab.c). A page comes from the
 * page table; with none free, from a RECLAIM of evicted keys' pages
 * (reclaim.c) or a new region (regions.c), under h->expand_lock so that
 * two threads finding every region full make one REGION_ALLOC, not two;
 * an alloc that leaves few free pages on a full pool pokes the keeper's
 * refill task (reclaim.c note 7).
 */
#include <errno.h>

#include "err.h"
#include "region.h"

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

/* alloc_wait -- see region.h */
int
alloc_wait(struct cxlp_handler *h, cxlp_page_t *page, void **buf,
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
		/* reclaim.c note 7 */
		(void)keeper_poke(h, h->reclaim.refill_task);
	}
	pthread_mutex_lock(&h->page_lock);
	*buf = owntab_page_addr(h, pg, NULL);
	pthread_mutex_unlock(&h->page_lock);
	*page = pg;
	rmap_drain(h); /* a new region's MAPPED before its page */
	return 0;
}

/* cxlp_alloc -- take a free page (O(1)); see cxlpool.h. */
int
cxlp_alloc(struct cxlp_handler *h, cxlp_page_t *page, void **buf)
{
	return alloc_wait(h, page, buf, h == NULL ? 0 :
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
	pagelife_unlock(h);
	return rc;
}
