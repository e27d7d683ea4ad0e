/*
 * ms.c -- the metaserver's state: open the pool, recover, rebuild what
 * lives only in DRAM (session shadows), and tear it all down.
 *
 * Kept apart from server.c so that tests and the fuzz target can build a
 * complete struct ms on a temporary pool with no sockets at all.
 *
 * Restart, in order [ms_init]:
 *   0. pool_open_owned makes this the pool's one server before anything
 *      is written: it locks the pool against every other server on this
 *      host and claims the owner record (pool/owner.c) against servers on
 *      other hosts, or fails with -EBUSY naming the one that serves it;
 *      the record's heartbeat runs until ms_fini, which clears it;
 *   1. pool_open validates the superblock (a volatile pool from another
 *      boot is refused with CXLP_E_STALE, and the message names
 *      --reformat) and recovers the media: records caught mid-write are
 *      rolled back, orphans reaped, pins of ended sessions dropped
 *      (pool.c, kvindex.c note 6, pintab.c note 4), and indexes the
 *      pins that remain (pinidx.c), which the metaserver asks directly;
 *   2. ms_sess_load shadows every recorded session, detached: it ends
 *      after the grace period unless its handler speaks again (any
 *      request with its id and token, or HELLO REATTACH), and at once if
 *      it was of this host and its process is gone (liveness.c);
 *   3. ms_recover finishes what a crash cut short in a session's end: a
 *      region still OWNED by a session whose record is gone is disowned
 *      (sess_end_locked removes the record first, then disowns).
 * Replies cached before the crash are gone; dispatch.c says how each op
 * stays safe to replay.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elect.h"
#include "err.h"
#include "log.h"
#include "ms_int.h"
#include "owner.h"

/* ms_config_defaults -- the documented defaults (no listen URL yet: the
 * parser adds MS_DEFAULT_URL when none was given). */
void
ms_config_defaults(struct ms_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->pool_path = POOL_PATH_DEFAULT;
	cfg->size = POOL_SIZE_DEFAULT;
	cfg->workers = 4;
	cfg->grace_ms = MS_GRACE_MS_DEFAULT;
	cfg->log_level = CXLP_LOG_INFO;
	cfg->evict = true;
	cfg->evict_free_pct = MS_EVICT_FREE_PCT_DEFAULT;
	cfg->evict_clock = true;
	cfg->coherence = POOL_COH_AUTO;
	cfg->lease_max_ms = MS_LEASE_MAX_MS_DEFAULT;
}

/* The pool lock prefers writers: a stream of lookups must not starve
 * registers (glibc's default lets readers overtake a waiting writer). No
 * thread ever takes it twice, so the non-recursive kind is safe. */
static int
locks_init(struct ms *ms)
{
	pthread_rwlockattr_t attr;
	int rc;

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr,
	    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	rc = pthread_rwlock_init(&ms->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	if (rc != 0) {
		return cxlp_fail(-ENOMEM, "cannot create the pool lock");
	}
	if (pthread_mutex_init(&ms->sess_lock, NULL) != 0) {
		goto err_rw;
	}
	if (pthread_cond_init(&ms->sess_cond, NULL) != 0) {
		goto err_mutex;
	}
	return 0;

err_mutex:
	pthread_mutex_destroy(&ms->sess_lock);
err_rw:
	pthread_rwlock_destroy(&ms->lock);
	return cxlp_fail(-ENOMEM, "cannot create the session lock");
}

static void
locks_fini(struct ms *ms)
{
	pthread_cond_destroy(&ms->sess_cond);
	pthread_mutex_destroy(&ms->sess_lock);
	pthread_rwlock_destroy(&ms->lock);
}

/* say what to do about a volatile pool from another boot */
static void
stale_advice(int rc)
{
	char why[256];

	snprintf(why, sizeof(why), "%s", cxlp_errormsg());
	/* the advice first: the message buffer may cut the tail */
	(void)cxlp_fail(rc, "stale pool, its keys are gone: run "
	    "cxlpool-metaserver with --reformat to format it anew. %s", why);
}

/* the region's owner has no session record */
static bool
owner_gone(struct ms *ms, const struct pool_region *r)
{
	struct pool_session s;

	return r->state == POOL_REGION_OWNED &&
	    pool_session_get(ms->pool, r->owner, &s) != 0;
}

/* Finish the session ends a crash cut short: disown every region whose
 * owner's session record is gone (restart step 4). Only at start
 * (single-threaded). */
static void
ms_recover(struct ms *ms)
{
	uint32_t max = pool_region_max(ms->pool);

	for (uint32_t id = 0; id < max; id++) {
		struct pool_region r;
		int rc;

		if (pool_region_get(ms->pool, id, &r) != 0 ||
		    !owner_gone(ms, &r)) {
			continue;
		}
		rc = pool_region_disown(ms->pool, id);
		log_info("op=recover_disown region=%u owner=%llu keys=%llu "
		    "rc=%d", id, (unsigned long long)r.owner,
		    (unsigned long long)r.nkeys, rc);
	}
	cxlp_errmsg_clear();
}

/* Another server claimed the pool after all (we stalled past its stale
 * time, on a pool shared across hosts; pool/owner_hold.c note 2): stop, the
 * way SIGTERM stops us (server.c takes it in its main thread). */
static void
owner_lost(void *arg)
{
	(void)arg;
	kill(getpid(), SIGTERM);
}

/* ms_join_urls -- see ms_int.h */
void
ms_join_urls(const struct ms_config *cfg, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < cfg->nurls && len < n; i++) {
		int w = snprintf(buf + len, n - len, "%s%s", i > 0 ? "," : "",
		    cfg->urls[i]);

		len += w > 0 ? (size_t)w : 0;
	}
}

