/*
 * client.c -- the handler's request/reply client: the calls, each one a
 * frame sent and resent under one request id, and the check of its reply.
 * With csock.c (the sockets under it) and tls.c the only handler files
 * that include nng (client_int.h).
 *
 * One nng REQ socket per handler at a time. nng's own resend timer is
 * turned off (NNG_OPT_REQ_RESENDTIME infinite): retries are ours, so that a
 * retry carries the SAME request id and the server's reply cache answers it
 * without applying it twice (DESIGN contract 4). Each call borrows an nng
 * context from a small free list, so any number of threads can have a
 * request in flight at once on the one socket. Every reply is validated
 * here (header decodes, op and request id match, status is an error code)
 * so the callers only decode bodies. A socket on which requests keep
 * timing out is replaced under the calls (csock.c says how and when),
 * and one whose endpoint is gone is replaced by a socket to another
 * (endpoints.c: which one).
 *
 * Versions and terms (common/proto.h, "Negotiation"). Requests go out at
 * the version the session's HELLO chose (client_set_version; the HELLO
 * itself is session/call.c's), and an op that version lacks is refused
 * here, never sent. A version-3 reply carries the metaserver's term: the
 * client keeps the newest it has seen and drops a reply of an older one
 * (a deposed leader's, contract 12) as if it were lost, so the request is
 * sent again under its id like any lost reply (reply_stale). The one
 * exception is a term reset (etcd rebuilt from nothing, a leader started
 * with --elect-term-reset: its term is lower than any before): an older
 * term that the pool itself names as current is accepted and becomes the
 * newest (term_reset). This file does not know the pool: it asks the
 * hook client_set_term_check set (the session layer's, which maps it),
 * and only for a reply it would otherwise drop; without a hook it drops.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "clock.h"
#include "err.h"
#include "net.h"
#include "log.h"

/* An nng without deps/nng/fork-child-starts-afresh.patch (the system's,
 * with -Dnng=system or where it is 1.6 or newer: upstream is not
 * fork-safe) aborts the process at its first call in a child of a
 * process that had used it. With one, such a child's connect is refused
 * before any nng call (fork.c note 4); nng_used_gen is the fork
 * generation nng was first used in, -1 before. */
#ifdef NNG_CXLP_FORK_AFRESH
static const bool nng_afresh = true;
#else
static const bool nng_afresh = false;
#endif
static int nng_used_gen = -1; /* atomic */

static int
nng_fork_check(void)
{
	int gen = (int)fork_gen_now();
	int used = __atomic_load_n(&nng_used_gen, __ATOMIC_RELAXED);

	if (nng_afresh) {
		return 0;
	}
	if (used >= 0 && used != gen) {
		return cxlp_fail(-ENOTSUP, "connect: this process forked after "
		    "it used nng, and this build's nng (%s, without cxlpool's "
		    "fork patch: deps/nng/README.md) aborts in such a child; "
		    "start the child with exec (multiprocessing's spawn) or "
		    "build with cxlpool's nng", nng_version());
	}
	__atomic_store_n(&nng_used_gen, gen, __ATOMIC_RELAXED);
	return 0;
}

/* Free cl's own memory (not its sockets). */
static void
client_free(struct client *cl)
{
	endpoints_fini(cl);
	explicit_bzero(&cl->tls, sizeof(cl->tls));
	pthread_mutex_destroy(&cl->redial_lock);
	pthread_mutex_destroy(&cl->lock);
	free(cl);
}

/* client_open -- dial url, or the first of its comma-separated URLs
 * that answers (synchronously: no server at any is CXLP_E_CONN;
 * afterwards nng redials by itself, calls dial afresh when a connection
 * hangs, and move to another endpoint when theirs is gone:
 * endpoints.c), over TLS for a tls+tcp:// url (tls.c). Returns 0 and
 * *out (caller owns; client_close) or a negative error with *out ==
 * NULL. */
