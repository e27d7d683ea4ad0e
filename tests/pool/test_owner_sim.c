/*
 * test_owner_sim.c -- pool/owner.c and owner_sw.c on a pool of coherence
 * sim (sim.h): hosts that share the pool without hardware coherence,
 * each a process with its own CXLP_SIM_HOST (read when it opens the
 * pool, so each is a fork()ed child that sets it first). Two hosts
 * racing for one stale record: exactly one wins. A live owner on host A
 * is seen beating by a server starting on host B, which is refused. An
 * owner whose record another host claims sees it and is told.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coh.h"
#include "cxlpool.h"
#include "owner.h"
#include "persist.h"
#include "pool_int.h"
#include "owner_simfix.h"
#include "pool_test.h"
#include "sim.h"

#define ROUNDS 12

TestSuite(owner_sim, .init = osim_setup, .fini = osim_teardown, .timeout = 120);

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* the record as host "0" reads it, through a read-only open */
static int
owner_of(struct pool_owner *o)
{
	struct pool *ro = NULL;
	int rc;

	cr_assert_eq(pool_open(&ro, osim_path, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	rc = pool_owner_get(ro, o);
	pool_close(&ro);
	return rc;
}

/* a record of a server on another host whose heartbeat stopped, written
 * back by this process's host; false if the pool would not open (no
 * Criterion: children call it too) */
static bool
stale_record(void)
{
	struct pool_owner o = { .pid = 4242, .host = "far-host",
		.boot_id = "00000000-far-boot", .listen = "tcp://10.0.0.9:7000" };
	struct pool *q = NULL;

	if (pool_open(&q, osim_path, 0, NULL) != 0) {
		return false;
	}
	o.beat_ns = (uint64_t)time(NULL) * 1000000000ull;
	pool_owner_write(q, &o);
	pool_close(&q);
	return true;
}

/* the pool opened as its owner by host A (own), then host B's claim
 * (stale_record, in a child on host B) written over A's record */
static struct pool *
owned_by_a_claimed_by_b(const struct pool_own *own)
{
	struct pool *p = NULL;
	int status;
	pid_t pid;

	setenv("CXLP_SIM_HOST", "A", 1);
	cr_assert_eq(pool_open_owned(&p, osim_path, 0, NULL, own, NULL), 0,
	    "%s", cxlp_errormsg());
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setenv("CXLP_SIM_HOST", "B", 1);
		_exit(stale_record() ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return p;
}

static void
get_byte(int fd)
{
	char c;

	while (read(fd, &c, 1) < 0 && errno == EINTR) {
	}
}

/* a racer, on simulated host `host`: decide (the watch), say so on ready,
 * claim when go says so, report 'W' (won) or 'L' (refused) on res, then,
 * having won, hold the pool until hold reaches EOF. No Criterion here. */
static void
racer(const char *host, int ready, int go, int res, int hold)
{
	struct pool_own own = { .beat_ms = 500, .stale_ms = 100 };
	struct pool *q = NULL;
	char r = 'E';
	int rc;

	setenv("CXLP_SIM_HOST", host, 1);
	if (pool_open(&q, osim_path, 0, NULL) != 0 ||
	    owner_enter(q, &own) != 0) {
		_exit(2);
	}
	(void)!write(ready, "r", 1);
	get_byte(go);
	rc = owner_claim(q, &own, false);
	r = rc == 0 ? 'W' : rc == -EBUSY ? 'L' : 'E';
	(void)!write(res, &r, 1);
	if (rc == 0) {
		get_byte(hold);
	}
	pool_close(&q);
	_exit(rc == 0 || rc == -EBUSY ? 0 : 3);
}

static void
mkpipe(int fd[2])
{
	cr_assert_eq(pipe(fd), 0);
}

/* one round: A and B both find the record stale, then claim at once */
static void
race_round(int round)
{
	static const char *const hosts[2] = { "A", "B" };
	int ready[2], go[2], res[2], hold[2], status, won = 0, winner = -1;
	struct pool_owner o;
	pid_t pid[2];
	char r;

	cr_assert(stale_record(), "%s", cxlp_errormsg());
	mkpipe(ready);
	mkpipe(go);
	mkpipe(res);
	mkpipe(hold);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		cr_assert_geq(pid[i], 0);
		if (pid[i] == 0) {
			close(hold[1]);
			racer(hosts[i], ready[1], go[0], res[1], hold[0]);
		}
	}
	close(hold[0]);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(read(ready[0], &r, 1), 1, "round %d: a racer "
		    "did not decide", round);
	}
	cr_assert_eq(write(go[1], "gg", 2), 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(read(res[0], &r, 1), 1);
		cr_assert(r == 'W' || r == 'L', "round %d: a racer failed",
		    round);
		won += r == 'W';
	}
	cr_assert_eq(won, 1, "round %d: %d of 2 hosts won the stale record",
	    round, won);
	cr_assert_eq(owner_of(&o), 0, "round %d: the winner's record is not "
	    "sealed", round);
	for (int i = 0; i < 2; i++) {
		winner = o.pid == (uint32_t)pid[i] ? i : winner;
	}
	cr_assert_geq(winner, 0, "round %d: the record names pid %u, not a "
	    "racer", round, o.pid);
	cr_assert(strncmp(o.host, hosts[winner], 1) == 0 && o.host[1] == '@',
	    "round %d: host %s", round, o.host);
	close(hold[1]); /* the winner closes, clearing the record */
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(waitpid(pid[i], &status, 0), pid[i]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		    "round %d: racer exit %d", round, status);
	}
	cr_assert_eq(owner_of(&o), CXLP_E_NOTFOUND, "round %d", round);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	close(res[0]);
	close(res[1]);
}

