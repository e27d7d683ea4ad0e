/*
 * test_standby.c -- a standby metaserver on another host takes the pool
 * over (issue 28, first step; metaserver/standby.c): on one sim pool, a
 * leader on simulated host A and a standby on host B, both --elect to
 * one etcd the test starts (tests/metaserver/etcd_fixture.c, linked;
 * skipped without an etcd binary).
 *   - A killed -9: B is elected, recovers the pool and serves; a new
 *     handler on B finds every key A acknowledged, with its bytes; the
 *     pool's term (pool-inspect summary --json) is B's, greater than
 *     A's (pool/owner.c note 7). The takeover time (kill to B's first
 *     successful call) is logged, not asserted.
 *   - A SIGSTOPped past its TTL: B takes over; A, resumed, admits no
 *     request (a handler's HELLO waiting for it is refused), says it lost
 *     its term and exits MS_EXIT_LOST; it wrote no line of the pool
 *     back to the device after its resume (the simulator's record of
 *     A's write-backs, CXLP_SIM_RECORD, does not grow); the pool checks
 *     clean.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include "standbyfx.h"

#define POOL (64 * MiB)
#define STEP 64          /* keys A acknowledges before it goes */

static struct test_server other; /* the server srv is not */
static char record[128];         /* A's CXLP_SIM_RECORD */
static int port_a, port_b;       /* their --metrics */

static void
standby_fini(void)
{
	sbfx_stop(&other);
	if (record[0] != '\0' && getenv("CXLP_TEST_KEEP_LOGS") == NULL) {
		unlink(record);
	}
	itest_stop();
	etcdfx_stop(&sbfx_etcd);
}

TestSuite(standby, .fini = standby_fini, .timeout = 240);

/* The pool is formatted by a plain start (so that the election's key is
 * the default, /cxlpool/<pool uuid>), then served by A as leader with B
 * as its standby. */
static void
leader_and_standby(struct test_server *b)
{
	struct test_server a;

	etcdfx_skip_unless_present();
	etcdfx_start(&sbfx_etcd, 1);
	mh_start(POOL, NULL);
	test_server_kill(&srv, SIGTERM);
	memset(&a, 0, sizeof(a));
	snprintf(record, sizeof(record), "/tmp/cxlp-sb-%d-a.record",
	    (int)getpid());
	unlink(record);
	sbfx_spawn(&a, "A", "a", "2s", record, port_a = sbfx_free_port());
	sbfx_wait_log(&a, "cxlpool-metaserver: ready");
	sbfx_spawn(b, "B", "b", "2s", NULL, port_b = sbfx_free_port());
	sbfx_wait_log(b, "role=standby leader=");
	cr_assert(test_server_log_has(b, a.url), "B's log does not name the "
	    "leader's endpoint %s (log %s)", a.url, b->log);
	/* srv is A from here on (mh_spawn connects to srv.url) */
	unlink(srv.log);
	unlink(srv.url + strlen("ipc://"));
	srv = a;
	other = *b; /* so that a failed assertion stops B too */
}

/* bytes of A's record of the lines it wrote back (pool/sim.c note 5) */
static off_t
record_size(void)
{
	struct stat st;

	cr_assert_eq(stat(record, &st), 0, "no record %s", record);
	return st.st_size;
}

/* B answers no handler while it is a standby */
static void
expect_refused(const struct test_server *b)
{
	const char *argv[] = { "mh-worker", "connect", b->url, "-", NULL };
	struct test_child c;
	struct mh_conn r;
	char path[4096];

	cr_assert_eq(test_worker_path(path, sizeof(path), "mh-worker"), 0);
	cr_assert_eq(test_child_spawn_host(&c, path, argv, mh_host("D")), 0);
	cr_assert(test_child_read(&c, &r, sizeof(r)));
	cr_assert_neq(r.rc, 0, "a handler connected to the standby");
	mh_wait_ok(&c, "connect to the standby");
}

/* pool-inspect summary --elect lists B, registered, with its endpoint
 * (metaserver/elect_reg.c); the standby registers at its first look, so
 * it may take one poll */
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
	/* and A's /metrics, once its next renewal listed B */
	do {
		sbfx_metrics(port_a, out, sizeof(out));
		if (strstr(out, "\ncxlpool_standbys 1\n") != NULL) {
			break;
		}
		test_sleep_ms(100);
	} while (sbfx_now_ms() < end);
	cr_assert(strstr(out, "\ncxlpool_standbys 1\n") != NULL, "%s", out);
	snprintf(want, sizeof(want), ".sim-B\",listen=\"%s\"", b->url);
	cr_assert(strstr(out, want) != NULL, "no %s in A's /metrics: %s",
	    want, out);
}

/* B's takeover is the pool's last, from A's term to its own */
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
	fprintf(stderr, "standby: the takeover B recorded: %llu ms from the "
	    "vacancy it saw to serving\n", (unsigned long long)
	    sbfx_json_u64(out, "\"takeover\"", "ms"));
	sbfx_metrics(port_b, out, sizeof(out));
	snprintf(want, sizeof(want), "\ncxlpool_takeover_from_term %llu\n"
	    "# HELP cxlpool_takeover_term The term of the last takeover.\n"
	    "# TYPE cxlpool_takeover_term gauge\ncxlpool_takeover_term %llu\n",
	    (unsigned long long)term_a, (unsigned long long)term_b);
	cr_assert(strstr(out, want) != NULL, "B's /metrics: %s", out);
}

