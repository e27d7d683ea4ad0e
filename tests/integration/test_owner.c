/*
 * test_owner.c -- DESIGN contract 7's "one pool has one metaserver" with
 * real metaserver processes (pool/owner.c, metaserver/ms.c): a second
 * server on a served pool exits 1 naming the first and the first keeps
 * serving; kill -9 does not slow the restart; SIGTERM clears the owner
 * record. Another host is stood in for by an owner record this test
 * writes through the pool library, with a heartbeat it keeps moving (the
 * server must refuse) or leaves still (the server takes over once it is
 * stale).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "itest.h"
#include "owner.h"

#define FAR_OWNER "pid 4242 on host far-host"
#define FAR_LISTEN "tcp://10.0.0.9:7000"

static void
teardown(void)
{
	if (srv.pid > 0) {
		test_server_stop(&srv);
	}
}

TestSuite(owner, .fini = teardown, .timeout = 120);

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Run a second metaserver on srv's pool with its own endpoint, stderr to
 * log; its exit status, or -1 if it was still running after 30 s (then
 * killed: it served). */
static int
second_server(const char *log)
{
	char url[160];
	const char *bin = getenv("CXLP_METASERVER");
	int status = -1;
	pid_t pid;

	cr_assert_not_null(bin);
	snprintf(url, sizeof(url), "ipc:///tmp/cxlp-owner-%d-b.sock",
	    (int)getpid());
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, STDERR_FILENO);
		execl(bin, bin, "--pool", srv.pool, "--listen", url,
		    (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3000; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			unlink(url + strlen("ipc://"));
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		}
		test_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(url + strlen("ipc://"));
	return -1;
}

/* srv's paths, as test_server_start makes them, with no pool yet */
static void
paths(void)
{
	int id = getpid() * 100 + 99;

	memset(&srv, 0, sizeof(srv));
	snprintf(srv.pool, sizeof(srv.pool), "/dev/shm/cxlp-test-%d.pool", id);
	snprintf(srv.url, sizeof(srv.url), "ipc:///tmp/cxlp-test-%d.sock", id);
	snprintf(srv.log, sizeof(srv.log), "/tmp/cxlp-test-%d.log", id);
	unlink(srv.pool);
}

/* a pool whose owner record names a server on another host */
static struct pool *
far_owned_pool(void)
{
	struct pool_params pp = { .size = 64 * MiB };
	struct pool_owner o = { .pid = 4242, .host = "far-host",
		.boot_id = "00000000-far-boot", .listen = FAR_LISTEN };
	struct pool *p = NULL;

	paths();
	cr_assert_eq(pool_open(&p, srv.pool, POOL_CREATE, &pp), 0, "%s",
	    cxlp_errormsg());
	o.beat_ns = (uint64_t)time(NULL) * 1000000000ull;
	pool_owner_write(p, &o);
	return p;
}

