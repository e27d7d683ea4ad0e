/*
 * test_follow.c -- handlers follow a standby that takes the pool over
 * (issue 28; handler/net/endpoints.c, handler/session/leader.c): on one
 * sim pool, leader A on simulated host A and standby B on host B, both
 * --elect to one etcd the test starts (standbyfx.h), and four follower
 * handlers (mh.h) on hosts C to F storing and reading back checksummed
 * values through A. Two know only A's endpoint and the pool's path
 * (they must find B in the owner record, another host's write, so
 * through a drop of its lines); two know the list "A,B" and no pool.
 * A is killed -9 under their load (or stopped with SIGSTOP until B
 * serves, then resumed: it exits, deposed). Then:
 *   - B serves (its log says it was elected and recovered), and every
 *     follower's calls succeed again, stores and reads, on the handler
 *     it connected at the start (no connect again), its pin carried (a
 *     stopped leader's connection, up but silent, is dialed afresh
 *     first, and left once that one cannot finish its handshake);
 *   - a batch that ended CXLP_E_UNKNOWN was one in flight at the kill
 *     (started before it, ended after), at most one per follower;
 *   - a reader on host G, through B, finds every key a follower
 *     acknowledged, before or after the kill, with its bytes.
 * The time from the kill to every follower's progress is logged, not
 * asserted (bench/ measures takeovers).
 */
#include <sys/wait.h>
#include <time.h>

#include "standbyfx.h"

#define POOL (64 * MiB)
#define WORKERS 4
#define BEFORE 24 /* keys each follower acknowledges before the kill */
#define AFTER 16  /* and after it, at least */

TestSuite(follow, .fini = standby_fini, .timeout = 240);

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *const hosts[WORKERS] = { "C", "D", "E", "F" };

/* follower i on its host: C and D with A's endpoint and the pool, E and
 * F with both endpoints and no pool; connected and ready */
static void
spawn_follower(struct test_child *c, unsigned i, const struct test_server *b)
{
	char url[400], arg[300], path[4096];
	const char *argv[] = { "mh-worker", "follower", url, arg, NULL };
	bool by_pool = i < 2;

	snprintf(url, sizeof(url), "%s%s%s", srv.url, by_pool ? "" : ",",
	    by_pool ? "" : b->url);
	snprintf(arg, sizeof(arg), "kF%u:%u:%s", i, 80 + i,
	    by_pool ? srv.pool : "-");
	cr_assert_eq(test_worker_path(path, sizeof(path), "mh-worker"), 0);
	cr_assert_eq(test_child_spawn_host(c, path, argv, mh_host(hosts[i])),
	    0, "cannot start %s", path);
	mh_hear(c, MH_READY);
}

/* follower i's report, after its stop; asserts what it says */
static void
follower_check(struct test_child *c, unsigned i, struct mh_acks *a,
    uint64_t t_kill)
{
	struct mh_follow r;

	mh_say(c, 's');
	cr_assert(mh_read_acks(c, a, 0));
	cr_assert(a->ended, "follower %u ended without MH_END", i);
	cr_assert(test_child_read(c, &r, sizeof(r)), "follower %u: no report",
	    i);
	mh_wait_ok(c, "follower");
	cr_log_info("follower %u: %u keys, %u after the kill, %u reads, "
	    "%u unknown", i, a->count, r.stored_after, r.reads, r.unknown);
	cr_assert_gt(r.stored_after, 0, "follower %u stored nothing after "
	    "the kill", i);
	cr_assert_gt(r.reads_after, 0, "follower %u read nothing back after "
	    "the kill", i);
	cr_assert_eq(r.verified, a->count, "follower %u: not every key it "
	    "acknowledged was read back at its stop", i);
	cr_assert_eq(r.unpin_rc, 0, "follower %u: the unpin after the "
	    "takeover returned %d: its pin was not carried", i, r.unpin_rc);
	cr_assert_geq(r.switches, 1, "follower %u never moved to B", i);
	cr_assert_leq(r.unknown, 1, "follower %u: %u batches of unknown "
	    "outcome, and only one was in flight at the kill", i, r.unknown);
	for (uint32_t u = 0; u < r.unknown; u++) {
		cr_assert(r.unknown_ns[u][0] < t_kill &&
		    r.unknown_ns[u][1] > t_kill, "follower %u: a batch of "
		    "unknown outcome that was not in flight at the kill "
		    "(started %+lld ms from it, ended %+lld ms)", i,
		    (long long)(r.unknown_ns[u][0] - t_kill) / 1000000,
		    (long long)(r.unknown_ns[u][1] - t_kill) / 1000000);
	}
}

