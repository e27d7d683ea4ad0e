/*
 * test_takeover.c -- handlers of the previous release across a takeover
 * (issue 30): a leader and a standby of this release, elected through an
 * etcd the test starts (tests/metaserver/etcd_fixture.c), serve one host
 * pool on one ipc socket; old handlers store, pin and keep their
 * sessions; the leader is killed -9, the standby takes over, and the
 * old handlers' next calls are answered by it without the application
 * connecting again, with every key, pin and session as it was.
 *
 * Why one socket for both servers: the previous release has no
 * endpoint list and no owner-record lookup (docs/standby.md, "How
 * handlers find the leader"); it knows one URL and redials it. A
 * standby listens on nothing until it is elected, so it can be given
 * the leader's address and bind it when it takes over: the same host
 * (an ipc path, a loopback port), or an address that moves with the
 * leader. That is the condition this test runs under, and
 * docs/upgrade.md states.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "compat.h"
#include "cxlpool.h"
#include "etcd_fixture.h"

#define POOL_BYTES (64ull << 20)
#define WAIT_MS 60000u /* a takeover under ASan on a slow machine */

static struct test_server lead, standby; /* one pool, one socket */
static struct etcdfx etcd;
static char key[64], out[160];

/* the pool and socket go; the servers' logs stay unless the test
 * passed (drop_logs) */
static void
teardown(void)
{
	test_server_kill(&lead, SIGKILL);
	if (lead.pool[0] != '\0') {
		test_server_stop(standby.pool[0] != '\0' ? &standby : &lead);
	}
	etcdfx_stop(&etcd);
	unlink(out);
}

static void
drop_logs(void)
{
	if (getenv("CXLP_TEST_KEEP_LOGS") == NULL) {
		unlink(lead.log);
		unlink(standby.log);
	}
}

TestSuite(takeover, .fini = teardown, .timeout = 180);

/* the flags of both servers: host pool, one election key (given: the
 * default is read from the pool's uuid, and the leader formats the
 * pool), TTL 2 s */
static const char *const *
elect_args(void)
{
	static const char *args[] = { "--coherence", "host", "--elect", NULL,
		"--elect-key", key, "--elect-ttl", "2s", NULL };

	args[3] = etcd.spec;
	return args;
}

/* etcd, the leader (a new pool) and its standby, on one socket */
static void
leader_and_standby(void)
{
	etcdfx_skip_unless_present();
	etcdfx_start(&etcd, 1);
	snprintf(key, sizeof(key), "/cxlpool-compat/%d", (int)getpid());
	snprintf(out, sizeof(out), "/tmp/cxlp-compat-%d.out", (int)getpid());
	cr_assert_eq(compat_server_start(&lead, COMPAT_NEW, POOL_BYTES,
	    elect_args()), 0, "the leader serves (log %s)", lead.log);
	standby = lead;
	standby.pid = 0;
	snprintf(standby.log, sizeof(standby.log), "%.100s.standby",
	    lead.log);
	cr_assert_eq(compat_server_launch(&standby, COMPAT_NEW, elect_args()),
	    0);
	cr_assert_eq(test_server_wait_log(&standby, "role=standby leader=",
	    WAIT_MS), 0, "the standby waits (log %s)", standby.log);
}

static void
start(struct compat_client *cl, enum compat_rel rel)
{
	cr_assert_eq(compat_client_start(cl, rel, lead.url), 0,
	    "%s handler connects (logs %s, %s)",
	    rel == COMPAT_OLD ? "old" : "new", lead.log, standby.log);
}

static const char *
rc_line(char *buf, size_t n, const char *tag, unsigned i, int rc)
{
	snprintf(buf, n, "%s %u %d", tag, i, rc);
	return buf;
}

/* the standby's log says it took the pool over from the leader's
 * process (pid) and serves */
static void
took_over(pid_t pid)
{
	char from[64];

	snprintf(from, sizeof(from), "taking the pool over from pid %d ",
	    (int)pid);
	cr_assert_eq(test_server_wait_log(&standby,
	    "cxlpool-metaserver: ready", WAIT_MS), 0, "the standby takes "
	    "over (log %s)", standby.log);
	cr_assert(test_server_log_has(&standby, from), "no '%s' in %s", from,
	    standby.log);
}

