/*
 * dispatch.c -- one request frame in, one reply frame out, no sockets.
 *
 * ms_dispatch is the whole server as seen by a client: it decodes a frame
 * with the shared codec, checks the session, answers a retried request
 * from the reply cache, applies the op against the pool under the right
 * lock, and encodes the reply. It always encodes a reply: a frame that
 * cannot be decoded gets an error reply carrying whatever op and req_id
 * could be read (0 otherwise), and nothing a client sends can crash it or
 * leak (contract 7). That makes it the fuzz target's entry point.
 *
 * Each op is one row of a table: how its body decodes, which lock it
 * takes, whether it needs a session, which request flags it accepts, and
 * the function that applies it. This file holds the decoders, the table
 * and the dispatcher; the apply functions live by op family in
 * op_session.c, op_region.c, op_kv.c and op_report.c (op.h is what they
 * share with this file). Decoding happens before any lock is taken; the
 * apply functions run under ms->lock and write a complete success reply,
 * or return an error that the dispatcher turns into an error reply.
 *
 * Per-key rules (contracts 2, 3, 5, 7) live in op_kv.c: REGISTER decides
 * existence inside pool_kv_insert under the write lock (no
 * check-then-act) and pins winners and losers in the same critical
 * section; DELETE refuses pinned keys and keys in another live session's
 * region.
 *
 * Replays across a restart. The reply cache is DRAM and dies with the
 * server, so a request whose reply was lost to a crash comes back, with
 * the same id, to a server that has never seen it. Every op is made safe
 * to apply again: REGISTER finds its key already at the caller's page and
 * answers with that location, which the handler takes as registered
 * (contract 4); REGION_ALLOC finds the region stamped with its request id
 * (pool_region_alloc_req); pin changes carry the request id into the pin
 * record and skip the changes the first run made (pool_pin_change,
 * occurrences); DELETE, REGION_FREE and BYE find their work done and
 * answer NOTFOUND, PERM or SESSION -- an answer changed, nothing applied
 * twice.
 *
 * Versions (common/proto.h, "Negotiation"). A reply is of its request's
 * version (rq->ver): a version-2 handler gets version-2 replies, byte for
 * byte what a version-2 server sends. HELLO chooses the session's version
 * (dec_hello: the highest both sides speak) and sess_enter refuses a
 * frame of another. A frame of a version this server does not speak is
 * answered at the nearest one it does (reply_version), so that a newer
 * handler can read the refusal and try again at it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "log.h"
#include "op.h"

/* ---- body decoders (no lock held) -------------------------------------- */

/* The per-key arrays of a batch of n keys, in one block (rq->res owns
 * it), and every key's index hash, computed here before any lock. */
static int
batch_new(struct req *rq, bool regs)
{
	size_t n = rq->n;
	size_t sz = n * (sizeof(*rq->res) + sizeof(*rq->slots) +
	    sizeof(*rq->hash) + sizeof(*rq->occ) + sizeof(*rq->nth));
	uint8_t *b = calloc(1, sz > 0 ? sz : 1);

	if (b == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for %u results", rq->n);
	}
	rq->res = (void *)b;
	rq->slots = (void *)(b += n * sizeof(*rq->res));
	rq->hash = (void *)(b += n * sizeof(*rq->slots));
	rq->occ = (void *)(b += n * sizeof(*rq->hash));
	rq->nth = (void *)(b + n * sizeof(*rq->occ));
	for (uint32_t i = 0; i < rq->n; i++) {
		const struct proto_key *k = regs ? &rq->regs[i].key :
		    &rq->keys[i];

		rq->hash[i] = pool_kv_hash(k->data, k->len);
	}
	return 0;
}

static int
dec_none(struct req *rq)
{
	return 0;
}

/* HELLO: its body, and the version of the session: the highest one both
 * the handler (hello.ver_min..ver_max) and this server speak. */
static int
dec_hello(struct req *rq)
{
	const struct proto_hello *m = &rq->hello;
	int rc = proto_get_hello(&rq->body, &rq->hello);

	rq->flags = rq->hello.flags;
	if (rc != 0) {
		return rc;
	}
	/* the header's version is in both ranges (the codec checked), so
	 * they meet: a version outside ours was refused with its header */
	rq->ver = m->ver_max < PROTO_VERSION ? m->ver_max : PROTO_VERSION;
	return 0;
}

static int
dec_region(struct req *rq)
{
	return proto_get_region_req(&rq->body, &rq->len, &rq->page_size);
}

static int
dec_lease(struct req *rq)
{
	int rc = proto_get_lease_req(&rq->body, &rq->want, &rq->flags,
	    &rq->keys, &rq->n);

	return rc != 0 ? rc : batch_new(rq, false);
}

