/*
 * op_kv.c -- the key ops: REGISTER, LOOKUP, EXISTS, PIN, UNPIN, DELETE,
 * LEASE (a lookup that leases what it finds: lease.c).
 *
 * Each takes a batch of keys, decoded with their index hashes and the
 * per-key result arrays before any lock (dispatch.c), and answers one
 * result per key in order. Under the op's lock a batch first reserves
 * room for the pins it may take and warms the index for its keys
 * (results_new); then it loops over its keys.
 *
 * Per-key rules (contracts 2, 3, 5, 7) live here: REGISTER decides
 * existence inside pool_kv_insert under the write lock (no
 * check-then-act) and pins winners and losers in the same critical
 * section; PIN stops at the first missing key; UNPIN releases only the
 * caller's own pins; DELETE refuses pinned keys and keys in another live
 * session's region. Pin changes carry the request id and each key's
 * occurrence number in the batch (occurrences), so that a replay after a
 * restart skips the changes its first run made (pool_pin_change).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "op.h"

void
op_kv_loc(const struct pool *p, const struct pool_kv *kv, struct proto_loc *loc)
{
	struct pool_region r;

	memset(loc, 0, sizeof(*loc));
	loc->region = kv->region;
	loc->gen = kv->gen;
	loc->off = kv->off;
	loc->len = kv->len;
	if (pool_region_get(p, kv->region, &r) == 0) {
		loc->region_off = r.off;
		loc->region_len = r.len;
	}
}

void
op_res_ok(struct req *rq, uint32_t i, const struct pool_kv *kv, uint32_t flags)
{
	rq->slots[i] = kv->slot;
	rq->res[i].status = 0;
	rq->res[i].flags = flags;
	op_kv_loc(rq->ms->pool, kv, &rq->res[i].loc);
}

/* Under the op's lock, before its per-key loop: room for the pins it may
 * take, and the index warmed for its keys, so that the probes' cache and
 * TLB misses overlap instead of coming one at a time (pool_kv_prefetch).
 * insert: the keys are about to be registered. */
int
op_results_new(struct req *rq, bool pin, bool insert)
{
	pool_kv_prefetch(rq->ms->pool, rq->hash, rq->n, insert);
	return pin ? pool_pin_reserve(rq->ms->pool, rq->n) : 0;
}

static int
cmp_occ(const void *a, const void *b)
{
	const struct occ *x = a, *y = b;

	if (x->slot != y->slot) {
		return x->slot < y->slot ? -1 : 1;
	}
	return x->i < y->i ? -1 : x->i > y->i;
}

/* nth[i] = 1 + how many earlier keys of res[0..m) found the same slot
 * (the change number pool_pin_change needs to recognize a replay) */
static void
occurrences(struct req *rq, uint32_t m)
{
	struct occ *o = rq->occ;
	unsigned *nth = rq->nth;
	uint32_t k = 0;

	for (uint32_t i = 0; i < m; i++) {
		if (rq->res[i].status == 0) {
			o[k++] = (struct occ){ rq->slots[i], i };
		}
	}
	qsort(o, k, sizeof(*o), cmp_occ);
	for (uint32_t j = 0; j < k; j++) {
		nth[o[j].i] = j > 0 && o[j - 1].slot == o[j].slot ?
		    nth[o[j - 1].i] + 1 : 1;
	}
}

/* Pin (delta +1) or unpin (-1) the key of every good result in res[0..m),
 * durably, in order. Room was reserved, so a pin is refused only at
 * PIN_COUNT_MAX. Returns how many results to reply with: m, or with
 * REFUSED_STOP one past the first refused change. */
uint32_t
op_pin_results(struct req *rq, uint32_t m, int delta, enum refused on)
{
	uint32_t kept = 0;

	occurrences(rq, m);
	for (uint32_t i = 0; i < m; i++) {
		bool applied; /* unused: a replay's 0 is success too */
		int prc;

		if (rq->res[i].status != 0) {
			continue;
		}
		prc = pool_pin_change(rq->ms->pool, op_sess_id(rq),
		    rq->slots[i], delta, rq->h.req_id, rq->nth[i], &applied);
		if (prc != 0 && on == REFUSED_KEEP) {
			kept++;
		} else if (prc != 0) {
			memset(&rq->res[i], 0, sizeof(rq->res[i]));
			rq->res[i].status = prc;
			if (on == REFUSED_STOP) {
				return i + 1;
			}
		}
	}
	if (kept > 0) {
		log_err("op=%s session=%llu refused=%u msg=\"keys stored "
		    "without their pin: %s\"", proto_op_name(rq->h.op),
		    (unsigned long long)op_sess_id(rq), kept, cxlp_errormsg());
	}
	return m;
}