/* --coherence names the mode of a format; a pool of another mode is
 * refused rather than served in a mode the operator did not ask for */
static int
coherence_check(const struct pool *p, const struct ms_config *cfg)
{
	enum pool_coh have = pool_coherence(p);

	if (!cfg->coherence_set || cfg->coherence == POOL_COH_AUTO ||
	    (int)have == cfg->coherence) {
		log_info("%s: coherence %s", cfg->pool_path,
		    pool_coh_name(have));
		return 0;
	}
	return cxlp_fail(-EINVAL, "%s: formatted with coherence %s, not %s: "
	    "add --reformat to format it again (drops all keys), or leave "
	    "--coherence out to serve it as it is", cfg->pool_path,
	    pool_coh_name(have), pool_coh_name((enum pool_coh)
	    cfg->coherence));
}

/* the owner heartbeat's fence (pool/owner.c note 3), and every
 * write-back's (pool/coh.c note 6) */
static bool
owner_may_write(void *arg)
{
	return elect_may_write(arg);
}

/* ms_init -- open (or create) the pool named in cfg and shadow the
 * sessions it records, detached. Returns 0, or a negative error with
 * cxlp_errormsg() set and nothing left to free (-EBUSY: another server
 * serves the pool; the message names it). */
int
ms_init(struct ms *ms, const struct ms_config *cfg)
{
	struct pool_params params = {
		.size = cfg->size,
		.index_slots = cfg->index_slots,
		.coherence = (enum pool_coh)cfg->coherence,
	};
	unsigned flags = POOL_CREATE | (cfg->reformat ? POOL_REFORMAT : 0);
	char listen[POOL_OREC_LISTEN_LEN];
	struct pool_own own = { .listen = listen, .lost = owner_lost,
		.term = cfg->elect_term, .term_reset = cfg->elect_term_reset,
		.may_write = cfg->elect_e != NULL ? owner_may_write : NULL,
		.may_write_arg = cfg->elect_e };
	int rc;

	memset(ms, 0, sizeof(*ms));
	ms->metrics.start_ms = cxlp_now_ms();
	ms->grace_ms = cfg->grace_ms;
	ms->term = cfg->elect_term;
	ms->sess_per_proc = cfg->sess_per_proc != 0 ? cfg->sess_per_proc :
	    MS_SESS_PER_PROC_DEFAULT;
	rc = locks_init(ms);
	if (rc != 0) {
		return rc;
	}
	ms_join_urls(cfg, listen, sizeof(listen));
	rc = ms_pool_open(&ms->pool, cfg, flags, &params, &own); /* repair.c */
	if (rc == CXLP_E_STALE) {
		stale_advice(rc);
	}
	if (rc == 0 && (rc = coherence_check(ms->pool, cfg)) != 0) {
		pool_close(&ms->pool);
	}
	if (rc == 0 && cfg->elect_e != NULL) { /* pool/coh.c note 6 */
		pool_writeback_gate(ms->pool, owner_may_write, cfg->elect_e);
	}
	if (rc != 0) {
		goto err_locks;
	}
	ms->evict = (struct ms_evict){ .on = cfg->evict,
		.free_pct = cfg->evict_free_pct,
		.lease_max_ms = cfg->lease_max_ms,
		.hold_ns = pool_lease_horizon_ns(ms->pool) };
	pool_evict_set_order(ms->pool, cfg->evict_clock);
	ms_waitq_init(&ms->waitq, cfg->workers);
	if ((rc = ms_asks_init(ms)) != 0 ||
	    (rc = ms_sess_load(ms, cxlp_now_ms())) != 0) {
		goto err_sess;
	}
	ms_recover(ms);
	if (cfg->drain_orphans) {
		(void)ms_drain_orphans(ms);
	}
	return 0;

err_sess:
	ms_sess_free_all(ms);
	ms_groups_fini(ms);
	ms_asks_fini(ms);
	ms_waitq_fini(&ms->waitq);
	pool_close(&ms->pool);
err_locks:
	locks_fini(ms);
	return rc;
}

/* ms_fini -- free sessions and pipes and close the pool. No request
 * or pipe event may be running. The pool keeps its session records, so
 * handlers can reattach after a restart; its owner record is cleared. */
void
ms_fini(struct ms *ms)
{
	ms_sess_free_all(ms);
	ms_groups_fini(ms);
	ms_asks_fini(ms);
	ms_waitq_fini(&ms->waitq);
	ms_pipes_fini(ms);
	pool_close(&ms->pool);
	locks_fini(ms);
}
