/*
 * test_fencing.c -- the standby's fencing at the metaserver's level
 * (issue 28; metaserver/standby.c, metaserver/elect.c): leader and
 * standbys on simulated hosts of one sim pool, elected through an etcd
 * the test starts on loopback ports (skipped without etcd).
 *   - the leader SIGSTOPped past its TTL, the standby takes over, the
 *     leader resumed: it admits no request (a store sent while it was
 *     stopped is refused), exits MS_EXIT_LOST, and writes not one line
 *     of the pool back to the device after its resume (the simulator's
 *     record of its write-backs, CXLP_SIM_RECORD, does not grow); the
 *     pool checks clean.
 *   - the leader killed -9: while it led, the standby was listed
 *     (pool-inspect summary --elect, the leader's /metrics); after, the
 *     new leader's takeover is recorded from the old term to its own
 *     (pool-inspect summary, its /metrics).
 *   - etcd stopped: the leader keeps serving while its lease may still
 *     run, then refuses the next store and exits MS_EXIT_LOST; the
 *     standby, which cannot reach etcd either, serves nothing. etcd
 *     back, and the deposed leader started again (as its service
 *     manager would): exactly one of the two serves, with every key
 *     stored before.
 *   - the same with a 3-node etcd cluster of which two nodes are
 *     stopped (the one left has no quorum).
 *   - two standbys racing for one vacancy (both stopped while the
 *     leader is killed -9 and its lease runs out, then resumed at once,
 *     so that both campaign in their first step): exactly one wins and
 *     serves; the other stays a standby that names the winner.
 * Timing is never asserted, only order: each wait has a generous
 * bound for a slow machine.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include "electfx.h"

#define POOL (64 * MiB)
#define KEYS 16          /* stored before etcd goes */
#define TTL "4s"         /* long enough that a store right after etcd
                          * stops is inside the lease on a slow machine */
#define TTL_MS 4000u
#define QUIET_MS (3 * TTL_MS) /* a loser must not serve for this long */
#define NSERV 3

static struct test_server ms[NSERV]; /* every server but srv's copy */
static int mport[NSERV];             /* their --metrics ports */
static char record[128];             /* ms[0]'s first CXLP_SIM_RECORD */

static void
fencing_fini(void)
{
	if (record[0] != '\0' && getenv("CXLP_TEST_KEEP_LOGS") == NULL) {
		unlink(record);
	}
	for (unsigned i = 0; i < NSERV; i++) {
		sbfx_stop(&ms[i]);
	}
	srv.pid = 0; /* a copy of one of ms[], stopped above */
	(void)test_server_stop(&srv); /* the pool and the simulator's files */
	etcdfx_stop(&sbfx_etcd);
}

TestSuite(fencing, .fini = fencing_fini, .timeout = 120);

static const char *const host_of[NSERV] = { "A", "B", "C" };
static const char *const tag_of[NSERV] = { "a", "b", "c" };

/* etcd of members members, a pool formatted by a plain start, ms[0] its
 * leader and ms[1..n) standbys that name it */
static void
leader_and_standbys(unsigned members, unsigned n)
{
	etcdfx_skip_unless_present();
	etcdfx_start(&sbfx_etcd, members);
	mh_start(POOL, NULL);
	test_server_kill(&srv, SIGTERM);
	unlink(srv.log);
	unlink(srv.url + strlen("ipc://"));
	memset(ms, 0, sizeof(ms));
	for (unsigned i = 0; i < n; i++) {
		mport[i] = sbfx_free_port();
	}
	snprintf(record, sizeof(record), "/tmp/cxlp-fence-%d-a.record",
	    (int)getpid());
	unlink(record);
	sbfx_spawn(&ms[0], host_of[0], tag_of[0], TTL, record, mport[0]);
	sbfx_wait_log(&ms[0], "cxlpool-metaserver: ready");
	for (unsigned i = 1; i < n; i++) {
		sbfx_spawn(&ms[i], host_of[i], tag_of[i], TTL, NULL, mport[i]);
		sbfx_wait_log(&ms[i], "role=standby leader=");
	}
	srv = ms[0]; /* itest_assert_pool_checks reads srv.pool */
}

/* one store of kv_key("f", key) through h: its rc (0 and stored) */
static int
store_one(struct cxlp_handler *h, uint32_t key)
{
	char k[64];
	size_t kl = kv_key(k, sizeof(k), "f", key);
	cxlp_page_t pg;
	bool ok = false;
	void *buf;
	int rc;

	if ((rc = cxlp_alloc(h, &pg, &buf)) != 0) {
		return rc;
	}
	kv_fill(buf, 4096, 1, key);
	rc = cxlp_store(h, k, kl, pg, 4096, 0, &ok);
	return rc != 0 ? rc : ok ? 0 : -1;
}

