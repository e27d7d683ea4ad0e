/*
 * endpoints.c -- which metaserver the handler's client dials: the
 * endpoints it was configured with (cxlp_config_set_server, a
 * comma-separated list) and those the pool's owner record names (the
 * leader's, issue 28; docs/standby.md), and the move from one that stops
 * answering to one that answers. With client.c, csock.c and tls.c a user
 * of nng (client_int.h).
 *
 * Why a file of its own: client.c sends and checks, csock.c keeps one
 * endpoint's sockets alive; choosing the endpoint is a third concern,
 * and the only one that knows there can be more than one.
 *
 * DESIGN NOTES
 *  1. At connect the configured endpoints are dialed in order
 *     [open_configured]; the first that connects (a server listens) is
 *     the current one. A standby listens on nothing, so its dial is
 *     refused at once and the next is tried. When none answers, those
 *     the owner record names are tried (a handler configured with its
 *     pool: session/leader.c) [endpoints_open].
 *  2. When calls leave the current socket [csock_stalled, csock.c]: its
 *     server answered CXLP_E_CONN (it lost its term: endpoints_reply,
 *     metaserver/dispatch.c; nothing was applied), or a request timed
 *     out while the socket had no connection (nng could not redial it
 *     for a whole timeout: the server or its host is gone). A socket
 *     whose connection is up but silent is first redialed at its own
 *     URL (csock.c redial); a stopped server's next stall, on the fresh
 *     socket that cannot finish its handshake, comes here.
 *  3. Where to [endpoints_switch]: first the endpoints the owner record
 *     names (for a handler configured with its pool), read afresh
 *     through the session layer's finder (leader.c:
 *     its lines dropped on sw and sim pools, where the record is
 *     another host's write), since it names the server that claimed the
 *     pool last; of those, ones of the current endpoint's scheme first.
 *     Then the other configured endpoints, in order after the current.
 *     Skipped: the current one; an owner's endpoint that reaches only
 *     its own host (ipc://, a tcp one bound to a wildcard or loopback
 *     address: host_only) when the owner runs on another host (dialed
 *     from here it would reach this host, maybe another pool's server);
 *     any the TLS options do not fit (tls_check).
 *  4. How [try_dial]: a dial in the background, watched for at most
 *     DIAL_WAIT_MS until its connection is up (the SP handshake done: a
 *     server serves there) or its dialer counts a failure (refused:
 *     nothing listens). A bounded wait, since a synchronous nng dial has
 *     no timeout and a host that is down holds a TCP connect for
 *     minutes. A candidate that does not connect in time is closed in
 *     the background (csock_put: csock_retire's rules). One switch at a
 *     time (redial_lock); calls that find the same dead socket wait for
 *     it and then go where it went.
 *  5. Only the socket moves. Calls resend under their request ids, the
 *     session reattaches at the new leader's CXLP_E_SESSION as after a
 *     restart (session/call.c), and the new leader, which recovered the
 *     pool from the pool, answers each as a restarted server does
 *     (docs/recovery.md). With nowhere to go the socket stays (its
 *     server may come back where it was: a restart) and the next
 *     timeout looks again; a deposed server's socket is then left after
 *     a pause, so that its refusals do not spend a call's retries at
 *     once.
 *  6. Endpoint strings live as long as the client (cl->url and every
 *     socket point into them); at most CEP_MAX, configured ones first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_int.h"
#include "err.h"
#include "log.h"
#include "net.h"
#include "proto.h"

#define DIAL_WAIT_MS 2000u  /* at most, for a candidate's connection */
#define DIAL_POLL_MS 5u
#define DEPOSED_PAUSE_MS 100u /* nowhere to go from a deposed server */

static void
nap_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* the endpoint url, added if new (owner: learned from the owner record);
 * NULL when there is no room */
