/*
 * call.c -- the call layer every operation goes through: HELLO and
 * reattach, h_call, and the checks and decoders the operations share.
 *
 * HELLO tells the server who we are (pid plus process start time, so a
 * recycled pid is not mistaken for us; hostname; instance id) and returns
 * the session id, its token and where the pool is. Every later call goes
 * through h_call, which is where a lost session is noticed: if the server
 * answers CXLP_E_SESSION (it restarted and forgot us, or dropped us), the
 * handler reattaches once with its token (PROTO_HELLO_REATTACH) and
 * repeats the call, keeping its regions. Only one thread reattaches; the
 * others see the new token. Before each call poolid_moved asks
 * whether the server may serve another file now (poolid.c); once a
 * reattach's WELCOME says it does, the call is not repeated and every
 * later one fails with CXLP_E_STALE (h_check_open).
 *
 * Every HELLO negotiates the protocol version anew (common/proto.h,
 * "Negotiation"): sent at PROTO_VERSION with the range this library
 * speaks, and, refused with CXLP_E_VERSION by a server that answers at an
 * older version this library speaks (a version-2 metaserver), once again
 * at that version [hello_negotiate]; the WELCOME's version is the
 * session's (client_set_version). A call the server refuses for its
 * version (a metaserver of another release took over) HELLOs again
 * [renegotiate] and is repeated, as after CXLP_E_SESSION.
 *
 * It sits below every module that calls the server (handler.c, regions.c,
 * store.c, ops.c, poolid.c) and above client.c; nothing here calls up. A
 * session lost for good sets h->session_lost, which direct.c reads (its
 * direct reads turn off); a reply's ASK sets h->asked and pokes the
 * keeper task that an ASK wakes (keeper.c), which the give-back is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "coh.h"
#include "err.h"
#include "session.h"
#include "log.h"
#include "procstat.h"
#include "sim.h"
#include "trace.h"

/* A reply said PROTO_REP_F_ASK: the server asks regions back
 * (giveback.c note 7); the keeper's task for it is poked once. */
static void
note_ask(struct cxlp_handler *h)
{
	if (!__atomic_exchange_n(&h->asked, 1, __ATOMIC_ACQ_REL)) {
		(void)keeper_poke(h, h->keeper.ask_task);
	}
}

/* This process's start time (clock ticks since boot), which the server
 * compares with /proc/<pid>/stat to tell a recycled pid from us;
 * 0 when unknown. */
static uint64_t
proc_start_time(void)
{
	uint64_t st;
	char state;

	return procstat_read(0, &state, &st) ? st : 0;
}

/* This process's view of the pool the first WELCOME named, for the
 * mode the pool records (pool/coh.h): a host pool formatted on another
 * host is refused here, before anything is mapped (contract 11). */
static int
coh_attach(struct cxlp_handler *h)
{
	enum pool_coh mode;
	uint64_t host;
	int rc;

	if ((rc = coh_probe_host(h->pool_path, &mode, &host)) != 0) {
		return rc;
	}
	if (mode == POOL_COH_HOST && host != 0 && host != coh_host_hash()) {
		return cxlp_fail(CXLP_E_HOST, "%s: formatted with coherence "
		    "host on another host than this one%s%s: a host pool "
		    "serves one host (format it with cxlpool-metaserver "
		    "--coherence sw --reformat to share it)", h->pool_path,
		    strcmp(sim_host(), "0") != 0 ? ", simulated host " : "",
		    strcmp(sim_host(), "0") != 0 ? sim_host() : "");
	}
	return coh_open(&h->coh, h->pool_path, mode);
}

