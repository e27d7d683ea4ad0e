/*
 * test_owner.c -- pool/owner.c: one pool, one server. The lock against a
 * second server of this host, the owner record against one of another
 * host (stood in for by records this test writes and beats itself), the
 * fast take-over of a dead owner of this host, the clear at close, and
 * the warning to a server whose record another one claimed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cxlpool.h"
#include "owner.h"
#include "pool_int.h"
#include "pool_test.h"

static char path[256];
static struct pool *p, *q;
static const struct pool_params params = { .size = TEST_POOL_SIZE };
static char logbuf[8192];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void
log_keep(int level, const char *msg, void *arg)
{
	(void)level;
	(void)arg;
	pthread_mutex_lock(&log_mu);
	strncat(logbuf, msg, sizeof(logbuf) - strlen(logbuf) - 2);
	strcat(logbuf, "\n");
	pthread_mutex_unlock(&log_mu);
}

static void
setup(void)
{
	test_pool_path(path, sizeof(path), "/dev/shm");
	logbuf[0] = '\0';
	cxlp_set_log_fn(log_keep, NULL, CXLP_LOG_INFO);
}

static void
teardown(void)
{
	pool_close(&q);
	pool_close(&p);
	unlink(path);
}

TestSuite(owner, .init = setup, .fini = teardown, .timeout = 60);

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int
open_owned(struct pool **out, unsigned stale_ms)
{
	struct pool_own own = { .listen = "ipc:///tmp/owner-a.sock",
		.stale_ms = stale_ms };

	return pool_open_owned(out, path, POOL_CREATE, &params, &own, NULL);
}

static void
expect_msg(const char *needle)
{
	cr_assert(strstr(cxlp_errormsg(), needle) != NULL,
	    "message \"%s\" lacks \"%s\"", cxlp_errormsg(), needle);
}

static bool
log_has(const char *needle)
{
	bool has;

	pthread_mutex_lock(&log_mu);
	has = strstr(logbuf, needle) != NULL;
	pthread_mutex_unlock(&log_mu);
	return has;
}

/* write the record of a server on another host, through a plain open */
static void
foreign_record(struct pool **at)
{
	struct pool_owner o = { .pid = 4242, .host = "far-host",
		.boot_id = "00000000-far-boot", .listen = "tcp://10.0.0.9:7000" };

	if (*at == NULL) {
		cr_assert_eq(pool_open(at, path, POOL_CREATE, &params), 0, "%s",
		    cxlp_errormsg());
	}
	o.beat_ns = (uint64_t)time(NULL) * 1000000000ull;
	pool_owner_write(*at, &o);
}