/* owner_sw.c note 3: the compare-and-swap of host mode would let both
 * win here, each on its own cache */
Test(owner_sim, two_hosts_racing_for_a_stale_record_one_wins)
{
	for (int round = 0; round < ROUNDS; round++) {
		race_round(round);
	}
}

/* a server on host A that beats, in a child, until hold reaches EOF */
static pid_t
live_owner(const char *host, int *hold_w)
{
	int ready[2], hold[2];
	pid_t pid;
	char r;

	mkpipe(ready);
	mkpipe(hold);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct pool_own own = { .listen = "ipc:///tmp/owner-sim-a",
			.beat_ms = 100 };
		struct pool *p = NULL;

		close(hold[1]);
		setenv("CXLP_SIM_HOST", host, 1);
		if (pool_open_owned(&p, osim_path, 0, NULL, &own, NULL) != 0) {
			_exit(2);
		}
		(void)!write(ready[1], "r", 1);
		get_byte(hold[0]);
		pool_close(&p);
		_exit(0);
	}
	close(hold[0]);
	close(ready[1]);
	cr_assert_eq(read(ready[0], &r, 1), 1, "the owner did not start");
	close(ready[0]);
	*hold_w = hold[1];
	return pid;
}

/* owner.c note 2: without the watch's drop, B reads its own cached copy
 * of the beat, which never moves, and decides to take a live pool over
 * (the claim's own check, owner_sw.c note 2a, would still refuse it) */