static int
welcome_take(struct cxlp_handler *h, struct creply *rep)
{
	struct proto_welcome w;
	bool first = h->pool_path == NULL;
	int rc;

	if (proto_get_welcome_id(&rep->body, &w) != 0 ||
	    preader_end(&rep->body) != 0) {
		return cxlp_fail(CXLP_E_PROTO, "HELLO: bad welcome body");
	}
	if (w.session == 0 || w.pool_size == 0 || w.path_len == 0 ||
	    w.align == 0 || w.align % 4096 != 0) {
		return cxlp_fail(CXLP_E_PROTO, "HELLO: welcome with session "
		    "%llu, pool %llu bytes, align %llu",
		    (unsigned long long)w.session,
		    (unsigned long long)w.pool_size,
		    (unsigned long long)w.align);
	}
	if (first) {
		h->pool_path = strndup(w.path, w.path_len);
		if (h->pool_path == NULL) {
			return cxlp_fail(-ENOMEM, "HELLO: out of memory");
		}
		h->pool_size = w.pool_size;
		h->align = w.align;
		if ((rc = coh_attach(h)) != 0) {
			return rc;
		}
	} else if (strlen(h->pool_path) != w.path_len ||
	    memcmp(h->pool_path, w.path, w.path_len) != 0) {
		return cxlp_fail(CXLP_E_PROTO, "HELLO: pool moved from %s",
		    h->pool_path);
	}
	poolid_welcome(h, &w.id, first); /* poolid.c */
	client_set_session(h->cl, w.session, w.token);
	return 0;
}

/* A HELLO is refused with CXLP_E_PERM for one reason only: a non-ipc
 * endpoint of a metaserver with a --secret-file, and a HELLO without
 * that secret. Which of the two it lacked, the handler knows. */
static int
hello_refused(const struct cxlp_handler *h)
{
	if (h->cfg.secret_len == 0) {
		return cxlp_fail(CXLP_E_PERM, "HELLO refused: secret required "
		    "(the metaserver at %s takes handlers on this endpoint "
		    "only with the secret of its --secret-file; "
		    "cxlp_config_set_secret, or a file named by "
		    "CXLP_SECRET_FILE)", h->cfg.server);
	}
	return cxlp_fail(CXLP_E_PERM, "HELLO refused: wrong secret (the "
	    "metaserver at %s has another in its --secret-file)",
	    h->cfg.server);
}

/* The pool is one whose readers each host counts in a slice of its own
 * (sw, sim: pool/evict.c note 8), so a HELLO names this host. Known only
 * after the first WELCOME (coh_attach), so the first HELLO never names
 * it, and an old server of a host pool never sees the flag. */
static bool
names_host(const struct cxlp_handler *h)
{
	enum pool_coh m = h->coh != NULL ? coh_mode(h->coh) : POOL_COH_HOST;

	return m == POOL_COH_SW || m == POOL_COH_SIM;
}

/* One HELLO of body m at protocol version v. */
static int
hello_at(struct cxlp_handler *h, const struct proto_hello *m, uint16_t v,
    struct creply *rep)
{
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	b.version = v;
	proto_put_hello(&b, m);
	rc = client_hello(h->cl, v, &b, rep);
	pbuf_fini(&b);
	return rc;
}

/* The HELLO at PROTO_VERSION, and once more at the version of a refusal
 * for its version when this library speaks that one too (a server of an
 * older version answers in its own). The WELCOME's version is then at
 * most the one sent (client.c checks). */
static int
hello_negotiate(struct cxlp_handler *h, const struct proto_hello *m,
    struct creply *rep)
{
	int rc = hello_at(h, m, PROTO_VERSION, rep);
	uint16_t v = rep->hdr.version;

	if (rc != CXLP_E_VERSION || v >= PROTO_VERSION ||
	    !proto_version_ok(v)) {
		return rc;
	}
	log_info("the metaserver at %s speaks protocol version %u: HELLO "
	    "again at it", h->cfg.server, v);
	return hello_at(h, m, v, rep);
}

/* h_hello -- see session.h. The HELLO asks for the reason of a
 * refusal, and promises heartbeats every keepalive_ms when the keeper
 * runs (metaserver/silence.c ends a session that breaks the promise: its
 * handler closed unheard). In sw and sim it names this host
 * (PROTO_HELLO_HOSTID), so the server gives it an access slice: the
 * first WELCOME of such a pool is followed at once by a reattaching
 * HELLO that does (one round trip more, at connect, in those modes). */
