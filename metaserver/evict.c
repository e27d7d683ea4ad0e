/*
 * evict.c -- the metaserver's eviction rules: when keys are evicted, whose,
 * and who is told. The pool (pool/evict.c) keeps the order (a CLOCK fed by
 * every reader's reference bytes) and makes each removal durable; this
 * module decides.
 *
 * DESIGN NOTES
 *
 * 1. Orphans first. A region whose owner closed or died stays readable
 *    while keys point into it (contract 6), so a pool that handlers filled
 *    and left is full for everyone after them. When a region is wanted
 *    and none is free, ORPHAN regions are emptied whole, the one with the
 *    fewest keys first (the least loss per region freed), until a free
 *    extent of the size asked for exists [ms_evict_orphans]. Pinned keys
 *    stay, and keep their region.
 *
 * 2. The caller's own keys, in the round trip that found the pool full.
 *    A handler whose regions are full and that can get no region sends
 *    RECLAIM with how many pages it is short of; the server evicts that
 *    many of the caller's own keys in CLOCK order (the pool's whole order
 *    restricted to the caller's regions) and answers with their pages,
 *    which are free for the caller again once the reply is read: their
 *    removal was durable before the reply was built [ms_evict_own]. No
 *    other handler's page changes hands, so no owner ever learns late that
 *    a page it holds was taken.
 *
 * 3. In the background the reaper keeps the data area's free bytes above
 *    the low watermark (--evict-free, percent) by emptying orphan regions,
 *    so that a new handler's first region rarely waits for eviction
 *    [ms_evict_background]. Those keys count as evicted for the mark
 *    (POOL_EVICT_WATERMARK), those a region asked for took as orphans.
 *
 * 4. Leases (lease.c) hold their keys like pins while they run; after
 *    a restart nothing is evicted until leases the previous server may
 *    have granted have run out (ms_evict_held).
 *
 * 5. Off (--evict off): nothing is evicted, and a full pool answers
 *    CXLP_E_NOSPACE as before eviction existed.
 *
 * 6. Logs. A pass that evicts nothing logs nothing (orphan regions whose
 *    keys are pinned are tried again by every pass: 1.43 million
 *    "keys=0" lines in 150 s, issue 25), and the lines of passes that do
 *    are rate-limited per call site with a count (log.h, log_rl_info):
 *    under a churn every RECLAIM is a pass.
 */
#include <stdlib.h>

#include "clock.h"
#include "err.h"
#include "log.h"
#include "ms_int.h"

/* ms_evict_held -- see ms_int.h */
int
ms_evict_held(const struct ms *ms)
{
	uint64_t now = cxlp_now_real_ns();

	if (now >= ms->evict.hold_ns) {
		return 0;
	}
	return cxlp_fail(CXLP_E_BUSY, "pool full: no eviction for %llu ms "
	    "more, while leases granted before this server started may run",
	    (unsigned long long)((ms->evict.hold_ns - now) / 1000000u + 1));
}

/* the ORPHAN region with the fewest keys that eviction can still empty
 * (not in tried), or UINT32_MAX */
static uint32_t
orphan_pick(const struct ms *ms, const uint8_t *tried)
{
	uint32_t best = UINT32_MAX;
	uint64_t best_keys = UINT64_MAX;

	for (uint32_t i = 0; i < pool_region_max(ms->pool); i++) {
		struct pool_region r;

		if (tried[i] || pool_region_get(ms->pool, i, &r) != 0 ||
		    r.state != POOL_REGION_ORPHAN) {
			continue;
		}
		if (r.nkeys < best_keys) {
			best = i;
			best_keys = r.nkeys;
		}
	}
	return best;
}

static bool
room(const struct ms *ms, uint64_t need, uint64_t free_target)
{
	struct pool_stats st;

	pool_stats(ms->pool, &st);
	return st.largest_free >= need && st.free_bytes >= free_target;
}

/* ms_evict_orphans -- see ms_int.h (note 1) */
size_t
ms_evict_orphans(struct ms *ms, uint64_t need, uint64_t free_target,
    enum pool_evict_cause cause)
{
	uint32_t nreg = pool_region_max(ms->pool);
	uint8_t *tried;
	size_t n = 0;
	uint32_t id;

	struct evict_ops ops = { .now_ms = cxlp_now_ms() };

