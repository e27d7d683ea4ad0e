/*
 * handler.c -- a handler's life: connect (HELLO, first region), stats,
 * healthcheck and close; the top of the library, above every other
 * module (call.c has the call layer they all go through).
 *
 * A handler is one session with one metaserver. cxlp_connect opens the
 * client, sends the BYEs an earlier handler of this process could not
 * deliver (latebye.c), says HELLO (call.c), maps a first region
 * (regions.c; a pool with no room for one now leaves it without, to ask
 * at the first alloc), then starts direct reads and the keeper thread
 * (keepalive and give-back). Its client moves to another endpoint when
 * its own is gone (net/endpoints.c); one configured with its pool finds
 * a new leader through the pool's owner record (session/leader.c).
 * cxlp_close stops the keeper, unmaps the regions, then says BYE (one
 * that gets no answer is kept for the next connect) and frees the rest.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "coh.h"
#include "err.h"
#include "handler.h"
#include "log.h"

/* In a child of fork(): the library's process-wide state made the
 * child's (fork.c notes 2, 3). Here, above every module it resets. */
static void
fork_child(void)
{
	fork_child_gen();
	cxlp_log_atfork_child();
	latebye_atfork_child();
	async_atfork_child();
}

__attribute__((constructor)) static void
fork_hook_register(void)
{
	/* fails only for lack of memory at load; then every child is taken
	 * for its parent, as before fork.c (and nng aborts in it) */
	(void)pthread_atfork(NULL, NULL, fork_child);
}

/* The keeper's table, by priority: what the server asked back first,
 * then the refill, then the keepalive (keeper.c). */
static void
keeper_tasks(struct cxlp_handler *h)
{
	h->giveback.task = keeper_add(&h->keeper, &giveback_task);
	h->reclaim.refill_task = keeper_add(&h->keeper, &reclaim_refill_task);
	(void)keeper_add(&h->keeper, &h_keepalive_task);
	h->keeper.ask_task = h->giveback.task;
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

static int
handler_new(struct cxlp_handler **out, const struct cxlp_config *cfg)
{
	struct cxlp_handler *h = calloc(1, sizeof(*h));
	int rc;

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
	if ((rc = config_secret_env(&h->cfg)) != 0) {
		free(h);
		return rc;
	}
	h->fork_gen = fork_gen_now();
	pthread_mutex_init(&h->reattach_lock, NULL);
	pthread_mutex_init(&h->poolid_lock, NULL);
	h->poolid_fd = -1;
	pthread_mutex_init(&h->expand_lock, NULL);
	pthread_mutex_init(&h->page_lock, NULL);
	owntab_state_init(&h->regions);
	pagetab_init(&h->pages);
	scratch_cache_init(&h->scratch);
	keeper_init(&h->keeper);
	reclaim_init(&h->reclaim);
	keeper_tasks(h);
	*out = h;
	return 0;
}

static void
handler_free(struct cxlp_handler *h)
{
	async_fini(h);
	regions_fini(h);
	resolve_fini(h);
	direct_close(h);
	client_close(&h->cl);
	scratch_cache_fini(&h->scratch);
	keeper_fini(&h->keeper);
	reclaim_fini(&h->reclaim);
	owntab_state_fini(&h->regions);
	rmap_events_fini(h);
	pthread_mutex_destroy(&h->page_lock);
	pthread_mutex_destroy(&h->expand_lock);
	pthread_mutex_destroy(&h->reattach_lock);
	pthread_mutex_destroy(&h->poolid_lock);
	if (h->poolid_fd >= 0) {
		close(h->poolid_fd);
	}
	coh_close(&h->coh);
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

/* cxlp_connect -- open a session and take a first region if the pool has
 * room; see cxlpool.h. */
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
	    h->cfg.retries, &h->cfg.tls, leader_finder(h), h);
	if (rc != 0) {
		goto err_free;
	}
	leader_watch_terms(h);
	latebye_send(h);
	if ((rc = hello_nonce(h)) != 0 || (rc = h_hello(h, 0)) != 0) {
		goto err_free;
	}
	if ((rc = regions_init(h)) != 0) {
		goto err_bye;
	}
	direct_open(h);
	if ((rc = keeper_start(h)) != 0) {
		regions_fini(h);
		goto err_bye;
	}
	*out = h;
	return 0;
err_bye:
	bye(h);
err_free:
	log_err("connect to %s failed: %s", h->cfg.server, cxlp_errormsg());
	handler_free(h);
	return rc;
}

