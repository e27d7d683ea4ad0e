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
 *     its term and exits MS_EXIT_LOST; the pool checks clean.
 */
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>

#include "etcd_fixture.h"
#include "mhtest.h"

#define POOL (64 * MiB)
#define STEP 64          /* keys A acknowledges before it goes */
#define EXIT_LOST 3      /* metaserver/ms_int.h MS_EXIT_LOST */
#define SERVE_WAIT_MS 60000u /* B's takeover, on a slow machine */

static struct etcdfx fx;
static struct test_server other; /* the server srv is not */

static void
standby_fini(void)
{
	if (other.pid > 0) {
		kill(other.pid, SIGCONT);
		test_server_kill(&other, SIGKILL);
	}
	if (other.url[0] != '\0') {
		unlink(other.url + strlen("ipc://"));
		if (getenv("CXLP_TEST_KEEP_LOGS") == NULL) {
			unlink(other.log);
		}
	}
	itest_stop();
	etcdfx_stop(&fx);
}

TestSuite(standby, .fini = standby_fini, .timeout = 240);

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* start s on host, on srv's pool, with --elect; no wait for ready */
static void
spawn_elect(struct test_server *s, const char *host, const char *tag)
{
	const char *bin = getenv("CXLP_METASERVER");
	const char *argv[] = { bin, "--pool", srv.pool, "--listen", s->url,
		"--coherence", "sim", "--evict-free", "0", "--elect", fx.spec,
		"--elect-ttl", "2s", NULL };
	struct test_spawn sp = { .path = bin, .argv = argv, .in_fd = -1,
		.out_fd = -1 };

	cr_assert_not_null(bin, "CXLP_METASERVER not set");
	snprintf(s->pool, sizeof(s->pool), "%s", srv.pool);
	snprintf(s->url, sizeof(s->url), "ipc:///tmp/cxlp-sb-%d-%s.sock",
	    (int)getpid(), tag);
	snprintf(s->log, sizeof(s->log), "/tmp/cxlp-sb-%d-%s.log",
	    (int)getpid(), tag);
	snprintf(s->sim_host, sizeof(s->sim_host), "%s", mh_host(host));
	unlink(s->log);
	sp.sim_host = s->sim_host;
	sp.err_fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600);
	cr_assert(sp.err_fd >= 0);
	s->pid = test_spawn(&sp);
	close(sp.err_fd);
	cr_assert(s->pid > 0, "cannot start %s", bin);
}

/* until s's log has needle (asserts that s lives meanwhile) */
static void
wait_log(struct test_server *s, const char *needle)
{
	for (unsigned i = 0; i < SERVE_WAIT_MS / 20; i++) {
		int st;

		if (test_server_log_has(s, needle)) {
			return;
		}
		cr_assert_neq(waitpid(s->pid, &st, WNOHANG), s->pid,
		    "%s exited (status %d) before it logged '%s' (log %s)",
		    s->url, st, needle, s->log);
		test_sleep_ms(20);
	}
	cr_assert_fail("no '%s' in %s", needle, s->log);
}

/* The pool is formatted by a plain start (so that the election's key is
 * the default, /cxlpool/<pool uuid>), then served by A as leader with B
 * as its standby. */