int
client_open(struct client **out, const char *url, unsigned timeout_ms,
    unsigned retries, const struct cfg_tls *tls, client_finder_fn finder,
    void *arg)
{
	struct client *cl;
	int rc;

	*out = NULL;
	if ((rc = nng_fork_check()) != 0) {
		return rc;
	}
	if ((cl = calloc(1, sizeof(*cl))) == NULL) {
		return cxlp_fail(-ENOMEM, "client: out of memory");
	}
	pthread_mutex_init(&cl->lock, NULL);
	pthread_mutex_init(&cl->redial_lock, NULL);
	cl->timeout_ms = timeout_ms;
	cl->tls = *tls;
	cl->finder = finder;
	cl->finder_arg = arg;
	if ((rc = endpoints_init(cl, url)) != 0 ||
	    (rc = endpoints_open(cl)) != 0) {
		client_free(cl);
		return rc;
	}
	cl->next_id = 1;
	cl->version = PROTO_VERSION;
	cl->last_reply_ms = cxlp_now_coarse_ms();
	cl->retries = retries;
	*out = cl;
	return 0;
}

/* client_close -- close the socket (in the background: csock_retire)
 * and free. No call may be in flight or start on cl any more. NULL-safe;
 * sets *clp = NULL. */
void
client_close(struct client **clp)
{
	struct client *cl;

	if (clp == NULL || *clp == NULL) {
		return;
	}
	cl = *clp;
	csock_put(cl, cl->cur);
	client_free(cl);
	*clp = NULL;
}

/* client_last_reply_ms -- see net.h */
uint64_t
client_last_reply_ms(const struct client *cl)
{
	return __atomic_load_n(&cl->last_reply_ms, __ATOMIC_RELAXED);
}

/* client_redials -- how many times a hanging socket was replaced. */
uint64_t
client_redials(const struct client *cl)
{
	return __atomic_load_n(&cl->redials, __ATOMIC_RELAXED);
}

/* client_set_version -- the protocol version later requests are sent
 * at (PROTO_VERSION_MIN..PROTO_VERSION). */
void
client_set_version(struct client *cl, uint16_t version)
{
	__atomic_store_n(&cl->version, version, __ATOMIC_RELEASE);
}

/* client_version -- the version requests are sent at now. */
uint16_t
client_version(const struct client *cl)
{
	return __atomic_load_n(&cl->version, __ATOMIC_ACQUIRE);
}

/* client_stale_replies -- replies of an older term dropped so far. */
uint64_t
client_stale_replies(const struct client *cl)
{
	return __atomic_load_n(&cl->stale, __ATOMIC_RELAXED);
}

/* client_term_resets -- times the newest term moved down (term_reset). */
uint64_t
client_term_resets(const struct client *cl)
{
	return __atomic_load_n(&cl->resets, __ATOMIC_RELAXED);
}

/* client_set_term_check -- see net.h; before any call. */
void
client_set_term_check(struct client *cl, client_term_fn fn, void *arg)
{
	cl->term_check = fn;
	cl->term_arg = arg;
}

/* client_set_session -- the session and token later requests carry. */
void
client_set_session(struct client *cl, uint64_t session, uint64_t token)
{
	__atomic_store_n(&cl->session, session, __ATOMIC_RELEASE);
	__atomic_store_n(&cl->token, token, __ATOMIC_RELEASE);
}

/* client_get_session -- the current session and token. */
void
client_get_session(const struct client *cl, uint64_t *session,
    uint64_t *token)
{
	*session = __atomic_load_n(&cl->session, __ATOMIC_ACQUIRE);
	*token = __atomic_load_n(&cl->token, __ATOMIC_ACQUIRE);
}

/* What every attempt of one call sends: the same header (request id and
 * the session as it was when the call began) and body. */
struct frame {
	struct proto_req_hdr hdr;
	const struct pbuf *body; /* NULL: empty */
};

/* The request message for one attempt, allocated at its exact size (the
 * header, then the body: one copy of the body per attempt). */
static int
frame_build(const struct frame *f, nng_msg **out)
{
	const struct pbuf *body = f->body;
	size_t blen = body != NULL ? body->len : 0;
	uint16_t op = f->hdr.op;
	struct pbuf h;
	uint8_t *p;

	*out = NULL;
	pbuf_init(&h);
	proto_put_req_hdr(&h, &f->hdr);
	if (h.err != 0 || (body != NULL && body->err != 0)) {
		pbuf_fini(&h);
		return cxlp_fail(-ENOMEM, "client: cannot encode %s",
		    proto_op_name(op));
	}
	cxlp_assert(h.len == proto_req_hdr_len(f->hdr.version));
	if (nng_msg_alloc(out, h.len + blen) != 0) {
		pbuf_fini(&h);
		*out = NULL;
		return cxlp_fail(-ENOMEM, "client: out of memory");
	}
	p = nng_msg_body(*out);
	memcpy(p, h.data, h.len);
	if (blen != 0) {
		memcpy(p + h.len, body->data, blen);
	}
	pbuf_fini(&h);
	return 0;
}