int
h_hello(struct cxlp_handler *h, uint32_t flags)
{
	char host[PROTO_HOST_MAX + 1] = "";
	struct proto_hello m = {.pid = (uint32_t)getpid(),
	    .flags = flags | PROTO_HELLO_ERRMSG |
	    (h->cfg.keepalive_ms > 0 ? PROTO_HELLO_KEEPALIVE : 0) |
	    PROTO_HELLO_LEASE | PROTO_HELLO_GIVEBACK | PROTO_HELLO_POOLID,
	    .keepalive_ms = h->cfg.keepalive_ms,
	    .lease_ms = h->cfg.lease_ms,
	    .start_time = proc_start_time(),
	    .instance_id = h->cfg.instance_id, .host = host,
	    .secret = h->cfg.secret, .secret_len = h->cfg.secret_len};
	bool named = names_host(h);
	struct creply rep;
	int rc;

	if (named) {
		m.flags |= PROTO_HELLO_HOSTID;
		m.host_hash = coh_host_hash();
	}
	(void)gethostname(host, sizeof(host) - 1);
	m.host_len = (uint16_t)strnlen(host, PROTO_HOST_MAX);
	rc = hello_negotiate(h, &m, &rep);
	if (rc == CXLP_E_PERM) {
		return hello_refused(h);
	}
	if (rc != 0) {
		return rc;
	}
	rc = welcome_take(h, &rep);
	if (rc == 0) {
		client_set_version(h->cl, rep.hdr.version);
	}
	client_reply_fini(&rep);
	if (rc == 0 && !named && names_host(h) &&
	    h_hello(h, PROTO_HELLO_REATTACH) != 0) {
		/* the session stands; only the slice is missing */
		log_err("this host has no access slice, its direct reads "
		    "are not counted by eviction: %s", cxlp_errormsg());
	}
	return rc;
}

static int
reattach(struct cxlp_handler *h, uint64_t old_token)
{
	uint64_t session, token;
	int rc = 0;

	pthread_mutex_lock(&h->reattach_lock);
	client_get_session(h->cl, &session, &token);
	if (token == old_token) {
		rc = h_hello(h, PROTO_HELLO_REATTACH);
		if (rc == 0) {
			log_info("reattached session %llu",
			    (unsigned long long)session);
		} else {
			log_err("reattach of session %llu failed: %s",
			    (unsigned long long)session, cxlp_errormsg());
		}
	}
	pthread_mutex_unlock(&h->reattach_lock);
	return rc;
}

/* h_call -- see session.h */
int
h_call(struct cxlp_handler *h, uint16_t op, const struct pbuf *body,
    struct creply *rep)
{
	return h_call_id(h, op, 0, body, rep);
}

/* reattach, and a session the server refuses (CXLP_E_SESSION) is lost
 * for good: direct reads see it and turn off (direct.c) */
static int
reattach_note(struct cxlp_handler *h, uint64_t token)
{
	int rc = reattach(h, token);

	if (rc == CXLP_E_SESSION) {
		__atomic_store_n(&h->session_lost, 1, __ATOMIC_RELEASE);
	}
	return rc;
}

/* a reattaching HELLO with the session's token now (none if another
 * thread has just reattached), setting h->session_lost when the server
 * refuses it with CXLP_E_SESSION. 0 or its error. */
static int
reattach_now(struct cxlp_handler *h)
{
	uint64_t session, token;

	client_get_session(h->cl, &session, &token);
	return reattach_note(h, token);
}

/* the server's identity asked again (a reattaching HELLO): 0, or
 * CXLP_E_STALE once it serves another file than h's mappings are of, or
 * the reattach's error */
static int
identity_ask(struct cxlp_handler *h)
{
	int rc = reattach_now(h);

	return rc != 0 ? rc : poolid_stale(h);
}

/* before a call: stale already, or the server's file may have changed
 * (poolid_moved), so that a server restarted on a copy is seen before a
 * REGISTER of bytes written into the old file */
static int
identity_recheck(struct cxlp_handler *h)
{
	int rc = poolid_stale(h);

	if (rc == 0 && poolid_moved(h)) {
		rc = identity_ask(h);
	}
	return rc;
}

/* h_check_mapping -- see session.h */
int
h_check_mapping(struct cxlp_handler *h, const struct pmap *m)
{
	int rc;

	if ((rc = poolid_stale(h)) != 0 ||
	    (rc = poolid_map_match(h, m)) == 0) {
		return rc;
	}
	/* the server's identity now; a session it refuses is lost */
	if ((rc = identity_ask(h)) != 0 ||
	    (rc = poolid_map_match(h, m)) == 0) {
		return rc;
	}
	log_err("%s", cxlp_errormsg());
	return rc;
}

/* The metaserver answered op with CXLP_E_SESSION for the session whose
 * token was token: reattach (0), or CXLP_E_SESSION when it refuses, and
 * then the session is lost for good; CXLP_E_STALE when the server it
 * reattached to serves another file (poolid.c): op is not sent again. */