/* every key below n is in the pool that url serves, with its bytes */
static void
keys_there(const char *url, uint32_t n)
{
	struct cxlp_handler *h = kv_connect_timeout(url, 5000, 3);

	cr_assert_not_null(h, "no handler on %s", url);
	for (uint32_t k = 0; k < n; k++) {
		cr_assert_eq(itest_get_check(h, "f", k), 1);
	}
	cxlp_close(&h);
}

/* Stores through the leader until one fails; every one before it must
 * have succeeded. Returns how many succeeded (keys from `from`). */
static uint32_t
store_until_refused(struct cxlp_handler *h, uint32_t from)
{
	uint64_t end = sbfx_now_ms() + SBFX_SERVE_WAIT_MS;
	uint32_t k = from;

	while (store_one(h, k) == 0) {
		k++;
		cr_assert_lt(sbfx_now_ms(), end, "the leader still admits "
		    "stores %u ms after etcd went (log %s)",
		    SBFX_SERVE_WAIT_MS, ms[0].log);
		test_sleep_ms(50);
	}
	return k - from;
}

/* Of ms[0..n), the index of the one that serves, once exactly one does
 * and the others stay alive and serve nothing for QUIET_MS. */
static unsigned
exactly_one_serves(unsigned n)
{
	uint64_t end = sbfx_now_ms() + SBFX_SERVE_WAIT_MS, quiet;
	unsigned who = n;

	while (who == n) {
		for (unsigned i = 0; i < n && who == n; i++) {
			if (ms[i].pid > 0 && sbfx_serves(ms[i].url, 300)) {
				who = i;
			}
		}
		cr_assert_lt(sbfx_now_ms(), end, "no server took the pool "
		    "over in %u ms", SBFX_SERVE_WAIT_MS);
	}
	quiet = sbfx_now_ms() + QUIET_MS;
	while (sbfx_now_ms() < quiet) {
		for (unsigned i = 0; i < n; i++) {
			if (i == who || ms[i].pid == 0) {
				continue;
			}
			cr_assert_neq(waitpid(ms[i].pid, NULL, WNOHANG),
			    ms[i].pid, "%s exited (log %s)", ms[i].url,
			    ms[i].log);
			cr_assert_not(sbfx_serves(ms[i].url, 200), "%s serves "
			    "too, beside %s (logs %s, %s)", ms[i].url,
			    ms[who].url, ms[i].log, ms[who].log);
		}
		cr_assert(sbfx_serves(ms[who].url, 2000), "%s stopped "
		    "serving (log %s)", ms[who].url, ms[who].log);
		test_sleep_ms(200);
	}
	return who;
}

/* etcd loses its quorum (stop(): members killed); the leader stores on
 * until its lease would expire, then refuses and exits 3, and the
 * standby never serves; quorum back (back()), the deposed leader started
 * again as a standby: exactly one serves, with every key. */
static void
quorum_lost_then_back(void (*stop)(void), void (*back)(void))
{
	struct cxlp_handler *h;
	uint32_t before, after;
	unsigned who;

	h = kv_connect_timeout(ms[0].url, 2000, 0);
	cr_assert_not_null(h);
	for (before = 0; before < KEYS; before++) {
		cr_assert_eq(store_one(h, before), 0);
	}
	stop();
	/* inside the lease: TTL - margin - a renewal period, > 1.6 s */
	cr_assert_eq(store_one(h, before), 0, "the leader refused a store "
	    "right after etcd went (log %s)", ms[0].log);
	after = store_until_refused(h, before + 1);
	cxlp_close(&h);
	cr_log_info("%u stores after etcd went", after + 1);
	sbfx_expect_exit(&ms[0], SBFX_EXIT_LOST, SBFX_SERVE_WAIT_MS);
	cr_assert(test_server_log_has(&ms[0], "fencing deadline passed"),
	    "%s does not say its deadline passed", ms[0].log);
	cr_assert_eq(sbfx_log_count(&ms[1], "role=leader"), 0, "the standby "
	    "was elected with etcd gone (log %s)", ms[1].log);
	cr_assert_not(sbfx_serves(ms[1].url, 500));
	back();
	sbfx_spawn(&ms[0], host_of[0], tag_of[0], TTL, NULL, 0);
	who = exactly_one_serves(2);
	srv = ms[who];
	keys_there(ms[who].url, before + 1 + after);
	itest_assert_pool_checks();
}