static int
owner_of(struct pool_owner *o)
{
	struct pool *p = NULL;
	int rc;

	cr_assert_eq(pool_open(&p, srv.pool, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	rc = pool_owner_get(p, o);
	pool_close(&p);
	return rc;
}

Test(owner, a_second_server_exits_1_naming_the_first_which_keeps_serving)
{
	char log[128], want[64];
	struct cxlp_handler *h;

	itest_start();
	h = itest_connect();
	itest_put(h, "own", 1, 1, 4096);
	snprintf(log, sizeof(log), "/tmp/cxlp-owner-%d.log", (int)getpid());
	cr_assert_eq(second_server(log), 1, "the second server did not exit "
	    "1; see %s", log);
	snprintf(want, sizeof(want), "is served by pid %d on host ",
	    (int)srv.pid);
	cr_assert(test_file_has(log, want), "no \"%s\" in %s", want, log);
	cr_assert(test_file_has(log, srv.url), "no %s in %s", srv.url, log);
	cr_assert(!test_file_has(log, "ready"), "the second said ready");
	unlink(log);
	itest_put(h, "own", 1, 2, 4096);
	itest_get_check(h, "own", 1);
	itest_get_check(h, "own", 2);
	cxlp_close(&h);
	cr_assert_eq(test_inspect_check(srv.pool, log), 0, "see %s", log);
	unlink(log);
	cr_assert_eq(test_server_stop(&srv), 0);
}

Test(owner, a_server_killed_with_9_restarts_at_once_and_finds_its_keys)
{
	struct cxlp_handler *h;
	char want[96];
	pid_t old;
	uint64_t t0;

	itest_start();
	h = itest_connect();
	for (uint32_t k = 0; k < 8; k++) {
		itest_put(h, "k9", 1, k, 4096);
	}
	cxlp_close(&h);
	old = srv.pid;
	test_server_kill(&srv, SIGKILL);
	t0 = now_ms();
	cr_assert_eq(test_server_restart(&srv, NULL), 0);
	cr_assert_lt(now_ms() - t0, POOL_OWNER_STALE_MS, "the restart waited "
	    "for the dead server's heartbeat to go stale");
	snprintf(want, sizeof(want), "taking the pool over from pid %d ",
	    (int)old);
	cr_assert(test_server_log_has(&srv, want), "see %s", srv.log);
	cr_assert(!test_server_log_has(&srv, "waiting up to"), "see %s",
	    srv.log);
	h = itest_connect();
	for (uint32_t k = 0; k < 8; k++) {
		itest_get_check(h, "k9", k);
	}
	cxlp_close(&h);
	cr_assert_eq(test_server_stop(&srv), 0);
}

Test(owner, a_served_pool_shows_a_moving_heartbeat_that_sigterm_clears)
{
	struct pool_owner o, later;
	char out[128];
	const char *bin = getenv("CXLP_POOL_INSPECT");

	itest_start();
	cr_assert_eq(owner_of(&o), 0);
	cr_assert_eq(o.pid, (uint32_t)srv.pid);
	cr_assert(strstr(o.listen, srv.url) != NULL, "%s", o.listen);
	later = o;
	for (int i = 0; i < 100 && later.beat == o.beat; i++) {
		test_sleep_ms(100);
		cr_assert_eq(owner_of(&later), 0);
	}
	cr_assert_gt(later.beat, o.beat, "the server's heartbeat stood still");
	test_server_kill(&srv, SIGTERM);
	cr_assert_eq(owner_of(&o), CXLP_E_NOTFOUND, "pid %u left its record",
	    o.pid);
	snprintf(out, sizeof(out), "/tmp/cxlp-owner-%d.out", (int)getpid());
	cr_assert_not_null(bin);
	cr_assert_eq(test_run_logged(bin, (const char *const[]){ "pool-inspect",
	    "summary", srv.pool, NULL }, out), 0);
	cr_assert(test_file_has(out, "owner          none"), "see %s", out);
	unlink(out);
	test_server_stop(&srv);
}

static atomic_bool beating;

static void *
beat_main(void *arg)
{
	while (atomic_load(&beating)) {
		pool_owner_beat(arg);
		test_sleep_ms(200);
	}
	return NULL;
}

Test(owner, a_live_owner_on_another_host_is_refused)
{
	struct pool *p = far_owned_pool();
	char log[128];
	pthread_t t;
	int st;

	atomic_store(&beating, true);
	cr_assert_eq(pthread_create(&t, NULL, beat_main, p), 0);
	snprintf(log, sizeof(log), "/tmp/cxlp-owner-%d.log", (int)getpid());
	st = second_server(log);
	atomic_store(&beating, false);
	pthread_join(t, NULL);
	pool_close(&p);
	cr_assert_eq(st, 1, "the server did not exit 1; see %s", log);
	cr_assert(test_file_has(log, FAR_OWNER " (listen " FAR_LISTEN ")"),
	    "see %s", log);
	cr_assert(test_file_has(log, "stop it first"), "see %s", log);
	unlink(log);
	unlink(srv.pool);
}

Test(owner, a_stale_owner_on_another_host_is_taken_over_after_the_wait)
{
	struct pool *p = far_owned_pool();
	struct pool_owner o;
	struct cxlp_handler *h;
	uint64_t t0;

	pool_close(&p);
	t0 = now_ms();
	cr_assert_eq(test_server_restart(&srv, NULL), 0, "see %s", srv.log);
	cr_assert_geq(now_ms() - t0, POOL_OWNER_STALE_MS, "taken over before "
	    "the heartbeat could be stale");
	cr_assert(test_server_log_has(&srv, "taking the pool over from "
	    FAR_OWNER " (listen " FAR_LISTEN ")"), "see %s", srv.log);
	cr_assert_eq(owner_of(&o), 0);
	cr_assert_eq(o.pid, (uint32_t)srv.pid);
	h = itest_connect();
	itest_put(h, "stale", 1, 1, 4096);
	itest_get_check(h, "stale", 1);
	cxlp_close(&h);
	cr_assert_eq(test_server_stop(&srv), 0);
}
