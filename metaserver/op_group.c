/*
 * op_group.c -- the request-group ops: GROUP (open, commit, abort,
 * cancel), GROUP_REGISTER (stage a batch of keys) and GROUP_LOOKUP (pin
 * the chunks already present). group.c holds the groups and their design
 * notes; this file holds the rules of each op.
 *
 * Every op but CANCEL is the owner's. A group with no declared total
 * refuses its first batch; a batch that would take it past its total
 * rolls it back and is refused, as does a commit that fails. A group
 * leaves the table only at its owner's ABORT or COMMIT or at the end of
 * its session: one rolled back keeps its record, cancelled, until then,
 * so that its owner is told (CXLP_E_CANCELED), not answered NOTFOUND,
 * which means the group is unknown (a restart). The pins a group takes carry the
 * request's id (op_pin_results), so a batch replayed from the reply
 * cache changes nothing; the releases at commit and rollback carry none:
 * the group, once ended, is gone, and no replay finds it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "op.h"

/* CXLP_E_NOTFOUND: no group of that id (never opened, ended, or lost to
 * a restart: the handler tells these apart) */
static int
no_group(const struct req *rq)
{
	return cxlp_fail(CXLP_E_NOTFOUND, "no open group \"%.*s\"",
	    (int)rq->group.id_len, (const char *)rq->group.id);
}

/* the caller's own group named in rq, still open: 0 and *out, or the
 * error that says why not */
static int
own_group(struct req *rq, struct ms_group **out)
{
	struct ms_group *g = ms_group_find(rq->ms, rq->group.id,
	    rq->group.id_len);

	*out = g;
	if (g == NULL) {
		return no_group(rq);
	}
	if (g->owner != op_sess_id(rq)) {
		return cxlp_fail(CXLP_E_GROUP, "group \"%.*s\" belongs to "
		    "session %llu", (int)g->id_len, (const char *)g->id,
		    (unsigned long long)g->owner);
	}
	if (g->cancelled_by != 0) {
		return cxlp_fail(CXLP_E_CANCELED, "group \"%.*s\" was rolled "
		    "back (by session %llu)", (int)g->id_len,
		    (const char *)g->id, (unsigned long long)g->cancelled_by);
	}
	if (rq->h.req_id < g->open_req) {
		/* a late copy of a request for an earlier group of this id
		 * (a session's request ids only grow): not this group's */
		*out = NULL;
		return cxlp_fail(CXLP_E_NOTFOUND, "request %llu was sent "
		    "before group \"%.*s\" was opened (request %llu): a late "
		    "copy for an earlier group of that id",
		    (unsigned long long)rq->h.req_id, (int)g->id_len,
		    (const char *)g->id, (unsigned long long)g->open_req);
	}
	return 0;
}

/* A batch of n more chunks for g: refused without a total, rolled back
 * past it. */
static int
group_admit(struct req *rq, struct ms_group *g, uint32_t n,
    uint64_t key_bytes)
{
	if (g->total == 0) {
		return cxlp_fail(CXLP_E_GROUP, "group \"%.*s\" declares no "
		    "total: open it with the number of chunks it will send",
		    (int)g->id_len, (const char *)g->id);
	}
	if (g->count + n > g->total) {
		uint32_t count = g->count;

		ms_group_rollback(rq->ms, g, op_sess_id(rq), "past_total");
		return cxlp_fail(CXLP_E_GROUP, "a batch of %u chunks would "
		    "take the group to %u of its declared %u; the group is "
		    "rolled back", n, count + n, g->total);
	}
	return ms_group_room(rq->ms, g, n, key_bytes);
}

/* bytes of the keys a GROUP_REGISTER stages at most */
static uint64_t
reg_key_bytes(const struct req *rq)
{
	uint64_t b = 0;

	for (uint32_t i = 0; i < rq->n; i++) {
		b += rq->regs[i].key.len;
	}
	return b;
}

/* the place a staged key's page is at, as a result's loc */
static void
staged_loc(struct req *rq, uint32_t i, const struct proto_reg *r)
{
	struct pool_region reg;
	struct proto_loc *loc = &rq->res[i].loc;

	memset(&rq->res[i], 0, sizeof(rq->res[i]));
	if (pool_region_get(rq->ms->pool, r->region, &reg) == 0) {
		loc->region = r->region;
		loc->gen = reg.gen;
		loc->region_off = reg.off;
		loc->region_len = reg.len;
	}
	loc->off = r->off;
	loc->len = r->len;
}

/* The good results of res[0..n) that found a key in the index are pinned
 * and remembered by g; a pin refused turns its result into the error. */
static void
pin_found(struct req *rq, struct ms_group *g, const bool *found)
{
	for (uint32_t i = 0; i < rq->n; i++) {
		if (!found[i] && rq->res[i].status == 0) {
			rq->res[i].status = 1; /* hide from op_pin_results */
		}
	}
	(void)op_pin_results(rq, rq->n, +1, REFUSED_MARK);
	for (uint32_t i = 0; i < rq->n; i++) {
		if (rq->res[i].status == 1) {
			rq->res[i].status = 0;
		} else if (rq->res[i].status == 0) {
			ms_group_pinned(rq->ms, g, rq->slots[i]);
		}
	}
}

