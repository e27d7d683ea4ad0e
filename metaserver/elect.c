/*
 * elect.c -- the election of a pool's leader through etcd, on a thread of
 * its own (elect.h for the API, docs/standby.md for the operator's view).
 *
 * It is the classic etcd election (a key created on one's lease, kept by
 * keepalives) with a fencing deadline added, because the metaserver
 * writes shared memory, not etcd: nothing outside can refuse a stale
 * leader's write, so the leader must stop on its own before anyone else
 * can be elected.
 *
 * DESIGN NOTES
 * 1. States: STANDBY -> LEADER [campaign: lease granted, then the txn
 *    "create key if its create_revision is 0" on that lease won] ->
 *    STANDBY [end_term: deadline passed, lease gone, key gone or taken,
 *    or elect_stop]. A standby looks at the key every poll_ms and
 *    campaigns only when it is absent.
 * 2. Epoch = the create_revision of the key the leader created. etcd's
 *    revision is one counter of the whole store, raised by every write
 *    and replicated through raft, so it never goes back, whichever
 *    member leads etcd. A new term's key is created by a write after the
 *    old key's deletion (itself a write: lease expiry or revoke), so
 *    each term's epoch is greater than every earlier one. (Not across a
 *    cluster rebuilt from nothing: its revisions start again at 1.)
 * 3. Fencing: valid_until = t_send + TTL - margin, where t_send is when
 *    the last successful renewal (the grant, then each keepalive) was
 *    sent. etcd counts the TTL from its receipt of that renewal, which is
 *    after t_send, and a new etcd leader only extends leases; so the key
 *    cannot go, and no other campaigner win, before t_send + TTL on a
 *    clock that runs at our rate. The margin covers clock rate
 *    difference between etcd's host and ours (far below 1% of TTL) and
 *    the time from a true elect_may_write to the end of the write batch
 *    it admits. The clock is CLOCK_BOOTTIME: monotonic and counting
 *    suspend, so a leader whose host or process was paused wakes past
 *    its deadline, and elect_may_write is false at once, before its
 *    thread has run a single step.
 * 4. valid_until only grows within a term, and a term ends (lost) as
 *    soon as its thread sees the deadline passed, even if a late
 *    keepalive would have renewed it: elect_may_write is true over one
 *    interval per term, never again after it was false.
 * 6. Standbys register (elect_reg.c): at each look a standby renews its
 *    record under <key>/standby/<name>; elected, it withdraws it before
 *    its first renewal; the leader lists them after each renewal of
 *    its own (never before it: the renewal keeps the deadline).
 *    The vacancy a term was won from is the boot ms of the look that
 *    found the key absent (vacant_ms), which ms_takeover_record counts
 *    a takeover's time from.
 * 5. A create whose answer was lost may have been applied: a create
 *    that finds the key held on our own lease is a win (etcd.c, note 3).
 *    A campaign that fails in any other way revokes its lease, so a key
 *    it may have created goes at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "deadline.h"
#include "elect.h"
#include "elect_reg.h"
#include "err.h"
#include "etcd.h"
#include "log.h"

struct elect {
	char *key;
	char *value;
	size_t vlen;
	uint64_t ttl_ms, margin_ms, poll_ms;
	struct elect_cbs cbs;
	struct etcd *etcd;
	pthread_t thread;
	pthread_mutex_t lock;  /* the fields below it, and the condvar */
	pthread_cond_t cond;   /* CLOCK_MONOTONIC */
	bool stop;
	atomic_bool hold;      /* elect_test_hold */
	_Atomic uint64_t valid_until; /* CLOCK_BOOTTIME ms; 0: not leader */
	enum elect_role role;
	uint64_t epoch;        /* ours (leader) or the last seen */
	int64_t lease;         /* leader: our lease */
	uint64_t renew_sent;   /* CLOCK_BOOTTIME ms */
	uint64_t granted_ms;   /* TTL etcd granted */
	uint64_t terms;
	bool renew_failed;     /* the last keepalive failed: retry soon */
	uint64_t vacant_ms;    /* note 6: the look that found no leader */
	uint64_t elected_ms;   /* CLOCK_BOOTTIME ms of our win */
	uint64_t prev_epoch;   /* the leader seen before ours; 0: none */
	struct elect_reg *reg; /* the standbys (note 6) */
};

static uint64_t
boot_ms(void)
{
	return cxlp_clock_ms(CLOCK_BOOTTIME);
}

/* elect_available -- see elect.h. */
bool
elect_available(void)
{
	return true;
}

/* elect_check_spec -- see elect.h. */
int
elect_check_spec(const char *spec)
{
	struct etcd_endpoints ep;

	return etcd_endpoints_parse(spec, &ep);
}