static int
owner_of(struct pool_owner *o)
{
	struct pool *ro = NULL;
	int rc;

	cr_assert_eq(pool_open(&ro, path, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	rc = pool_owner_get(ro, o);
	pool_close(&ro);
	return rc;
}

Test(owner, a_second_server_is_refused_naming_the_first)
{
	char pid[32];

	cr_assert_eq(open_owned(&p, 0), 0, "%s", cxlp_errormsg());
	cr_assert_eq(open_owned(&q, 0), -EBUSY);
	cr_assert_null(q);
	snprintf(pid, sizeof(pid), "pid %d ", (int)getpid());
	expect_msg(pid);
	expect_msg("listen ipc:///tmp/owner-a.sock");
	expect_msg("stop it first");
}

/* pool_format runs after the lock: a reformat cannot clobber a served
 * pool */
Test(owner, a_reformat_of_a_served_pool_is_refused_and_writes_nothing)
{
	struct pool_own own = { .listen = "ipc:///tmp/owner-b.sock" };
	struct pool_region r, again;

	cr_assert_eq(open_owned(&p, 0), 0, "%s", cxlp_errormsg());
	cr_assert_eq(pool_region_alloc(p, 7, 2u << 20, 4096, &r), 0);
	cr_assert_eq(pool_open_owned(&q, path, POOL_CREATE | POOL_REFORMAT,
	    &params, &own, NULL), -EBUSY);
	cr_assert_eq(pool_region_get(p, r.id, &again), 0);
	cr_assert_eq(again.owner, 7);
}

Test(owner, a_disk_file_is_locked_too)
{
	test_pool_path(path, sizeof(path), "/tmp");
	cr_assert_eq(open_owned(&p, 0), 0, "%s", cxlp_errormsg());
	cr_assert_eq(open_owned(&q, 0), -EBUSY);
	expect_msg("is served by pid");
}

Test(owner, close_clears_the_record_and_frees_the_pool_at_once)
{
	struct pool_owner o;
	static const uint8_t zero[sizeof(struct pool_orec)];
	uint64_t t0;

	cr_assert_eq(open_owned(&p, 0), 0, "%s", cxlp_errormsg());
	cr_assert_eq(owner_of(&o), 0);
	cr_assert_eq(o.pid, (uint32_t)getpid());
	pool_close(&p);
	cr_assert_eq(owner_of(&o), CXLP_E_NOTFOUND);
	cr_assert_eq(pool_open(&q, path, 0, NULL), 0);
	cr_assert_eq(memcmp(&q->sb->owner, zero, sizeof(zero)), 0,
	    "a cleared record reads as in layout 2.0");
	pool_close(&q);
	t0 = now_ms();
	cr_assert_eq(open_owned(&p, 30000), 0, "%s", cxlp_errormsg());
	cr_assert_lt(now_ms() - t0, 5000, "no wait for a cleared record");
}

/* kill -9 leaves the record; the lock goes with the process, and a
 * record of this boot with a free lock is taken over without a wait */
Test(owner, a_dead_owner_on_this_host_is_taken_over_at_once)
{
	struct pool_owner o;
	char want[96];
	uint64_t t0;
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) { /* no Criterion here */
		_exit(open_owned(&p, 0) == 0 ? 0 : 1); /* no pool_close */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(status, 0);
	cr_assert_eq(owner_of(&o), 0, "the dead owner's record stays");
	cr_assert_eq(o.pid, (uint32_t)pid);
	t0 = now_ms();
	cr_assert_eq(open_owned(&p, 30000), 0, "%s", cxlp_errormsg());
	cr_assert_lt(now_ms() - t0, 5000, "waited for a dead owner");
	snprintf(want, sizeof(want), "taking the pool over from pid %d ",
	    (int)pid);
	cr_assert(log_has(want), "log: %s", logbuf);
	cr_assert_eq(owner_of(&o), 0);
	cr_assert_eq(o.pid, (uint32_t)getpid());
}

static atomic_bool beating;

static void *
beat_main(void *arg)
{
	while (atomic_load(&beating)) {
		pool_owner_beat(arg);
		sleep_ms(100);
	}
	return NULL;
}

Test(owner, a_live_owner_on_another_host_is_refused)
{
	pthread_t t;
	int rc;

	foreign_record(&q);
	atomic_store(&beating, true);
	cr_assert_eq(pthread_create(&t, NULL, beat_main, q), 0);
	rc = open_owned(&p, 3000);
	atomic_store(&beating, false);
	pthread_join(t, NULL);
	cr_assert_eq(rc, -EBUSY, "%d %s", rc, cxlp_errormsg());
	expect_msg("pid 4242 on host far-host");
	expect_msg("listen tcp://10.0.0.9:7000");
}

Test(owner, a_stale_owner_on_another_host_is_taken_over_after_the_wait)
{
	struct pool_owner o;
	uint64_t t0;

	foreign_record(&q);
	pool_close(&q);
	t0 = now_ms();
	cr_assert_eq(open_owned(&p, 600), 0, "%s", cxlp_errormsg());
	cr_assert_geq(now_ms() - t0, 600, "taken over before the stale time");
	cr_assert(log_has("taking the pool over from pid 4242 on host "
	    "far-host (listen tcp://10.0.0.9:7000)"), "log: %s", logbuf);
	cr_assert_eq(owner_of(&o), 0);
	cr_assert_eq(o.pid, (uint32_t)getpid());
}

/* word set, body torn: whose claim it was is unknown, so it is watched */
Test(owner, a_torn_claim_is_taken_over_after_the_wait)
{
	struct pool_owner o;
	uint64_t t0;

	foreign_record(&q);
	q->sb->owner.pid = 99;
	cr_assert_eq(pool_owner_get(q, &o), CXLP_E_CHECKSUM);
	pool_close(&q);
	t0 = now_ms();
	cr_assert_eq(open_owned(&p, 400), 0, "%s", cxlp_errormsg());
	cr_assert_geq(now_ms() - t0, 400);
}

/* note 2: of two servers that both found a record stale, the one whose
 * compare-and-swap comes second is refused (stood in for here by a
 * record written between this server's decision and its claim) */
Test(owner, a_claim_that_loses_the_race_for_a_stale_record_is_refused)
{
	struct pool_own own = { .stale_ms = 300 };
	struct pool_owner o = { .pid = 5151, .host = "near-host",
		.boot_id = "00000000-near-boot", .listen = "tcp://10.0.0.8:1" };
	struct pool *r = NULL;

	foreign_record(&q);
	cr_assert_eq(owner_enter(q, &own), 0, "%s", cxlp_errormsg());
	cr_assert_eq(pool_open(&r, path, 0, NULL), 0);
	o.beat_ns = (uint64_t)time(NULL) * 1000000000ull;
	pool_owner_write(r, &o);
	pool_close(&r);
	cr_assert_eq(owner_claim(q, &own, false), -EBUSY);
	expect_msg("pid 5151 on host near-host");
	pool_close(&q);
	cr_assert_eq(owner_of(&o), 0, "the loser cleared the winner's record");
	cr_assert_eq(o.pid, 5151);
}

static atomic_bool lost;

static void
on_lost(void *arg)
{
	(void)arg;
	atomic_store(&lost, true);
}

Test(owner, a_server_whose_record_another_claims_is_told_and_leaves_it)
{
	struct pool_own own = { .listen = "ipc:///tmp/owner-a.sock",
		.beat_ms = 50, .lost = on_lost };
	struct pool_owner o;

	cr_assert_eq(pool_open_owned(&p, path, POOL_CREATE, &params, &own,
	    NULL), 0,
	    "%s", cxlp_errormsg());
	foreign_record(&q);
	for (int i = 0; i < 500 && !atomic_load(&lost); i++) {
		sleep_ms(10);
	}
	cr_assert(atomic_load(&lost), "the lost callback was not called");
	cr_assert(log_has("another metaserver took the pool over: pid 4242"),
	    "log: %s", logbuf);
	pool_close(&p);
	cr_assert_eq(owner_of(&o), 0, "close cleared another's record");
	cr_assert_eq(o.pid, 4242);
}

Test(owner, a_read_only_open_sees_the_heartbeat_of_a_served_pool)
{
	struct pool_own own = { .beat_ms = 50 };
	struct pool_owner a, b;

	cr_assert_eq(pool_open_owned(&p, path, POOL_CREATE, &params, &own,
	    NULL), 0,
	    "%s", cxlp_errormsg());
	cr_assert_eq(pool_open(&q, path, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_owner_get(q, &a), 0);
	b = a;
	for (int i = 0; i < 500 && b.beat == a.beat; i++) {
		sleep_ms(10);
		cr_assert_eq(pool_owner_get(q, &b), 0);
	}
	cr_assert_gt(b.beat, a.beat, "the heartbeat did not move");
	cr_assert_geq(b.beat_ns, a.beat_ns);
}

Test(owner, a_read_only_open_cannot_own)
{
	struct pool_own own = { 0 };

	cr_assert_eq(pool_open(&q, path, POOL_CREATE, &params), 0);
	pool_close(&q);
	cr_assert_eq(pool_open_owned(&p, path, POOL_RDONLY, NULL, &own, NULL),
	    -EINVAL);
	cr_assert_null(p);
}