void
op_put_results(struct req *rq, uint32_t n)
{
	op_put_hdr(rq, 0);
	proto_put_results(rq->reply, n, rq->res);
}

/* the session's HELLO lease, for PROTO_F_LEASE; CXLP_E_PROTO if none */
static int
flag_lease(const struct req *rq, uint32_t *ms)
{
	*ms = rq->s->lease_ms;
	if ((rq->flags & PROTO_F_LEASE) && *ms == 0) {
		return cxlp_fail(CXLP_E_PROTO, "PROTO_F_LEASE from a session "
		    "whose HELLO named no lease_ms");
	}
	return 0;
}

/* REGISTER's leases: winners and losers, as its pins; a key that could
 * not be leased stays registered and reported stored (its page must not
 * be freed), as with pins (REFUSED_KEEP) */
static void
lease_register(struct req *rq, uint32_t lease_ms)
{
	uint64_t now = cxlp_now_ms(), real = cxlp_now_real_ns();
	unsigned kept = 0;

	if (lease_ms > rq->ms->evict.lease_max_ms) {
		lease_ms = rq->ms->evict.lease_max_ms;
	}
	for (uint32_t i = 0; i < rq->n; i++) {
		if (rq->res[i].status == 0 && pool_lease_set(rq->ms->pool,
		    op_sess_id(rq), rq->slots[i], now + lease_ms,
		    real + (uint64_t)lease_ms * 1000000u) != 0) {
			kept++;
		}
	}
	if (kept > 0) {
		log_err("op=register session=%llu refused=%u msg=\"keys stored "
		    "without their lease: %s\"",
		    (unsigned long long)op_sess_id(rq), kept, cxlp_errormsg());
	}
}

/* op_register -- REGISTER: insert each key at the caller's page (first
 * writer wins), pinning winners and losers when asked. */
int
op_register(struct req *rq)
{
	bool pin = (rq->flags & PROTO_F_PIN) != 0;
	unsigned added = 0, failed = 0;
	char why[128] = "";
	uint32_t lease_ms;
	int rc = flag_lease(rq, &lease_ms);

	if (rc != 0 || (rc = op_results_new(rq, pin, true)) != 0) {
		return rc;
	}
	for (uint32_t i = 0; i < rq->n; i++) {
		const struct proto_reg *g = &rq->regs[i];
		struct pool_kv kv;
		bool ins = false;

		rc = pool_kv_insert(rq->ms->pool, op_sess_id(rq), g->key.data,
		    g->key.len, g->region, g->off, g->len, &kv, &ins);
		if (rc != 0) {
			rq->res[i].status = rc;
			if (failed++ == 0) {
				snprintf(why, sizeof(why), "%s",
				    cxlp_errormsg());
			}
			continue;
		}
		op_res_ok(rq, i, &kv, ins ? PROTO_R_NEW : 0);
		added += ins;
	}
	/* winners and losers pinned in the same critical section */
	if (pin) {
		(void)op_pin_results(rq, rq->n, +1, REFUSED_KEEP);
	}
	if (rq->flags & PROTO_F_LEASE) {
		lease_register(rq, lease_ms);
	}
	log_info("op=register session=%llu n=%u new=%u existing=%u "
	    "failed=%u pin=%d rc=0%s%s%s", (unsigned long long)op_sess_id(rq),
	    rq->n, added, rq->n - added - failed, failed, pin,
	    failed ? " first_failure=\"" : "", why, failed ? "\"" : "");
	op_put_results(rq, rq->n);
	return 0;
}

/* lookup_keys -- fill rq->res with each key's location or error, in
 * order; with stop_at_miss, stop after the first missing key. Returns how
 * many entries were filled. */
static uint32_t lookup_keys(struct req *rq, bool stop_at_miss);

/* lookup_all -- rq->res[0..n) := each key's location or error (no stop
 * at a miss); returns n, 0 when the batch could not be prepared. */
static uint32_t
lookup_all(struct req *rq)
{
	int rc = op_results_new(rq, false, false);

	return rc != 0 ? 0 : lookup_keys(rq, false);
}

static uint32_t
lookup_keys(struct req *rq, bool stop_at_miss)
{
	uint32_t m = 0;

	while (m < rq->n) {
		struct pool_kv kv;
		int rc = pool_kv_lookup(rq->ms->pool, rq->keys[m].data,
		    rq->keys[m].len, &kv);

		if (rc != 0) {
			rq->res[m++].status = rc;
			if (stop_at_miss) {
				break;
			}
			continue;
		}
		if (rq->h.op == PROTO_OP_LOOKUP) {
			pool_access_touch(rq->ms->pool, kv.slot); /* a read */
		}
		op_res_ok(rq, m++, &kv, 0);
	}
	return m;
}

