/*
 * handler.c -- a handler's life: connect (HELLO, first region), the call
 * wrapper every operation goes through, stats, healthcheck and close.
 *
 * A handler is one session with one metaserver. HELLO tells the server who
 * we are (pid plus process start time, so a recycled pid is not mistaken
 * for us; hostname; instance id) and returns the session id, its token and
 * where the pool is. Every later call goes through h_call, which is where
 * a lost session is noticed: if the server answers CXLP_E_SESSION (it
 * restarted and forgot us, or dropped us), the handler reattaches once
 * with its token (PROTO_HELLO_REATTACH) and repeats the call, keeping its
 * regions. Only one thread reattaches; the others see the new token.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "err.h"
#include "handler_int.h"
#include "log.h"
#include "procstat.h"
#include "trace.h"

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

static int
welcome_take(struct cxlp_handler *h, struct creply *rep)
{
	struct proto_welcome w;

	if (proto_get_welcome(&rep->body, &w) != 0 ||
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
	if (h->pool_path == NULL) {
		h->pool_path = strndup(w.path, w.path_len);
		if (h->pool_path == NULL) {
			return cxlp_fail(-ENOMEM, "HELLO: out of memory");
		}
		h->pool_size = w.pool_size;
		h->align = w.align;
	} else if (strlen(h->pool_path) != w.path_len ||
	    memcmp(h->pool_path, w.path, w.path_len) != 0) {
		return cxlp_fail(CXLP_E_PROTO, "HELLO: pool moved from %s",
		    h->pool_path);
	}
	client_set_session(h->cl, w.session, w.token);
	return 0;
}

/* The first HELLO goes out with a random nonce in the header's token, so
 * that a copy resent after a lost reply gets the same session back. */
static int
hello_nonce(struct cxlp_handler *h)
{
	uint64_t nonce = 0;

	while (nonce == 0) {
		if (getrandom(&nonce, sizeof(nonce), 0) !=
		    (ssize_t)sizeof(nonce)) {
			return cxlp_fail(-errno, "connect: getrandom: %s",
			    strerror(errno));
		}
	}
	client_set_session(h->cl, 0, nonce);
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
		    "cxlp_config_set_secret)", h->cfg.server);
	}
	return cxlp_fail(CXLP_E_PERM, "HELLO refused: wrong secret (the "
	    "metaserver at %s has another in its --secret-file)",
	    h->cfg.server);
}

/* HELLO, asking for the reason of a refusal, and promising heartbeats
 * every keepalive_ms when the keeper runs (metaserver/silence.c ends a
 * session that breaks the promise: its handler closed unheard). */
static int
hello(struct cxlp_handler *h, uint32_t flags)
{
	char host[PROTO_HOST_MAX + 1] = "";
	struct proto_hello m = {.pid = (uint32_t)getpid(),
	    .flags = flags | PROTO_HELLO_ERRMSG |
	    (h->cfg.keepalive_ms > 0 ? PROTO_HELLO_KEEPALIVE : 0),
	    .keepalive_ms = h->cfg.keepalive_ms,
	    .start_time = proc_start_time(),
	    .instance_id = h->cfg.instance_id, .host = host,
	    .secret = h->cfg.secret, .secret_len = h->cfg.secret_len};
	struct creply rep;
	struct pbuf b;
	int rc;

	(void)gethostname(host, sizeof(host) - 1);
	m.host_len = (uint16_t)strnlen(host, PROTO_HOST_MAX);
	pbuf_init(&b);
	proto_put_hello(&b, &m);
	rc = client_call(h->cl, PROTO_OP_HELLO, &b, &rep);
	pbuf_fini(&b);
	if (rc == CXLP_E_PERM) {
		return hello_refused(h);
	}
	if (rc != 0) {
		return rc;
	}
	rc = welcome_take(h, &rep);
	client_reply_fini(&rep);
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
		rc = hello(h, PROTO_HELLO_REATTACH);
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

/* h_call -- see handler_int.h */
int
h_call(struct cxlp_handler *h, uint16_t op, const struct pbuf *body,
    struct creply *rep)
{
	return h_call_id(h, op, 0, body, rep);
}

/* The metaserver answered op with CXLP_E_SESSION for the session whose
 * token was token: reattach (0), or CXLP_E_SESSION when it refuses, and
 * then the session is lost for good. */
static int
reattach_or_lose(struct cxlp_handler *h, uint16_t op, uint64_t token)
{
	int rc = reattach(h, token);

	if (rc == 0) {
		return 0;
	}
	if (rc == CXLP_E_SESSION) {
		__atomic_store_n(&h->session_lost, 1, __ATOMIC_RELEASE);
		direct_invalidate(h, "the metaserver no longer knows this "
		    "session");
	}
	return cxlp_fail(CXLP_E_SESSION, "%s: session lost and reattach "
	    "failed", proto_op_name(op));
}

/* h_call_id -- see handler_int.h */
int
h_call_id(struct cxlp_handler *h, uint16_t op, uint64_t id,
    const struct pbuf *body, struct creply *rep)
{
	uint64_t session, token;
	unsigned sends;
	int rc;

	client_get_session(h->cl, &session, &token);
	if (op == PROTO_OP_REGISTER) {
		trace_register(body); /* contract 1's test (trace.h) */
	}
	rc = client_call_id(h->cl, op, id, body, rep);
	if (rc != CXLP_E_SESSION || op == PROTO_OP_BYE) {
		return rc;
	}
	if ((rc = reattach_or_lose(h, op, token)) != 0) {
		return rc;
	}
	if (op == PROTO_OP_REGISTER) {
		trace_register(body);
	}
	sends = rep->sends;
	rc = client_call_id(h->cl, op, id, body, rep);
	rep->sends += sends; /* both calls' copies (doubt.c) */
	return rc;
}

/* h_ping -- see handler_int.h */
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
		client_reply_fini(&rep);
	}
	return rc;
}

