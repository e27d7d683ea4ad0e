/*
 * client.c -- the handler's request/reply client, and the only handler file
 * that includes nng.
 *
 * One nng REQ socket per handler at a time. nng's own resend timer is
 * turned off (NNG_OPT_REQ_RESENDTIME infinite): retries are ours, so that a
 * retry carries the SAME request id and the server's reply cache answers it
 * without applying it twice (DESIGN contract 4). Each call borrows an nng
 * context from a small free list, so any number of threads can have a
 * request in flight at once on the one socket. Every reply is validated
 * here (header decodes, op and request id match, status is an error code)
 * so the callers only decode bodies.
 *
 * A connection can hang without closing (a peer or relay that stops
 * answering), so once requests have timed
 * out REDIAL_AFTER times in a row on one socket (whichever calls sent
 * them) while its connection is up, the next attempt replaces the socket
 * with a freshly dialed one and sends there. A socket is never closed
 * while its SP handshake is under way (csock_retire: that stops an nng
 * 1.5.2 server's listener). The server binds a session
 * to whatever pipe it last spoke on, so nothing else changes. Sockets are
 * reference counted: calls still waiting on the old one finish their
 * attempt, then move over; the last to leave closes it, in the background
 * and only once no late reply can arrive on it (csock_retire: nng 1.5.2
 * wedges for good if one does).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "clock.h"
#include "err.h"
#include "handler_int.h"
#include "log.h"

#define REDIAL_AFTER 2 /* timeouts in a row on one socket */
#define CLOSE_POLL_MS 20
#define CLOSE_WAIT_MAX_MS 60000 /* then a retired socket is closed anyway */

struct cctx {
	nng_ctx ctx;
	nng_aio *aio;
	struct cctx *next;
};

/* One dialed socket and its idle contexts; refs and idle are guarded by
 * the client's lock. */
struct csock {
	nng_socket sock;
	struct cctx *idle; /* contexts not in use */
	unsigned refs;     /* the client's (while current) + calls' */
	unsigned stalls;   /* atomic: timeouts in a row, any call */
};

struct client {
	pthread_mutex_t redial_lock; /* one redial at a time */
	pthread_mutex_t lock; /* guards cur and every csock's idle and refs */
	struct csock *cur;    /* where new calls go */
	char *url;
	uint64_t next_id;     /* atomic */
	uint64_t session;     /* atomic */
	uint64_t token;       /* atomic */
	uint64_t redials;     /* atomic: sockets replaced */
	uint64_t last_reply_ms; /* atomic: cxlp_now_coarse_ms() of the last reply */
	unsigned timeout_ms;
	unsigned retries;
};

static int
nng_to_cxlp(int rv)
{
	switch (rv) {
	case NNG_ENOMEM:
		return -ENOMEM;
	case NNG_ECLOSED:
		return CXLP_E_CLOSED;
	case NNG_ETIMEDOUT:
		return CXLP_E_TIMEOUT;
	case NNG_EINVAL:
	case NNG_EADDRINVAL:
		return -EINVAL;
	default:
		return CXLP_E_CONN;
	}
}

static int
sock_options(nng_socket sock)
{
	int rv;

	if ((rv = nng_socket_set_ms(sock, NNG_OPT_REQ_RESENDTIME,
		 NNG_DURATION_INFINITE)) != 0 ||
	    (rv = nng_socket_set_size(sock, NNG_OPT_RECVMAXSZ,
		 PROTO_FRAME_MAX)) != 0 ||
	    (rv = nng_socket_set_ms(sock, NNG_OPT_RECONNMINT, 20)) != 0 ||
	    (rv = nng_socket_set_ms(sock, NNG_OPT_RECONNMAXT, 500)) != 0) {
		return cxlp_fail(nng_to_cxlp(rv), "client: socket option: %s",
		    nng_strerror(rv));
	}
	return 0;
}

/* Open and dial a socket to url. flags 0: the server must be there now
 * (else CXLP_E_CONN); NNG_FLAG_NONBLOCK: nng keeps dialing in the
 * background. Returns 0 and *out with one reference, or an error. */