/* elect_may_write -- see elect.h. */
bool
elect_may_write(const struct elect *e)
{
	uint64_t until = atomic_load(&((struct elect *)e)->valid_until);

	return until != 0 && boot_ms() < until;
}

/* elect_status -- see elect.h. */
void
elect_status(const struct elect *ce, struct elect_status *st)
{
	struct elect *e = (struct elect *)ce;

	pthread_mutex_lock(&e->lock);
	st->role = e->role;
	st->epoch = e->epoch;
	st->valid_until_ms = atomic_load(&e->valid_until);
	st->renew_sent_ms = e->renew_sent;
	st->ttl_ms = e->granted_ms;
	st->margin_ms = e->margin_ms;
	st->terms = e->terms;
	st->vacant_ms = e->vacant_ms;
	st->elected_ms = e->elected_ms;
	st->prev_epoch = e->prev_epoch;
	pthread_mutex_unlock(&e->lock);
	st->standbys = -1;
	st->listed_ms = 0;
	if (st->role == ELECT_LEADER) {
		struct elect_standby none[1];

		(void)reg_standbys(e->reg, none, 0, &st->standbys,
		    &st->listed_ms);
	}
}

/* elect_standbys -- see elect.h. */
unsigned
elect_standbys(const struct elect *e, struct elect_standby *out,
    unsigned max)
{
	int64_t count;
	uint64_t at;

	return reg_standbys(e->reg, out, max, &count, &at);
}

/* elect_test_hold -- see elect.h. */
void
elect_test_hold(struct elect *e, bool hold)
{
	atomic_store(&e->hold, hold);
}

/* A standby saw kv hold the key: tell if it is a new leader. */
static void
note_leader(struct elect *e, const struct etcd_kv *kv)
{
	bool changed;

	pthread_mutex_lock(&e->lock);
	changed = e->epoch != (uint64_t)kv->create_rev;
	e->epoch = (uint64_t)kv->create_rev;
	pthread_mutex_unlock(&e->lock);
	if (changed && e->cbs.leader_changed != NULL) {
		e->cbs.leader_changed(e->cbs.arg, kv->value,
		    (uint64_t)kv->create_rev);
	}
}

/* End our term (DESIGN NOTE 1): no more writes, resign, tell. */
static void
end_term(struct elect *e, const char *reason)
{
	int64_t lease;
	uint64_t epoch;

	atomic_store(&e->valid_until, 0);
	pthread_mutex_lock(&e->lock);
	lease = e->lease;
	epoch = e->epoch;
	e->role = ELECT_STANDBY;
	e->lease = 0;
	pthread_mutex_unlock(&e->lock);
	reg_forget(e->reg);
	if (etcd_lease_revoke(e->etcd, lease) != 0) {
		log_dbg("op=elect revoke=fail msg=\"%s\"", cxlp_errormsg());
	}
	log_info("op=elect role=standby epoch=%" PRIu64 " reason=\"%s\"",
	    epoch, reason);
	if (e->cbs.lost != NULL) {
		e->cbs.lost(e->cbs.arg, reason);
	}
}

/* We won with lease (granted at t0 for granted_s): become leader. */
static void
begin_term(struct elect *e, int64_t lease, uint64_t t0, int64_t granted_s,
    uint64_t epoch)
{
	uint64_t until = t0 + (uint64_t)granted_s * 1000u - e->margin_ms;

	if (boot_ms() >= until) {
		/* the campaign itself outlasted the deadline */
		etcd_lease_revoke(e->etcd, lease);
		return;
	}
	pthread_mutex_lock(&e->lock);
	e->role = ELECT_LEADER;
	e->prev_epoch = e->epoch;
	e->elected_ms = boot_ms();
	e->epoch = epoch;
	e->lease = lease;
	e->renew_sent = t0;
	e->granted_ms = (uint64_t)granted_s * 1000u;
	e->terms++;
	e->renew_failed = false;
	pthread_mutex_unlock(&e->lock);
	atomic_store(&e->valid_until, until);
	log_info("op=elect role=leader epoch=%" PRIu64 " ttl_ms=%" PRIu64
	    " margin_ms=%" PRIu64, epoch, (uint64_t)granted_s * 1000u,
	    e->margin_ms);
	if (e->cbs.elected != NULL) {
		e->cbs.elected(e->cbs.arg, epoch);
	}
	reg_withdraw(e->reg); /* note 6: after the callback, off its path */
}