/* both old sessions were reattached by the new leader, none begun */
static void
reattached(void)
{
	cr_assert(test_server_log_has(&standby, "reattach=1 rc=0"),
	    "no reattach in %s", standby.log);
	cr_assert(!test_server_log_has(&standby, "reattach=0"),
	    "a new session on the new leader (log %s)", standby.log);
}

/* every key, read back with its bytes by a handler of rel */
static void
read_back(struct compat_client *cl)
{
	compat_expect(cl, "ok 199", "check k 1 199");
	compat_expect(cl, "ok 20", "check kp 0 20");
	compat_expect(cl, "ok 100", "check j 0 100");
	compat_expect(cl, "ok 50", "check k2 0 50");
}

/* Old handlers a and b fill the leader's pool: a 200 keys and 20
 * pinned, b 100, 3 of them pinned, and pins on 5 of a's. The leader is
 * killed -9 and a's next call, a store sent while no one serves, is
 * answered by the new leader; both sessions were reattached there, none
 * begun; their pins are still theirs and counted (a's own delete
 * refused, b's unpin accepted), so are their keys (b may not delete
 * a's); old and new handlers read every acknowledged key back with its
 * bytes. Nothing leaks: b's close releases the pins it still holds, and
 * pool-inspect checks the pool clean after a clean stop. */
Test(takeover, old_handlers_follow_a_standby_on_the_same_address)
{
	struct compat_client a, b, n;
	const char *check[] = { "check", lead.pool, NULL };
	char w[64];
	pid_t leader;

	compat_need_previous();
	leader_and_standby();
	start(&a, COMPAT_OLD);
	start(&b, COMPAT_OLD);
	compat_expect(&a, "ok 200", "store k 0 200");
	compat_expect(&a, "ok 20", "store kp 0 20 pin");
	compat_expect(&b, "ok 100", "store j 0 100");
	compat_expect(&b, "ok", "pin k 0 5");
	compat_expect(&b, "ok", "pin j 0 3");
	compat_expect(&a, "keys 320 pins 28 sessions 2", "stats");

	/* a's next call goes out while no one serves: its retries carry
	 * it to the new leader */
	leader = lead.pid;
	test_server_kill(&lead, SIGKILL);
	compat_expect(&a, "ok 50", "store k2 0 50");
	took_over(leader);
	compat_expect(&b, "ok 5", "check k 0 5");
	compat_expect(&a, "keys 370 pins 28 sessions 2", "stats");
	reattached();
	compat_expect(&a, rc_line(w, sizeof(w), "rc", 0, CXLP_E_PINNED),
	    "del kp 0 1");
	compat_expect(&b, rc_line(w, sizeof(w), "rc", 10, CXLP_E_PERM),
	    "del k 10 1");
	compat_expect(&b, "ok", "unpin k 0 5");
	compat_expect(&a, "ok", "unpin kp 0 20");
	compat_expect(&a, "ok", "del k 0 1");
	read_back(&a);
	read_back(&b);
	start(&n, COMPAT_NEW);
	read_back(&n);
	compat_expect(&n, "keys 369 pins 3 sessions 3", "stats");
	cr_assert_eq(compat_client_stop(&a), 0);
	cr_assert_eq(compat_client_stop(&b), 0);
	cr_assert_eq(compat_client_stop(&n), 0);

	test_server_kill(&standby, SIGTERM);
	cr_assert_eq(compat_inspect(COMPAT_NEW, check, out), 0,
	    "pool-inspect check (output %s)", out);
	/* and the previous release can no longer open it (no rollback once
	 * an elected leader served it): its checksum covers the term and
	 * takeover fields, which this release keeps outside its own */
	cr_assert_neq(compat_inspect(COMPAT_OLD, check, out), 0);
	cr_assert(test_file_has(out, "superblock checksum mismatch"),
	    "the old pool-inspect's refusal, in %s", out);
	drop_logs();
}
