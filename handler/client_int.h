/*
 * client_int.h -- what the handler's client (client.c) and its sockets
 * (csock.c) share: their structures and the socket calls a call makes.
 * It includes nng's headers, so only those two files include it: the rest
 * of the handler sees struct client as opaque (handler_int.h).
 */
#ifndef CXLP_CLIENT_INT_H
#define CXLP_CLIENT_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "cxlpool.h"

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

/* nng_to_cxlp -- the cxlp error for nng error rv. */
static inline int
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

/* csock_open -- open and dial a socket to url. flags 0: the server must
 * be there now (else CXLP_E_CONN); NNG_FLAG_NONBLOCK: nng keeps dialing
 * in the background. Returns 0 and *out with one reference, or an
 * error. */
int csock_open(struct csock **out, const char *url, int flags);
/* csock_put -- drop a reference; the last one closes the socket, in the
 * background (csock_retire). */
void csock_put(struct client *cl, struct csock *cs);
/* sock_enter -- take the current socket and a context on it, replacing
 * the socket first if it is stalled. Returns 0 with both (give back with
 * ctx_put and csock_put), or an error with neither. */
int sock_enter(struct client *cl, struct csock **csp, struct cctx **cp);
/* ctx_put -- give context c back to cs's free list. */
void ctx_put(struct client *cl, struct csock *cs, struct cctx *c);
/* csock_note -- note the outcome of an attempt on cs: a timeout adds to
 * its run of stalls, anything else ends the run. */
void csock_note(struct csock *cs, int rc);
/* csock_stalled -- cs's requests have timed out REDIAL_AFTER times in a
 * row: the next attempt goes to a fresh socket. */
bool csock_stalled(struct csock *cs);

#endif /* CXLP_CLIENT_INT_H */