static struct cendpoint *
ep_add(struct client *cl, const char *url, size_t len, bool owner)
{
	struct cendpoint *ep;

	for (unsigned i = 0; i < cl->neps; i++) {
		if (strlen(cl->eps[i].url) == len &&
		    memcmp(cl->eps[i].url, url, len) == 0) {
			return &cl->eps[i];
		}
	}
	if (cl->neps == CEP_MAX) {
		return NULL;
	}
	ep = &cl->eps[cl->neps];
	if ((ep->url = strndup(url, len)) == NULL) {
		return NULL;
	}
	ep->owner = owner;
	cl->neps++;
	return ep;
}

/* endpoints_init -- see client_int.h */
int
endpoints_init(struct client *cl, const char *list)
{
	const char *p = list;
	int rc;

	for (;;) {
		size_t len = strcspn(p, ",");
		char one[CFG_SERVER_MAX];

		if (len == 0 || len >= sizeof(one)) {
			return cxlp_fail(-EINVAL, "client: an empty or too "
			    "long endpoint in '%s' (a comma-separated list of "
			    "URLs)", list);
		}
		snprintf(one, sizeof(one), "%.*s", (int)len, p);
		if ((rc = tls_check(one, &cl->tls)) != 0) {
			return rc;
		}
		if (ep_add(cl, p, len, false) == NULL) {
			rc = cl->neps == CEP_MAX ? -EINVAL : -ENOMEM;
			return cxlp_fail(rc, "client: more than %d endpoints, "
			    "or out of memory", CEP_MAX);
		}
		if (p[len] == '\0') {
			return 0;
		}
		p += len + 1;
	}
}

/* endpoints_fini -- see client_int.h */
void
endpoints_fini(struct client *cl)
{
	for (unsigned i = 0; i < cl->neps; i++) {
		if (cl->eps[i].tlscfg != NULL) {
			nng_tls_config_free(cl->eps[i].tlscfg);
		}
		free(cl->eps[i].url);
	}
	cl->neps = 0;
}

/* ep's TLS config, made at its first dial (tls+tcp:// only) */
static int
ep_tls(struct client *cl, struct cendpoint *ep)
{
	if (ep->tlscfg != NULL || !tls_url(ep->url)) {
		return 0;
	}
	return ctls_config_new(&ep->tlscfg, ep->url, &cl->tls);
}

/* make ep the current endpoint, cs (dialed to it) the current socket;
 * the old socket, if any, is returned for the caller to put */
static struct csock *
ep_take(struct client *cl, struct cendpoint *ep, struct csock *cs)
{
	struct csock *old;

	pthread_mutex_lock(&cl->lock);
	old = cl->cur;
	cl->cur = cs;
	cl->url = ep->url;
	pthread_mutex_unlock(&cl->lock);
	return old;
}

/* endpoints_reply -- see client_int.h */
int
endpoints_reply(struct client *cl, struct csock *cs, nng_msg **msg, int rc)
{
	struct proto_rep_hdr hdr;
	struct preader body;

	if (rc != 0 || proto_get_rep_hdr(nng_msg_body(*msg),
	    nng_msg_len(*msg), &hdr, &body) != 0 ||
	    hdr.status != CXLP_E_CONN) {
		return rc;
	}
	__atomic_store_n(&cs->deposed, true, __ATOMIC_RELAXED);
	nng_msg_free(*msg);
	*msg = NULL;
	return cxlp_fail(CXLP_E_CONN, "%s: the metaserver at %s serves the "
	    "pool no more (it lost its term)", proto_op_name(hdr.op),
	    cs->ep->url);
}

/* the scheme of url, as a length of its prefix up to "://" */
static size_t
scheme_len(const char *url)
{
	const char *s = strstr(url, "://");

	return s != NULL ? (size_t)(s - url) : 0;
}

static bool
same_scheme(const char *a, const char *b)
{
	size_t n = scheme_len(a);

	return n > 0 && n == scheme_len(b) && memcmp(a, b, n) == 0;
}

