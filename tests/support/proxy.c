/*
 * proxy.c -- the fault-injection proxy of proxy.h, for integration tests.
 *
 * Shape: PROXY_WORKERS threads, each owning one REP context on the
 * listening socket, one REQ context on the dialing socket and one aio it
 * drives synchronously (start, nng_aio_wait). A thread per in-flight
 * request keeps each fault a straight line of code (forward, ask the hook,
 * maybe sleep, maybe reply) that a test author can read, and it is plenty
 * for tests. The REQ side never resends on its own (NNG_OPT_REQ_RESENDTIME
 * infinite): every duplicate the server sees is one the hook asked for, or
 * one the client itself sent. Stopping closes both sockets, which fails
 * every pending aio with NNG_ECLOSED, so workers leave their loops and are
 * joined; nothing needs a timeout.
 *
 * A held request (PROXY_HOLD_REQUEST) is kept as the frame the client
 * sent and later sent by proxy_release_held on a REQ socket of its own,
 * dialed afresh, from the test's thread: the workers' sockets stay as
 * they were, and a release after the server was restarted does not
 * depend on the proxy's own connection having come back.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "err.h"
#include "proto.h"
#include "proxy.h"

struct worker {
	struct proxy *p;
	nng_ctx rep_ctx; /* on p->rep: receives from and answers the client */
	nng_ctx req_ctx; /* on p->req: forwards to the server */
	nng_aio *aio;
	pthread_t thread;
	bool running;
	atomic_bool exited; /* worker_main returned */
};

struct proxy {
	nng_socket rep;
	nng_socket req;
	bool rep_open;
	bool req_open;
	proxy_hook hook;
	void *arg;
	atomic_bool stopping;
	atomic_uint_fast64_t requests[PROTO_OP_MAX + 1]; /* [0]: unknown op */
	atomic_uint_fast64_t forwarded;
	atomic_uint refuse_from;      /* proxy_refuse_version; 0: none */
	atomic_uint_fast64_t refused; /* frames it answered so */
	pthread_mutex_t pipes_lock;           /* guards the two pipe sets */
	uint32_t seen[PROXY_PIPES_MAX];       /* pipes requests came from */
	uint32_t stalled[PROXY_PIPES_MAX];    /* pipes whose requests vanish */
	char server_url[256];
	pthread_mutex_t held_lock;            /* guards held, nheld */
	nng_msg *held[PROXY_HELD_MAX];        /* owned, in the order held */
	unsigned nheld;
	struct worker w[PROXY_WORKERS];
};

/* ---- synchronous context I/O over one aio ---- */

/* Both helpers refuse to start once the proxy is stopping: proxy_stop
 * cancels the workers' aios until every worker has left, and only then
 * closes the sockets, so no nng call races a socket close (nng 1.5 can
 * touch a torn-down context lock when a send meets a close). */
static int
ctx_recv(struct proxy *p, nng_ctx ctx, nng_aio *aio, nng_msg **msg)
{
	int rv;

	*msg = NULL;
	if (atomic_load(&p->stopping)) {
		return NNG_ECLOSED;
	}
	nng_ctx_recv(ctx, aio);
	nng_aio_wait(aio);
	rv = nng_aio_result(aio);
	*msg = rv == 0 ? nng_aio_get_msg(aio) : NULL;
	return rv;
}

/* ctx_send -- send msg; msg is consumed whether or not the send works. */
static int
ctx_send(struct proxy *p, nng_ctx ctx, nng_aio *aio, nng_msg *msg)
{
	int rv;

	if (atomic_load(&p->stopping)) {
		nng_msg_free(msg);
		return NNG_ECLOSED;
	}
	nng_aio_set_msg(aio, msg);
	nng_ctx_send(ctx, aio);
	nng_aio_wait(aio);
	rv = nng_aio_result(aio);
	if (rv != 0) {
		nng_msg_free(msg);
	}
	return rv;
}