/* h_check_session -- see handler_int.h */
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

/* h_check_open -- CXLP_E_CLOSED if h is NULL or closing. */
int
h_check_open(const struct cxlp_handler *h)
{
	if (h == NULL) {
		return cxlp_fail(-EINVAL, "handler is NULL");
	}
	if (__atomic_load_n(&h->closing, __ATOMIC_ACQUIRE)) {
		return cxlp_fail(CXLP_E_CLOSED, "handler is closing");
	}
	return 0;
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

static int
handler_new(struct cxlp_handler **out, const struct cxlp_config *cfg)
{
	struct cxlp_handler *h = calloc(1, sizeof(*h));

	*out = NULL;
	if (h == NULL) {
		return cxlp_fail(-ENOMEM, "connect: out of memory");
	}
	if (cfg != NULL) {
		h->cfg = *cfg;
	} else {
		config_defaults(&h->cfg);
	}
	if (config_check(&h->cfg) != 0) {
		free(h);
		return -EINVAL;
	}
	pthread_mutex_init(&h->reattach_lock, NULL);
	pthread_mutex_init(&h->expand_lock, NULL);
	pthread_mutex_init(&h->page_lock, NULL);
	pthread_rwlock_init(&h->map_lock, NULL);
	pagetab_init(&h->pages);
	scratch_cache_init(&h->scratch);
	*out = h;
	return 0;
}

static void
handler_free(struct cxlp_handler *h)
{
	regions_fini(h);
	store_fini(h);
	direct_close(h);
	client_close(&h->cl);
	scratch_cache_fini(&h->scratch);
	pthread_rwlock_destroy(&h->map_lock);
	pthread_mutex_destroy(&h->page_lock);
	pthread_mutex_destroy(&h->expand_lock);
	pthread_mutex_destroy(&h->reattach_lock);
	free(h->pool_path);
	explicit_bzero(h->cfg.secret, sizeof(h->cfg.secret));
	free(h);
}

/* BYE, once; the regions are unmapped (or were never mapped). One that
 * gets no answer is kept for the process's next connect (latebye.c). */
static void
bye(struct cxlp_handler *h)
{
	uint64_t session, token;
	struct creply rep;
	int rc = client_call_once(h->cl, PROTO_OP_BYE, NULL, &rep);

	if (rc == 0) {
		client_reply_fini(&rep);
		return;
	}
	log_info("BYE not answered: %s", cxlp_errormsg());
	client_get_session(h->cl, &session, &token);
	if (latebye_unanswered(rc) && session != 0) {
		latebye_add(h->cfg.server, session, token);
	}
}

/* cxlp_connect -- open a session and take a first region; see cxlpool.h. */
int
cxlp_connect(struct cxlp_handler **out, const struct cxlp_config *cfg)
{
	struct cxlp_handler *h;
	int rc;

	if (out == NULL) {
		return cxlp_fail(-EINVAL, "connect: out is NULL");
	}
	if ((rc = handler_new(out, cfg)) != 0) {
		return rc;
	}
	h = *out;
	*out = NULL;
	rc = client_open(&h->cl, h->cfg.server, h->cfg.timeout_ms,
	    h->cfg.retries);
	if (rc != 0) {
		goto err_free;
	}
	latebye_send(h);
	if ((rc = hello_nonce(h)) != 0 || (rc = hello(h, 0)) != 0) {
		goto err_free;
	}
	if ((rc = regions_init(h)) != 0) {
		goto err_bye;
	}
	direct_open(h);
	keeper_start(h);
	*out = h;
	return 0;
err_bye:
	bye(h);
err_free:
	log_err("connect to %s failed: %s", h->cfg.server, cxlp_errormsg());
	handler_free(h);
	return rc;
}

/* cxlp_close -- unmap everything, end the session, free; see cxlpool.h. */
void
cxlp_close(struct cxlp_handler **hp)
{
	struct cxlp_handler *h;

	if (hp == NULL || *hp == NULL) {
		return;
	}
	h = *hp;
	*hp = NULL;
	__atomic_store_n(&h->closing, 1, __ATOMIC_RELEASE);
	keeper_stop(h);
	regions_fini(h);
	bye(h);
	handler_free(h);
}

static void
stats_own(struct cxlp_handler *h, struct cxlp_stats *st)
{
	const uint64_t *c = h->pages.count;

	pthread_mutex_lock(&h->page_lock);
	st->own_regions = h->nown;
	st->pages_free = c[PAGE_FREE];
	st->pages_allocated = c[PAGE_ALLOCATED] + c[PAGE_INFLIGHT] +
	    c[PAGE_INFLIGHT_DELETED];
	st->pages_registered = c[PAGE_REGISTERED];
	st->pages_unresolved = c[PAGE_UNRESOLVED];
	st->pages_quarantined = c[PAGE_QUARANTINED];
	st->pages_total = st->pages_free + st->pages_allocated +
	    st->pages_registered + st->pages_unresolved +
	    st->pages_quarantined;
	pthread_mutex_unlock(&h->page_lock);
	st->foreign_maps = regions_foreign_count(h);
	st->redials = client_redials(h->cl);
}

/* cxlp_stats -- pool stats from the server plus this handler's own. */
int
cxlp_stats(struct cxlp_handler *h, struct cxlp_stats *st)
{
	uint64_t v[PROTO_STATS_MAX] = {0};
	struct creply rep;
	uint32_t n = 0;
	int rc;

	if (st == NULL) {
		return cxlp_fail(-EINVAL, "stats: st is NULL");
	}
	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if ((rc = h_call(h, PROTO_OP_STATS, NULL, &rep)) != 0) {
		return rc;
	}
	if (proto_get_stats(&rep.body, v, PROTO_STATS_MAX, &n) != 0 ||
	    preader_end(&rep.body) != 0) {
		rc = cxlp_fail(CXLP_E_PROTO, "STATS: bad reply body");
	}
	client_reply_fini(&rep);
	if (rc != 0) {
		return rc;
	}
	(void)store_resolve(h);
	memset(st, 0, sizeof(*st));
	st->pool_bytes = v[PROTO_STAT_POOL_BYTES];
	st->data_bytes = v[PROTO_STAT_DATA_BYTES];
	st->free_bytes = v[PROTO_STAT_FREE_BYTES];
	st->regions = v[PROTO_STAT_REGIONS];
	st->orphan_regions = v[PROTO_STAT_ORPHAN_REGIONS];
	st->keys = v[PROTO_STAT_KEYS];
	st->value_bytes = v[PROTO_STAT_VALUE_BYTES];
	st->sessions = v[PROTO_STAT_SESSIONS];
	st->pins = v[PROTO_STAT_PINS];
	st->index_slots = v[PROTO_STAT_INDEX_SLOTS];
	stats_own(h, st);
	return 0;
}

/* cxlp_healthcheck -- 0 if the server answers and knows this session. */
int
cxlp_healthcheck(struct cxlp_handler *h)
{
	struct creply rep;
	int rc;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if ((rc = h_call(h, PROTO_OP_HEARTBEAT, NULL, &rep)) != 0) {
		return rc;
	}
	rc = preader_end(&rep.body);
	client_reply_fini(&rep);
	if (rc != 0) {
		return cxlp_fail(CXLP_E_PROTO, "HEARTBEAT: unexpected body");
	}
	(void)store_resolve(h);
	return 0;
}
