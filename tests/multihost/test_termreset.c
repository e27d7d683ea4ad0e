/*
 * test_termreset.c -- running handlers follow a term reset (contract 12;
 * handler/net/client.c term_reset, handler/session/leader.c "The pool's
 * term"): etcd rebuilt from nothing elects a leader of a LOWER term, the
 * operator starts it with --elect-term-reset, and a handler that saw the
 * old, higher term takes its replies because the pool's superblock names
 * that term, with no connect again.
 *
 * On one sim pool: etcd, its revision pushed up by puts (so that the
 * first leader's term, its key's create revision, is well above what a
 * fresh etcd gives), leader A on host A, and a follower handler (mh.h)
 * on host C storing and reading back checksummed values through A,
 * configured with A's endpoint and the pool. Then A killed -9, etcd
 * killed, its data directory wiped and etcd started afresh on its ports,
 * and leader B started on host B with --elect-term-reset: its term is
 * checked to be lower than A's. Then:
 *   - the follower, on the handler it connected at the start, stores and
 *     reads again through B; at its stop it reads every key it
 *     acknowledged, before and after, back with its bytes;
 *   - its cxlp_counters show the one term reset accepted;
 *   - a reader on host G, through B, finds every acknowledged key too.
 * The pool's term is read on host C's fresh lines, not its cached copy
 * of the superblock (written by A's and then B's host): without the drop
 * the follower would see A's term there and drop B's replies.
 */
#include <sys/wait.h>

#include "electfx.h"
#include "etcd.h"

#define POOL (64 * MiB)
#define PUTS 40   /* etcd A's revision pushed this far before the leader */
#define BEFORE 24 /* keys the follower acknowledges through A */
#define AFTER 16  /* and through B, at least */
#define WRITER 90

static struct test_server a, b;

static void
termreset_fini(void)
{
	sbfx_stop(&a);
	sbfx_stop(&b);
	srv.pid = 0; /* a copy of a or b, stopped above */
	(void)test_server_stop(&srv); /* the pool and the simulator's files */
	etcdfx_stop(&sbfx_etcd);
}

TestSuite(termreset, .fini = termreset_fini, .timeout = 240);

/* PUTS writes to etcd, so that its revision is PUTS higher */
static void
revision_up(void)
{
	struct etcd_endpoints ep;
	struct etcd *c;
	int64_t rev = 0;

	cr_assert_eq(etcd_endpoints_parse(sbfx_etcd.spec, &ep), 0);
	cr_assert_eq(etcd_new(&c, &ep, 5000), 0);
	for (unsigned i = 0; i < PUTS; i++) {
		cr_assert_eq(etcd_put(c, "/termreset/filler", "x", 1, 0, &rev),
		    0, "%s", cxlp_errormsg());
	}
	etcd_delete(&c);
	cr_assert_geq(rev, PUTS);
}