static int
reattach_or_lose(struct cxlp_handler *h, uint16_t op, uint64_t token)
{
	if (reattach_note(h, token) == 0) {
		return poolid_stale(h);
	}
	return cxlp_fail(CXLP_E_SESSION, "%s: session lost and reattach "
	    "failed", proto_op_name(op));
}

/* The metaserver refused a frame for its version (a reply said so: one
 * of another release took the session over, a restart or a standby):
 * nothing was applied. A refusal before sending (an op the session's
 * version lacks: client.c) has no reply, hence no version. */
static bool
version_refused(int rc, const struct creply *rep)
{
	return rc == CXLP_E_VERSION && rep->hdr.version != 0;
}

/* ... so HELLO again, which negotiates the version anew (the session
 * and its regions are kept as by any reattach), for op to be sent again;
 * CXLP_E_STALE as reattach_or_lose. */
static int
renegotiate(struct cxlp_handler *h, uint16_t op)
{
	int rc = reattach_now(h);
	char why[160];

	if (rc != 0) {
		snprintf(why, sizeof(why), "%s", cxlp_errormsg());
		return cxlp_fail(rc, "%s: refused for its protocol version, "
		    "and the HELLO that would renegotiate it failed: %s",
		    proto_op_name(op), why);
	}
	return poolid_stale(h);
}

/* h_call_id -- see session.h */
int
h_call_id(struct cxlp_handler *h, uint16_t op, uint64_t id,
    const struct pbuf *body, struct creply *rep)
{
	uint64_t session, token;
	unsigned sends;
	int rc;

	if (op != PROTO_OP_BYE && (rc = identity_recheck(h)) != 0) {
		memset(rep, 0, sizeof(*rep)); /* nothing sent */
		return rc;
	}
	client_get_session(h->cl, &session, &token);
	if (op == PROTO_OP_REGISTER) {
		trace_register(body); /* contract 1's test (trace.h) */
	}
	rc = client_call_id(h->cl, op, id, body, rep);
	if (rc == 0 && rep->hdr.ask) {
		note_ask(h);
	}
	if (op == PROTO_OP_BYE ||
	    (rc != CXLP_E_SESSION && !version_refused(rc, rep))) {
		return rc;
	}
	rc = rc == CXLP_E_SESSION ? reattach_or_lose(h, op, token) :
	    renegotiate(h, op);
	if (rc != 0) {
		return rc;
	}
	if (op == PROTO_OP_REGISTER) {
		trace_register(body);
	}
	sends = rep->sends;
	rc = client_call_id(h->cl, op, id, body, rep);
	rep->sends += sends; /* both calls' copies (doubt.c) */
	if (rc == 0 && rep->hdr.ask) {
		note_ask(h);
	}
	return rc;
}

/* h_heartbeat_body -- see session.h */
int
h_heartbeat_body(struct cxlp_handler *h, struct creply *rep)
{
	struct proto_region_ref v[PROTO_ASKS_MAX];
	uint32_t n = 0;

	if (rep->body.left == 0) {
		return 0; /* a server that asks nothing back */
	}
	if (proto_get_asks(&rep->body, v, &n) != 0) {
		return cxlp_fail(CXLP_E_PROTO, "HEARTBEAT: bad asks in the "
		    "reply body");
	}
	if (n > 0) {
		note_ask(h);
	}
	return 0;
}

/* h_ping -- see session.h */
int
h_ping(struct cxlp_handler *h)
{
	uint64_t session, token;
	struct creply rep;
	int rc;

	client_get_session(h->cl, &session, &token);
	rc = client_call_once(h->cl, PROTO_OP_HEARTBEAT, NULL, &rep);
	if (rc == CXLP_E_SESSION) {
		rc = reattach_or_lose(h, PROTO_OP_HEARTBEAT, token);
	} else if (rc == 0) {
		if (rep.hdr.ask) {
			note_ask(h);
		}
		rc = h_heartbeat_body(h, &rep);
		client_reply_fini(&rep);
	}
	return rc;
}

/* The keepalive's keeper task: due a period after the last reply, and
 * after the last heartbeat (one that failed at once must not be sent
 * again at once); never with the keepalive off. */