/* forward -- one round trip to the server; the reply, or NULL. */
static nng_msg *
forward(struct worker *w, nng_msg *req)
{
	nng_msg *rep;

	atomic_fetch_add(&w->p->forwarded, 1);
	if (ctx_send(w->p, w->req_ctx, w->aio, req) != 0) {
		return NULL;
	}
	return ctx_recv(w->p, w->req_ctx, w->aio, &rep) == 0 ? rep : NULL;
}

/* ---- one request ---- */

/* peek_header -- op and req_id of a request, 0 where unreadable. */
static void
peek_header(nng_msg *m, uint16_t *op, uint64_t *req_id)
{
	struct preader r;
	const uint8_t *skip;

	*op = 0;
	*req_id = 0;
	preader_init(&r, nng_msg_body(m), nng_msg_len(m));
	if (!preader_bytes(&r, 6, &skip) || !preader_u16(&r, op) ||
	    !preader_u64(&r, req_id)) {
		*op = 0;
	}
}

static enum proxy_action
ask(struct proxy *p, uint16_t op, uint64_t id, nng_msg *rep,
    unsigned *delay_ms)
{
	enum proxy_action a;
	size_t len, len0;

	*delay_ms = 0;
	if (p->hook == NULL) {
		return PROXY_PASS;
	}
	if (rep == NULL) {
		return p->hook(p->arg, op, id, NULL, NULL, delay_ms);
	}
	len = len0 = nng_msg_len(rep);
	a = p->hook(p->arg, op, id, nng_msg_body(rep), &len, delay_ms);
	cxlp_assert(len <= len0); /* the hook may only shorten the reply */
	nng_msg_chop(rep, len0 - len);
	return a;
}

/* nap -- sleep ms, in slices, returning early when the proxy stops. */
static void
nap(struct proxy *p, unsigned ms)
{
	struct timespec slice = { 0, 10 * 1000 * 1000 };

	for (unsigned t = 0; t < ms && !atomic_load(&p->stopping); t += 10) {
		nanosleep(&slice, NULL);
	}
}

/* ---- stalled connections ---- */

/* Add id to set (0 marks a free entry); a full set forgets nothing and
 * adds nothing: the tests use a handful of pipes. */
static void
pipe_set_add(uint32_t *set, uint32_t id)
{
	for (size_t i = 0; i < PROXY_PIPES_MAX; i++) {
		if (set[i] == id) {
			return;
		}
		if (set[i] == 0) {
			set[i] = id;
			return;
		}
	}
}

static bool
pipe_set_has(const uint32_t *set, uint32_t id)
{
	for (size_t i = 0; i < PROXY_PIPES_MAX && set[i] != 0; i++) {
		if (set[i] == id) {
			return true;
		}
	}
	return false;
}

/* Note the pipe req came from; true if that pipe is stalled. */
static bool
pipe_stalled(struct proxy *p, nng_msg *req)
{
	uint32_t id = nng_pipe_id(nng_msg_get_pipe(req));
	bool stalled;

	pthread_mutex_lock(&p->pipes_lock);
	pipe_set_add(p->seen, id);
	stalled = pipe_set_has(p->stalled, id);
	pthread_mutex_unlock(&p->pipes_lock);
	return stalled;
}

/* Keep req for proxy_release_held; consumes req. */
static void
hold(struct proxy *p, nng_msg *req)
{
	pthread_mutex_lock(&p->held_lock);
	if (p->nheld < PROXY_HELD_MAX) {
		p->held[p->nheld++] = req;
		req = NULL;
	}
	pthread_mutex_unlock(&p->held_lock);
	if (req != NULL) {
		nng_msg_free(req);
	}
}

/* A frame of version refuse_from or later, answered as a metaserver of
 * the version before would (common/proto.h, "Negotiation"): CXLP_E_VERSION
 * in its own header, nothing forwarded. true when req was so consumed. */