/* One send + receive on c of a frame built afresh for this attempt (nng
 * consumes what it sends). Returns 0 with *reply, CXLP_E_TIMEOUT, or
 * another error. */
static int
attempt(struct client *cl, struct cctx *c, const struct frame *f,
    nng_msg **reply)
{
	nng_msg *req;
	int rv;

	if ((rv = frame_build(f, &req)) != 0) {
		return rv;
	}
	nng_aio_set_msg(c->aio, req);
	nng_aio_set_timeout(c->aio, (nng_duration)cl->timeout_ms);
	nng_ctx_send(c->ctx, c->aio);
	nng_aio_wait(c->aio);
	if ((rv = nng_aio_result(c->aio)) != 0) {
		nng_msg_free(req);
		return cxlp_fail(nng_to_cxlp(rv), "client: send: %s",
		    nng_strerror(rv));
	}
	nng_aio_set_timeout(c->aio, (nng_duration)cl->timeout_ms);
	nng_ctx_recv(c->ctx, c->aio);
	nng_aio_wait(c->aio);
	if ((rv = nng_aio_result(c->aio)) != 0) {
		return cxlp_fail(nng_to_cxlp(rv), "client: receive: %s",
		    nng_strerror(rv));
	}
	*reply = nng_aio_get_msg(c->aio);
	return 0;
}

static bool
status_plausible(int32_t st)
{
	return st == 0 || (st <= -1000 && st >= CXLP_E_LAST) ||
	    (st < 0 && st > -4096);
}

/* A reply's version: the request's; to a HELLO, the one the server chose
 * (at most the request's); an error may come at the server's own (a
 * version-2 server refuses a version-3 frame in a version-2 reply). */
static int
reply_version_check(const struct creply *rep, uint16_t op, uint16_t sent)
{
	uint16_t v = rep->hdr.version;

	if (v == sent || (v < sent && (op == PROTO_OP_HELLO ||
	    rep->hdr.status != 0))) {
		return 0;
	}
	return cxlp_fail(CXLP_E_PROTO, "client: %s: reply of protocol "
	    "version %u to a request of version %u", proto_op_name(op), v,
	    sent);
}

static int
reply_check(nng_msg *msg, uint16_t op, uint64_t id, uint16_t sent,
    struct creply *rep)
{
	int rc;

	rc = proto_get_rep_hdr(nng_msg_body(msg), nng_msg_len(msg),
	    &rep->hdr, &rep->body);
	if (rc == CXLP_E_VERSION) { /* a metaserver of another version */
		char why[160];

		snprintf(why, sizeof(why), "%s", cxlp_errormsg());
		return cxlp_fail(CXLP_E_VERSION, "client: %s: the metaserver "
		    "speaks another protocol (%s): use a handler library and "
		    "metaserver of one release", proto_op_name(op), why);
	}
	if (rc != 0) {
		return cxlp_fail(CXLP_E_PROTO, "client: %s: bad reply header "
		    "(%d)", proto_op_name(op), rc);
	}
	if (rep->hdr.op != op || rep->hdr.req_id != id) {
		return cxlp_fail(CXLP_E_PROTO, "client: %s #%llu: reply is for "
		    "%s #%llu", proto_op_name(op), (unsigned long long)id,
		    proto_op_name(rep->hdr.op),
		    (unsigned long long)rep->hdr.req_id);
	}
	if (!status_plausible(rep->hdr.status)) {
		return cxlp_fail(CXLP_E_PROTO, "client: %s: status %d",
		    proto_op_name(op), (int)rep->hdr.status);
	}
	if ((rc = reply_version_check(rep, op, sent)) != 0) {
		return rc;
	}
	if (rep->hdr.status != 0 && rep->hdr.msg_len > 0) {
		return cxlp_fail(rep->hdr.status, "%s: server says %s: %.*s",
		    proto_op_name(op), cxlp_strerror(rep->hdr.status),
		    (int)rep->hdr.msg_len, rep->hdr.msg);
	}
	if (rep->hdr.status != 0) {
		return cxlp_fail(rep->hdr.status, "%s: server says %s",
		    proto_op_name(op), cxlp_strerror(rep->hdr.status));
	}
	return 0;
}