static int
csock_open(struct csock **out, const char *url, int flags)
{
	struct csock *cs;
	int rv, rc;

	*out = NULL;
	if ((cs = calloc(1, sizeof(*cs))) == NULL) {
		return cxlp_fail(-ENOMEM, "client: out of memory");
	}
	if ((rv = nng_req0_open(&cs->sock)) != 0) {
		free(cs);
		return cxlp_fail(nng_to_cxlp(rv), "client: req socket: %s",
		    nng_strerror(rv));
	}
	if ((rc = sock_options(cs->sock)) != 0) {
		goto err_close;
	}
	if ((rv = nng_dial(cs->sock, url, NULL, flags)) != 0) {
		rc = cxlp_fail(rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP ?
			-EINVAL : CXLP_E_CONN,
		    "client: cannot reach %s: %s", url, nng_strerror(rv));
		goto err_close;
	}
	cs->refs = 1;
	*out = cs;
	return 0;

err_close:
	nng_close(cs->sock);
	free(cs);
	return rc;
}

/* Close cs (aborting what is in flight on it) and free it. */
static void
csock_free(struct csock *cs)
{
	nng_close(cs->sock);
	while (cs->idle != NULL) {
		struct cctx *c = cs->idle;

		cs->idle = c->next;
		nng_aio_free(c->aio);
		nng_ctx_close(c->ctx);
		free(c);
	}
	free(cs);
}

/* The current socket, with a reference for the caller. */
static struct csock *
csock_get(struct client *cl)
{
	struct csock *cs;

	pthread_mutex_lock(&cl->lock);
	cs = cl->cur;
	cs->refs++;
	pthread_mutex_unlock(&cl->lock);
	return cs;
}

/* The value of the statistic name under st, or 0. */
static uint64_t
stat_of(nng_stat *st, const char *name)
{
	nng_stat *s = nng_stat_find(st, name);

	return s != NULL ? nng_stat_value(s) : 0;
}

/* What nng's per-pipe statistics say of cs's connection. */
struct csock_state {
	bool piped; /* a pipe is up: its SP handshake is complete */
	bool owed;  /* a pipe has sent more messages than it received: a
		     * request whose reply (late, after a timeout) the
		     * server may still send */
};

/* The state of cs's pipes. If nng's statistics cannot be read, a pipe
 * is taken to be up and to owe nothing (what the callers did before
 * they could tell). */
static struct csock_state
csock_state(const struct csock *cs)
{
	uint64_t id = (uint64_t)nng_socket_id(cs->sock);
	struct csock_state cst = { .piped = true, .owed = false };
	nng_stat *all, *st;

	if (nng_stats_get(&all) != 0) {
		return cst;
	}
	cst.piped = false;
	for (st = nng_stat_child(all); st != NULL; st = nng_stat_next(st)) {
		if (strcmp(nng_stat_name(st), "pipe") != 0 ||
		    stat_of(st, "socket") != id) {
			continue;
		}
		cst.piped = true;
		cst.owed = cst.owed ||
		    stat_of(st, "rx_msgs") < stat_of(st, "tx_msgs");
	}
	nng_stats_free(all);
	return cst;
}

/* Whether cs may be closed now: no reply is owed on it, and no SP
 * handshake of its dialer is under way (it has a pipe). */
static bool
csock_closable(const struct csock *cs)
{
	struct csock_state cst = csock_state(cs);

	return cst.piped && !cst.owed;
}

static void *
closer_main(void *arg)
{
	struct csock *cs = arg;
	struct timespec nap = { 0, CLOSE_POLL_MS * 1000000L };

	for (unsigned waited = 0; waited < CLOSE_WAIT_MAX_MS &&
	    !csock_closable(cs); waited += CLOSE_POLL_MS) {
		nanosleep(&nap, NULL);
	}
	csock_free(cs);
	return NULL;
}

/* Close cs off the caller's thread, once it is closable: no reply owed,
 * no handshake under way.
 *
 * nng 1.5.2 loses a receive when a pipe is closed just as a message
 * arrives on it: the ipc transport resubmits its read on an aio that the
 * close has stopped, which fails silently, so the protocol's receive never
 * completes. nng's reaper thread, one per process, then waits for it
 * forever, and every later nng_close in the process hangs, the
 * application's own sockets and its test runner's included (caught with
 * a debug build of nng under tests/handler a_lost_register_reply...: the
 * reaper in req0_pipe_stop -> nni_aio_wait). A message arrives at a close
 * only if a reply is still owed: a request timed out and the server,
 * stalled, answers late. So a socket that owes replies stays open until
 * they arrive (req0 drops them) or its pipe goes.
 *
 * A socket without a pipe may have a connection whose SP handshake is
 * under way (a stalled server has it in its accept queue): closing it
 * then hangs up mid-handshake, which stops an nng 1.5.2 metaserver's
 * listener for good (nng#1518, deps/nng/README.md; ours is fixed, other
 * builds may not be). So it stays open until its pipe is up, and is
 * closed then. Either wait lasts at most CLOSE_WAIT_MAX_MS, on a detached
 * thread, so neither a call nor cxlp_close waits for it; without a
 * thread, cs is closed here. Not covered: a request still being written
 * when a stalled server resumes (nng counts a message once it is whole),
 * the same race on the send side; it needs a large request, a stall
 * mid-write and a close at the moment the server wakes. */