static bool
refuse_newer(struct worker *w, nng_msg *req, uint16_t op, uint64_t id)
{
	struct proxy *p = w->p;
	unsigned from = atomic_load(&p->refuse_from);
	const uint8_t *f = nng_msg_body(req);
	struct proto_rep_hdr h = { .version = (uint16_t)(from - 1), .op = op,
		.req_id = id, .status = CXLP_E_VERSION };
	nng_msg *rep = NULL;
	struct pbuf b;

	if (from == 0 || nng_msg_len(req) < 6 ||
	    (unsigned)(f[4] | f[5] << 8) < from) {
		return false;
	}
	atomic_fetch_add(&p->refused, 1);
	nng_msg_free(req);
	pbuf_init(&b);
	proto_put_rep_hdr(&b, &h);
	if (b.err == 0 && nng_msg_alloc(&rep, b.len) == 0) {
		memcpy(nng_msg_body(rep), b.data, b.len);
		ctx_send(p, w->rep_ctx, w->aio, rep);
	}
	pbuf_fini(&b);
	return true;
}

/* serve -- apply the hook's faults to one request; consumes req. */
static void
serve(struct worker *w, nng_msg *req)
{
	struct proxy *p = w->p;
	enum proxy_action a;
	unsigned delay;
	nng_msg *rep, *dup = NULL;
	uint16_t op;
	uint64_t id;

	peek_header(req, &op, &id);
	atomic_fetch_add(&p->requests[op <= PROTO_OP_MAX ? op : 0], 1);
	if (pipe_stalled(p, req)) {
		nng_msg_free(req);
		return;
	}
	if (refuse_newer(w, req, op, id)) {
		return;
	}
	a = ask(p, op, id, NULL, &delay);
	if (a == PROXY_DROP_REQUEST) {
		nng_msg_free(req);
		return;
	}
	if (a == PROXY_HOLD_REQUEST) {
		hold(p, req);
		return;
	}
	if (a == PROXY_DUP_REQUEST && nng_msg_dup(&dup, req) == 0) {
		rep = forward(w, dup);
		if (rep != NULL) {
			nng_msg_free(rep);
		}
	}
	rep = forward(w, req);
	if (rep == NULL) {
		return;
	}
	a = ask(p, op, id, rep, &delay);
	if (a == PROXY_DROP_REPLY) {
		nng_msg_free(rep);
		return;
	}
	if (a == PROXY_DELAY_REPLY) {
		nap(p, delay);
	}
	ctx_send(p, w->rep_ctx, w->aio, rep);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	nng_msg *req;

	while (ctx_recv(w->p, w->rep_ctx, w->aio, &req) == 0) {
		serve(w, req);
	}
	atomic_store(&w->exited, true);
	return NULL;
}

/* ---- life cycle ---- */

static int
nng_fail(int rv, const char *what, const char *url)
{
	return cxlp_fail(rv == NNG_EADDRINUSE ? -EADDRINUSE : -EIO,
	    "proxy: %s %s: %s", what, url, nng_strerror(rv));
}

static int
open_sockets(struct proxy *p, const char *listen_url, const char *server_url)
{
	int rv;

	if ((rv = nng_rep0_open(&p->rep)) != 0) {
		return nng_fail(rv, "rep0_open", listen_url);
	}
	p->rep_open = true;
	if ((rv = nng_req0_open(&p->req)) != 0) {
		return nng_fail(rv, "req0_open", server_url);
	}
	p->req_open = true;
	rv = nng_socket_set_ms(p->req, NNG_OPT_REQ_RESENDTIME,
	    NNG_DURATION_INFINITE);
	if (rv != 0) {
		return nng_fail(rv, "set resend time", server_url);
	}
	if ((rv = nng_listen(p->rep, listen_url, NULL, 0)) != 0) {
		return nng_fail(rv, "listen", listen_url);
	}
	if ((rv = nng_dial(p->req, server_url, NULL, NNG_FLAG_NONBLOCK)) != 0) {
		return nng_fail(rv, "dial", server_url);
	}
	return 0;
}

