/*
 * test_standby.c -- a standby metaserver on another host takes the pool
 * over (issue 28, first step; metaserver/standby.c): on one sim pool, a
 * leader on simulated host A and a standby on host B, both --elect to
 * one etcd the test starts (tests/metaserver/etcd_fixture.c, linked;
 * skipped without an etcd binary).
 *   - A killed -9: B is elected, recovers the pool and serves; a new
 *     handler on B finds every key A acknowledged, with its bytes; the
 *     pool's term (pool-inspect summary --json) is B's, greater than
 *     A's (pool/owner.c note 3), and so is the term in B's replies as A's
 *     was in A's (protocol version 3). The takeover time (kill to B's
 *     first successful call) is logged, not asserted.
 *   - A SIGSTOPped past its TTL: B takes over; A, resumed, admits no
 *     request (a handler's HELLO waiting for it is refused), says it lost
 *     its term and exits MS_EXIT_LOST; the pool checks clean.
 */
#include <sys/wait.h>
#include <time.h>

#include "rawclient.h"
#include "standbyfx.h"

#define POOL (64 * MiB)
#define STEP 64          /* keys A acknowledges before it goes */

TestSuite(standby, .fini = standby_fini, .timeout = 240);

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

/* the term a version-3 reply of the server at url carries (a raw
 * session's HEARTBEAT: docs/protocol.md, "Versions") */
static uint64_t
reply_term(const char *url)
{
	struct raw_client c;
	struct proto_rep_hdr h;
	struct preader body;
	uint8_t *rep = NULL;
	size_t len = 0;
	struct pbuf b;

	cr_assert_eq(raw_open(&c, url), 0);
	cr_assert_eq(raw_hello(&c), 0, "%s", cxlp_errormsg());
	raw_frame(&b, &c, PROTO_VERSION, PROTO_OP_HEARTBEAT, c.token);
	cr_assert_eq(raw_call(&c, b.data, b.len, &rep, &len), 0);
	pbuf_fini(&b);
	cr_assert_eq(proto_get_rep_hdr(rep, len, &h, &body), 0);
	cr_assert_eq(h.version, PROTO_VERSION);
	free(rep);
	(void)raw_request(&c, PROTO_OP_BYE, NULL, NULL, 0, NULL);
	raw_close(&c);
	return h.term;
}

Test(standby, killed_leader_is_replaced_and_nothing_acknowledged_is_lost)
{
	static struct mh_acks acks;
	static struct mh_spec spec[256];
	struct test_server b = { 0 };
	struct test_child w;
	uint64_t t0, ms, term_a, term_b;
	uint32_t ns;

	leader_and_standby(&b, POOL);
	expect_refused(&b);
	term_a = sbfx_pool_term();
	cr_assert_gt(term_a, 0, "leader A serves, and the pool has no term");
	cr_assert_eq(reply_term(srv.url), term_a, "A's replies carry its term");
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
	cr_assert_eq(reply_term(srv.url), term_b, "B's replies carry its term");
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

	leader_and_standby(&b, POOL);
	ns = write_through_a(&w, &acks, spec, 256, false);
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
	kill(srv.pid, SIGCONT);
	cr_assert_eq(waitpid(srv.pid, &st, 0), srv.pid);
	srv.pid = 0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == SBFX_EXIT_LOST, "the "
	    "deposed leader ended with status 0x%x, not exit %d (log %s)",
	    st, SBFX_EXIT_LOST, srv.log);
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