/* Stage key i of a GROUP_REGISTER, or find it in the index. */
static int
stage_one(struct req *rq, struct ms_group *g, uint32_t i, bool *found)
{
	const struct proto_reg *r = &rq->regs[i];
	struct pool_kv kv;
	int rc = pool_kv_check(rq->ms->pool, op_sess_id(rq), r->key.data,
	    r->key.len, r->region, r->off, r->len);

	*found = false;
	if (rc != 0) {
		return rc;
	}
	if (pool_kv_lookup(rq->ms->pool, r->key.data, r->key.len, &kv) == 0) {
		op_res_ok(rq, i, &kv, 0);
		*found = true;
		return 0;
	}
	if ((rc = ms_group_stage(rq->ms, g, r->key.data, r->key.len,
	    r->region, r->off, r->len)) != 0) {
		return rc;
	}
	staged_loc(rq, i, r);
	rq->res[i].flags = PROTO_R_NEW;
	return 0;
}

/* the results of a batch: every good one counts as a chunk of g */
static void
group_count(struct ms_group *g, const struct req *rq)
{
	for (uint32_t i = 0; i < rq->n; i++) {
		g->count += rq->res[i].status == 0;
	}
}

/* op_group_register -- GROUP_REGISTER: stage each key in the caller's
 * group at its page; a key already in the index is pinned instead, and
 * answered with its place (the caller frees its page). */
int
op_group_register(struct req *rq)
{
	struct ms_group *g;
	bool *found, found_i;
	int rc;

	if ((rc = own_group(rq, &g)) != 0 ||
	    (rc = group_admit(rq, g, rq->n, reg_key_bytes(rq))) != 0 ||
	    (rc = op_results_new(rq, true, false)) != 0) {
		return rc;
	}
	if ((found = calloc(rq->n, sizeof(*found))) == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for a batch");
	}
	for (uint32_t i = 0; i < rq->n; i++) {
		rc = stage_one(rq, g, i, &found_i);
		found[i] = found_i;
		if (rc != 0) {
			memset(&rq->res[i], 0, sizeof(rq->res[i]));
			rq->res[i].status = rc;
		}
	}
	pin_found(rq, g, found);
	free(found);
	group_count(g, rq);
	log_info("op=group_register session=%llu n=%u count=%u total=%u",
	    (unsigned long long)op_sess_id(rq), rq->n, g->count, g->total);
	op_put_results(rq, rq->n);
	return 0;
}

/* op_group_lookup -- GROUP_LOOKUP: pin each key present for the group
 * (a chunk not to write again), atomically with finding it. */
int
op_group_lookup(struct req *rq)
{
	struct ms_group *g;
	uint32_t hits = 0;
	bool *found;
	int rc;

	if ((rc = own_group(rq, &g)) != 0 ||
	    (rc = op_results_new(rq, true, false)) != 0) {
		return rc;
	}
	if ((found = calloc(rq->n, sizeof(*found))) == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for a batch");
	}
	for (uint32_t i = 0; i < rq->n; i++) {
		struct pool_kv kv;

		rq->res[i].status = pool_kv_lookup(rq->ms->pool,
		    rq->keys[i].data, rq->keys[i].len, &kv);
		if (rq->res[i].status == 0) {
			op_res_ok(rq, i, &kv, 0);
			found[i] = true;
			hits++;
		}
	}
	if ((rc = group_admit(rq, g, hits, 0)) != 0) {
		free(found);
		return rc;
	}
	ms_metrics_lookups(rq->ms, hits, rq->n - hits); /* as LOOKUP's */
	pin_found(rq, g, found);
	free(found);
	group_count(g, rq);
	op_put_results(rq, rq->n);
	return 0;
}

/* Insert the staged keys of g as one durable step, all or none (group.c
 * note 2, pool/kv.c note 2): each goes in unseen (pool_kv_stage), then
 * one commit point makes them all visible; a key that cannot go in
 * takes the ones staged before it out again. res[0..staged) say where
 * each key now is and slots[] its index slot. */
static int
commit_keys(struct req *rq, struct ms_group *g, struct proto_result *res,
    uint64_t *slots)
{
	struct pool *p = rq->ms->pool;
	uint32_t k = 0;
	int rc = 0;

	pool_commit_begin(p);
	for (uint32_t i = 0; i < g->n && rc == 0; i++) {
		const struct ms_gentry *e = &g->e[i];
		struct pool_kv kv;
		bool ins = false;

		if (!e->staged) {
			continue;
		}
		rc = pool_kv_stage(p, g->owner, e->key, e->klen, e->region,
		    e->off, e->len, &kv, &ins);
		pool_commit_step(p);
		if (rc == 0) {
			memset(&res[k], 0, sizeof(res[k]));
			res[k].flags = ins ? PROTO_R_NEW : 0;
			op_kv_loc(p, &kv, &res[k].loc);
			slots[k++] = kv.slot;
		}
	}
	if (rc == 0) {
		pool_commit_publish(p, slots, k);
	} else {
		pool_commit_rollback(p, slots, k);
	}
	pool_commit_end(p);
	return rc;
}

