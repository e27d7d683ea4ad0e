/*
 * op_session.c -- the session ops: HELLO, HEARTBEAT and BYE.
 *
 * They are thin: session.c does the work (a new, repeated or reattached
 * session for HELLO, the end of one for BYE) and these only write the
 * reply. HELLO runs without a session (sess_enter is skipped for it: it
 * makes one) under the write lock, which keeps the session it returns
 * alive until the reply is written. HEARTBEAT does nothing but prove
 * the session speaks (sess_enter bound it and reset its silence).
 */
#include <string.h>

#include "log.h"
#include "op.h"

/* op_hello -- HELLO: a session (session.c sess_hello) and its WELCOME. */
int
op_hello(struct req *rq)
{
	struct pool *p = rq->ms->pool;
	const char *path = pool_path(p);
	struct proto_welcome w = { 0 };
	struct ms_sess *s;
	size_t plen = strlen(path);
	int rc = sess_hello(rq->ms, &rq->h, &rq->hello, rq->pipe, &s);

	log_info("op=hello session=%llu pid=%u reattach=%d rc=%d",
	    (unsigned long long)(s == NULL ? 0 : s->id), rq->hello.pid,
	    (rq->hello.flags & PROTO_HELLO_REATTACH) != 0, rc);
	if (rc != 0) {
		return rc;
	}
	sess_set_version(rq->ms, s, rq->ver);
	w.session = s->id;
	w.token = s->token;
	w.pool_size = pool_size(p);
	w.align = pool_align(p);
	w.path = path;
	w.path_len = (uint16_t)(plen < PROTO_PATH_MAX ? plen : PROTO_PATH_MAX);
	if (rq->hello.flags & PROTO_HELLO_POOLID) {
		w.has_id = true;
		ms_pool_id(rq->ms, &w.id);
	}
	op_put_hdr(rq, 0);
	proto_put_welcome(rq->reply, &w);
	return 0;
}

/* op_heartbeat -- HEARTBEAT: an empty success reply, or to a session
 * that gives regions back, the regions asked of it (asks.c). */
int
op_heartbeat(struct req *rq)
{
	struct proto_region_ref v[PROTO_ASKS_MAX];

	op_put_hdr(rq, 0);
	if (rq->s->giveback) {
		uint32_t n = ms_asks_of(rq->ms, rq->s->id, v, PROTO_ASKS_MAX);

		proto_put_asks(rq->reply, n, v);
	}
	return 0;
}

/* op_bye -- BYE: the caller's session ends (pins, regions, record). */
int
op_bye(struct req *rq)
{
	ms_sess_lock(rq->ms);
	sess_end_locked(rq->ms, rq->s, "bye");
	ms_sess_unlock(rq->ms);
	op_put_hdr(rq, 0);
	return 0;
}