static void *
closer_main(void *arg)
{
	struct cxlp_handler *h = arg;

	cxlp_close(&h);
	return NULL;
}

/* cxlp_close of h from a thread of its own (a close called from one of
 * h's callbacks, which h's close would wait for). */
static void
close_later(struct cxlp_handler *h)
{
	pthread_attr_t attr;
	pthread_t t;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, closer_main, h);
	pthread_attr_destroy(&attr);
	if (err != 0) {
		log_err("close from a callback: cannot start the thread that "
		    "closes the handler (%s); it stays open", strerror(err));
	}
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
	if (h_forked(h)) {
		/* fork.c note 1: all of it is the parent's */
		*hp = NULL;
		log_info("cxlp_close of a handler connected before this process "
		    "forked: its session and memory are the parent's, left as "
		    "they are");
		return;
	}
	if (rmap_delivering(h)) {
		/* cxlpool.h: not from h's region callback, whose delivering
		 * call goes on using h once the callback returns */
		log_err("cxlp_close from the handler's own region callback is "
		    "not allowed; the handler stays open (close it once the "
		    "callback has returned)");
		return;
	}
	*hp = NULL;
	if (async_close_deferred(h)) {
		close_later(h); /* from one of h's callbacks */
		return;
	}
	async_stop(h); /* every request submitted runs to its callback */
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

	/* not while the keeper's RECLAIM is in flight, whose evicted pages
	 * would count as registered (reclaim.c note 7) */
	pthread_mutex_lock(&h->reclaim.refill_lock);
	pthread_mutex_lock(&h->page_lock);
	st->own_regions = h->pages.nlive;
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
	pthread_mutex_unlock(&h->reclaim.refill_lock);
	st->foreign_maps = rmap_foreign_count(h);
	st->redials = client_redials(h->cl);
	st->endpoint_switches = client_switches(h->cl);
	st->pages_reclaimed = __atomic_load_n(&h->reclaim.pages,
	    __ATOMIC_RELAXED);
	st->reclaims = __atomic_load_n(&h->reclaim.calls, __ATOMIC_RELAXED);
	st->refills = __atomic_load_n(&h->reclaim.refills, __ATOMIC_RELAXED);
	st->pages_reserved = __atomic_load_n(&h->reserved, __ATOMIC_RELAXED);
}

/* cxlp_counters -- see cxlpool.h */
int
cxlp_counters(const struct cxlp_handler *h, struct cxlp_counters *c,
    size_t size)
{
	const uint64_t *src;
	uint64_t *dst = (uint64_t *)(void *)c;

	if (h == NULL || c == NULL) {
		return cxlp_fail(-EINVAL, "counters: NULL");
	}
	if (h_forked(h)) {
		return h_check_open(h);
	}
	src = (const uint64_t *)(const void *)&h->counters;
	size = size < sizeof(*c) ? size : sizeof(*c);
	for (size_t i = 0; i < size / sizeof(uint64_t); i++) {
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	}
	if (size >= offsetof(struct cxlp_counters, stale_replies) +
	    sizeof(c->stale_replies)) { /* the client counts them */
		c->stale_replies = client_stale_replies(h->cl);
	}
	if (size >= offsetof(struct cxlp_counters, term_resets) +
	    sizeof(c->term_resets)) {
		c->term_resets = client_term_resets(h->cl);
	}
	return 0;
}

/* cxlp_stats -- pool stats from the server plus this handler's own. */
int
cxlp_stats(struct cxlp_handler *h, struct cxlp_stats *st)
{
	uint64_t v[PROTO_STATS_MAX];
	int rc;

	if (st == NULL) {
		return cxlp_fail(-EINVAL, "stats: st is NULL");
	}
	if ((rc = h_check_open(h)) != 0 || (rc = h_pool_stats(h, v)) != 0) {
		return rc;
	}
	(void)resolve_run(h);
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
	st->largest_free = v[PROTO_STAT_LARGEST_FREE];
	st->evicted_pressure = v[PROTO_STAT_EVICT_PRESSURE];
	st->evicted_watermark = v[PROTO_STAT_EVICT_WATERMARK];
	st->evicted_orphan = v[PROTO_STAT_EVICT_ORPHAN];
	st->evicted_bytes = v[PROTO_STAT_EVICT_BYTES];
	st->leases = v[PROTO_STAT_LEASES];
	st->lease_expiries = v[PROTO_STAT_LEASE_EXPIRED];
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
	rc = h_heartbeat_body(h, &rep);
	client_reply_fini(&rep);
	if (rc != 0) {
		return rc;
	}
	(void)resolve_run(h);
	return 0;
}
