/*
 * standbyfx.c -- the standby tests' fixture (standbyfx.h): an etcd, a
 * leader and a standby metaserver on simulated hosts of one sim pool.
 * Shared by test_standby.c and test_follow.c.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "standbyfx.h"

#define SERVE_WAIT_MS 60000u /* a server's log line, on a slow machine */

struct etcdfx fx;
struct test_server other;

/* standby_fini -- see standbyfx.h */
void
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

/* now_ms -- see standbyfx.h */
uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* spawn_elect -- see standbyfx.h */
void
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

/* wait_log -- see standbyfx.h */
void
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

/* leader_and_standby -- see standbyfx.h */
void
leader_and_standby(struct test_server *b, uint64_t pool_size)
{
	struct test_server a;

	etcdfx_skip_unless_present();
	etcdfx_start(&fx, 1);
	mh_start(pool_size, NULL);
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

/* log_elect_lines -- see standbyfx.h */
void
log_elect_lines(const char *path)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "grep -h 'op=elect' %s >&2", path);
	(void)system(cmd);
}
