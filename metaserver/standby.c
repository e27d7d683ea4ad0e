/*
 * standby.c -- the metaserver as one of several of a pool (--elect,
 * issue 28): a standby until etcd elects it, then the pool's one writer
 * for as long as its term holds. The election is elect.c's; this file
 * is what the metaserver does with it. docs/standby.md has the
 * operator's view.
 *
 * DESIGN NOTES
 *  1. A standby writes nothing and serves nothing [ms_standby_wait]: it
 *     campaigns before ms_init, so no endpoint listens (a handler's
 *     connect fails as with no server at all) and the pool is not
 *     opened for writing. It maps the superblock read-only once, for the
 *     uuid of the default key (/cxlpool/<uuid>), which only a format
 *     changes; its log names the leader that holds the key.
 *  2. Elected, it opens the pool as a restart does [ms_init_elected]:
 *     pool_open_owned's lock, owner record and recovery, told the term
 *     it won (pool_own.term, the epoch; pool/owner.c note 3): a pool
 *     served under a greater term is refused (-ESTALE, unless
 *     --elect-term-reset), the pool's term is set to ours before
 *     recovery, and a dead leader's record of an older term is taken
 *     over at once, without the stale wait and the sw claim window (the
 *     fencing rule already stopped it). A record of term 0 (a server
 *     without --elect) or of our term is watched as before; one that
 *     still beats is refused, and the claim is tried again, while the
 *     term holds. The owner heartbeat asks elect_may_write before each
 *     beat (pool_own.may_write), so a deposed leader beats no more.
 *  3. Fencing: every write batch is admitted by ms_term_ok, a lock-free
 *     read of the term's deadline (elect.c note 3), after the pool lock
 *     is taken (dispatch.c apply_locked; the reaper's passes in
 *     server.c). Once it is false it stays false (elect.c note 4): the
 *     request gets CXLP_E_CONN "metaserver lost its term".
 *  4. Losing the term [on_lost] ends the process: SIGTERM to itself, and
 *     server.c, seeing ms_term_lost, stops the workers and exits with
 *     MS_EXIT_LOST without closing the pool (a close clears the owner
 *     record, a write; the pool is consistent as after kill -9), so the
 *     service manager starts it again, as a standby.
 *  5. The term in replies: ms->term is the epoch won, which every
 *     version-3 reply carries (dispatch.c); handlers drop a reply of an
 *     older term than the newest they saw (handler/net/client.c), unless
 *     the pool's term, which note 2 set before recovery, is that term
 *     (a term reset: handler/session/leader.c), so a leader started
 *     with --elect-term-reset is heard by running handlers.
 *  6. The takeover's record [ms_takeover_record]: once it serves (its
 *     endpoints listen), the leader writes in the superblock when it
 *     began to serve, how long it took from the vacancy its election
 *     saw (elect_status vacant_ms: the look that found the key absent,
 *     which is at most a poll after the old lease ran out) and the
 *     pool's term before its own (read from the device when it won).
 *     The superblock, not the owner record: a clean stop clears the
 *     owner record, and the last takeover should outlive it.
 *     A standby registers as <key>/standby/<host> (standby_name, the
 *     simulated host appended), which the leader lists for /metrics.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elect.h"
#include "err.h"
#include "layout.h"
#include "log.h"
#include "map.h"
#include "ms_int.h"
#include "owner.h"

#define STANDBY_TICK_MS 100u /* how often the wait looks at the flags */
#define STANDBY_NOTIFY_MS 1000u /* how often it tells systemd it waits */
#define STANDBY_EXTEND_MS 10000u /* and how long it may wait till the next */
#define VALUE_MAX 1024u

static atomic_bool elected_flag, lost_flag;
static uint64_t term_before; /* the pool's, as the election was won */

static void
on_elected(void *arg, uint64_t epoch)
{
	(void)arg;
	(void)epoch;
	atomic_store(&elected_flag, true);
}

/* note 4: elect_may_write is already false */
static void
on_lost(void *arg, const char *reason)
{
	(void)arg;
	atomic_store(&lost_flag, true);
	log_err("op=elect role=deposed msg=\"metaserver lost its term (%s): "
	    "it writes the pool no more and exits with status %d\"", reason,
	    MS_EXIT_LOST);
	kill(getpid(), SIGTERM);
}