static int
dec_reclaim(struct req *rq)
{
	return proto_get_reclaim_req(&rq->body, &rq->len, &rq->page_size,
	    &rq->want, &rq->wait_ms);
}

static int
dec_region_free(struct req *rq)
{
	return proto_get_region_free(&rq->body, &rq->region, &rq->gen);
}

static int
dec_regs(struct req *rq)
{
	int rc = proto_get_regs(&rq->body, &rq->flags, &rq->regs, &rq->n);

	return rc != 0 ? rc : batch_new(rq, true);
}

static int
dec_keys(struct req *rq)
{
	int rc = proto_get_keys(&rq->body, &rq->flags, &rq->keys, &rq->n);

	return rc != 0 ? rc : batch_new(rq, false);
}

static int
dec_group(struct req *rq)
{
	return proto_get_group(&rq->body, &rq->group);
}

/* GROUP_REGISTER: the group id, then a REGISTER body */
static int
dec_group_regs(struct req *rq)
{
	int rc = proto_get_group_id(&rq->body, &rq->group.id,
	    &rq->group.id_len);

	return rc != 0 ? rc : dec_regs(rq);
}

/* GROUP_LOOKUP: the group id, then keys */
static int
dec_group_keys(struct req *rq)
{
	int rc = proto_get_group_id(&rq->body, &rq->group.id,
	    &rq->group.id_len);

	return rc != 0 ? rc : dec_keys(rq);
}

/* One row per op: how its body decodes, which lock, whether it needs a
 * session, the request flags it accepts, and its apply function. */
static const struct op_def ops[PROTO_OP_MAX + 1] = {
	[PROTO_OP_HELLO] = { .decode = dec_hello, .apply = op_hello,
	    .needs_session = false, .lock = LK_WRITE,
	    .flags_ok = PROTO_HELLO_FLAGS },
	[PROTO_OP_REGION_ALLOC] = { .decode = dec_region,
	    .apply = op_region_alloc, .needs_session = true, .lock = LK_WRITE,
	    .self_replay = true }, /* the region carries the request id */
	[PROTO_OP_REGION_FREE] = { .decode = dec_region_free,
	    .apply = op_region_free, .needs_session = true,
	    .lock = LK_WRITE, .frees = true },
	[PROTO_OP_REGISTER] = { .decode = dec_regs, .apply = op_register,
	    .needs_session = true, .lock = LK_WRITE,
	    .flags_ok = PROTO_F_PIN | PROTO_F_LEASE },
	[PROTO_OP_LOOKUP] = { .decode = dec_keys, .apply = op_lookup,
	    .needs_session = true, .lock = LK_PINFLAG,
	    .flags_ok = PROTO_F_PIN | PROTO_F_LEASE },
	[PROTO_OP_EXISTS] = { .decode = dec_keys, .apply = op_lookup,
	    .needs_session = true, .lock = LK_READ },
	[PROTO_OP_PIN] = { .decode = dec_keys, .apply = op_pin,
	    .needs_session = true, .lock = LK_WRITE },
	[PROTO_OP_UNPIN] = { .decode = dec_keys, .apply = op_unpin,
	    .needs_session = true, .lock = LK_WRITE, .frees = true },
	[PROTO_OP_DELETE] = { .decode = dec_keys, .apply = op_delete,
	    .needs_session = true, .lock = LK_WRITE, .frees = true },
	[PROTO_OP_STATS] = { .decode = dec_none, .apply = op_stats,
	    .needs_session = true, .lock = LK_READ },
	[PROTO_OP_HEARTBEAT] = { .decode = dec_none, .apply = op_heartbeat,
	    .needs_session = true, .lock = LK_READ },
	[PROTO_OP_BYE] = { .decode = dec_none, .apply = op_bye,
	    .needs_session = true, .lock = LK_WRITE, .frees = true },
	[PROTO_OP_SESSIONS] = { .decode = dec_none, .apply = op_sessions,
	    .needs_session = true, .lock = LK_READ },
	[PROTO_OP_RECLAIM] = { .decode = dec_reclaim, .apply = op_reclaim,
	    .needs_session = true, .lock = LK_WRITE, .waits = true },
	[PROTO_OP_LEASE] = { .decode = dec_lease, .apply = op_lease,
	    .needs_session = true, .lock = LK_WRITE, .frees = true },
	[PROTO_OP_GROUP] = { .decode = dec_group, .apply = op_group,
	    .needs_session = true, .lock = LK_WRITE, .frees = true },
	[PROTO_OP_GROUP_REGISTER] = { .decode = dec_group_regs,
	    .apply = op_group_register, .needs_session = true,
	    .lock = LK_WRITE },
	[PROTO_OP_GROUP_LOOKUP] = { .decode = dec_group_keys,
	    .apply = op_group_lookup, .needs_session = true,
	    .lock = LK_WRITE },
};

