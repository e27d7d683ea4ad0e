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
 * DESIGN NOTES
 * 1. No callback under a lock. The region map changes under map_lock held
 *    for writing, often with expand_lock held too (an alloc that adds a
 *    region). A callback that called back into the library from there
 *    would deadlock. So changes are queued [regview_note, under map_lock
 *    and the queue's ev_lock, a leaf lock] and delivered later by
 *    regview_drain, which the library calls where it holds no lock: at
 *    the end of every alloc (regions_alloc), retrieve (ops.c), region
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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "handler_int.h"
#include "kvread.h"
#include "layout.h"
#include "log.h"
#include "map.h"
#include "pool.h"

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

/* regview_delivering -- see handler_int.h */
bool
regview_delivering(const struct cxlp_handler *h)
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

static void
ent_info(const struct cxlp_handler *h, const struct rmap_ent *e,
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

/* regview_note -- see handler_int.h */
void
regview_note(struct cxlp_handler *h, const struct rmap_ent *e, int kind)
{
	struct regview *rv = rv_get(h);
	struct cxlp_region_info info;

	if (rv == NULL) {
		return;
	}
	ent_info(h, e, &info);
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

/* regview_drain -- see handler_int.h */
void
regview_drain(struct cxlp_handler *h)
{
	struct regview *rv = rv_get(h);

	if (rv == NULL || regview_delivering(h) ||
	    in_callbacks == RV_NEST_MAX) {
		return; /* nothing set; or an outer loop delivers (note 3) */
	}
	pthread_mutex_lock(&rv->deliver_lock);
	drain_locked(h, rv);
	pthread_mutex_unlock(&rv->deliver_lock);
}

/* regview_fini -- see handler_int.h */
void
regview_fini(struct cxlp_handler *h)
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

/* Every entry of the region map into out[0..cap), sorted by id; returns
 * how many there are. map_lock held. */
static size_t
rmap_collect(struct cxlp_handler *h, struct cxlp_region_info *out,
    size_t cap)
{
	size_t n = 0;

	for (int i = 0; i < RMAP_BUCKETS; i++) {
		for (const struct rmap_ent *e = h->regions.rmap[i]; e != NULL;
		    e = e->next) {
			if (n < cap) {
				ent_info(h, e, &out[n]);
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
	if (regview_delivering(h)) {
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

/* regview_page_size -- see handler_int.h */
uint64_t
regview_page_size(struct cxlp_handler *h, uint32_t region, uint32_t gen)
{
	const struct kvread *kr = direct_reader(h);
	const struct pool_rrec *r;
	uint64_t word, ps;

	if (kr == NULL || region >= kr->nregions) {
		return 0;
	}
	r = &kr->rtab[region];
	word = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
	ps = __atomic_load_n(&r->page_size, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&r->word, __ATOMIC_RELAXED) != word ||
	    rrec_gen(word) != gen || rrec_state(word) == POOL_REGION_FREE ||
	    ps == 0 || ps > UINT32_MAX) {
		return 0;
	}
	return ps;
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
	word = __atomic_load_n(&kr->rtab[region].word, __ATOMIC_ACQUIRE);
	memcpy(&copy, &kr->rtab[region], sizeof(copy));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
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
			ent_info(h, e, out);
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
	if ((rc = regions_resolve_ptr(h, &loc, &p)) != 0) {
		return rc;
	}
	regview_drain(h);
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
			*buf = regions_page_addr(h, *page, NULL);
		}
	}
	pthread_mutex_unlock(&h->page_lock);
	return rc;
}