Test(owner_sim, a_live_owner_on_host_a_is_seen_by_host_b_which_is_refused)
{
	struct pool_own own = { .listen = "ipc:///tmp/owner-sim-b",
		.stale_ms = 3000 };
	struct pool *p = NULL;
	int hold, status, rc;
	pid_t pid = live_owner("A", &hold);

	setenv("CXLP_SIM_HOST", "B", 1);
	rc = pool_open_owned(&p, osim_path, 0, NULL, &own, NULL);
	close(hold);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(rc, -EBUSY, "host B took over a live pool: %d %s", rc,
	    cxlp_errormsg());
	cr_assert_null(p);
	cr_assert(strstr(cxlp_errormsg(), "on host A@") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert(strstr(cxlp_errormsg(), "listen ipc:///tmp/owner-sim-a") !=
	    NULL, "%s", cxlp_errormsg());
	cr_assert(!osim_log_has("taking the pool over"),
	    "the watch took a live "
	    "owner for stale: %s", osim_log);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* one simulated host is one host: a second server there meets the lock */
Test(owner_sim, a_second_server_on_host_a_is_refused_by_the_lock)
{
	struct pool_own own = { .stale_ms = 30000 };
	struct pool *p = NULL;
	int hold, status, rc;
	pid_t pid = live_owner("A", &hold);

	setenv("CXLP_SIM_HOST", "A", 1);
	rc = pool_open_owned(&p, osim_path, 0, NULL, &own, NULL);
	close(hold);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(rc, -EBUSY, "%d %s", rc, cxlp_errormsg());
	cr_assert(strstr(cxlp_errormsg(), "on host A@") != NULL, "%s",
	    cxlp_errormsg());
}

static atomic_bool lost;

static void
on_lost(void *arg)
{
	(void)arg;
	atomic_store(&lost, true);
}

/* owner_hold.c note 2, owner.c note 2: without beat_once's drop, A reads
 * its own token in its cache, beats on, and writes its line back over B's
 * claim */
Test(owner_sim, an_owner_whose_record_another_host_claims_is_told)
{
	struct pool_own own = { .beat_ms = 50, .lost = on_lost };
	struct pool_owner o;
	struct pool *p = owned_by_a_claimed_by_b(&own);

	for (int i = 0; i < 1000 && !atomic_load(&lost); i++) {
		sleep_ms(10);
	}
	cr_assert(atomic_load(&lost), "the lost callback was not called");
	cr_assert(osim_log_has("another metaserver took the pool over: pid "
	    "4242"),
	    "log: %s", osim_log);
	pool_close(&p);
	cr_assert_eq(owner_of(&o), 0, "A's beat or close overwrote B's claim");
	cr_assert_eq(o.pid, 4242);
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool resealed;

static void
log_reseal(int level, const char *msg, void *arg)
{
	(void)level;
	(void)arg;
	resealed = resealed || strstr(msg, "sealing it again") != NULL;
}

#define SLOW_BEAT_MS 2500u /* claim window 5 s */

/* host A claims the stale record: *t0 when it starts; exit 0 if it won
 * and re-sealed, 1 won without, 2 lost, 3 failed, 4 won but its record
 * does not read back whole and sealed */
static pid_t
claimant(int t0_w)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct pool_own own = { .listen = "ipc:///tmp/owner-sim-a",
			.beat_ms = SLOW_BEAT_MS, .stale_ms = 100 };
		struct pool *q = NULL;
		struct pool_owner o;
		uint64_t t0;
		int rc;

		setenv("CXLP_SIM_HOST", "A", 1);
		cxlp_set_log_fn(log_reseal, NULL, CXLP_LOG_INFO);
		if (pool_open(&q, osim_path, 0, NULL) != 0 ||
		    owner_enter(q, &own) != 0) {
			_exit(3);
		}
		t0 = mono_ns();
		(void)!write(t0_w, &t0, sizeof(t0));
		rc = owner_claim(q, &own, false);
		if (rc == 0 && (pool_owner_get(q, &o) != 0 ||
		    o.pid != (uint32_t)getpid() ||
		    strcmp(o.listen, own.listen) != 0)) {
			_exit(4);
		}
		pool_close(&q);
		_exit(rc == 0 ? (resealed ? 0 : 1) : rc == -EBUSY ? 2 : 3);
	}
	return pid;
}

/* host B: once A's claim is on the device, write lines 1-7 of a rival's
 * claim over it, as a claim whose line 0 lost to A's would leave them;
 * report when they were written back */
static pid_t
rival(int done_w)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct pool_orec r = { .word = 77, .pid = 7777,
			.host = "rival-host", .boot_id = "rival-boot-id" };
		struct pool *q = NULL;
		struct pool_orec *o;
		uint64_t word0, t;

		setenv("CXLP_SIM_HOST", "B", 1);
		if (pool_open(&q, osim_path, 0, NULL) != 0) {
			_exit(3);
		}
		o = &q->sb->owner;
		memset(r.listen, 'r', sizeof(r.listen) - 1);
		memset(r.reserved, 0, sizeof(r.reserved));
		r.checksum = layout_orec_checksum(&r);
		word0 = pool_load8(q, &o->word);
		while (pool_load8(q, &o->word) == word0) {
			sleep_ms(1);
		}
		memcpy((uint8_t *)o + 64, (uint8_t *)&r + 64, sizeof(r) - 64);
		pool_writeback(q, (uint8_t *)o + 64, sizeof(r) - 64);
		t = mono_ns();
		(void)!write(done_w, &t, sizeof(t));
		pool_close(&q);
		_exit(0);
	}
	return pid;
}

/* owner_sw.c note 2: two claims that interleave line by line leave word
 * (line 0) from one and a checksum from the other; the winner seals its
 * record again. Conclusive only if the rival's lines landed inside the
 * window, which a stall of 5 s would prevent (then it says so and
 * asserts nothing about the re-seal) */
