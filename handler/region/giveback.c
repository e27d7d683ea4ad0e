/*
 * giveback.c -- a live handler returns the regions it no longer uses
 * (issue 17).
 *
 * A handler that stored keys in seven regions and deleted them all used
 * to own seven regions of nothing until it closed, and a full pool then
 * refused every other handler. So a region whose every page is free
 * goes back to the metaserver (REGION_FREE) once the handler holds more
 * empty regions than its reserve (cxlp_config_set_reserve_regions,
 * default 1): the reserve spares a round trip to a handler that frees
 * and allocates around a region boundary; 0 keeps none.
 *
 * DESIGN NOTES
 * 1. When. Pages become free in cxlp_free, in a delete of a key at one
 *    of my pages, and in a store that lost its race or was refused.
 *    Each of those releases the page lock through pagelife_unlock,
 *    which pokes the keeper thread (keeper_poke) when the page table
 *    holds more empty sets than the reserve (pages.c note 5, O(1)). The
 *    keeper runs giveback_run, so no caller waits for the round trip,
 *    and a region goes back moments after the free that emptied it,
 *    with no other call needed. A handler whose keeper thread could not
 *    start gives back in the thread that freed instead.
 * 2. Which, and why no page of it is handed out again. giveback_run
 *    takes every empty set past the first `reserve` out of the page
 *    table (pagetab_remove, which refuses a set holding a page in any
 *    state but FREE) and out of h->regions.own, under the page lock that every
 *    alloc takes: the check and the removal are one critical section.
 *    An alloc either took a page of the set first (then it is not empty
 *    and stays) or finds it gone. A page allocated, in flight,
 *    registered, unresolved or quarantined keeps its region; doubt.c
 *    says why a quarantined one must (a late REGISTER copy names region
 *    id and offset, not the region's gen).
 * 3. Unreachable before it is returned. A taken region's own entry
 *    leaves the region map (rmap_own_unlink), so no location
 *    resolves to its read-write mapping, and the mapping is made
 *    read-only (mprotect): a stale buffer pointer of this handler faults
 *    instead of writing into a region that may be another's a moment
 *    later. The mapping is retired, not unmapped, as regions.c retires
 *    replaced foreign ones: a pointer that an unpinned retrieve returned
 *    for a key since deleted still reads (stale bytes), never faults. A
 *    region whose mapping cannot be made read-only is not returned at
 *    all (kept, unused, until close).
 * 4. The round trip. REGION_FREE goes out under expand_lock, no other
 *    lock: allocs that find a free page never take it, and one that
 *    needs a new region waits for the REGION_FREE to land and then finds
 *    the space on the server. A REGION_FREE that got no answer (timeout,
 *    no connection) leaves the region on the leaving list, asked again
 *    by the next run (the keeper retries after a second). CXLP_E_PERM
 *    means the server no longer has the region as ours at that gen (an
 *    earlier try was applied, or the session was reset): done as well.
 * 5. Reuse. Retired mappings stay until close. A region granted later at
 *    the same extent (the pool's allocator is first fit, so a handler
 *    that gives back and asks again mostly gets the same one) takes the
 *    retired mapping, writable again [giveback_reuse], so the mappings a
 *    handler keeps are bounded by the distinct extents it ever owned,
 *    not by how often it gave regions back.
 * 6. The region cxlp_connect takes counts like any other: once a free
 *    or delete finds it empty past the reserve, it goes back too.
 * 7. Asked back (metaserver/asks.c). When the pool has no region for
 *    another handler, the server asks this one for some of its regions:
 *    a reply carrying PROTO_REP_F_ASK sets h->asked and pokes the keeper
 *    task an ASK wakes, this one (call.c),
 *    and the next run fetches the list (a HEARTBEAT's reply) and retires
 *    those regions in the page table (pages.c note 6: no page of them
 *    is handed out again). A retiring region goes back, with the keys
 *    registered in it, once no page of it is in use (allocated, in
 *    flight, unresolved, or tainted: a late REGISTER copy must not land
 *    in it): the server then holds it as ORPHAN, its keys readable until
 *    orphan eviction empties it for the handler that needed room. Its
 *    pages' states leave with it; a later delete of one of its keys
 *    frees nothing here. Pages still in use keep it until they settle
 *    (each settle pokes the keeper while regions are retiring).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "clock.h"
#include "err.h"
#include "region.h"
#include "log.h"
#include "map.h"

#define GIVEBACK_RETRY_MS 1000 /* after a REGION_FREE went unanswered */

