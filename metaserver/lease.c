/*
 * lease.c -- leases: pins with a time limit (pool/lease.c keeps them):
 * taking them for a request's keys [ms_lease_keys] and ending them when
 * their time runs out [ms_leases_expire]. The LEASE op itself is a lookup
 * that leases what it finds (op_kv.c, op_lease); whether a restarted
 * server may evict yet is eviction's rule (evict.c, ms_evict_held).
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
 * granted has run out (evict.c, ms_evict_held), so a lease survives the server as
 * a promise even though its entry does not.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "op.h"

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