static void
leader_and_standby(struct test_server *b)
{
	struct test_server a;

	etcdfx_skip_unless_present();
	etcdfx_start(&fx, 1);
	mh_start(POOL, NULL);
	test_server_kill(&srv, SIGTERM);
	memset(&a, 0, sizeof(a));
	spawn_elect(&a, "A", "a");
	wait_log(&a, "cxlpool-metaserver: ready");
	spawn_elect(b, "B", "b");
	wait_log(b, "role=standby leader=");
	cr_assert(test_server_log_has(b, a.url), "B's log does not name the "
	    "leader's endpoint %s (log %s)", a.url, b->log);
	/* srv is A from here on (mh_spawn connects to srv.url) */
	unlink(srv.log);
	unlink(srv.url + strlen("ipc://"));
	srv = a;
	other = *b; /* so that a failed assertion stops B too */
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

/* The first call that succeeds on url (a connect: HELLO), polled; the
 * time it took from t0, logged as the takeover time. */
static uint64_t
first_call(const char *url, uint64_t t0)
{
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF); /* each refusal */
	for (;;) {
		struct cxlp_handler *h = kv_connect_timeout(url, 500, 0);

		if (h != NULL) {
			cxlp_close(&h);
			cxlp_set_log_fn(NULL, NULL, CXLP_LOG_ERR);
			return now_ms() - t0;
		}
		cr_assert_lt(now_ms() - t0, SERVE_WAIT_MS, "%s serves nothing "
		    "%u ms after the leader went", url, SERVE_WAIT_MS);
		test_sleep_ms(20);
	}
}

/* the pool's term, as pool-inspect summary --json reads it (the first
 * "term" is the pool's, the owner record's comes later) */
static uint64_t
pool_term_now(void)
{
	const char *bin = getenv("CXLP_POOL_INSPECT");
	char cmd[512], out[16384];
	const char *at;
	size_t n;
	FILE *f;

	cr_assert_not_null(bin, "CXLP_POOL_INSPECT not set");
	snprintf(cmd, sizeof(cmd), "%s summary --json %s", bin, srv.pool);
	cr_assert_not_null(f = popen(cmd, "r"));
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	cr_assert_eq(pclose(f), 0, "%s failed: %s", cmd, out);
	at = strstr(out, "\"term\":");
	cr_assert_not_null(at, "no term in %s", out);
	return strtoull(at + strlen("\"term\":"), NULL, 10);
}

/* srv's election lines, to the test's log: the takeover's parts */
static void
log_elect_lines(const char *path)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "grep -h 'op=elect' %s >&2", path);
	(void)system(cmd);
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
	term_a = pool_term_now();
	cr_assert_gt(term_a, 0, "leader A serves, and the pool has no term");
	ns = write_through_a(&w, &acks, spec, 256, true);
	t0 = now_ms(); /* A was killed just before (write_through_a) */
	ms = first_call(b.url, t0);
	other = srv; /* A, gone */
	srv = b;
	fprintf(stderr, "standby: takeover after kill -9 of the leader: "
	    "%llu ms to the first successful call on B (TTL 2 s)\n",
	    (unsigned long long)ms);
	log_elect_lines(srv.log);
	cr_log_info("takeover %llu ms", (unsigned long long)ms);
	term_b = pool_term_now();
	fprintf(stderr, "standby: the pool's term: %llu under A, %llu under "
	    "B\n", (unsigned long long)term_a, (unsigned long long)term_b);
	cr_assert_gt(term_b, term_a, "B serves, and the pool's term is %llu, "
	    "A's was %llu", (unsigned long long)term_b,
	    (unsigned long long)term_a);
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
	uint32_t ns;
	char said;
	int st;

	leader_and_standby(&b);
	ns = write_through_a(&w, &acks, spec, 256, false);
	/* a handler on A, idle, whose store is sent while A is stopped:
	 * it reaches A's workers the moment A resumes */
	mh_spawn(&late, "C", "rewrite", "late-key");
	kill(srv.pid, SIGSTOP);
	cr_assert_eq(waitpid(srv.pid, &st, WUNTRACED), srv.pid);
	cr_assert(WIFSTOPPED(st));
	mh_say(&late, 'g');
	t0 = now_ms();
	ms = first_call(b.url, t0);
	fprintf(stderr, "standby: takeover after SIGSTOP of the leader: "
	    "%llu ms to the first successful call on B\n",
	    (unsigned long long)ms);
	kill(srv.pid, SIGCONT);
	cr_assert_eq(waitpid(srv.pid, &st, 0), srv.pid);
	srv.pid = 0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == EXIT_LOST, "the "
	    "deposed leader ended with status 0x%x, not exit %d (log %s)",
	    st, EXIT_LOST, srv.log);
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
