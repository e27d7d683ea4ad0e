/*
 * csock.c -- the sockets under the handler's client (client.c): dialing,
 * the free list of nng contexts on each, replacing one that hangs, and
 * closing one only when nng 1.5.2 can take it. With client.c,
 * endpoints.c and tls.c the only handler files that include nng
 * (client_int.h).
 *
 * A connection can hang without closing (a peer or relay that stops
 * answering), so once requests have timed out REDIAL_AFTER times in a row
 * on one socket (whichever calls sent them) while its connection is up,
 * the next attempt replaces the socket with a freshly dialed one and sends
 * there. A socket is never closed while its SP handshake is under way
 * (csock_retire: that stops an nng 1.5.2 server's listener). The server
 * binds a session to whatever pipe it last spoke on, so nothing else
 * changes. Sockets are reference counted: calls still waiting on the old
 * one finish their attempt, then move over; the last to leave closes it,
 * in the background and only once no late reply can arrive on it
 * (csock_retire: nng 1.5.2 wedges for good if one does). A socket whose
 * endpoint is gone (no connection through a timeout, or a server that
 * lost its term) is left for another endpoint first (endpoints.c), and
 * redialed here only when none answers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_int.h"
#include "err.h"
#include "log.h"
#include "proto.h"

#define REDIAL_AFTER 2 /* timeouts in a row on one socket */
#define CLOSE_POLL_MS 20
#define CLOSE_WAIT_MAX_MS 60000 /* then a retired socket is closed anyway */

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

/* Dial cs's socket to ep, with ep's TLS config if it has one. */
static int
csock_dial(struct csock *cs, const struct client *cl,
    const struct cendpoint *ep, int flags)
{
	nng_dialer d;
	int rv, rc;

	if (ep->tlscfg == NULL) {
		rv = nng_dial(cs->sock, ep->url, NULL, flags);
	} else if ((rv = nng_dialer_create(&d, cs->sock, ep->url)) == 0) {
		if ((rc = ctls_dialer_set(d, ep->tlscfg)) != 0) {
			nng_dialer_close(d);
			return rc;
		}
		rv = nng_dialer_start(d, flags);
	}
	return rv == 0 ? 0 : ctls_dial_error(ep->url, &cl->tls,
	    cl->timeout_ms, rv);
}

/* csock_open -- see client_int.h */
int
csock_open(struct csock **out, const struct client *cl,
    const struct cendpoint *ep, int flags)
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
	if ((rc = sock_options(cs->sock)) != 0 ||
	    (rc = csock_dial(cs, cl, ep, flags)) != 0) {
		goto err_close;
	}
	cs->ep = ep;
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

/* csock_get -- see client_int.h */
struct csock *
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

/* the failures counted in a dialer's statistics st */
static uint64_t
dial_failures(nng_stat *st)
{
	static const char *const failed[] = { "refused", "timeout", "proto",
		"auth", "other", "disconnect" };
	uint64_t n = 0;

	for (size_t i = 0; i < sizeof(failed) / sizeof(failed[0]); i++) {
		n += stat_of(st, failed[i]);
	}
	return n;
}

/* csock_state -- see client_int.h */
struct csock_state
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
		const char *name = nng_stat_name(st);

		if (stat_of(st, "socket") != id) {
			continue;
		}
		if (strcmp(name, "dialer") == 0) {
			cst.dial_failed = cst.dial_failed ||
			    dial_failures(st) > 0;
		}
		if (strcmp(name, "pipe") != 0) {
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

/* csock_put -- see client_int.h */
void
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

/* ctx_get -- see client_int.h */
int
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

/* ctx_put -- see client_int.h */
void
ctx_put(struct client *cl, struct csock *cs, struct cctx *c)
{
	pthread_mutex_lock(&cl->lock);
	c->next = cs->idle;
	cs->idle = c;
	pthread_mutex_unlock(&cl->lock);
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
void
csock_redial(struct client *cl, struct csock *cs)
{
	struct csock *fresh, *old;
	bool mine;

	pthread_mutex_lock(&cl->redial_lock);
	pthread_mutex_lock(&cl->lock);
	mine = cl->cur == cs;
	pthread_mutex_unlock(&cl->lock);
	if (!mine || __atomic_load_n(&cs->stalls, __ATOMIC_RELAXED) <
	    REDIAL_AFTER || !csock_state(cs).piped) {
		pthread_mutex_unlock(&cl->redial_lock);
		return;
	}
	if (csock_open(&fresh, cl, cs->ep, NNG_FLAG_NONBLOCK) != 0) {
		pthread_mutex_unlock(&cl->redial_lock);
		log_info("client: cannot redial %s: %s", cs->ep->url,
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
	    "dialed %s afresh", REDIAL_AFTER, cs->ep->url);
	csock_put(cl, old);
}

/* csock_note -- see client_int.h */
void
csock_note(struct csock *cs, int rc)
{
	if (rc == CXLP_E_TIMEOUT) {
		__atomic_fetch_add(&cs->stalls, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&cs->stalls, 0, __ATOMIC_RELAXED);
	}
}

/* csock_stalled -- see client_int.h */
bool
csock_stalled(struct csock *cs)
{
	unsigned n = __atomic_load_n(&cs->stalls, __ATOMIC_RELAXED);

	return n >= REDIAL_AFTER ||
	    __atomic_load_n(&cs->deposed, __ATOMIC_RELAXED) ||
	    (n > 0 && !csock_state(cs).piped);
}