static void
on_leader(void *arg, const char *value, uint64_t epoch)
{
	(void)arg;
	log_info("op=elect role=standby leader=\"%s\" epoch=%llu msg=\"standby: "
	    "the leader serves the pool\"", value,
	    (unsigned long long)epoch);
}

/* Note 1: the pool's uuid, read from a read-only map of its superblock
 * (the device's bytes: no host has written it since its format), and
 * its term (note 6; hex may be NULL). */
static int
pool_peek(const char *path, char *hex, size_t n, uint64_t *term)
{
	const struct pool_sb *sb;
	struct pmap *m;
	char why[200];
	int rc = pmap_open(&m, path, 0, 0, false);

	if (rc != 0) {
		return cxlp_fail(rc, "--elect: cannot read the pool's uuid "
		    "(the default --elect-key) from %s: %s; format the pool "
		    "first, or give --elect-key", path, cxlp_errormsg());
	}
	sb = pmap_addr(m);
	rc = pmap_file_size(m) < sizeof(*sb) ? CXLP_E_BADMAGIC :
	    layout_validate(sb, pmap_file_size(m), why, sizeof(why));
	for (size_t i = 0; rc == 0 && hex != NULL && i < sizeof(sb->uuid) &&
	    2 * i + 2 < n; i++) {
		snprintf(hex + 2 * i, 3, "%02x", sb->uuid[i]);
	}
	*term = rc == 0 ? __atomic_load_n(&sb->term, __ATOMIC_ACQUIRE) : 0;
	pmap_close(&m);
	return rc == 0 ? 0 : cxlp_fail(rc, "--elect: %s is not a pool of "
	    "this layout, so it has no uuid for the default --elect-key: "
	    "format it first, or give --elect-key", path);
}

/* this server's name among the standbys (elect_reg.c): its host, and
 * its simulated host, if any ("vm.sim-B") */
static void
standby_name(char *buf, size_t n)
{
	const char *sim = getenv("CXLP_SIM_HOST");
	char host[64] = "?";

	(void)gethostname(host, sizeof(host) - 1);
	for (char *c = host; *c != '\0'; c++) {
		*c = *c == '/' ? '_' : *c;
	}
	snprintf(buf, n, "%s%s%s", host, sim != NULL && sim[0] != '\0' ?
	    ".sim-" : "", sim != NULL ? sim : "");
}

/* what the leader publishes under the key: endpoints, host, pid */
static void
leader_value(const struct ms_config *cfg, char *buf, size_t n)
{
	char urls[POOL_OREC_LISTEN_LEN], host[256] = "?";
	const char *sim = getenv("CXLP_SIM_HOST");

	ms_join_urls(cfg, urls, sizeof(urls));
	(void)gethostname(host, sizeof(host) - 1);
	snprintf(buf, n, "listen=%s host=%s%s%s pid=%d", urls, host,
	    sim != NULL && sim[0] != '\0' ? "/sim:" : "",
	    sim != NULL ? sim : "", (int)getpid());
}

/* SIGINT or SIGTERM within ms (they are blocked): its number, or 0 */
static int
signal_within(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000L };
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sig = sigtimedwait(&set, NULL, &ts);
	return sig > 0 ? sig : 0;
}

/* the service manager hears that a standby waits (notify.c): not
 * ready, still starting, and whose term it waits behind */
static void
notify_standby(const struct elect *e)
{
	struct elect_status st;
	char status[160];

	elect_status(e, &st);
	snprintf(status, sizeof(status), "standby: waiting to be elected "
	    "(the leader's term: %llu)", (unsigned long long)st.epoch);
	ms_notify_waiting(status, STANDBY_EXTEND_MS);
}