/* url reaches its own host only: ipc://, or a tcp endpoint with no host,
 * a wildcard or a loopback address (the metaserver binds tcp://:PORT to
 * 127.0.0.1), which dialed from here would reach this host's server */
static bool
host_only(const char *url)
{
	static const char *const local[] = { "", "0.0.0.0", "[::]",
		"localhost", "[::1]" };
	const char *h = strstr(url, "://");
	size_t n;

	if (h == NULL || strncmp(url, "ipc://", 6) == 0 ||
	    strncmp(url, "inproc://", 9) == 0) {
		return true;
	}
	h += 3;
	n = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/");
	if (n >= 4 && strncmp(h, "127.", 4) == 0) {
		return true;
	}
	for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++) {
		if (strlen(local[i]) == n && strncmp(h, local[i], n) == 0) {
			return true;
		}
	}
	return false;
}

/* an owner endpoint of len bytes at url is worth a dial from this host */
static bool
owner_usable(const struct client *cl, const char *url, size_t len,
    bool local)
{
	char one[CFG_SERVER_MAX];

	if (len == 0 || len >= sizeof(one)) {
		return false;
	}
	snprintf(one, sizeof(one), "%.*s", (int)len, url);
	if (!local && host_only(one)) {
		return false; /* note 3 */
	}
	return tls_check(one, &cl->tls) == 0;
}

/* note 3: the owner record's endpoints but cur (NULL: none), those of
 * cur's scheme (or the first configured one's) first, into v (at most
 * max); how many */
static unsigned
owner_candidates(struct client *cl, const struct cendpoint *cur,
    struct cendpoint **v, unsigned max)
{
	const char *like = cur != NULL ? cur->url : cl->eps[0].url;
	char list[CLIENT_LIST_MAX];
	bool local = false;
	unsigned n = 0;

	if (cl->finder == NULL ||
	    cl->finder(cl->finder_arg, list, sizeof(list), &local) != 0) {
		return 0;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (const char *p = list; *p != '\0' && n < max;) {
			size_t len = strcspn(p, ",");
			struct cendpoint *ep;

			if (owner_usable(cl, p, len, local) &&
			    (ep = ep_add(cl, p, len, true)) != NULL &&
			    ep != cur && same_scheme(ep->url, like) ==
			    (pass == 0)) {
				v[n++] = ep;
			}
			p += len + (p[len] == ',');
		}
	}
	return n;
}

/* note 3: every candidate in order, without repeats; how many */
static unsigned
candidates(struct client *cl, const struct cendpoint *cur,
    struct cendpoint **v, unsigned max)
{
	unsigned n = owner_candidates(cl, cur, v, max);
	unsigned at = (unsigned)(cur - cl->eps);

	for (unsigned k = 1; k <= cl->neps && n < max; k++) {
		struct cendpoint *ep = &cl->eps[(at + k) % cl->neps];
		bool seen = ep == cur || ep->owner;

		for (unsigned j = 0; j < n && !seen; j++) {
			seen = v[j] == ep;
		}
		if (!seen) {
			v[n++] = ep;
		}
	}
	return n;
}

/* note 4: a socket dialed to ep whose connection came up within
 * DIAL_WAIT_MS (0 and *out), or an error */
static int
try_dial(struct client *cl, struct cendpoint *ep, struct csock **out)
{
	unsigned wait = cl->timeout_ms < DIAL_WAIT_MS ? cl->timeout_ms :
	    DIAL_WAIT_MS;
	struct csock *cs;
	int rc;

	*out = NULL;
	if ((rc = ep_tls(cl, ep)) != 0 ||
	    (rc = csock_open(&cs, cl, ep, NNG_FLAG_NONBLOCK)) != 0) {
		return rc;
	}
	for (unsigned t = 0; t < wait; t += DIAL_POLL_MS) {
		struct csock_state st = csock_state(cs);

		if (st.piped) {
			*out = cs;
			return 0;
		}
		if (st.dial_failed) {
			break;
		}
		nap_ms(DIAL_POLL_MS);
	}
	csock_put(cl, cs); /* in the background, csock_retire's way */
	return cxlp_fail(CXLP_E_CONN, "client: %s does not answer", ep->url);
}