/* writer on C stores through A; returns its acknowledged keys' specs */
static uint32_t
write_through_a(struct test_child *w, struct mh_acks *acks,
    struct mh_spec *spec, uint32_t max, bool kill_a)
{
	uint32_t ns;
	int st;

	mh_spawn(w, "C", "writer", "kA:7:0");
	mh_say(w, 'g');
	memset(acks, 0, sizeof(*acks));
	cr_assert(mh_read_acks(w, acks, STEP));
	if (kill_a) { /* under load */
		test_server_kill(&srv, SIGKILL);
		kill(w->pid, SIGKILL);
	} else {
		mh_say(w, 's');
	}
	cr_assert(mh_read_acks(w, acks, 0)); /* to EOF */
	st = itest_wait(w);
	if (!kill_a) {
		cr_assert_eq(st, 0, "writer exited %d", st);
	}
	ns = mh_ack_specs(acks, "kA", 7, spec, max);
	return ns;
}

/* a reader on D, through srv (now B), finds every acknowledged key */
static void
read_through_b(const struct mh_spec *spec, uint32_t ns, uint32_t must)
{
	struct test_child r;
	struct mh_result res;

	mh_spawn(&r, "D", "reader", "do");
	mh_specs(&r, spec, ns);
	res = mh_result(&r);
	cr_assert(mh_expect_clean(&res, "reader on D through B", must));
	mh_wait_ok(&r, "reader on D");
}

Test(standby, killed_leader_is_replaced_and_nothing_acknowledged_is_lost)
{
	static struct mh_acks acks;
	static struct mh_spec spec[256];
	struct test_server b = { 0 };
	struct test_child w;
	uint64_t t0, ms, term_a, term_b;
	uint32_t ns;

	leader_and_standby(&b);
	expect_refused(&b);
	term_a = sbfx_pool_term();
	cr_assert_gt(term_a, 0, "leader A serves, and the pool has no term");
	standby_listed(&b);
	ns = write_through_a(&w, &acks, spec, 256, true);
	t0 = sbfx_now_ms(); /* A was killed just before (write_through_a) */
	ms = sbfx_first_call(b.url, t0);
	other = srv; /* A, gone */
	srv = b;
	fprintf(stderr, "standby: takeover after kill -9 of the leader: "
	    "%llu ms to the first successful call on B (TTL 2 s)\n",
	    (unsigned long long)ms);
	sbfx_log_elect_lines(srv.log);
	cr_log_info("takeover %llu ms", (unsigned long long)ms);
	term_b = sbfx_pool_term();
	fprintf(stderr, "standby: the pool's term: %llu under A, %llu under "
	    "B\n", (unsigned long long)term_a, (unsigned long long)term_b);
	cr_assert_gt(term_b, term_a, "B serves, and the pool's term is %llu, "
	    "A's was %llu", (unsigned long long)term_b,
	    (unsigned long long)term_a);
	takeover_recorded(term_a, term_b);
	read_through_b(spec, ns, acks.count);
	itest_assert_pool_checks();
}

Test(standby, paused_leader_resumed_writes_nothing_and_exits)
{
	static struct mh_acks acks;
	static struct mh_spec spec[256];
	struct test_server b = { 0 };
	struct test_child w, late;
	struct cxlp_handler *h;
	uint64_t t0, ms;
	off_t paused;
	uint32_t ns;
	char said;
	int st;

	leader_and_standby(&b);
	ns = write_through_a(&w, &acks, spec, 256, false);
	cr_assert_gt(record_size(), 0, "leader A served, and its record "
	    "%s has no line it wrote back", record);
	/* a handler on A, idle, whose store is sent while A is stopped:
	 * it reaches A's workers the moment A resumes */
	mh_spawn(&late, "C", "rewrite", "late-key");
	kill(srv.pid, SIGSTOP);
	cr_assert_eq(waitpid(srv.pid, &st, WUNTRACED), srv.pid);
	cr_assert(WIFSTOPPED(st));
	mh_say(&late, 'g');
	t0 = sbfx_now_ms();
	ms = sbfx_first_call(b.url, t0);
	fprintf(stderr, "standby: takeover after SIGSTOP of the leader: "
	    "%llu ms to the first successful call on B\n",
	    (unsigned long long)ms);
	paused = record_size();
	kill(srv.pid, SIGCONT);
	sbfx_expect_exit(&srv, SBFX_EXIT_LOST, SBFX_SERVE_WAIT_MS);
	/* not one line of the pool written back since its resume */
	cr_assert_eq(record_size(), paused, "the deposed leader wrote %lld "
	    "bytes of records (lines written back: %s) after its resume",
	    (long long)(record_size() - paused), record);
	cr_assert(test_server_log_has(&srv, "metaserver lost its term"),
	    "%s does not say it lost its term", srv.log);
	/* the store it held is refused: the worker says nothing more */
	cr_assert_not(test_child_read(&late, &said, 1), "the deposed leader "
	    "acknowledged a store after it lost its term (log %s)",
	    srv.log);
	st = itest_wait(&late);
	cr_log_info("the late store's worker exited %d", st);
	other = srv;
	srv = b;
	/* and it wrote nothing: the key is not in the pool B serves (a
	 * store applied late is not always acknowledged: the handler may
	 * have given up on that pipe) */
	h = kv_connect_timeout(srv.url, 5000, 3);
	cr_assert_not_null(h);
	cr_assert_eq(cxlp_exists(h, "late-key", 8), 0, "the deposed leader "
	    "stored late-key after it lost its term (log %s)", other.log);
	cxlp_close(&h);
	read_through_b(spec, ns, acks.count);
	itest_assert_pool_checks();
}