/* After the inserts: with PROTO_GF_PIN the session keeps a pin on every
 * key of the group (those it found present, and each staged one, winner
 * or loser); without, the group's pins are released. */
static void
commit_pins(struct req *rq, struct ms_group *g, const uint64_t *slots)
{
	unsigned refused = 0;

	if (!(g->flags & PROTO_GF_PIN)) {
		(void)ms_group_release_pins(rq->ms, g);
		return;
	}
	for (uint32_t k = 0; k < g->staged; k++) {
		bool applied;

		refused += pool_pin_change(rq->ms->pool, g->owner, slots[k],
		    +1, 0, 0, &applied) != 0;
	}
	if (refused > 0) {
		log_err("op=group_commit session=%llu msg=\"%u keys committed "
		    "without their pin: %s\"", (unsigned long long)g->owner,
		    refused, cxlp_errormsg());
	}
}

static int
group_commit(struct req *rq)
{
	struct ms_group *g;
	struct proto_result *res;
	uint64_t *slots;
	int rc = own_group(rq, &g);

	if (rc != 0 || ((g->flags & PROTO_GF_PIN) &&
	    (rc = pool_pin_reserve(rq->ms->pool, g->staged)) != 0)) {
		return rc;
	}
	res = calloc(g->staged + 1u, sizeof(*res));
	slots = calloc(g->staged + 1u, sizeof(*slots));
	if (res == NULL || slots == NULL) {
		rc = cxlp_fail(-ENOMEM, "no memory to commit %u keys",
		    g->staged);
	} else if ((rc = commit_keys(rq, g, res, slots)) != 0) {
		char why[160];

		snprintf(why, sizeof(why), "%s", cxlp_errormsg());
		ms_group_rollback(rq->ms, g, op_sess_id(rq), "commit_failed");
		rc = cxlp_fail(rc, "commit: %s; the group is rolled back", why);
	} else {
		commit_pins(rq, g, slots);
		log_info("op=group_commit session=%llu keys=%u count=%u",
		    (unsigned long long)op_sess_id(rq), g->staged, g->count);
		op_put_hdr(rq, 0);
		proto_put_results(rq->reply, g->staged, res);
		ms_group_close(rq->ms, g);
	}
	free(res);
	free(slots);
	return rc;
}

/* ABORT (the owner's; a cancelled group's record goes too) and CANCEL
 * (anyone's, the owner's too: the owner learns of it at its next call,
 * and its ABORT removes the record). */
static int
group_end(struct req *rq, bool cancel)
{
	struct ms_group *g = ms_group_find(rq->ms, rq->group.id,
	    rq->group.id_len);
	bool mine = g != NULL && g->owner == op_sess_id(rq);

	if (g == NULL) {
		return no_group(rq);
	}
	if (mine && rq->h.req_id < g->open_req) { /* see own_group */
		return cxlp_fail(CXLP_E_NOTFOUND, "request %llu was sent "
		    "before group \"%.*s\" was opened: a late copy",
		    (unsigned long long)rq->h.req_id, (int)g->id_len,
		    (const char *)g->id);
	}
	if (!cancel && !mine) {
		return cxlp_fail(CXLP_E_GROUP, "group \"%.*s\" belongs to "
		    "session %llu: cancel it instead", (int)g->id_len,
		    (const char *)g->id, (unsigned long long)g->owner);
	}
	if (g->cancelled_by == 0) {
		ms_group_rollback(rq->ms, g, op_sess_id(rq),
		    cancel ? "cancel" : "abort");
	}
	if (!cancel) { /* a cancel keeps the record, even the owner's own:
	                * its next call must hear CXLP_E_CANCELED, not
	                * NOTFOUND (a group lost to a restart) */
		ms_group_close(rq->ms, g);
	}
	op_put_hdr(rq, 0);
	return 0;
}

/* op_group -- GROUP: open, commit, abort or cancel a request group. */
int
op_group(struct req *rq)
{
	struct ms_group *g;
	int rc;

	switch (rq->group.cmd) {
	case PROTO_GROUP_OPEN:
		rc = ms_group_open(rq->ms, op_sess_id(rq), rq->group.id,
		    rq->group.id_len, rq->group.total, rq->group.flags, &g);
		if (rc == 0) {
			g->open_req = rq->h.req_id;
			op_put_hdr(rq, 0);
		}
		return rc;
	case PROTO_GROUP_COMMIT:
		return group_commit(rq);
	case PROTO_GROUP_ABORT:
		return group_end(rq, false);
	default:
		return group_end(rq, true);
	}
}