static void
csock_retire(struct csock *cs)
{
	pthread_attr_t attr;
	pthread_t t;
	bool started = false;

	if (pthread_attr_init(&attr) == 0) {
		started = pthread_attr_setdetachstate(&attr,
		    PTHREAD_CREATE_DETACHED) == 0 &&
		    pthread_create(&t, &attr, closer_main, cs) == 0;
		pthread_attr_destroy(&attr);
	}
	if (!started) {
		csock_free(cs);
	}
}

/* Drop a reference; the last one closes the socket, in the background. */
static void
csock_put(struct client *cl, struct csock *cs)
{
	bool last;

	pthread_mutex_lock(&cl->lock);
	last = --cs->refs == 0;
	pthread_mutex_unlock(&cl->lock);
	if (last) {
		csock_retire(cs);
	}
}

/* client_open -- dial url (synchronously: an absent server is CXLP_E_CONN;
 * afterwards nng redials by itself, and calls dial afresh when a
 * connection hangs). Returns 0 and *out (caller owns; client_close) or a
 * negative error with *out == NULL. */
int
client_open(struct client **out, const char *url, unsigned timeout_ms,
    unsigned retries)
{
	struct client *cl;
	int rc;

	*out = NULL;
	cl = calloc(1, sizeof(*cl));
	if (cl == NULL || (cl->url = strdup(url)) == NULL) {
		free(cl);
		return cxlp_fail(-ENOMEM, "client: out of memory");
	}
	rc = csock_open(&cl->cur, url, 0);
	if (rc != 0) {
		free(cl->url);
		free(cl);
		return rc;
	}
	pthread_mutex_init(&cl->lock, NULL);
	pthread_mutex_init(&cl->redial_lock, NULL);
	cl->next_id = 1;
	cl->last_reply_ms = cxlp_now_coarse_ms();
	cl->timeout_ms = timeout_ms;
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
	pthread_mutex_destroy(&cl->redial_lock);
	pthread_mutex_destroy(&cl->lock);
	free(cl->url);
	free(cl);
	*clp = NULL;
}

/* client_last_reply_ms -- see handler_int.h */
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