	if (!ms->evict.on || room(ms, need, free_target) ||
	    ms_evict_held(ms) != 0 || (tried = calloc(nreg + 1, 1)) == NULL) {
		return 0;
	}
	while ((id = orphan_pick(ms, tried)) != UINT32_MAX) {
		size_t k = pool_evict_region(ms->pool, id, cause, &ops);

		tried[id] = 1; /* what stays is pinned: try the next one */
		n += k;
		if (k > 0) { /* note 6 */
			log_rl_info("op=evict cause=%s region=%u keys=%zu",
			    cause == POOL_EVICT_WATERMARK ? "watermark" :
			    "orphan", id, k);
		}
		if (room(ms, need, free_target)) {
			break;
		}
	}
	free(tried);
	return n;
}

struct own {
	struct ms *ms;
	uint64_t sess;
	struct proto_page *pages;
	uint32_t n;
};

static bool
own_may(void *arg, const struct pool_kv *kv)
{
	struct own *o = arg;
	struct pool_region r;

	return pool_region_get(o->ms->pool, kv->region, &r) == 0 &&
	    r.state == POOL_REGION_OWNED && r.owner == o->sess;
}

static void
own_gone(void *arg, const struct pool_kv *kv)
{
	struct own *o = arg;
	struct pool_region r;

	cxlp_assert(pool_region_get(o->ms->pool, kv->region, &r) == 0);
	o->pages[o->n++] = (struct proto_page){ .region = kv->region,
		.gen = kv->gen,
		.page = (uint32_t)((kv->off - r.off) / r.page_size) };
}

/* ms_evict_own -- see ms_int.h (note 2) */
uint32_t
ms_evict_own(struct ms *ms, uint64_t sess, uint32_t want,
    struct proto_page *pages)
{
	struct own o = { ms, sess, pages, 0 };
	struct evict_ops ops = { .may = own_may, .gone = own_gone, .arg = &o,
		.now_ms = cxlp_now_ms() };

	if (!ms->evict.on || ms_evict_held(ms) != 0) {
		return 0;
	}
	(void)pool_evict_clock(ms->pool, want, POOL_EVICT_PRESSURE, &ops);
	if (o.n > 0) {
		log_rl_info("op=evict cause=pressure session=%llu keys=%u",
		    (unsigned long long)sess, o.n);
	}
	return o.n;
}

/* ms_drain_orphans -- see ms_int.h */
size_t
ms_drain_orphans(struct ms *ms)
{
	struct evict_ops ops = { .now_ms = cxlp_now_ms() };
	size_t n = 0;

	for (uint32_t i = 0; i < pool_region_max(ms->pool); i++) {
		struct pool_region r;

		if (pool_region_get(ms->pool, i, &r) == 0 &&
		    r.state == POOL_REGION_ORPHAN) {
			n += pool_evict_region(ms->pool, i, POOL_EVICT_ORPHAN,
			    &ops);
		}
	}
	log_info("op=drain_orphans keys=%zu", n);
	return n;
}

/* ms_evict_background -- see ms_int.h (note 3) */
void
ms_evict_background(struct ms *ms)
{
	struct pool_stats st;
	uint64_t target;

	if (!ms->evict.on || ms->evict.free_pct == 0) {
		return;
	}
	ms_rdlock(ms);
	pool_stats(ms->pool, &st);
	ms_unlock(ms);
	target = st.data_bytes / 100 * ms->evict.free_pct;
	if (st.orphan_regions == 0 || st.free_bytes >= target) {
		return;
	}
	ms_wrlock(ms);
	if (ms_evict_orphans(ms, 0, target, POOL_EVICT_WATERMARK) > 0) {
		ms_space_event(ms);
	}
	ms_unlock(ms);
}

/* ms_nospace -- see ms_int.h (len 0: a region of any size) */
int
ms_nospace(struct ms *ms, uint64_t len)
{
	struct pool_stats st;
	uint64_t leases, expired;

	pool_stats(ms->pool, &st);
	pool_lease_stats(ms->pool, &leases, &expired);
	if (len == 0) {
		len = pool_align(ms->pool);
	}
	/* short: the reason must fit PROTO_ERRMSG_MAX with a wait's note */
	return cxlp_fail(CXLP_E_NOSPACE, "pool full: no free extent of %llu "
	    "bytes (%llu free), %s; %llu keys, %llu pinned, %llu leased; "
	    "%llu regions: %llu of live handlers, %llu orphaned",
	    (unsigned long long)len, (unsigned long long)st.free_bytes,
	    ms->evict.on ? "nothing evictable" : "eviction off (--evict off)",
	    (unsigned long long)st.keys, (unsigned long long)st.pins,
	    (unsigned long long)leases, (unsigned long long)st.regions,
	    (unsigned long long)(st.regions - st.orphan_regions),
	    (unsigned long long)st.orphan_regions);
}