static int
start_worker(struct proxy *p, struct worker *w)
{
	int rv;

	w->p = p;
	if ((rv = nng_aio_alloc(&w->aio, NULL, NULL)) != 0 ||
	    (rv = nng_ctx_open(&w->rep_ctx, p->rep)) != 0 ||
	    (rv = nng_ctx_open(&w->req_ctx, p->req)) != 0 ||
	    (rv = nng_ctx_set_ms(w->req_ctx, NNG_OPT_REQ_RESENDTIME,
	    NNG_DURATION_INFINITE)) != 0) {
		return nng_fail(rv, "worker", "contexts");
	}
	rv = pthread_create(&w->thread, NULL, worker_main, w);
	if (rv != 0) {
		return cxlp_fail(-rv, "proxy: pthread_create failed");
	}
	w->running = true;
	return 0;
}

/* proxy_start -- see proxy.h. */
int
proxy_start(struct proxy **out, const char *listen_url,
    const char *server_url, proxy_hook hook, void *arg)
{
	struct proxy *p;
	int rc;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		return cxlp_fail(-ENOMEM, "proxy: out of memory");
	}
	p->hook = hook;
	p->arg = arg;
	snprintf(p->server_url, sizeof(p->server_url), "%s", server_url);
	pthread_mutex_init(&p->pipes_lock, NULL);
	pthread_mutex_init(&p->held_lock, NULL);
	rc = open_sockets(p, listen_url, server_url);
	for (int i = 0; i < PROXY_WORKERS && rc == 0; i++) {
		rc = start_worker(p, &p->w[i]);
	}
	if (rc != 0) {
		goto err_stop;
	}
	*out = p;
	return 0;

err_stop:
	proxy_stop(&p);
	return rc;
}

/* proxy_stop -- see proxy.h. */
void
proxy_stop(struct proxy **pp)
{
	struct proxy *p = *pp;

	if (p == NULL) {
		return;
	}
	atomic_store(&p->stopping, true);
	for (int i = 0; i < PROXY_WORKERS; i++) {
		while (p->w[i].running && !atomic_load(&p->w[i].exited)) {
			struct timespec ms = { 0, 1000 * 1000 };

			nng_aio_cancel(p->w[i].aio);
			nanosleep(&ms, NULL);
		}
	}
	if (p->rep_open) {
		nng_close(p->rep);
	}
	if (p->req_open) {
		nng_close(p->req);
	}
	for (int i = 0; i < PROXY_WORKERS; i++) {
		if (p->w[i].running) {
			pthread_join(p->w[i].thread, NULL);
		}
		if (p->w[i].aio != NULL) {
			nng_aio_free(p->w[i].aio);
		}
	}
	for (unsigned i = 0; i < p->nheld; i++) {
		nng_msg_free(p->held[i]);
	}
	pthread_mutex_destroy(&p->held_lock);
	pthread_mutex_destroy(&p->pipes_lock);
	free(p);
	*pp = NULL;
}

/* proxy_stall_seen -- see proxy.h. */
void
proxy_stall_seen(struct proxy *p)
{
	pthread_mutex_lock(&p->pipes_lock);
	for (size_t i = 0; i < PROXY_PIPES_MAX && p->seen[i] != 0; i++) {
		pipe_set_add(p->stalled, p->seen[i]);
	}
	pthread_mutex_unlock(&p->pipes_lock);
}

/* proxy_held -- see proxy.h. */
unsigned
proxy_held(struct proxy *p)
{
	unsigned n;

	pthread_mutex_lock(&p->held_lock);
	n = p->nheld;
	pthread_mutex_unlock(&p->held_lock);
	return n;
}

/* A REQ socket of its own to url, replies awaited up to timeout_ms. */
static int
release_socket(nng_socket *s, const char *url, unsigned timeout_ms)
{
	int rv;

	if ((rv = nng_req0_open(s)) != 0) {
		return nng_fail(rv, "req0_open", url);
	}
	if ((rv = nng_socket_set_ms(*s, NNG_OPT_REQ_RESENDTIME,
	    NNG_DURATION_INFINITE)) != 0 ||
	    (rv = nng_socket_set_ms(*s, NNG_OPT_SENDTIMEO,
	    (nng_duration)timeout_ms)) != 0 ||
	    (rv = nng_socket_set_ms(*s, NNG_OPT_RECVTIMEO,
	    (nng_duration)timeout_ms)) != 0 ||
	    (rv = nng_dial(*s, url, NULL, NNG_FLAG_NONBLOCK)) != 0) {
		nng_close(*s);
		return nng_fail(rv, "release dial", url);
	}
	return 0;
}