/* The key is free: grant a lease and try to create the key on it. */
static void
campaign(struct elect *e)
{
	struct etcd_kv *kv = malloc(sizeof(*kv));
	int64_t lease, granted;
	uint64_t t0 = boot_ms();
	bool created = false;
	int rc;

	if (kv == NULL) {
		return;
	}
	rc = etcd_lease_grant(e->etcd, (int64_t)((e->ttl_ms + 999) / 1000),
	    &lease, &granted);
	if (rc != 0) {
		log_rl_err("op=elect step=grant rc=%d msg=\"%s\"", rc,
		    cxlp_errormsg());
		free(kv);
		return;
	}
	rc = etcd_create(e->etcd, e->key, e->value, e->vlen, lease,
	    &created, kv);
	if (rc == 0 && !created && kv->lease == lease) {
		created = true; /* our own repeated create (NOTE 5) */
	}
	if (rc == 0 && created) {
		begin_term(e, lease, t0, granted, (uint64_t)kv->create_rev);
	} else {
		if (rc != 0) {
			log_rl_err("op=elect step=create rc=%d msg=\"%s\"", rc,
			    cxlp_errormsg());
		}
		etcd_lease_revoke(e->etcd, lease);
		if (rc == 0) {
			note_leader(e, kv);
		}
	}
	free(kv);
}

static void
standby_step(struct elect *e)
{
	struct etcd_kv *kv = malloc(sizeof(*kv));
	int rc;

	if (kv == NULL) {
		return;
	}
	rc = etcd_get(e->etcd, e->key, kv);
	if (rc == 0) {
		note_leader(e, kv);
	} else if (rc == -ENOENT) {
		pthread_mutex_lock(&e->lock);
		e->vacant_ms = boot_ms(); /* note 6 */
		pthread_mutex_unlock(&e->lock);
		campaign(e);
	} else {
		log_rl_err("op=elect step=look rc=%d msg=\"%s\"", rc,
		    cxlp_errormsg());
	}
	free(kv);
	if (e->role == ELECT_STANDBY) {
		reg_standby_step(e->reg);
	}
}

/* Is the key still ours? 1 yes, 0 no, <0 could not tell. */
static int
key_is_ours(struct elect *e, uint64_t epoch, int64_t lease)
{
	struct etcd_kv *kv = malloc(sizeof(*kv));
	int rc;

	if (kv == NULL) {
		return -ENOMEM;
	}
	rc = etcd_get(e->etcd, e->key, kv);
	if (rc == 0) {
		rc = (uint64_t)kv->create_rev == epoch && kv->lease == lease;
	} else if (rc == -ENOENT) {
		rc = 0;
	}
	free(kv);
	return rc;
}

/* One renewal (DESIGN NOTES 3, 4). */
static void
leader_step(struct elect *e)
{
	uint64_t t0 = boot_ms(), until, cur;
	int64_t ttl_s, lease;
	uint64_t epoch;
	int rc;

	pthread_mutex_lock(&e->lock);
	lease = e->lease;
	epoch = e->epoch;
	pthread_mutex_unlock(&e->lock);
	if (t0 >= atomic_load(&e->valid_until)) {
		end_term(e, "fencing deadline passed: lease not renewed in "
		    "time");
		return;
	}
	rc = etcd_lease_keepalive(e->etcd, lease, &ttl_s);
	if (rc == -ENOENT) {
		end_term(e, "lease expired at etcd");
		return;
	}
	pthread_mutex_lock(&e->lock);
	e->renew_failed = rc != 0;
	pthread_mutex_unlock(&e->lock);
	if (rc != 0) {
		log_rl_err("op=elect step=keepalive rc=%d msg=\"%s\"", rc,
		    cxlp_errormsg());
		return;
	}
	cur = atomic_load(&e->valid_until);
	if (boot_ms() >= cur) {
		end_term(e, "fencing deadline passed during a keepalive");
		return;
	}
	until = t0 + (uint64_t)ttl_s * 1000u - e->margin_ms;
	if (until > cur) {
		atomic_store(&e->valid_until, until);
	}
	pthread_mutex_lock(&e->lock);
	e->renew_sent = t0;
	e->granted_ms = (uint64_t)ttl_s * 1000u;
	pthread_mutex_unlock(&e->lock);
	if (key_is_ours(e, epoch, lease) == 0) {
		end_term(e, "the key was deleted or taken");
		return;
	}
	reg_list(e->reg); /* note 6 */
}

/* Sleep ms on the condvar (elect_stop wakes it). Returns e->stop. */
static bool
nap(struct elect *e, uint64_t ms)
{
	struct timespec ts = cxlp_deadline(CLOCK_MONOTONIC, ms);
	bool stop;

	pthread_mutex_lock(&e->lock);
	if (!e->stop) {
		pthread_cond_timedwait(&e->cond, &e->lock, &ts);
	}
	stop = e->stop;
	pthread_mutex_unlock(&e->lock);
	return stop;
}

/* How long the leader waits before its next renewal: a third of the TTL,
 * 100 ms after a failure, and never past its deadline. */