/* giveback_call -- see region.h */
int
giveback_call(struct cxlp_handler *h, const struct proto_loc *loc)
{
	struct creply rep;
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	proto_put_region_free(&b, loc->region, loc->gen);
	rc = h_call(h, PROTO_OP_REGION_FREE, &b, &rep);
	pbuf_fini(&b);
	if (rc == 0) {
		client_reply_fini(&rep);
	}
	return rc;
}

/* Make r's mapping writable again, or read-only (note 3). */
static int
own_protect(struct own_region *r, bool writable)
{
	int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;

	if (mprotect(r->base, pmap_len(r->map), prot) != 0) {
		return cxlp_fail(-errno, "region %u: mprotect: %s",
		    r->loc.region, strerror(errno));
	}
	return 0;
}

/* The regions the server asks back (note 7), from a HEARTBEAT's reply,
 * retired in the page table. expand_lock held, not page_lock. */
static void
fetch_asks(struct cxlp_handler *h)
{
	struct proto_region_ref v[PROTO_ASKS_MAX];
	struct creply rep;
	uint32_t n = 0;
	int rc;

	if (!__atomic_exchange_n(&h->asked, 0, __ATOMIC_ACQ_REL)) {
		return;
	}
	if ((rc = h_call(h, PROTO_OP_HEARTBEAT, NULL, &rep)) != 0) {
		__atomic_store_n(&h->asked, 1, __ATOMIC_RELEASE);
		return; /* asked again at the next run */
	}
	if (rep.body.left > 0 && proto_get_asks(&rep.body, v, &n) != 0) {
		log_err("give-back: bad asks in a HEARTBEAT reply: %s",
		    cxlp_errormsg());
		n = 0;
	}
	client_reply_fini(&rep);
	pthread_mutex_lock(&h->page_lock);
	for (uint32_t i = 0; i < n; i++) {
		int set = owntab_find(h, v[i].region, v[i].gen);

		if (set >= 0) {
			pagetab_retire(&h->pages, (uint32_t)set);
		}
	}
	pthread_mutex_unlock(&h->page_lock);
	if (n > 0) {
		log_info("give-back: %u regions asked back", n);
	}
}

/* set i may go now: empty past the reserve (note 2), or retiring and
 * idle (note 7); page_lock held */
static bool
may_take(struct cxlp_handler *h, uint32_t i, unsigned *kept)
{
	uint32_t reg = 0;

	if (h->pages.sets[i].retiring && pagetab_idle(&h->pages, i)) {
		cxlp_assert(pagetab_remove_idle(&h->pages, i, &reg) == 0);
		if (reg > 0) {
			log_info("region %u gen %u: asked back with %u keys",
			    h->regions.own[i]->loc.region,
			    h->regions.own[i]->loc.gen, reg);
		}
		return true;
	}
	if (!pagetab_empty(&h->pages, i) || (*kept)++ < h->cfg.reserve_regions) {
		return false;
	}
	cxlp_assert(pagetab_remove(&h->pages, i) == 0);
	return true;
}

/* Take the empty sets past the reserve, and the idle asked ones, out of
 * the page table and h->regions.own (notes 2, 7); returns their regions,
 * linked. expand_lock held. */
static struct own_region *
take_empty(struct cxlp_handler *h)
{
	unsigned kept = 0;
	struct own_region *taken = NULL;

	if (__atomic_load_n(&h->closing, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&h->session_lost, __ATOMIC_ACQUIRE)) {
		return NULL; /* close frees them; or they are not ours */
	}
	fetch_asks(h);
	pthread_mutex_lock(&h->page_lock);
	for (uint32_t i = 0; i < h->regions.nown; i++) {
		if (h->regions.own[i] == NULL || !may_take(h, i, &kept)) {
			continue;
		}
		h->regions.own[i]->next = taken;
		taken = h->regions.own[i];
		h->regions.own[i] = NULL;
	}
	pthread_mutex_unlock(&h->page_lock);
	return taken;
}

/* Write-protect r, unlinked (note 3): true when it may be returned. */
static bool
unreach(struct own_region *r)
{
	if (own_protect(r, false) != 0) {
		log_err("region %u gen %u: kept until close, not given back: "
		    "%s", r->loc.region, r->loc.gen, cxlp_errormsg());
		return false;
	}
	return true;
}