/* A reply of term `term`, older than the newest seen (`newest`), that the
 * pool says is current (cl->term_check: its superblock's term, read
 * fresh): etcd was rebuilt from nothing and a leader started with
 * --elect-term-reset, so the newest term moves DOWN to it. A deposed
 * leader's term is never the pool's after a takeover (the new leader
 * writes its own before it serves), so that reply stays dropped. One
 * thread moves it, counts and logs; a racing one accepts as well. */
static bool
term_reset(struct client *cl, uint64_t term, uint64_t newest)
{
	if (cl->term_check == NULL || !cl->term_check(cl->term_arg, term)) {
		return false;
	}
	while (newest > term) {
		if (__atomic_compare_exchange_n(&cl->term, &newest, term,
		    false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&cl->resets, 1, __ATOMIC_RELAXED);
			log_err("metaserver term %llu is the pool's (term "
			    "reset from %llu): accepted",
			    (unsigned long long)term,
			    (unsigned long long)newest);
			break;
		}
	}
	return true;
}

/* A version-3 reply of an older term than the newest seen: a deposed
 * metaserver's (contract 12), dropped and counted, unless the pool says
 * its term is current (term_reset); the newest term moves up with every
 * reply of a newer one. A reply whose header does not decode is
 * reply_check's to refuse. */
