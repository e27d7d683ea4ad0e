/*
 * client.c -- the handler's request/reply client, and the only handler file
 * that includes nng.
 *
 * One nng REQ socket per handler. nng's own resend timer is turned off
 * (NNG_OPT_REQ_RESENDTIME infinite): retries are ours, so that a retry
 * carries the SAME request id and the server's reply cache answers it
 * without applying it twice (DESIGN contract 4). Each call borrows an nng
 * context from a small free list, so any number of threads can have a
 * request in flight at once on the one socket. Every reply is validated
 * here (header decodes, op and request id match, status is an error code)
 * so the callers only decode bodies.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "err.h"
#include "handler_int.h"
#include "log.h"

struct cctx {
	nng_ctx ctx;
	nng_aio *aio;
	struct cctx *next;
};

struct client {
	nng_socket sock;
	pthread_mutex_t lock; /* guards idle */
	struct cctx *idle;    /* contexts not in use */
	uint64_t next_id;     /* atomic */
	uint64_t session;     /* atomic */
	uint64_t token;       /* atomic */
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
sock_setup(struct client *cl, const char *url)
{
	int rv;

	rv = nng_req0_open(&cl->sock);
	if (rv != 0) {
		return cxlp_fail(nng_to_cxlp(rv), "client: req socket: %s",
		    nng_strerror(rv));
	}
	if ((rv = nng_socket_set_ms(cl->sock, NNG_OPT_REQ_RESENDTIME,
		 NNG_DURATION_INFINITE)) != 0 ||
	    (rv = nng_socket_set_size(cl->sock, NNG_OPT_RECVMAXSZ,
		 PROTO_FRAME_MAX)) != 0 ||
	    (rv = nng_socket_set_ms(cl->sock, NNG_OPT_RECONNMINT, 20)) != 0 ||
	    (rv = nng_socket_set_ms(cl->sock, NNG_OPT_RECONNMAXT, 500)) != 0) {
		nng_close(cl->sock);
		return cxlp_fail(nng_to_cxlp(rv), "client: socket option: %s",
		    nng_strerror(rv));
	}
	rv = nng_dial(cl->sock, url, NULL, 0);
	if (rv != 0) {
		nng_close(cl->sock);
		return cxlp_fail(rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP ?
			-EINVAL : CXLP_E_CONN,
		    "client: cannot reach %s: %s", url, nng_strerror(rv));
	}
	return 0;
}

/* client_open -- dial url (synchronously: an absent server is CXLP_E_CONN;
 * afterwards nng redials by itself). Returns 0 and *out (caller owns;
 * client_close) or a negative error with *out == NULL. */
int
client_open(struct client **out, const char *url, unsigned timeout_ms,
    unsigned retries)
{
	struct client *cl;
	int rc;

	*out = NULL;
	cl = calloc(1, sizeof(*cl));
	if (cl == NULL) {
		return cxlp_fail(-ENOMEM, "client: out of memory");
	}
	rc = sock_setup(cl, url);
	if (rc != 0) {
		free(cl);
		return rc;
	}
	pthread_mutex_init(&cl->lock, NULL);
	cl->next_id = 1;
	cl->timeout_ms = timeout_ms;
	cl->retries = retries;
	*out = cl;
	return 0;
}

/* client_close -- close the socket (aborting calls in flight) and free.
 * NULL-safe; sets *clp = NULL. */