static int
ctx_get(struct client *cl, struct csock *cs, struct cctx **out)
{
	struct cctx *c;
	int rv;

	pthread_mutex_lock(&cl->lock);
	c = cs->idle;
	if (c != NULL) {
		cs->idle = c->next;
	}
	pthread_mutex_unlock(&cl->lock);
	if (c != NULL) {
		*out = c;
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return cxlp_fail(-ENOMEM, "client: out of memory");
	}
	if ((rv = nng_ctx_open(&c->ctx, cs->sock)) != 0) {
		free(c);
		return cxlp_fail(nng_to_cxlp(rv), "client: context: %s",
		    nng_strerror(rv));
	}
	nng_ctx_set_ms(c->ctx, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	if ((rv = nng_aio_alloc(&c->aio, NULL, NULL)) != 0) {
		nng_ctx_close(c->ctx);
		free(c);
		return cxlp_fail(-ENOMEM, "client: aio: %s", nng_strerror(rv));
	}
	*out = c;
	return 0;
}

static void
ctx_put(struct client *cl, struct csock *cs, struct cctx *c)
{
	pthread_mutex_lock(&cl->lock);
	c->next = cs->idle;
	cs->idle = c;
	pthread_mutex_unlock(&cl->lock);
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
	cxlp_assert(h.len == PROTO_REQ_HDR_LEN);
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

static int
reply_check(nng_msg *msg, uint16_t op, uint64_t id, struct creply *rep)
{
	int rc;

	rc = proto_get_rep_hdr(nng_msg_body(msg), nng_msg_len(msg),
	    &rep->hdr, &rep->body);
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

/* No reply, or the connection dropped under the request: the request may
 * or may not have been applied, so it is resent with the same id. */
static bool
retryable(int rc)
{
	return rc == CXLP_E_TIMEOUT || rc == CXLP_E_CONN;
}

/* Replace cs, on which requests keep timing out, by a freshly dialed
 * socket, unless another call did so already or cs has no pipe. Calls
 * that find the same stall wait for the first one's redial instead of
 * dialing sockets they would throw away. A socket without a pipe is
 * kept: nng is dialing it, perhaps with a handshake under way at a
 * stalled server, and a fresh socket would wait in the same queue (and
 * retiring this one would pile up sockets until the server wakes). A
 * dial that cannot even start keeps the old socket (the next timeout
 * tries again). */
static void
redial(struct client *cl, struct csock *cs)
{
	struct csock *fresh, *old;
	bool mine;

	pthread_mutex_lock(&cl->redial_lock);
	pthread_mutex_lock(&cl->lock);
	mine = cl->cur == cs;
	pthread_mutex_unlock(&cl->lock);
	if (!mine || !csock_state(cs).piped) {
		pthread_mutex_unlock(&cl->redial_lock);
		return;
	}
	if (csock_open(&fresh, cl->url, NNG_FLAG_NONBLOCK) != 0) {
		pthread_mutex_unlock(&cl->redial_lock);
		log_info("client: cannot redial %s: %s", cl->url,
		    cxlp_errormsg());
		return;
	}
	pthread_mutex_lock(&cl->lock);
	old = cl->cur;
	cl->cur = fresh;
	pthread_mutex_unlock(&cl->lock);
	pthread_mutex_unlock(&cl->redial_lock);
	__atomic_fetch_add(&cl->redials, 1, __ATOMIC_RELAXED);
	log_info("client: no reply on this connection %u times in a row, "
	    "dialed %s afresh", REDIAL_AFTER, cl->url);
	csock_put(cl, old);
}

/* Note the outcome of an attempt on cs: a timeout adds to its run of
 * stalls, anything else ends the run. */
static void
csock_note(struct csock *cs, int rc)
{
	if (rc == CXLP_E_TIMEOUT) {
		__atomic_fetch_add(&cs->stalls, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&cs->stalls, 0, __ATOMIC_RELAXED);
	}
}

static bool
csock_stalled(struct csock *cs)
{
	return __atomic_load_n(&cs->stalls, __ATOMIC_RELAXED) >=
	    REDIAL_AFTER;
}

/* Take the current socket and a context on it, replacing the socket first
 * if it is stalled. Returns 0 with both (give back with ctx_put and
 * csock_put), or an error with neither. */
static int
sock_enter(struct client *cl, struct csock **csp, struct cctx **cp)
{
	struct csock *cs = csock_get(cl);
	int rc;

	if (csock_stalled(cs)) {
		redial(cl, cs);
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
		(*sends)++;
		csock_note(cs, rc);
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

/* One call under request id `id` (0: a new one). */
static int
call(struct client *cl, uint16_t op, uint64_t id, const struct pbuf *body,
    struct creply *rep, unsigned retries)
{
	struct frame f = {.hdr = {.version = PROTO_VERSION, .op = op,
	    .req_id = id != 0 ? id : client_new_id(cl)}, .body = body};
	nng_msg *msg = NULL;
	unsigned sends = 0;
	int rc;

	memset(rep, 0, sizeof(*rep));
	client_get_session(cl, &f.hdr.session, &f.hdr.token);
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
	rc = reply_check(msg, op, f.hdr.req_id, rep);
	if (rc != 0) {
		nng_msg_free(msg);
		memset(rep, 0, sizeof(*rep));
		rep->sends = sends;
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
	return call(cl, op, 0, body, rep, cl->retries);
}

/* client_call_id -- client_call under a request id from client_new_id,
 * again for a request whose outcome stayed unknown. */
int
client_call_id(struct client *cl, uint16_t op, uint64_t id,
    const struct pbuf *body, struct creply *rep)
{
	return call(cl, op, id, body, rep, cl->retries);
}

/* client_call_once -- client_call without retries (BYE at close). */
int
client_call_once(struct client *cl, uint16_t op, const struct pbuf *body,
    struct creply *rep)
{
	return call(cl, op, 0, body, rep, 0);
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