/* ---- the dispatcher ---------------------------------------------------- */

/* Best effort op and req_id of a frame the codec refused, so the error
 * reply can still be matched by the client: req_id when the fixed part of
 * the header is readable, op only when it is a known op (0 otherwise). */
static void
peek_hdr(const void *frame, size_t len, struct proto_req_hdr *h)
{
	struct preader r;
	uint32_t magic = 0;
	uint16_t version, op;
	uint64_t req_id;

	memset(h, 0, sizeof(*h));
	preader_init(&r, frame, len);
	if (preader_u32(&r, &magic) && magic == PROTO_MAGIC &&
	    preader_u16(&r, &version) && preader_u16(&r, &op) &&
	    preader_u64(&r, &req_id)) {
		op &= (uint16_t)~PROTO_REPLY;
		h->op = op <= PROTO_OP_MAX ? op : 0; /* known ops only */
		h->req_id = req_id;
		h->version = version;
	}
}

/* The version of the reply to a frame of version v: v, or the nearest
 * version this server speaks (a peer of another reads its refusal in
 * the layout it may know: version 2's header is version 1's). */
static uint16_t
reply_version(uint16_t v)
{
	if (v == 0) {
		return PROTO_VERSION;
	}
	return v < PROTO_VERSION_MIN ? PROTO_VERSION_MIN :
	    v > PROTO_VERSION ? PROTO_VERSION : v;
}

static int
parse_hdr(struct req *rq, const void *frame, size_t len,
    const struct op_def **def)
{
	int rc;

	*def = NULL;
	if (len > PROTO_FRAME_MAX) {
		peek_hdr(frame, len, &rq->h);
		rq->ver = reply_version(rq->h.version);
		return cxlp_fail(CXLP_E_PROTO, "frame of %zu bytes, max %zu",
		    len, (size_t)PROTO_FRAME_MAX);
	}
	rc = proto_get_req_hdr(frame, len, &rq->h, &rq->body);
	rq->ver = reply_version(rq->h.version);
	if (rc != 0) {
		peek_hdr(frame, len, &rq->h);
		rq->ver = reply_version(rq->h.version);
		return rc;
	}
	if (rq->h.op > PROTO_OP_MAX || ops[rq->h.op].apply == NULL) {
		rc = cxlp_fail(CXLP_E_BADOP, "unknown op %u", rq->h.op);
		rq->h.op = 0;
		return rc;
	}
	*def = &ops[rq->h.op];
	return 0;
}

static int
decode_body(struct req *rq, const struct op_def *def)
{
	int rc = def->decode(rq);

	if (rc == 0 && preader_end(&rq->body) != 0) {
		rc = cxlp_fail(CXLP_E_PROTO, "%s: trailing bytes",
		    proto_op_name(rq->h.op));
	}
	if (rc == 0 && (rq->flags & ~def->flags_ok) != 0) {
		rc = cxlp_fail(CXLP_E_PROTO, "%s: unknown flags 0x%x",
		    proto_op_name(rq->h.op), rq->flags);
	}
	return rc;
}

static int
apply_locked(struct req *rq, const struct op_def *def)
{
	bool wr = def->lock == LK_WRITE ||
	    (def->lock == LK_PINFLAG &&
	    (rq->flags & (PROTO_F_PIN | PROTO_F_LEASE)));
	int rc;

	if (wr) {
		ms_wrlock(rq->ms);
	} else {
		ms_rdlock(rq->ms);
	}
	if (!ms_term_ok(rq->ms)) { /* fencing: standby.c note 3 */
		rc = cxlp_fail(CXLP_E_CONN, "metaserver lost its term: it "
		    "serves the pool no more (a standby takes over)");
	} else if (rq->s != NULL && !sess_usable(rq->ms, rq->s, rq->h.op)) {
		rc = cxlp_fail(CXLP_E_SESSION, "session %llu has ended",
		    (unsigned long long)rq->s->id);
	} else {
		rc = def->apply(rq);
	}
	ms_unlock(rq->ms);
	if (rc == 0 && def->frees) {
		ms_space_event(rq->ms);
	}
	return rc;
}

/* apply_locked, and while it finds no room and the request may wait,
 * again each time room may have appeared, in arrival order (waitq.c) */