static uint64_t
leader_wait(struct elect *e)
{
	uint64_t until = atomic_load(&e->valid_until), now = boot_ms();
	uint64_t ms = e->ttl_ms / 3;

	pthread_mutex_lock(&e->lock);
	if (e->renew_failed) {
		ms = ms < 100 ? ms : 100;
	}
	pthread_mutex_unlock(&e->lock);
	if (until > now && until - now + 1 < ms) {
		ms = until - now + 1;
	}
	return until <= now ? 0 : ms;
}

static void *
elect_main(void *arg)
{
	struct elect *e = arg;
	uint64_t ms;

	do {
		if (atomic_load(&e->hold)) {
			ms = 10;
		} else if (e->role == ELECT_LEADER) {
			leader_step(e);
			ms = e->role == ELECT_LEADER ? leader_wait(e) : 0;
		} else {
			standby_step(e);
			ms = e->role == ELECT_LEADER ? leader_wait(e) :
			    e->poll_ms;
		}
	} while (!nap(e, ms));
	return NULL;
}

static int
cfg_check(const struct elect_cfg *cfg, struct etcd_endpoints *ep)
{
	int rc;

	if ((rc = etcd_endpoints_parse(cfg->endpoints, ep)) != 0) {
		char why[256];

		snprintf(why, sizeof(why), "%s", cxlp_errormsg());
		return cxlp_fail(rc, "--elect %s", why);
	}
	if (cfg->key == NULL || cfg->key[0] != '/' ||
	    strlen(cfg->key) > ETCD_KEY_MAX) {
		return cxlp_fail(-EINVAL, "election key: '/...', at most %d "
		    "bytes", ETCD_KEY_MAX);
	}
	if (cfg->ttl_ms < ELECT_TTL_MS_MIN || cfg->ttl_ms > ELECT_TTL_MS_MAX ||
	    cfg->margin_ms >= cfg->ttl_ms / 2) {
		return cxlp_fail(-EINVAL, "election TTL %u ms: %u..%u, margin "
		    "%u below half of it", cfg->ttl_ms, ELECT_TTL_MS_MIN,
		    ELECT_TTL_MS_MAX, cfg->margin_ms);
	}
	if (cfg->value == NULL || strlen(cfg->value) > ETCD_VALUE_MAX) {
		return cxlp_fail(-EINVAL, "election value: at most %d bytes",
		    ETCD_VALUE_MAX);
	}
	return 0;
}

static void
elect_free(struct elect *e)
{
	reg_free(&e->reg);
	etcd_delete(&e->etcd);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e->key);
	free(e->value);
	free(e);
}

/* elect_start -- see elect.h. */
int
elect_start(struct elect **out, const struct elect_cfg *cfg,
    const struct elect_cbs *cbs)
{
	struct etcd_endpoints ep;
	pthread_condattr_t ca;
	struct elect *e;
	int rc;

	*out = NULL;
	if ((rc = cfg_check(cfg, &ep)) != 0) {
		return rc;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for the election");
	}
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &ca);
	pthread_condattr_destroy(&ca);
	e->key = strdup(cfg->key);
	e->value = strdup(cfg->value);
	e->vlen = strlen(cfg->value);
	e->ttl_ms = cfg->ttl_ms;
	e->margin_ms = cfg->margin_ms != 0 ? cfg->margin_ms : cfg->ttl_ms / 4;
	e->poll_ms = cfg->poll_ms != 0 ? cfg->poll_ms : cfg->ttl_ms / 4;
	e->cbs = cbs != NULL ? *cbs : (struct elect_cbs){ 0 };
	if (e->key == NULL || e->value == NULL) {
		rc = cxlp_fail(-ENOMEM, "no memory for the election");
		goto err_free;
	}
	/* a call may take half the TTL: the deadline does not wait for it */
	if ((rc = etcd_new(&e->etcd, &ep, (unsigned)cfg->ttl_ms / 2)) != 0 ||
	    (rc = reg_new(&e->reg, e->etcd, cfg->key, cfg->name, cfg->value,
	    cfg->ttl_ms)) != 0) {
		goto err_free;
	}
	if ((rc = pthread_create(&e->thread, NULL, elect_main, e)) != 0) {
		rc = cxlp_fail(-rc, "cannot start the election thread");
		goto err_free;
	}
	*out = e;
	return 0;

err_free:
	elect_free(e);
	return rc;
}

/* elect_stop -- see elect.h. */
void
elect_stop(struct elect **ep)
{
	struct elect *e = *ep;

	if (e == NULL) {
		return;
	}
	pthread_mutex_lock(&e->lock);
	e->stop = true;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	atomic_store(&e->hold, false);
	pthread_join(e->thread, NULL);
	atomic_store(&e->valid_until, 0);
	if (e->role == ELECT_LEADER) {
		etcd_lease_revoke(e->etcd, e->lease);
		log_info("op=elect role=none epoch=%" PRIu64 " reason="
		    "\"stopped: resigned\"", e->epoch);
	}
	elect_free(e);
	*ep = NULL;
}