/* op_lookup -- LOOKUP (optionally pinning what it finds) and EXISTS. */
int
op_lookup(struct req *rq)
{
	bool pin = (rq->flags & PROTO_F_PIN) != 0;
	uint32_t lease_ms;
	int rc = flag_lease(rq, &lease_ms);

	if (rc != 0 || (rc = op_results_new(rq, pin, false)) != 0) {
		return rc;
	}
	lookup_keys(rq, false);
	if (rq->h.op == PROTO_OP_LOOKUP) {
		uint32_t found = 0;

		for (uint32_t i = 0; i < rq->n; i++) {
			found += rq->res[i].status == 0;
		}
		ms_metrics_lookups(rq->ms, found, rq->n - found);
	}
	if (pin) {
		(void)op_pin_results(rq, rq->n, +1, REFUSED_MARK);
	}
	if (rq->flags & PROTO_F_LEASE) {
		ms_lease_keys(rq, rq->n, lease_ms);
	}
	op_put_results(rq, rq->n);
	return 0;
}

/* op_lease -- LEASE: lease, renew or release each key found. */
int
op_lease(struct req *rq)
{
	uint32_t n = lookup_all(rq);

	ms_lease_keys(rq, n, rq->want);
	log_dbg("op=lease session=%llu n=%u lease_ms=%u",
	    (unsigned long long)op_sess_id(rq), rq->n, rq->want);
	op_put_hdr(rq, 0);
	proto_put_results(rq->reply, n, rq->res);
	return 0;
}

/* op_pin -- PIN: pin each key; stops after the first key that is missing
 * or cannot take one more pin. */
int
op_pin(struct req *rq)
{
	uint32_t m;
	int rc = op_results_new(rq, true, false);

	if (rc != 0) {
		return rc;
	}
	m = op_pin_results(rq, lookup_keys(rq, true), +1, REFUSED_STOP);
	log_dbg("op=pin session=%llu n=%u done=%u",
	    (unsigned long long)op_sess_id(rq), rq->n, m);
	op_put_results(rq, m);
	return 0;
}

/* op_unpin -- UNPIN: releases one of the caller's pins on each key
 * found. */
int
op_unpin(struct req *rq)
{
	int rc = op_results_new(rq, false, false);

	if (rc != 0) {
		return rc;
	}
	lookup_keys(rq, false);
	(void)op_pin_results(rq, rq->n, -1, REFUSED_MARK);
	op_put_results(rq, rq->n);
	return 0;
}

/* Delete one key: refused while pinned by anyone, or while its region is
 * owned by another live session (eviction is the owner's). A fenced
 * owner (silence.c) has ended: its keys are anyone's, though its record
 * keeps the region out of use. */
static int
delete_one(struct req *rq, uint32_t i)
{
	struct pool *p = rq->ms->pool;
	const struct proto_key *k = &rq->keys[i];
	struct pool_region r;
	struct pool_kv kv;
	int rc = pool_kv_lookup(p, k->data, k->len, &kv);

	if (rc != 0) {
		return rc;
	}
	if (pool_pin_total(p, kv.slot) > 0) {
		return cxlp_fail(CXLP_E_PINNED, "key is pinned");
	}
	if (pool_leased(p, kv.slot, cxlp_now_ms())) {
		return cxlp_fail(CXLP_E_PINNED, "key is leased");
	}
	if (pool_region_get(p, kv.region, &r) == 0 &&
	    r.state == POOL_REGION_OWNED && r.owner != op_sess_id(rq) &&
	    !ms_sess_fenced_id(rq->ms, r.owner)) {
		return cxlp_fail(CXLP_E_PERM, "key belongs to live session "
		    "%llu", (unsigned long long)r.owner);
	}
	op_kv_loc(p, &kv, &rq->res[i].loc); /* before the region may go */
	return pool_kv_remove(p, k->data, k->len, &kv);
}

/* op_delete -- DELETE: remove each key the caller may remove. */
int
op_delete(struct req *rq)
{
	unsigned failed = 0;
	int rc = op_results_new(rq, false, false);

	if (rc != 0) {
		return rc;
	}
	for (uint32_t i = 0; i < rq->n; i++) {
		rc = delete_one(rq, i);
		if (rc != 0) {
			memset(&rq->res[i], 0, sizeof(rq->res[i]));
			rq->res[i].status = rc;
			failed++;
		}
	}
	log_info("op=delete session=%llu n=%u failed=%u rc=0",
	    (unsigned long long)op_sess_id(rq), rq->n, failed);
	op_put_results(rq, rq->n);
	return 0;
}