static void
kill_the_one(void)
{
	etcdfx_kill(&sbfx_etcd, 0);
}

static void
start_the_one(void)
{
	etcdfx_restart(&sbfx_etcd, 0);
	etcdfx_wait_ready(&sbfx_etcd);
}

static void
kill_two(void)
{
	etcdfx_kill(&sbfx_etcd, 1);
	etcdfx_kill(&sbfx_etcd, 2);
}

static void
start_two(void)
{
	etcdfx_restart(&sbfx_etcd, 1);
	etcdfx_restart(&sbfx_etcd, 2);
	etcdfx_wait_ready(&sbfx_etcd);
}

Test(fencing, etcd_stopped_the_leader_serves_its_lease_out_then_one_leader)
{
	leader_and_standbys(1, 2);
	quorum_lost_then_back(kill_the_one, start_the_one);
}

Test(fencing, etcd_minority_the_leader_serves_its_lease_out_then_one_leader)
{
	leader_and_standbys(3, 2);
	quorum_lost_then_back(kill_two, start_two);
}

/* B and C stopped while A leads; A killed -9 and its lease run out at
 * etcd; B and C resumed together, so that both see the vacancy in their
 * first look and campaign at once. */
static void
vacancy_for_two(void)
{
	for (unsigned i = 1; i < NSERV; i++) {
		kill(ms[i].pid, SIGSTOP);
	}
	test_server_kill(&ms[0], SIGKILL);
	test_sleep_ms(TTL_MS + 1500); /* the lease expires at etcd */
	for (unsigned i = 1; i < NSERV; i++) {
		kill(ms[i].pid, SIGCONT);
	}
}

Test(fencing, two_standbys_race_for_one_vacancy_and_one_wins)
{
	uint64_t term0, term1;
	unsigned who, loser;
	char needle[200];

	leader_and_standbys(1, 3);
	term0 = sbfx_pool_term();
	vacancy_for_two();
	who = exactly_one_serves(3);
	cr_assert(who == 1 || who == 2);
	loser = 3 - who;
	srv = ms[who];
	cr_assert_eq(sbfx_log_count(&ms[who], "role=leader epoch="), 1,
	    "log %s", ms[who].log);
	cr_assert_eq(sbfx_log_count(&ms[loser], "role=leader"), 0,
	    "the loser %s was elected too (log %s)", ms[loser].url,
	    ms[loser].log);
	snprintf(needle, sizeof(needle), "leader=\"listen=%s ", ms[who].url);
	cr_assert(test_server_log_has(&ms[loser], needle), "the loser's log "
	    "%s does not name the winner %s", ms[loser].log, ms[who].url);
	term1 = sbfx_pool_term();
	cr_assert_gt(term1, term0, "the pool's term is %llu, was %llu",
	    (unsigned long long)term1, (unsigned long long)term0);
	itest_assert_pool_checks();
}

/* bytes of ms[0]'s record of the lines it wrote back (pool/sim.c note 5) */
static off_t
record_size(void)
{
	struct stat st;

	cr_assert_eq(stat(record, &st), 0, "no record %s", record);
	return st.st_size;
}

Test(fencing, paused_leader_resumed_writes_nothing_back_and_exits)
{
	struct test_child late;
	struct cxlp_handler *h;
	uint64_t ms_taken;
	off_t paused;
	char said;
	int st;

	leader_and_standbys(1, 2);
	h = kv_connect_timeout(ms[0].url, 2000, 0);
	cr_assert_not_null(h);
	for (uint32_t k = 0; k < KEYS; k++) {
		cr_assert_eq(store_one(h, k), 0);
	}
	cxlp_close(&h);
	cr_assert_gt(record_size(), 0, "leader A served, and its record "
	    "%s has no line it wrote back", record);
	/* a handler on A, idle, whose store is sent while A is stopped:
	 * it reaches A's workers the moment A resumes */
	mh_spawn(&late, "C", "rewrite", "late-key");
	kill(ms[0].pid, SIGSTOP);
	cr_assert_eq(waitpid(ms[0].pid, &st, WUNTRACED), ms[0].pid);
	cr_assert(WIFSTOPPED(st));
	mh_say(&late, 'g');
	ms_taken = sbfx_first_call(ms[1].url, sbfx_now_ms());
	cr_log_info("takeover after SIGSTOP: %llu ms",
	    (unsigned long long)ms_taken);
	paused = record_size();
	kill(ms[0].pid, SIGCONT);
	sbfx_expect_exit(&ms[0], SBFX_EXIT_LOST, SBFX_SERVE_WAIT_MS);
	/* not one line of the pool written back since its resume */
	cr_assert_eq(record_size(), paused, "the deposed leader wrote %lld "
	    "bytes of records (lines written back: %s) after its resume",
	    (long long)(record_size() - paused), record);
	cr_assert_not(test_child_read(&late, &said, 1), "the deposed leader "
	    "acknowledged a store after it lost its term (log %s)",
	    ms[0].log);
	(void)itest_wait(&late);
	srv = ms[1];
	h = kv_connect_timeout(ms[1].url, 5000, 3);
	cr_assert_not_null(h);
	cr_assert_eq(cxlp_exists(h, "late-key", 8), 0, "the deposed leader "
	    "stored late-key after it lost its term (log %s)", ms[0].log);
	cxlp_close(&h);
	keys_there(ms[1].url, KEYS);
	itest_assert_pool_checks();
}

