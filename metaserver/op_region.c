/*
 * op_region.c -- the region ops: REGION_ALLOC and REGION_FREE.
 *
 * A handler asks for a region of the data area and carves pages out of
 * it itself; the pool's region table (pool/region.c) records who owns
 * which. REGION_ALLOC stamps the region with the request id
 * (pool_region_alloc_req), so a retry the reply cache no longer answers
 * finds the region its first run took instead of taking a second one
 * (the op's row in dispatch.c is self_replay). REGION_FREE disowns only a
 * region the caller owns, at the generation it names (contract 7).
 * RECLAIM is REGION_ALLOC for a pool that may be full: when no region can
 * be had, it answers with pages of the caller's own regions that eviction
 * freed (evict.c), and asks a handler that holds more regions to give
 * some back (asks.c); with neither, CXLP_E_BUSY while asks are out (the
 * handler retries), else CXLP_E_NOSPACE.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "err.h"
#include "log.h"
#include "op.h"
#include "pool.h"

/* A region for the session, or the one this request id took before;
 * with none free, orphan regions are emptied first (evict.c note 1); none
 * while an older request waits for one (waitq.c note 2). */
static int
region_take(struct req *rq, struct proto_loc *loc)
{
	struct pool_region r = { 0 };
	bool found = pool_region_find_req(rq->ms->pool, op_sess_id(rq),
	    rq->h.req_id, &r) == 0;
	int rc = found ? 0 : !ms_waitq_may_take_region(rq->ms,
	    op_sess_id(rq)) ? CXLP_E_NOSPACE :
	    pool_region_alloc_req(rq->ms->pool, op_sess_id(rq), rq->h.req_id,
	    rq->len, rq->page_size, &r, &found);

	if (rc == CXLP_E_NOSPACE && !found &&
	    ms_waitq_may_take_region(rq->ms, op_sess_id(rq)) &&
	    ms_evict_orphans(rq->ms, rq->len, 0, POOL_EVICT_ORPHAN) > 0) {
		rc = pool_region_alloc_req(rq->ms->pool, op_sess_id(rq),
		    rq->h.req_id, rq->len, rq->page_size, &r, &found);
	}
	log_info("op=%s session=%llu region=%u len=%llu page_size=%llu "
	    "replay=%d rc=%d", rq->h.op == PROTO_OP_RECLAIM ? "reclaim" :
	    "region_alloc", (unsigned long long)op_sess_id(rq), r.id,
	    (unsigned long long)r.len, (unsigned long long)rq->page_size,
	    found, rc);
	if (rc == CXLP_E_NOSPACE && rq->h.op == PROTO_OP_REGION_ALLOC &&
	    rq->ms->evict.on) {
		return ms_ask_regions(rq->ms, op_sess_id(rq));
	}
	if (rc == CXLP_E_NOSPACE) {
		return ms_nospace(rq->ms, rq->len);
	}
	*loc = (struct proto_loc){ .region = r.id, .gen = r.gen,
		.region_off = r.off, .region_len = r.len };
	return rc;
}

/* op_region_alloc -- REGION_ALLOC: a region for the session, or the one
 * this request id took before. */
int
op_region_alloc(struct req *rq)
{
	struct proto_loc loc;
	int rc = region_take(rq, &loc);

	if (rc != 0) {
		return rc;
	}
	op_put_hdr(rq, 0);
	proto_put_loc(rq->reply, &loc);
	return 0;
}

/* op_reclaim -- RECLAIM: a region if one can be had, else pages of the
 * caller's own regions whose keys were evicted (evict.c note 2). */
int
op_reclaim(struct req *rq)
{
	struct proto_reclaimed m = { .kind = PROTO_RECLAIM_REGION };
	int rc = rq->len == 0 ? cxlp_fail(CXLP_E_NOSPACE, "no region asked "
	    "for (len 0)") : region_take(rq, &m.loc);

	if (rc == CXLP_E_NOSPACE) {
		char why[256];
		int asked = rq->len > 0 && rq->ms->evict.on ?
		    ms_ask_regions(rq->ms, op_sess_id(rq)) : CXLP_E_NOSPACE;

		snprintf(why, sizeof(why), "%s", cxlp_errormsg());
		if ((m.pages = calloc(rq->want, sizeof(*m.pages))) == NULL) {
			return cxlp_fail(-ENOMEM, "reclaim: no memory");
		}
		m.kind = PROTO_RECLAIM_PAGES;
		m.n = ms_evict_own(rq->ms, op_sess_id(rq), rq->want, m.pages);
		rc = m.n > 0 ? 0 : cxlp_fail(asked == CXLP_E_BUSY ?
		    CXLP_E_BUSY : CXLP_E_NOSPACE, "%s", why);
		if (m.n == 0 && rq->ms->evict.on) {
			rc = ms_evict_held(rq->ms) != 0 ? CXLP_E_BUSY : rc;
		}
	}
	if (rc == 0) {
		op_put_hdr(rq, 0);
		proto_put_reclaimed(rq->reply, &m);
	}
	free(m.pages);
	return rc;
}

/* op_region_free -- REGION_FREE: disown a region the session owns, at
 * the generation named (CXLP_E_PERM otherwise). */
int
op_region_free(struct req *rq)
{
	struct pool_region r;
	int rc = pool_region_get(rq->ms->pool, rq->region, &r);

	if (rc != 0 || r.gen != rq->gen || r.state != POOL_REGION_OWNED ||
	    r.owner != op_sess_id(rq)) {
		rc = cxlp_fail(CXLP_E_PERM, "region %u gen %u is not owned "
		    "by session %llu", rq->region, rq->gen,
		    (unsigned long long)op_sess_id(rq));
	} else {
		rc = pool_region_disown(rq->ms->pool, rq->region);
	}
	log_info("op=region_free session=%llu region=%u gen=%u rc=%d",
	    (unsigned long long)op_sess_id(rq), rq->region, rq->gen, rc);
	if (rc != 0) {
		return rc;
	}
	op_put_hdr(rq, 0);
	return 0;
}