static uint64_t
keepalive_due(struct cxlp_handler *h)
{
	uint64_t last = client_last_reply_ms(h->cl);

	if (h->cfg.keepalive_ms == 0) {
		return UINT64_MAX;
	}
	last = last > h->beat_ms ? last : h->beat_ms;
	return last + h->cfg.keepalive_ms;
}

/* One heartbeat; false once the session is gone for good: nothing is
 * left to keep, nor to give back. */
static bool
keepalive_run(struct cxlp_handler *h)
{
	h->beat_ms = cxlp_now_coarse_ms();
	if (h_ping(h) != 0) {
		log_info("keepalive: %s", cxlp_errormsg());
	}
	return h_check_session(h) == 0;
}

/* h_keepalive_task -- see session.h */
const struct keeper_task h_keepalive_task = { keepalive_due, keepalive_run };

/* h_check_session -- see session.h */
int
h_check_session(const struct cxlp_handler *h)
{
	if (__atomic_load_n(&h->session_lost, __ATOMIC_ACQUIRE)) {
		return cxlp_fail(CXLP_E_SESSION, "the metaserver ended this "
		    "handler's session (its regions may be another's now): "
		    "close the handler and connect again");
	}
	return 0;
}

/* h_check_open -- CXLP_E_CLOSED if h is NULL or closing, CXLP_E_STALE
 * once its server serves another file (poolid.c). */
int
h_check_open(const struct cxlp_handler *h)
{
	if (h == NULL) {
		return cxlp_fail(-EINVAL, "handler is NULL");
	}
	if (h_forked(h)) {
		return cxlp_fail(CXLP_E_CLOSED, "handler was connected before "
		    "this process forked: in the child it is closed (connect a "
		    "handler in this process)");
	}
	if (__atomic_load_n(&h->closing, __ATOMIC_ACQUIRE)) {
		return cxlp_fail(CXLP_E_CLOSED, "handler is closing");
	}
	return poolid_stale(h);
}

/* h_check_keys -- validate a batch of keys before any I/O. */
int
h_check_keys(size_t n, const void *const keys[], const size_t key_lens[])
{
	if (n == 0 || n > CXLP_BATCH_MAX) {
		return cxlp_fail(CXLP_E_BATCH, "batch of %zu keys (1..%d)", n,
		    CXLP_BATCH_MAX);
	}
	if (keys == NULL || key_lens == NULL) {
		return cxlp_fail(-EINVAL, "keys or key_lens is NULL");
	}
	for (size_t i = 0; i < n; i++) {
		if (key_lens[i] == 0 || key_lens[i] > CXLP_KEY_MAX) {
			return cxlp_fail(CXLP_E_KEYLEN, "key %zu: length %zu "
			    "(1..%d)", i, key_lens[i], CXLP_KEY_MAX);
		}
		if (keys[i] == NULL) {
			return cxlp_fail(-EINVAL, "key %zu is NULL", i);
		}
	}
	return 0;
}

/* h_get_results -- decode a reply's result list: exactly n entries (exact)
 * or at most n, and nothing after. Returns 0 and *got, or CXLP_E_PROTO. */
int
h_get_results(struct creply *rep, struct proto_result *res, size_t n,
    bool exact, uint32_t *got)
{
	const char *op = proto_op_name(rep->hdr.op);

	*got = 0;
	if (proto_get_results(&rep->body, res, (uint32_t)n, got) != 0 ||
	    preader_end(&rep->body) != 0) {
		*got = 0;
		return cxlp_fail(CXLP_E_PROTO, "%s: malformed result list", op);
	}
	if (exact && *got != n) {
		return cxlp_fail(CXLP_E_PROTO, "%s: %u results for %zu keys",
		    op, *got, n);
	}
	return 0;
}

/* h_pool_stats -- see session.h */
int
h_pool_stats(struct cxlp_handler *h, uint64_t v[PROTO_STATS_MAX])
{
	struct creply rep;
	uint32_t n = 0;
	int rc;

	memset(v, 0, PROTO_STATS_MAX * sizeof(*v));
	if ((rc = h_call(h, PROTO_OP_STATS, NULL, &rep)) != 0) {
		return rc;
	}
	if (proto_get_stats(&rep.body, v, PROTO_STATS_MAX, &n) != 0 ||
	    preader_end(&rep.body) != 0) {
		rc = cxlp_fail(CXLP_E_PROTO, "STATS: bad reply body");
	}
	client_reply_fini(&rep);
	return rc;
}