Test(owner_sim, a_winner_whose_record_holds_a_rivals_lines_seals_it_again)
{
	int t0p[2], donep[2], status[2];
	uint64_t t0, done;
	struct pool_owner o;
	pid_t a, b;

	cr_assert(stale_record(), "%s", cxlp_errormsg());
	mkpipe(t0p);
	mkpipe(donep);
	b = rival(donep[1]);
	a = claimant(t0p[1]);
	cr_assert_eq(read(t0p[0], &t0, sizeof(t0)), (ssize_t)sizeof(t0));
	cr_assert_eq(read(donep[0], &done, sizeof(done)),
	    (ssize_t)sizeof(done));
	cr_assert_eq(waitpid(a, &status[0], 0), a);
	cr_assert_eq(waitpid(b, &status[1], 0), b);
	cr_assert(WIFEXITED(status[1]) && WEXITSTATUS(status[1]) == 0);
	cr_assert(WIFEXITED(status[0]), "%d", status[0]);
	if (done >= t0 + 2ull * SLOW_BEAT_MS * 1000000ull) {
		cr_log_warn("the rival's lines came after the claim window: "
		    "inconclusive");
		return;
	}
	cr_assert_eq(WEXITSTATUS(status[0]), 0, "A: 1 won without a "
	    "re-seal, 2 lost, 3 failed, 4 its record is not whole: %d",
	    WEXITSTATUS(status[0]));
	cr_assert_eq(owner_of(&o), CXLP_E_NOTFOUND, "A closed: cleared");
}

/* An owner that closes before its next beat has seen that another host
 * claimed its record leaves the claim alone: the release reads the
 * record's word fresh (owner_hold.c clear_record), not from its cache, where
 * it is still its own and would have the release zero the new owner's
 * record. Its next beat is 1.5 s after its own claim (whose window
 * takes 3 s), so the release is the first read of the word since B's
 * claim; a stall that lets a beat come first makes the test pass
 * without proving anything. */
Test(owner_sim, an_owner_released_before_it_beats_again_keeps_a_claim)
{
	struct pool_own own = { .beat_ms = 1500, .lost = on_lost };
	struct pool_owner o;
	struct pool *p = owned_by_a_claimed_by_b(&own);

	pool_close(&p);
	cr_assert_eq(owner_of(&o), 0, "A's release cleared B's claim (the "
	    "record's word read from A's stale cache)");
	cr_assert_eq(o.pid, 4242);
}

/* owner_sw.c note 2a across hosts: a claim compares the record with the
 * one its watch saw through a fresh copy. Host A watches a stale record
 * (owner_enter), then host B's claim lands before A's; A's claim must
 * see B's record and give up, not take the record from its cache, where
 * the stale one is still there, and overwrite B's claim with its own. */
Test(owner_sim, a_claim_after_another_hosts_claim_since_the_watch_gives_up)
{
	struct pool_own own = { .listen = "ipc:///tmp/owner-sim-a",
		.beat_ms = 100, .stale_ms = 100 };
	struct pool_owner o;
	struct pool *p = NULL;
	int status, rc;
	pid_t pid;

	cr_assert(stale_record());
	setenv("CXLP_SIM_HOST", "A", 1);
	cr_assert_eq(pool_open(&p, osim_path, 0, NULL), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(owner_enter(p, &own), 0, "%s", cxlp_errormsg());
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) { /* B's claim: a new word, pid 4343 */
		struct pool_owner b = { .pid = 4343, .host = "b-host",
			.boot_id = "00000000-b-boot" };
		struct pool *q = NULL;

		setenv("CXLP_SIM_HOST", "B", 1);
		if (pool_open(&q, osim_path, 0, NULL) != 0) {
			_exit(1);
		}
		b.beat_ns = (uint64_t)time(NULL) * 1000000000ull;
		pool_owner_write(q, &b);
		pool_close(&q);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	rc = owner_claim(p, &own, false);
	cr_assert_eq(rc, -EBUSY, "A claimed a record B claimed since A's "
	    "watch (%d: the record compared from A's stale cache)", rc);
	pool_close(&p);
	cr_assert_eq(owner_of(&o), 0);
	cr_assert_eq(o.pid, 4343, "the record is pid %u's, not B's claim",
	    o.pid);
}
