/*
 * op_lease.c -- leases: pins with a time limit (pool/lease.c keeps them).
 *
 * A pin holds a key until its holder releases it, and is never evicted;
 * a reader that dies releases it with its session, but one that only
 * forgets holds the key, and its space, until it closes. A lease holds a
 * key out of eviction (and refuses its delete, as a pin does) for a
 * while: until its time runs out, its holder releases it (LEASE with
 * lease_ms 0), or its session ends. Readers take one with LOOKUP or
 * REGISTER (PROTO_F_LEASE: the session's lease_ms from its HELLO) or with
 * LEASE (any time up to --lease-max-ms, per call); taking it again renews
 * it.
 *
 * The durable part is one word (pool/lease.c): a server restarted after a
 * kill -9 evicts nothing until every lease its predecessor may have
 * granted has run out [ms_evict_held], so a lease survives the server as
 * a promise even though its entry does not.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "log.h"
#include "op.h"

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

/* ms_lease_keys -- see ms_int.h */
void
ms_lease_keys(struct req *rq, uint32_t m, uint32_t lease_ms)
{
	uint64_t now = cxlp_now_ms(), real = cxlp_now_real_ns();

	if (lease_ms > rq->ms->evict.lease_max_ms) {
		lease_ms = rq->ms->evict.lease_max_ms;
	}
	for (uint32_t i = 0; i < m; i++) {
		int rc;

		if (rq->res[i].status != 0) {
			continue;
		}
		rc = pool_lease_set(rq->ms->pool, op_sess_id(rq), rq->slots[i],
		    lease_ms ? now + lease_ms : 0,
		    real + (uint64_t)lease_ms * 1000000u);
		if (rc != 0) {
			memset(&rq->res[i], 0, sizeof(rq->res[i]));
			rq->res[i].status = rc;
		}
	}
}

/* op_lease -- LEASE: lease, renew or release each key found. */
int
op_lease(struct req *rq)
{
	uint32_t n = op_lookup_keys(rq);

	ms_lease_keys(rq, n, rq->want);
	log_dbg("op=lease session=%llu n=%u lease_ms=%u",
	    (unsigned long long)op_sess_id(rq), rq->n, rq->want);
	op_put_hdr(rq, 0);
	proto_put_results(rq->reply, n, rq->res);
	return 0;
}

/* ms_leases_expire -- see ms_int.h */
void
ms_leases_expire(struct ms *ms)
{
	uint64_t active, expired, n;

	ms_rdlock(ms);
	pool_lease_stats(ms->pool, &active, &expired);
	ms_unlock(ms);
	if (active == 0) {
		return;
	}
	ms_wrlock(ms);
	n = pool_lease_expire(ms->pool, cxlp_now_ms());
	ms_unlock(ms);
	if (n > 0) {
		log_dbg("op=lease_expire leases=%llu", (unsigned long long)n);
		ms_space_event(ms);
	}
}