/* REGION_FREE of r (note 4): true when settled, false to ask again. */
static bool
give_back(struct cxlp_handler *h, const struct own_region *r)
{
	int rc = giveback_call(h, &r->loc);

	if (rc == CXLP_E_TIMEOUT || rc == CXLP_E_CONN || rc == -ENOMEM) {
		log_info("region %u gen %u: give-back unanswered, asked "
		    "again later: %s", r->loc.region, r->loc.gen,
		    cxlp_errormsg());
		return false;
	}
	if (rc != 0) {
		log_info("region %u gen %u: not ours any more: %s",
		    r->loc.region, r->loc.gen, cxlp_errormsg());
	} else {
		log_info("region %u gen %u: given back", r->loc.region,
		    r->loc.gen);
	}
	return true;
}

static void
push(struct own_region **list, struct own_region *r)
{
	r->next = *list;
	*list = r;
}

/* giveback_run -- see region.h */
bool
giveback_run(struct cxlp_handler *h)
{
	struct giveback *g = &h->giveback;
	struct own_region *r, *fresh, *left = NULL;
	uint32_t retiring;

	pthread_mutex_lock(&h->expand_lock);
	fresh = take_empty(h);
	for (r = fresh; r != NULL; r = r->next) {
		rmap_own_unlink(h, &r->loc);
	}
	if (fresh != NULL) {
		/* the region callback hears of them (UNMAPPING) while they
		 * are still ours and as mapped as it knew them: out of the
		 * page table and the map, nothing hands them out meanwhile */
		pthread_mutex_unlock(&h->expand_lock);
		rmap_drain(h);
		pthread_mutex_lock(&h->expand_lock);
	}
	while ((r = fresh) != NULL) {
		fresh = r->next;
		push(unreach(r) ? &g->leaving : &g->retired, r);
	}
	while ((r = g->leaving) != NULL) {
		g->leaving = r->next;
		push(give_back(h, r) ? &g->retired : &left, r);
	}
	g->leaving = left;
	pthread_mutex_lock(&h->page_lock);
	retiring = h->pages.nretiring;
	pthread_mutex_unlock(&h->page_lock);
	pthread_mutex_unlock(&h->expand_lock);
	return left != NULL || retiring > 0 ||
	    __atomic_load_n(&h->asked, __ATOMIC_ACQUIRE);
}

/* The give-back's keeper task: due again GIVEBACK_RETRY_MS after a run
 * that left regions unanswered, else when poked. */
static uint64_t
giveback_due(struct cxlp_handler *h)
{
	return h->giveback.retry_ms != 0 ? h->giveback.retry_ms : UINT64_MAX;
}

static bool
giveback_keep(struct cxlp_handler *h)
{
	bool again = giveback_run(h);

	rmap_drain(h); /* UNMAPPING of the regions given back */
	h->giveback.retry_ms = again ?
	    cxlp_now_coarse_ms() + GIVEBACK_RETRY_MS : 0;
	return true;
}

/* giveback_task -- see region.h */
const struct keeper_task giveback_task = { giveback_due, giveback_keep };

/* giveback_retire -- see region.h */
void
giveback_retire(struct cxlp_handler *h, struct own_region *r)
{
	(void)own_protect(r, false); /* it goes back: no write lands */
	push(&h->giveback.retired, r);
}

/* giveback_reuse -- see region.h */
struct pmap *
giveback_reuse(struct cxlp_handler *h, const struct proto_loc *loc)
{
	struct own_region **pp = &h->giveback.retired, *r;
	struct pmap *m;

	while ((r = *pp) != NULL && (r->loc.region_off != loc->region_off ||
	    r->loc.region_len != loc->region_len)) {
		pp = &r->next;
	}
	if (r == NULL || own_protect(r, true) != 0) {
		return NULL;
	}
	*pp = r->next;
	m = r->map;
	free(r);
	return m;
}

static void
list_free(struct own_region **list)
{
	while (*list != NULL) {
		struct own_region *r = *list;

		*list = r->next;
		pmap_close(&r->map);
		free(r);
	}
}

/* giveback_fini -- see region.h */
void
giveback_fini(struct cxlp_handler *h)
{
	list_free(&h->giveback.leaving);
	list_free(&h->giveback.retired);
}