/* note 1: the configured endpoints in order, synchronously; 0 or the
 * last one's error */
static int
open_configured(struct client *cl)
{
	int rc = CXLP_E_CONN;

	for (unsigned i = 0; i < cl->neps; i++) {
		struct cendpoint *ep = &cl->eps[i];
		struct csock *cs;

		if ((rc = ep_tls(cl, ep)) != 0) {
			return rc;
		}
		if ((rc = csock_open(&cs, cl, ep, 0)) == 0) {
			(void)ep_take(cl, ep, cs);
			return 0;
		}
		if (rc == -EINVAL || rc == -ENOMEM) {
			return rc;
		}
		if (i + 1 < cl->neps) {
			log_info("client: %s: %s; trying %s", ep->url,
			    cxlp_errormsg(), cl->eps[i + 1].url);
		}
	}
	return rc;
}

/* endpoints_open -- see client_int.h */
int
endpoints_open(struct client *cl)
{
	struct cendpoint *v[CEP_MAX];
	struct csock *cs = NULL;
	char why[256];
	int rc = open_configured(cl);
	unsigned n, i;

	if (rc != CXLP_E_CONN || cl->finder == NULL) {
		return rc;
	}
	snprintf(why, sizeof(why), "%s", cxlp_errormsg());
	n = owner_candidates(cl, NULL, v, CEP_MAX);
	for (i = 0; i < n && try_dial(cl, v[i], &cs) != 0; i++) {
	}
	if (cs == NULL) {
		return cxlp_fail(rc, "%s%s", why, n > 0 ? "; nor do the "
		    "endpoints the pool's owner record names" : "");
	}
	log_info("client: %s; the pool's owner record names %s, which "
	    "answers", why, v[i]->url);
	(void)ep_take(cl, v[i], cs);
	return 0;
}

/* endpoints_switch -- see client_int.h */
bool
endpoints_switch(struct client *cl, struct csock *cs)
{
	struct cendpoint *v[CEP_MAX];
	struct csock *fresh = NULL, *old;
	unsigned n, i;
	bool moved;

	pthread_mutex_lock(&cl->redial_lock);
	pthread_mutex_lock(&cl->lock);
	moved = cl->cur != cs;
	pthread_mutex_unlock(&cl->lock);
	if (moved || (!__atomic_load_n(&cs->deposed, __ATOMIC_RELAXED) &&
	    csock_state(cs).piped)) {
		pthread_mutex_unlock(&cl->redial_lock);
		return moved; /* another call moved it, or cs is up: note 2 */
	}
	n = candidates(cl, cs->ep, v, CEP_MAX);
	for (i = 0; i < n && try_dial(cl, v[i], &fresh) != 0; i++) {
	}
	if (fresh == NULL) {
		if (__atomic_load_n(&cs->deposed, __ATOMIC_RELAXED)) {
			nap_ms(DEPOSED_PAUSE_MS); /* note 5 */
		}
		pthread_mutex_unlock(&cl->redial_lock);
		return false;
	}
	old = ep_take(cl, v[i], fresh);
	pthread_mutex_unlock(&cl->redial_lock);
	__atomic_fetch_add(&cl->switches, 1, __ATOMIC_RELAXED);
	log_info("client: %s %s; switched to %s%s", cs->ep->url,
	    __atomic_load_n(&cs->deposed, __ATOMIC_RELAXED) ?
	    "lost its term" : "does not answer", v[i]->url,
	    v[i]->owner ? " (the pool's owner record names it)" : "");
	csock_put(cl, old);
	return true;
}

/* client_switches -- see net.h */
uint64_t
client_switches(const struct client *cl)
{
	return __atomic_load_n(&cl->switches, __ATOMIC_RELAXED);
}