static int
apply_waiting(struct req *rq, const struct op_def *def)
{
	struct ms_wait *w = &rq->wait;
	uint32_t wait = rq->wait_ms & ~PROTO_RECLAIM_MORE;
	int rc;

	if (!def->waits || wait == 0) {
		return apply_locked(rq, def);
	}
	wait = wait < MS_WAIT_MAX_MS ? wait : MS_WAIT_MAX_MS;
	w->sess = op_sess_id(rq);
	w->region = rq->len > 0;
	w->dead = &rq->s->dead;
	w->until_ms = cxlp_now_ms() + wait;
	for (;;) {
		char why[256];
		int wrc;

		w->epoch = ms_waitq_epoch(rq->ms);
		rc = apply_locked(rq, def);
		if (rc != CXLP_E_NOSPACE && rc != CXLP_E_BUSY) {
			break; /* room, or an error waiting cannot mend */
		}
		snprintf(why, sizeof(why), "%s", cxlp_errormsg());
		if ((wrc = ms_waitq_wait(rq->ms, w)) != 0) {
			rc = wrc == CXLP_E_BUSY || rc == CXLP_E_BUSY ?
			    cxlp_fail(CXLP_E_BUSY, "%s", why) :
			    cxlp_fail(CXLP_E_NOSPACE, "%s; waited %u ms for "
			    "room", why, wait);
			break;
		}
	}
	if ((rc != CXLP_E_NOSPACE && rc != CXLP_E_BUSY) ||
	    !(rq->wait_ms & PROTO_RECLAIM_MORE)) {
		ms_waitq_leave(rq->ms, w->sess);
	}
	return rc;
}

/* The error reply; a HELLO that asked for it (PROTO_HELLO_ERRMSG) also
 * gets the reason, so that the handler's cxlp_errormsg() says which
 * limit refused it, and so does every RECLAIM (only handlers that read
 * reasons send it): what holds a full pool. */
static void
put_error(struct req *rq, int rc)
{
	const char *why = cxlp_errormsg();
	struct proto_rep_hdr h = { .version = rq->ver, .op = rq->h.op,
		.req_id = rq->h.req_id, .status = rc, .term = rq->ms->term };

	if (ms_errlog_admit(rq->ms, rq->pipe)) { /* a flood is cut short */
		log_err("op=%s session=%llu req=%llu rc=%d msg=\"%s\"",
		    proto_op_name(rq->h.op), (unsigned long long)rq->h.session,
		    (unsigned long long)rq->h.req_id, rc, why);
	}
	if (((rq->h.op == PROTO_OP_HELLO &&
	    (rq->hello.flags & PROTO_HELLO_ERRMSG)) ||
	    rq->h.op == PROTO_OP_RECLAIM) && why[0] != '\0') {
		h.msg = why;
		h.msg_len = (uint16_t)strnlen(why, PROTO_ERRMSG_MAX);
	}
	pbuf_reset(rq->reply);
	proto_put_rep_hdr(rq->reply, &h);
}

/* ms_dispatch -- handle one request frame received on pipe_id and encode
 * its reply into reply (reset first). Always encodes a reply; returns 0,
 * or -ENOMEM when the reply could not be built (send nothing then). */
int
ms_dispatch(struct ms *ms, uint64_t pipe_id, const void *frame, size_t len,
    struct pbuf *reply)
{
	struct req rq = { .ms = ms, .pipe = pipe_id, .reply = reply };
	const struct op_def *def;
	uint64_t t0 = cxlp_now_us();
	int rc;

	pbuf_reset(reply);
	ms_errlog_flush(ms);
	cxlp_errmsg_clear();
	rc = parse_hdr(&rq, frame, len, &def);
	if (rc == 0 && def->needs_session) {
		rc = sess_enter(ms, &rq.h, pipe_id, !def->self_replay, reply,
		    &rq.s);
		if (rc == RCACHE_HIT) {
			ms_metrics_hit(ms);
			return reply->err; /* answered from the cache */
		}
	}
	if (rc == 0) {
		rc = decode_body(&rq, def);
	}
	if (rc == 0) {
		rc = apply_waiting(&rq, def);
	}
	if (rc != 0) {
		put_error(&rq, rc);
	}
	ms_metrics_note(ms, rq.h.op, rc, cxlp_now_us() - t0,
	    rq.h.op == PROTO_OP_HELLO &&
	    (rq.hello.flags & PROTO_HELLO_REATTACH));
	if (rq.s != NULL) {
		sess_leave(ms, rq.s, rq.h.req_id, reply);
	}
	free(rq.keys);
	free(rq.regs);
	free(rq.res); /* and the other per-key arrays (batch_new) */
	return reply->err;
}