/* etcd rebuilt from nothing on its ports: killed, its data gone */
static void
etcd_rebuilt(void)
{
	char cmd[400];

	etcdfx_kill(&sbfx_etcd, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/m0'", sbfx_etcd.dir);
	cr_assert_eq(system(cmd), 0);
	etcdfx_restart(&sbfx_etcd, 0);
	etcdfx_wait_ready(&sbfx_etcd);
}

/* a pool formatted by a plain start, then served by a (host A) as
 * elected leader, on an etcd whose revision was pushed up; srv is a */
static void
leader_a(void)
{
	etcdfx_skip_unless_present();
	etcdfx_start(&sbfx_etcd, 1);
	revision_up();
	mh_start(POOL, NULL);
	test_server_kill(&srv, SIGTERM);
	unlink(srv.log);
	unlink(srv.url + strlen("ipc://"));
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	sbfx_spawn(&a, "A", "a", "2s", NULL, 0);
	sbfx_wait_log(&a, "cxlpool-metaserver: ready");
	srv = a;
}

/* the follower on host C: A's endpoint and the pool; connected, ready */
static void
spawn_follower(struct test_child *c)
{
	char arg[300], path[4096];
	const char *argv[] = { "mh-worker", "follower", a.url, arg, NULL };

	snprintf(arg, sizeof(arg), "kR:%u:%s", WRITER, srv.pool);
	cr_assert_eq(test_worker_path(path, sizeof(path), "mh-worker"), 0);
	cr_assert_eq(test_child_spawn_host(c, path, argv, mh_host("C")), 0,
	    "cannot start %s", path);
	mh_hear(c, MH_READY);
}

/* the follower's report after its stop; asserts what it says */
static void
follower_check(struct test_child *c, struct mh_acks *acks)
{
	struct mh_follow r;

	mh_say(c, 's');
	cr_assert(mh_read_acks(c, acks, 0));
	cr_assert(acks->ended, "the follower ended without MH_END");
	cr_assert(test_child_read(c, &r, sizeof(r)), "no report");
	mh_wait_ok(c, "follower");
	cr_log_info("follower: %u keys, %u after the reset, %u reads, %u "
	    "unknown, %llu stale replies", acks->count, r.stored_after,
	    r.reads, r.unknown, (unsigned long long)r.stale_replies);
	cr_assert_gt(r.stored_after, 0, "nothing stored through B");
	cr_assert_gt(r.reads_after, 0, "nothing read back through B");
	cr_assert_eq(r.verified, acks->count, "not every acknowledged key "
	    "was read back at the stop");
	cr_assert_eq(r.unpin_rc, 0, "its pin was not carried to B");
	cr_assert_eq(r.term_resets, 1, "cxlp_counters: %llu term resets",
	    (unsigned long long)r.term_resets);
	cr_assert_leq(r.unknown, 1, "%u batches of unknown outcome, and only "
	    "one was in flight at the kill", r.unknown);
}

/* a reader on G through srv (B) finds every acknowledged key */
static void
read_all(const struct mh_acks *acks)
{
	static struct mh_spec spec[64];
	struct test_child rd;
	struct mh_result res;
	uint32_t ns;

	ns = mh_ack_specs(acks, "kR", WRITER, spec,
	    (uint32_t)(sizeof(spec) / sizeof(spec[0])));
	mh_spawn(&rd, "G", "reader", "so");
	mh_specs(&rd, spec, ns);
	res = mh_result(&rd);
	cr_assert(mh_expect_clean(&res, "reader on G through B", acks->count));
	mh_wait_ok(&rd, "reader on G");
}

Test(termreset, a_running_handler_follows_a_leader_of_a_reset_lower_term)
{
	static struct mh_acks acks;
	struct test_child w;
	uint64_t term_a, term_b;

	memset(&acks, 0, sizeof(acks));
	leader_a();
	term_a = sbfx_pool_term();
	cr_assert_gt(term_a, PUTS, "A's term %llu: the puts did not push "
	    "etcd's revision up", (unsigned long long)term_a);
	spawn_follower(&w);
	mh_say(&w, 'g');
	cr_assert(mh_read_acks(&w, &acks, BEFORE));
	test_server_kill(&a, SIGKILL);
	a.pid = 0;
	mh_say(&w, MH_FOL_KILLED);
	etcd_rebuilt();
	sbfx_spawn_flag(&b, "B", "b", "2s", NULL, 0, "--elect-term-reset");
	sbfx_wait_log(&b, "cxlpool-metaserver: ready");
	srv = b;
	term_b = sbfx_pool_term();
	cr_assert_lt(term_b, term_a, "the reset term %llu is not below A's "
	    "%llu", (unsigned long long)term_b, (unsigned long long)term_a);
	cr_assert(test_server_log_has(&b, "(term reset)"), "B's log does "
	    "not say the pool's term went back (log %s)", b.log);
	cr_assert(mh_read_acks(&w, &acks, acks.count + AFTER), "the follower "
	    "stopped: B's replies of term %llu were not taken",
	    (unsigned long long)term_b);
	follower_check(&w, &acks);
	read_all(&acks);
	itest_assert_pool_checks();
}