/* a, stopped while B took over, resumed: it serves nothing more and
 * exits with MS_EXIT_LOST (metaserver/standby.c note 4) */
static void
deposed_exits(struct test_server *a)
{
	int st;

	kill(a->pid, SIGCONT);
	cr_assert_eq(waitpid(a->pid, &st, 0), a->pid);
	a->pid = 0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == SBFX_EXIT_LOST, "the "
	    "deposed leader ended with status 0x%x (log %s)", st, a->log);
}

/* a reader on G through srv (B now) finds every acknowledged key */
static void
read_all(struct mh_acks a[WORKERS])
{
	static struct mh_spec spec[WORKERS * 64];
	struct test_child r;
	struct mh_result res;
	uint32_t ns = 0, must = 0;

	for (unsigned i = 0; i < WORKERS; i++) {
		char prefix[16];

		snprintf(prefix, sizeof(prefix), "kF%u", i);
		ns += mh_ack_specs(&a[i], prefix, 80 + i, spec + ns,
		    (uint32_t)(sizeof(spec) / sizeof(spec[0])) - ns);
		must += a[i].count;
	}
	mh_spawn(&r, "G", "reader", "so");
	mh_specs(&r, spec, ns);
	res = mh_result(&r);
	cr_assert(mh_expect_clean(&res, "reader on G through B", must));
	mh_wait_ok(&r, "reader on G");
}

/* A stopped with sig (SIGKILL, or SIGSTOP until B serves) under the
 * followers' load; the rest of the test as the file's header says */
static void
takeover_under_load(int sig)
{
	static struct mh_acks acks[WORKERS];
	struct test_child w[WORKERS];
	struct test_server b = { 0 };
	uint64_t t_kill, ms;

	memset(acks, 0, sizeof(acks));
	leader_and_standby(&b, POOL);
	for (unsigned i = 0; i < WORKERS; i++) {
		spawn_follower(&w[i], i, &b);
	}
	for (unsigned i = 0; i < WORKERS; i++) {
		mh_say(&w[i], 'g');
	}
	for (unsigned i = 0; i < WORKERS; i++) {
		cr_assert(mh_read_acks(&w[i], &acks[i], BEFORE));
	}
	t_kill = mono_ns();
	if (sig == SIGKILL) {
		test_server_kill(&srv, SIGKILL); /* A, under load */
	} else {
		cr_assert_eq(kill(srv.pid, sig), 0);
	}
	for (unsigned i = 0; i < WORKERS; i++) {
		mh_say(&w[i], MH_FOL_KILLED);
	}
	other = srv; /* A: stopped at the end, its socket and log removed */
	srv = b;
	for (unsigned i = 0; i < WORKERS; i++) {
		cr_assert(mh_read_acks(&w[i], &acks[i],
		    acks[i].count + AFTER), "follower %u stopped", i);
	}
	ms = (mono_ns() - t_kill) / 1000000;
	fprintf(stderr, "follow: %llu ms from the leader's %s to %u more "
	    "keys of every follower through B (TTL 2 s)\n",
	    (unsigned long long)ms, sig == SIGKILL ? "kill -9" : "SIGSTOP",
	    AFTER);
	sbfx_wait_log(&srv, "op=elect role=leader term=");
	sbfx_log_elect_lines(srv.log);
	if (sig != SIGKILL) {
		deposed_exits(&other);
	}
	for (unsigned i = 0; i < WORKERS; i++) {
		follower_check(&w[i], i, &acks[i], t_kill);
	}
	read_all(acks);
	itest_assert_pool_checks();
}

Test(follow, handlers_follow_a_standby_that_takes_over_under_load)
{
	takeover_under_load(SIGKILL);
}

Test(follow, handlers_leave_a_stopped_leader_for_the_standby)
{
	takeover_under_load(SIGSTOP);
}
