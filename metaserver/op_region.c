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
 */
#include "err.h"
#include "log.h"
#include "op.h"
#include "pool.h"

/* op_region_alloc -- REGION_ALLOC: a region for the session, or the one
 * this request id took before. */
int
op_region_alloc(struct req *rq)
{
	struct pool_region r = { 0 };
	struct proto_loc loc = { 0 };
	bool found = false;
	int rc = pool_region_alloc_req(rq->ms->pool, op_sess_id(rq),
	    rq->h.req_id, rq->len, rq->page_size, &r, &found);

	log_info("op=region_alloc session=%llu region=%u len=%llu "
	    "page_size=%llu replay=%d rc=%d",
	    (unsigned long long)op_sess_id(rq), r.id,
	    (unsigned long long)r.len, (unsigned long long)rq->page_size,
	    found, rc);
	if (rc != 0) {
		return rc;
	}
	loc.region = r.id;
	loc.gen = r.gen;
	loc.region_off = r.off;
	loc.region_len = r.len;
	op_put_hdr(rq, 0);
	proto_put_loc(rq->reply, &loc);
	return 0;
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
