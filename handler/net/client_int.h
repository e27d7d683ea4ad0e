/*
 * client_int.h -- what the handler's client (client.c), its sockets
 * (csock.c) and its endpoints (endpoints.c) share: their structures and
 * the socket calls a call makes. It includes nng's headers, so only
 * those files (and tls.c) include it: the rest of the handler sees
 * struct client as opaque (handler_int.h).
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
#include "net.h"         /* client_finder_fn */

struct cctx {
	nng_ctx ctx;
	nng_aio *aio;
	struct cctx *next;
};

#define CEP_MAX 16 /* endpoints a client knows (endpoints.c note 6) */

/* One metaserver endpoint (endpoints.c): configured or learned from the
 * pool's owner record. Lives as long as its client. */
struct cendpoint {
	char *url;              /* owned */
	nng_tls_config *tlscfg; /* tls+tcp:// (tls.c), made at its first
	                         * dial; else NULL; owned */
	bool owner;             /* learned from the owner record */
};

/* One dialed socket and its idle contexts; refs and idle are guarded by
 * the client's lock. */
struct csock {
	nng_socket sock;
	const struct cendpoint *ep; /* dialed to */
	struct cctx *idle; /* contexts not in use */
	unsigned refs;     /* the client's (while current) + calls' */
	unsigned stalls;   /* atomic: timeouts in a row, any call */
	bool deposed;      /* atomic: its server lost its term */
};

struct client {
	pthread_mutex_t redial_lock; /* one redial at a time */
	pthread_mutex_t lock; /* guards cur and every csock's idle and refs */
	struct csock *cur;    /* where new calls go */
	const char *url;      /* cur's endpoint's (guarded by lock) */
	struct cendpoint eps[CEP_MAX]; /* configured, then learned; neps
	                       * and the learned ones under redial_lock */
	unsigned neps;
	client_finder_fn finder; /* the owner record's endpoints, or NULL
	                          * (under redial_lock) */
	void *finder_arg;
	uint64_t switches;    /* atomic: moves to another endpoint */
	uint64_t next_id;     /* atomic */
	uint64_t session;     /* atomic */
	uint64_t token;       /* atomic */
	uint64_t redials;     /* atomic: sockets replaced */
	uint64_t last_reply_ms; /* atomic: cxlp_now_coarse_ms() of the last reply */
	uint16_t version;     /* atomic: protocol version requests are sent
	                       * at (client_set_version: the WELCOME's) */
	uint64_t term;        /* atomic: newest term a reply carried */
	uint64_t stale;       /* atomic: replies of older terms dropped */
	uint64_t resets;      /* atomic: times term moved down (a term
	                       * reset the pool named: client.c) */
	client_term_fn term_check; /* is an older term the pool's? or NULL
	                       * (set before any call) */
	void *term_arg;
	unsigned timeout_ms;
	unsigned retries;
	struct cfg_tls tls;     /* the TLS options of every endpoint */
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

/* csock_open -- open and dial a socket to ep (with its TLS config, if
 * any). flags 0: the server must be there now (else CXLP_E_CONN, and
 * a message naming the cause of a failed handshake: tls.c);
 * NNG_FLAG_NONBLOCK: nng keeps dialing in the background. Returns 0 and
 * *out with one reference, or an error. */
int csock_open(struct csock **out, const struct client *cl,
    const struct cendpoint *ep, int flags);

/* What nng's statistics say of a socket's connection (csock_state). */
struct csock_state {
	bool piped; /* a pipe is up: its SP handshake is complete */
	bool owed;  /* a pipe has sent more messages than it received: a
		     * request whose reply (late, after a timeout) the
		     * server may still send */
	bool dial_failed; /* its dialer has failed at least once (refused,
	                   * timed out, cut off mid-handshake ...) */
};
/* csock_state -- the state of cs's pipes and dialer. If nng's statistics
 * cannot be read, a pipe is taken to be up and to owe nothing. */
struct csock_state csock_state(const struct csock *cs);

/* ---- endpoints.c -------------------------------------------------------- */

/* endpoints_init -- cl's endpoints from list, comma-separated URLs (each
 * fitting cl->tls: tls_check). 0, or -EINVAL (empty item, more than
 * CEP_MAX), -ENOMEM; endpoints_fini frees what was taken either way. */
int endpoints_init(struct client *cl, const char *list);
/* endpoints_fini -- free the endpoints (no socket may use them now). */
void endpoints_fini(struct client *cl);
/* endpoints_open -- dial the endpoints in order (synchronously) and make
 * the first that connects cl's current socket. 0, or the last one's
 * error (CXLP_E_CONN when nothing listens). Before any call. */
int endpoints_open(struct client *cl);
/* endpoints_reply -- after an attempt on cs that returned rc (0: *msg
 * holds a reply): a reply of status CXLP_E_CONN is a server that lost
 * its term (it applied nothing): *msg is freed, cs marked deposed, and
 * CXLP_E_CONN returned, so that the call is resent elsewhere. Else rc. */
int endpoints_reply(struct client *cl, struct csock *cs, nng_msg **msg,
    int rc);
/* endpoints_switch -- cs, the current socket, does not answer (deposed,
 * or no connection through a timeout): make a socket to another endpoint
 * that answers current (endpoints.c notes 3, 4). true when cl->cur is
 * not cs any more (this call or another moved it), false when no other
 * endpoint answered (cs stays). */
bool endpoints_switch(struct client *cl, struct csock *cs);

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
/* sock_enter -- client.c: take the current socket and a context on it,
 * replacing the socket first if it is stalled (endpoints_switch, else
 * csock_redial). Returns 0 with both (give back with ctx_put and
 * csock_put), or an error with neither. */
int sock_enter(struct client *cl, struct csock **csp, struct cctx **cp);
/* csock_get -- the current socket, with a reference for the caller. */
struct csock *csock_get(struct client *cl);
/* ctx_get -- a free context on cs (a new one if none is free): 0 and
 * *out, or the error. */
int ctx_get(struct client *cl, struct csock *cs, struct cctx **out);
/* csock_redial -- replace cs, on which requests keep timing out, by a
 * socket dialed afresh to its endpoint (csock.c says when it does
 * nothing). */
void csock_redial(struct client *cl, struct csock *cs);
/* ctx_put -- give context c back to cs's free list. */
void ctx_put(struct client *cl, struct csock *cs, struct cctx *c);
/* csock_note -- note the outcome of an attempt on cs: a timeout adds to
 * its run of stalls, anything else ends the run. */
void csock_note(struct csock *cs, int rc);
/* csock_stalled -- the next attempt leaves cs: its requests have timed
 * out REDIAL_AFTER times in a row, or once while it had no connection,
 * or its server lost its term (endpoints.c note 2). sock_enter then
 * moves to another endpoint (endpoints_switch) or redials this one. */
bool csock_stalled(struct csock *cs);

#endif /* CXLP_CLIENT_INT_H */