/* ms_standby_wait -- see ms_int.h */
int
ms_standby_wait(const struct ms_config *cfg, struct elect **out)
{
	char key[sizeof(ELECT_KEY_PREFIX) + 40], value[VALUE_MAX];
	char name[ELECT_NAME_MAX];
	struct elect_cfg ec = { .endpoints = cfg->elect, .key = cfg->elect_key,
		.ttl_ms = cfg->elect_ttl_ms, .value = value, .name = name };
	struct elect_cbs cbs = { .elected = on_elected, .lost = on_lost,
		.leader_changed = on_leader };
	uint64_t t0 = cxlp_now_ms();
	int rc, sig = 0;

	*out = NULL;
	if (ec.key == NULL) {
		char hex[40] = "";

		if ((rc = pool_peek(cfg->pool_path, hex, sizeof(hex),
		    &term_before)) != 0) {
			return rc;
		}
		snprintf(key, sizeof(key), "%s%s", ELECT_KEY_PREFIX, hex);
		ec.key = key;
	}
	leader_value(cfg, value, sizeof(value));
	standby_name(name, sizeof(name));
	if ((rc = elect_start(out, &ec, &cbs)) != 0) {
		return rc;
	}
	log_info("op=elect role=standby key=%s value=\"%s\" msg=\"standby: "
	    "campaigning; no endpoint listens and the pool is not written "
	    "until this server is elected\"", ec.key, value);
	for (unsigned tick = 0; !atomic_load(&elected_flag) &&
	    (sig = signal_within(STANDBY_TICK_MS)) == 0; tick++) {
		if (tick % (STANDBY_NOTIFY_MS / STANDBY_TICK_MS) == 0) {
			notify_standby(*out);
		}
	}
	if (sig != 0) {
		log_info("op=shutdown signal=%d role=standby", sig);
		elect_stop(out);
		return 1;
	}
	log_info("op=elect role=leader waited_ms=%llu msg=\"elected: opening "
	    "the pool\"", (unsigned long long)(cxlp_now_ms() - t0));
	return 0;
}

/* ms_init_elected -- see ms_int.h */
int
ms_init_elected(struct ms *ms, const struct ms_config *cfg, struct elect *e)
{
	struct ms_config c = *cfg;
	struct elect_status st;
	uint64_t t0 = cxlp_now_ms();
	int rc;

	elect_status(e, &st);
	c.elect_term = st.epoch; /* pool/owner.c note 3 */
	(void)pool_peek(cfg->pool_path, NULL, 0, &term_before); /* note 6 */
	c.elect_e = e;
	for (;;) {
		if (!elect_may_write(e)) {
			log_err("op=elect role=deposed msg=\"metaserver lost its "
			    "term before it opened the pool; exiting with "
			    "status %d\"", MS_EXIT_LOST);
			return MS_EXIT_LOST;
		}
		rc = ms_init(ms, &c);
		if (rc != -EBUSY) {
			break;
		}
		log_err("op=elect msg=\"elected, but %s: trying again\"",
		    cxlp_errormsg());
		if (signal_within(POOL_OWNER_BEAT_MS) != 0) {
			return 1;
		}
	}
	if (rc == 0) {
		ms->elect = e;
		log_info("op=elect role=leader term=%llu open_ms=%llu "
		    "msg=\"pool open and recovered\"",
		    (unsigned long long)c.elect_term,
		    (unsigned long long)(cxlp_now_ms() - t0));
	}
	return rc;
}

/* ms_takeover_record -- see ms_int.h */
void
ms_takeover_record(struct ms *ms)
{
	struct pool_takeover t = { .from_term = term_before };
	struct elect_status st;
	bool ok;

	if (ms->elect == NULL) {
		return;
	}
	elect_status(ms->elect, &st);
	t.term = st.epoch;
	t.ms = st.vacant_ms != 0 ? cxlp_clock_ms(CLOCK_BOOTTIME) -
	    st.vacant_ms : 0;
	t.at_ns = cxlp_clock_ms(CLOCK_REALTIME) * 1000000u;
	ms_wrlock(ms);
	if ((ok = ms_term_ok(ms))) { /* note 3 */
		pool_takeover_set(ms->pool, &t);
	}
	ms_unlock(ms);
	log_info("op=elect role=leader term=%llu from_term=%llu "
	    "takeover_ms=%llu recorded=%d msg=\"serving: the takeover is "
	    "in the pool\"", (unsigned long long)t.term,
	    (unsigned long long)t.from_term, (unsigned long long)t.ms, ok);
}

/* ms_term_ok -- see ms_int.h */
bool
ms_term_ok(const struct ms *ms)
{
	return ms->elect == NULL || elect_may_write(ms->elect);
}

/* ms_term_lost -- see ms_int.h */
bool
ms_term_lost(const struct ms *ms)
{
	return ms->elect != NULL && (atomic_load(&lost_flag) ||
	    !elect_may_write(ms->elect));
}