/* proxy_release_held -- see proxy.h. */
int
proxy_release_held(struct proxy *p, unsigned timeout_ms)
{
	nng_msg *held[PROXY_HELD_MAX];
	unsigned n, answered = 0;
	nng_socket s;
	int rc;

	pthread_mutex_lock(&p->held_lock);
	n = p->nheld;
	memcpy(held, p->held, n * sizeof(held[0]));
	p->nheld = 0;
	pthread_mutex_unlock(&p->held_lock);
	if ((rc = release_socket(&s, p->server_url, timeout_ms)) != 0) {
		for (unsigned i = 0; i < n; i++) {
			nng_msg_free(held[i]);
		}
		return rc;
	}
	for (unsigned i = 0; i < n; i++) {
		nng_msg *rep = NULL;

		atomic_fetch_add(&p->forwarded, 1);
		if (nng_sendmsg(s, held[i], 0) != 0) {
			nng_msg_free(held[i]);
			continue;
		}
		if (nng_recvmsg(s, &rep, 0) == 0) {
			answered++;
			nng_msg_free(rep);
		}
	}
	nng_close(s);
	return (int)answered;
}

/* proxy_requests -- see proxy.h. */
uint64_t
proxy_requests(struct proxy *p, unsigned op)
{
	return op <= PROTO_OP_MAX ? atomic_load(&p->requests[op]) : 0;
}

/* proxy_refuse_version -- see proxy.h. */
uint64_t
proxy_refuse_version(struct proxy *p, unsigned from)
{
	atomic_store(&p->refuse_from, from);
	return atomic_load(&p->refused);
}

/* proxy_forwarded -- see proxy.h. */
uint64_t
proxy_forwarded(struct proxy *p)
{
	return atomic_load(&p->forwarded);
}

/* ---- reply rewriting ---- */

static bool
has_results(unsigned op)
{
	return op >= PROTO_OP_REGISTER && op <= PROTO_OP_DELETE;
}

/* proxy_set_term -- see proxy.h. */
int
proxy_set_term(uint8_t *reply, size_t len, uint64_t term)
{
	struct proto_rep_hdr h;
	struct preader body;

	if (proto_get_rep_hdr(reply, len, &h, &body) != 0 || h.version < 3) {
		return cxlp_fail(CXLP_E_PROTO, "proxy: not a version-3 reply");
	}
	for (int i = 0; i < 8; i++) {
		reply[24 + i] = (uint8_t)(term >> (8 * i));
	}
	return 0;
}

/* proxy_truncate_results -- see proxy.h. */
int
proxy_truncate_results(uint8_t *reply, size_t *len, uint32_t keep)
{
	struct proto_rep_hdr h;
	struct proto_result *res;
	struct preader body;
	struct pbuf b;
	uint32_t n;
	int rc;

	rc = proto_get_rep_hdr(reply, *len, &h, &body);
	if (rc != 0) {
		return rc;
	}
	if (h.status != 0 || !has_results(h.op)) {
		return cxlp_fail(CXLP_E_PROTO, "proxy: %s reply with status "
		    "%d has no result list", proto_op_name(h.op), h.status);
	}
	res = malloc(sizeof(*res) * CXLP_BATCH_MAX);
	if (res == NULL) {
		return cxlp_fail(-ENOMEM, "proxy: out of memory");
	}
	rc = proto_get_results(&body, res, CXLP_BATCH_MAX, &n);
	if (rc == 0 && keep < n) {
		pbuf_init(&b);
		proto_put_rep_hdr(&b, &h);
		proto_put_results(&b, keep, res);
		rc = b.err;
		if (rc == 0) {
			memcpy(reply, b.data, b.len);
			*len = b.len;
		}
		pbuf_fini(&b);
	}
	free(res);
	return rc;
}
