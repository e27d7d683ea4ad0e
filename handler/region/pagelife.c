/*
 * pagelife.c -- the page transitions that several modules share: a key
 * of mine that went (deleted by ops.c, evicted as reclaim.c learns), and
 * the unresolved entry such a key's page leaves behind (resolve.c parks
 * them, store.c fills them), and the release of the page lock after a
 * page went back to the free list, which starts the give-back of the
 * regions left empty (pagelife_unlock: giveback.c note 1). Below the
 * key-value layer, above the page table (pages.c), the own-region table
 * (owntab.c) and the give-back.
 */
#include <stdlib.h>

#include "err.h"
#include "region.h"

/* pagelife_unlock -- see region.h */
void
pagelife_unlock(struct cxlp_handler *h)
{
	bool over = h->pages.nempty > h->cfg.reserve_regions ||
	    h->pages.nretiring > 0;

	pthread_mutex_unlock(&h->page_lock);
	if (over && !keeper_poke(h, h->giveback.task)) {
		(void)giveback_run(h); /* no keeper thread (connect, close) */
	}
}

/* pagelife_forget -- see region.h */
bool
pagelife_forget(struct cxlp_handler *h, cxlp_page_t pg)
{
	for (size_t i = 0; i < h->store.nunres; i++) {
		if (h->store.unres[i].page == pg) {
			free(h->store.unres[i].key);
			h->store.unres[i] = h->store.unres[--h->store.nunres];
			return true;
		}
	}
	return false;
}

/* A deleted key was at loc: if that is my page, it is free again (or
 * quarantined, if a copy of its REGISTER may still land: doubt.c). A
 * store of it may still be settling (another thread): the store frees it
 * (INFLIGHT_DELETED). One whose outcome was lost was registered after
 * all: it is free, and must not be registered again by resolve_run --
 * unless resolve_run has it in hand right now, and then its answer
 * decides (store.c). See region.h. */
void
pagelife_key_gone(struct cxlp_handler *h, const struct proto_loc *loc)
{
	cxlp_page_t pg;
	int rc = 0;

	pthread_mutex_lock(&h->page_lock);
	if (owntab_page_of(h, loc, &pg) != 0) {
		pthread_mutex_unlock(&h->page_lock);
		return;
	}
	switch (pagetab_state(&h->pages, pg)) {
	case PAGE_REGISTERED:
		rc = pagetab_move(&h->pages, pg, PAGE_REGISTERED, PAGE_FREE);
		break;
	case PAGE_INFLIGHT:
		rc = pagetab_move(&h->pages, pg, PAGE_INFLIGHT,
		    PAGE_INFLIGHT_DELETED);
		break;
	case PAGE_UNRESOLVED:
		if (pagelife_forget(h, pg)) {
			rc = pagetab_move(&h->pages, pg, PAGE_UNRESOLVED,
			    PAGE_FREE);
		}
		break;
	default:
		break;
	}
	cxlp_assert(rc == 0);
	doubt_note(h); /* a tainted page went QUARANTINED, not FREE */
	pagelife_unlock(h);
}