void
client_close(struct client **clp)
{
	struct client *cl;

	if (clp == NULL || *clp == NULL) {
		return;
	}
	cl = *clp;
	nng_close(cl->sock);
	while (cl->idle != NULL) {
		struct cctx *c = cl->idle;

		cl->idle = c->next;
		nng_aio_free(c->aio);
		nng_ctx_close(c->ctx);
		free(c);
	}
	pthread_mutex_destroy(&cl->lock);
	free(cl);
	*clp = NULL;
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
ctx_get(struct client *cl, struct cctx **out)
{
	struct cctx *c;
	int rv;

	pthread_mutex_lock(&cl->lock);
	c = cl->idle;
	if (c != NULL) {
		cl->idle = c->next;
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
	if ((rv = nng_ctx_open(&c->ctx, cl->sock)) != 0) {
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
ctx_put(struct client *cl, struct cctx *c)
{
	pthread_mutex_lock(&cl->lock);
	c->next = cl->idle;
	cl->idle = c;
	pthread_mutex_unlock(&cl->lock);
}

static int
frame_build(struct client *cl, uint16_t op, uint64_t id,
    const struct pbuf *body, nng_msg **out)
{
	struct proto_req_hdr hdr = {.version = PROTO_VERSION, .op = op,
	    .req_id = id};
	struct pbuf b;
	int rv;

	client_get_session(cl, &hdr.session, &hdr.token);
	pbuf_init(&b);
	proto_put_req_hdr(&b, &hdr);
	if (body != NULL) {
		pbuf_put_bytes(&b, body->data, body->len);
	}
	if (b.err != 0 || (body != NULL && body->err != 0)) {
		pbuf_fini(&b);
		return cxlp_fail(-ENOMEM, "client: cannot encode %s",
		    proto_op_name(op));
	}
	rv = nng_msg_alloc(out, 0);
	if (rv == 0 && (rv = nng_msg_append(*out, b.data, b.len)) != 0) {
		nng_msg_free(*out);
	}
	pbuf_fini(&b);
	if (rv != 0) {
		*out = NULL;
		return cxlp_fail(-ENOMEM, "client: out of memory");
	}
	return 0;
}

/* One send + receive on c. Returns 0 with *reply, CXLP_E_TIMEOUT, or
 * another error. */
static int
attempt(struct client *cl, struct cctx *c, nng_msg *req, nng_msg **reply)
{
	nng_msg *dup;
	int rv;

	if ((rv = nng_msg_dup(&dup, req)) != 0) {
		return cxlp_fail(-ENOMEM, "client: out of memory");
	}
	nng_aio_set_msg(c->aio, dup);
	nng_aio_set_timeout(c->aio, (nng_duration)cl->timeout_ms);
	nng_ctx_send(c->ctx, c->aio);
	nng_aio_wait(c->aio);
	if ((rv = nng_aio_result(c->aio)) != 0) {
		nng_msg_free(dup);
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

static int
call(struct client *cl, uint16_t op, const struct pbuf *body,
    struct creply *rep, unsigned retries)
{
	uint64_t id = __atomic_fetch_add(&cl->next_id, 1, __ATOMIC_RELAXED);
	nng_msg *req = NULL, *msg = NULL;
	struct cctx *c = NULL;
	int rc;

	memset(rep, 0, sizeof(*rep));
	if ((rc = frame_build(cl, op, id, body, &req)) != 0) {
		return rc;
	}
	if ((rc = ctx_get(cl, &c)) != 0) {
		goto out_req;
	}
	rc = CXLP_E_TIMEOUT;
	for (unsigned i = 0; i <= retries && retryable(rc); i++) {
		if (i > 0) {
			log_info("%s #%llu: %s, retry %u", proto_op_name(op),
			    (unsigned long long)id, cxlp_errormsg(), i);
		}
		rc = attempt(cl, c, req, &msg);
	}
	ctx_put(cl, c);
	if (rc == CXLP_E_TIMEOUT) {
		rc = cxlp_fail(CXLP_E_TIMEOUT, "%s: no reply after %u tries of "
		    "%u ms", proto_op_name(op), retries + 1, cl->timeout_ms);
	}
	if (rc != 0) {
		goto out_req;
	}
	rc = reply_check(msg, op, id, rep);
	if (rc != 0) {
		nng_msg_free(msg);
		memset(rep, 0, sizeof(*rep));
		goto out_req;
	}
	rep->msg = msg;
out_req:
	nng_msg_free(req);
	return rc;
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
	return call(cl, op, body, rep, cl->retries);
}

/* client_call_once -- client_call without retries (BYE at close). */
int
client_call_once(struct client *cl, uint16_t op, const struct pbuf *body,
    struct creply *rep)
{
	return call(cl, op, body, rep, 0);
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