/* until /metrics on port has needle (the leader lists its standbys at
 * each renewal) */
static void
metrics_until(int port, const char *needle, char *out, size_t cap)
{
	uint64_t end = sbfx_now_ms() + SBFX_SERVE_WAIT_MS;

	do {
		sbfx_metrics(port, out, cap);
		if (strstr(out, needle) != NULL) {
			return;
		}
		test_sleep_ms(100);
	} while (sbfx_now_ms() < end);
	cr_assert_fail("no '%s' in /metrics on port %d: %s", needle, port,
	    out);
}

/* pool-inspect summary --elect and A's /metrics list B (registered at
 * its first look: it may take one poll) */
static void
standby_listed(const struct test_server *b)
{
	static char out[32768];
	uint64_t end = sbfx_now_ms() + SBFX_SERVE_WAIT_MS;
	char want[256];

	do {
		sbfx_summary(out, sizeof(out), true);
		if (strstr(out, b->url) != NULL) {
			break;
		}
		test_sleep_ms(100);
	} while (sbfx_now_ms() < end);
	cr_assert(strstr(out, b->url) != NULL, "B (%s) is not among the "
	    "standbys: %s", b->url, out);
	cr_assert_eq(sbfx_json_u64(out, "\"election\"", "standby_count"), 1,
	    "%s", out);
	cr_assert_eq(sbfx_json_u64(out, "\"election\"", "term"),
	    sbfx_pool_term(), "etcd's term is not the pool's: %s", out);
	metrics_until(mport[0], "\ncxlpool_standbys 1\n", out, sizeof(out));
	snprintf(want, sizeof(want), ".sim-B\",listen=\"%s\"", b->url);
	cr_assert(strstr(out, want) != NULL, "no %s in A's /metrics: %s",
	    want, out);
}

/* B's takeover is the pool's last, from A's term to its own, in
 * pool-inspect summary and on B's /metrics */
static void
takeover_recorded(uint64_t term_a, uint64_t term_b)
{
	static char out[32768];
	char want[512];

	sbfx_summary(out, sizeof(out), false);
	cr_assert(strstr(out, "\"takeover\": {\"recorded\": true") != NULL,
	    "no takeover recorded: %s", out);
	cr_assert_eq(sbfx_json_u64(out, "\"takeover\"", "from_term"),
	    term_a, "%s", out);
	cr_assert_eq(sbfx_json_u64(out, "\"takeover\"", "to_term"), term_b,
	    "%s", out);
	cr_assert_gt(sbfx_json_u64(out, "\"takeover\"", "at_ns"), 0);
	cr_log_info("the takeover B recorded: %llu ms from the vacancy it saw "
	    "to serving", (unsigned long long)
	    sbfx_json_u64(out, "\"takeover\"", "ms"));
	snprintf(want, sizeof(want), "\ncxlpool_takeover_from_term %llu\n"
	    "# HELP cxlpool_takeover_term The term of the last takeover.\n"
	    "# TYPE cxlpool_takeover_term gauge\ncxlpool_takeover_term %llu\n",
	    (unsigned long long)term_a, (unsigned long long)term_b);
	metrics_until(mport[1], want, out, sizeof(out));
}

Test(fencing, killed_leader_standby_listed_then_its_takeover_recorded)
{
	uint64_t term_a, term_b;

	leader_and_standbys(1, 2);
	term_a = sbfx_pool_term();
	cr_assert_gt(term_a, 0, "leader A serves, and the pool has no term");
	standby_listed(&ms[1]);
	test_server_kill(&ms[0], SIGKILL);
	(void)sbfx_first_call(ms[1].url, sbfx_now_ms());
	srv = ms[1];
	term_b = sbfx_pool_term();
	cr_assert_gt(term_b, term_a);
	takeover_recorded(term_a, term_b);
	itest_assert_pool_checks();
}
