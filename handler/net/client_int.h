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
#include <nng/supplemental/tls/tls.h>

#include "cxlpool.h"
#include "handler_int.h" /* struct cfg_tls */

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
	uint16_t version;     /* atomic: protocol version requests are sent
	                       * at (client_set_version: the WELCOME's) */
	uint64_t term;        /* atomic: newest term a reply carried */
	uint64_t stale;       /* atomic: replies of older terms dropped */
	unsigned timeout_ms;
	unsigned retries;
	nng_tls_config *tlscfg; /* tls+tcp:// (tls.c), else NULL; owned */
	struct cfg_tls tls;     /* its options, for the messages */
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

/* csock_open -- open and dial a socket to cl's url (with its TLS config,
 * if any). flags 0: the server must be there now (else CXLP_E_CONN, and
 * a message naming the cause of a failed handshake: tls.c);
 * NNG_FLAG_NONBLOCK: nng keeps dialing in the background. Returns 0 and
 * *out with one reference, or an error. */
int csock_open(struct csock **out, const struct client *cl, int flags);

/* ---- tls.c -------------------------------------------------------------- */

/* ctls_config_new -- a client TLS config for url from tls (checked by
 * tls_check): its CA, certificate and key read now, verification
 * required, the server name tls's or the URL's host. Returns 0 and *out
 * (caller frees: nng_tls_config_free) or an error naming the file. */
int ctls_config_new(nng_tls_config **out, const char *url,
    const struct cfg_tls *tls);
/* ctls_dialer_set -- dial d with cfg (nng holds its own reference). */
int ctls_dialer_set(nng_dialer d, nng_tls_config *cfg);
/* ctls_dial_error -- the error for a dial of url that failed with nng
 * error rv: CXLP_E_CONN (-EINVAL for a bad URL), and a message that names
 * the likely cause of a failed TLS or SP handshake, found by a probe of
 * the server (tlsprobe.c, at most min(timeout_ms, 2 s)). */
int ctls_dial_error(const char *url, const struct cfg_tls *tls,
    unsigned timeout_ms, int rv);
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