static bool
reply_stale(struct client *cl, const struct frame *f, nng_msg *msg)
{
	struct proto_rep_hdr h;
	struct preader body;
	uint64_t newest = __atomic_load_n(&cl->term, __ATOMIC_ACQUIRE);

	if (proto_get_rep_hdr(nng_msg_body(msg), nng_msg_len(msg), &h,
	    &body) != 0 || h.version < 3) {
		return false;
	}
	while (h.term > newest && !__atomic_compare_exchange_n(&cl->term,
	    &newest, h.term, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
	}
	if (h.term >= newest || term_reset(cl, h.term, newest)) {
		return false;
	}
	__atomic_fetch_add(&cl->stale, 1, __ATOMIC_RELAXED);
	log_err("%s #%llu: reply of metaserver term %llu, older than term "
	    "%llu seen: dropped (a deposed leader's), the request is sent "
	    "again", proto_op_name(f->hdr.op),
	    (unsigned long long)f->hdr.req_id, (unsigned long long)h.term,
	    (unsigned long long)newest);
	return true;
}

/* No reply, or the connection dropped under the request: the request may
 * or may not have been applied, so it is resent with the same id. */
static bool
retryable(int rc)
{
	return rc == CXLP_E_TIMEOUT || rc == CXLP_E_CONN;
}

/* sock_enter -- see client_int.h */
int
sock_enter(struct client *cl, struct csock **csp, struct cctx **cp)
{
	struct csock *cs = csock_get(cl);
	int rc;

	if (csock_stalled(cs)) {
		if (!endpoints_switch(cl, cs)) {
			csock_redial(cl, cs);
		}
		csock_put(cl, cs);
		cs = csock_get(cl);
	}
	if ((rc = ctx_get(cl, cs, cp)) != 0) {
		csock_put(cl, cs);
		return rc;
	}
	*csp = cs;
	return 0;
}

/* One request, resent with the same id after each timeout, on whichever
 * socket is current; a stalled socket is replaced before the attempt.
 * Returns attempt()'s result; *sends counts the attempts. */
static int
exchange(struct client *cl, const struct frame *f, nng_msg **msg,
    unsigned retries, unsigned *sends)
{
	struct csock *cs = NULL;
	struct cctx *c = NULL;
	int rc = CXLP_E_TIMEOUT;

	for (unsigned i = 0; i <= retries && retryable(rc); i++) {
		if (i > 0) {
			log_info("%s #%llu: %s, retry %u",
			    proto_op_name(f->hdr.op),
			    (unsigned long long)f->hdr.req_id, cxlp_errormsg(),
			    i);
		}
		if (cs != NULL && csock_stalled(cs)) {
			ctx_put(cl, cs, c);
			csock_put(cl, cs);
			cs = NULL;
		}
		if (cs == NULL && (rc = sock_enter(cl, &cs, &c)) != 0) {
			return rc;
		}
		rc = attempt(cl, c, f, msg);
		rc = endpoints_reply(cl, cs, msg, rc); /* lost its term? */
		(*sends)++;
		csock_note(cs, rc);
		if (rc == 0 && reply_stale(cl, f, *msg)) {
			nng_msg_free(*msg);
			*msg = NULL;
			rc = cxlp_fail(CXLP_E_TIMEOUT, "reply of an older "
			    "term dropped");
		}
	}
	ctx_put(cl, cs, c);
	csock_put(cl, cs);
	return rc;
}

/* client_new_id -- a request id no call of this client has used. */
uint64_t
client_new_id(struct client *cl)
{
	return __atomic_fetch_add(&cl->next_id, 1, __ATOMIC_RELAXED);
}

/* One call under request id `id` (0: a new one), at the session's
 * version (version 0) or at the one given (a HELLO). */
static int
call(struct client *cl, uint16_t op, uint64_t id, const struct pbuf *body,
    struct creply *rep, unsigned retries, uint16_t version)
{
	struct frame f = {.hdr = {.version = version != 0 ? version :
	    client_version(cl), .op = op,
	    .req_id = id != 0 ? id : client_new_id(cl)}, .body = body};
	nng_msg *msg = NULL;
	unsigned sends = 0;
	uint16_t v;
	int rc;

	memset(rep, 0, sizeof(*rep));
	client_get_session(cl, &f.hdr.session, &f.hdr.token);
	if ((rc = proto_op_check(op, f.hdr.version)) != 0) {
		return rc; /* not sent: rep->hdr.version 0 */
	}
	rc = exchange(cl, &f, &msg, retries, &sends);
	rep->sends = sends;
	if (rc == 0) {
		__atomic_store_n(&cl->last_reply_ms, cxlp_now_coarse_ms(),
		    __ATOMIC_RELAXED);
	}
	if (rc == CXLP_E_TIMEOUT) {
		rc = cxlp_fail(CXLP_E_TIMEOUT, "%s: no reply after %u tries of "
		    "%u ms", proto_op_name(op), retries + 1, cl->timeout_ms);
	}
	if (rc != 0) {
		return rc;
	}
	rc = reply_check(msg, op, f.hdr.req_id, f.hdr.version, rep);
	if (rc != 0) {
		v = rep->hdr.version; /* a HELLO refused for its version */
		nng_msg_free(msg);
		memset(rep, 0, sizeof(*rep));
		rep->sends = sends;
		rep->hdr.version = v;
		return rc;
	}
	rep->msg = msg;
	return 0;
}

/* client_call -- send op with body (NULL: empty) and wait for its reply,
 * retrying up to the configured count with the same request id after a
 * timeout. Returns 0 and a validated reply in *rep (caller releases with
 * client_reply_fini), the reply's non-zero status, CXLP_E_TIMEOUT (outcome
 * unknown), CXLP_E_PROTO (bad reply), or another error. */
int
client_call(struct client *cl, uint16_t op, const struct pbuf *body,
    struct creply *rep)
{
	return call(cl, op, 0, body, rep, cl->retries, 0);
}

/* client_call_id -- client_call under a request id from client_new_id,
 * again for a request whose outcome stayed unknown. */
int
client_call_id(struct client *cl, uint16_t op, uint64_t id,
    const struct pbuf *body, struct creply *rep)
{
	return call(cl, op, id, body, rep, cl->retries, 0);
}

/* client_call_once -- client_call without retries (BYE at close). */
int
client_call_once(struct client *cl, uint16_t op, const struct pbuf *body,
    struct creply *rep)
{
	return call(cl, op, 0, body, rep, 0, 0);
}

/* client_hello -- client_call of a HELLO whose body is of version
 * `version` (its frame is sent at it; the session's version changes only
 * with client_set_version). A reply that refuses it with CXLP_E_VERSION
 * leaves the version of its header in rep->hdr.version. */
int
client_hello(struct client *cl, uint16_t version, const struct pbuf *body,
    struct creply *rep)
{
	return call(cl, PROTO_OP_HELLO, 0, body, rep, cl->retries, version);
}

/* client_reply_fini -- release a reply; NULL-safe, idempotent. */
void
client_reply_fini(struct creply *rep)
{
	if (rep != NULL && rep->msg != NULL) {
		nng_msg_free(rep->msg);
		rep->msg = NULL;
	}
}
