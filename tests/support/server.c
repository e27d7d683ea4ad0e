/*
 * server.c -- spawn, wait for and stop a real metaserver for integration
 * tests. The child's stderr goes to a log file that the parent polls for
 * the ready line, so a test never races the server's listen().
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "server.h"

#define READY_LINE "cxlpool-metaserver: ready"
#define MAX_ARGS 32

bool
test_server_log_has(const struct test_server *s, const char *needle)
{
	return test_file_has(s->log, needle);
}

static int
build_argv(const struct test_server *s, uint64_t size,
    const char *const extra[], const char *argv[], char *sizebuf)
{
	const char *bin = getenv("CXLP_METASERVER");
	int n = 0;

	if (bin == NULL) {
		fprintf(stderr, "test_server: CXLP_METASERVER not set\n");
		return -1;
	}
	snprintf(sizebuf, 32, "%llu", (unsigned long long)size);
	argv[n++] = bin;
	argv[n++] = "--pool";
	argv[n++] = s->pool;
	if (size > 0) {
		argv[n++] = "--size";
		argv[n++] = sizebuf;
	}
	argv[n++] = "--listen";
	argv[n++] = s->url;
	for (int i = 0; extra != NULL && extra[i] != NULL && n < MAX_ARGS - 1;
	    i++) {
		argv[n++] = extra[i];
	}
	argv[n] = NULL;
	return 0;
}

/* test_server_wait_log -- see server.h */
int
test_server_wait_log(struct test_server *s, const char *needle, unsigned ms)
{
	int status;

	for (unsigned waited = 0; waited < ms; waited += 10) {
		if (test_server_log_has(s, needle)) {
			return 0;
		}
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			fprintf(stderr, "test_server: metaserver exited early "
			    "(status %d); log %s\n", status, s->log);
			s->pid = 0;
			return -1;
		}
		test_sleep_ms(10);
	}
	fprintf(stderr, "test_server: no '%s' in %s within %u ms\n", needle,
	    s->log, ms);
	return -1;
}

static int
wait_ready(struct test_server *s)
{
	if (test_server_wait_log(s, READY_LINE, 30000) == 0) {
		return 0; /* up to 30 s on a slow machine */
	}
	if (s->pid > 0) {
		fprintf(stderr, "test_server: killed it\n");
		kill(s->pid, SIGKILL); /* not left behind, half started */
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	return -1;
}

/* the metaserver on s (its pool created with size bytes, if size), its
 * stderr to s->log; not waited for */
static int
launch(struct test_server *s, uint64_t size, const char *const extra[])
{
	const char *argv[MAX_ARGS];
	struct test_spawn sp = { .argv = argv, .in_fd = -1, .out_fd = -1 };
	char sizebuf[32];

	if (build_argv(s, size, extra, argv, sizebuf) != 0) {
		return -1;
	}
	if (truncate(s->log, 0) != 0 && errno != ENOENT) {
		return -1;
	}
	/* its stderr to the log; not tied to this thread's life: the
	 * crash tests restart it from a watcher thread that ends first */
	sp.path = argv[0];
	sp.sim_host = s->sim_host[0] != '\0' ? s->sim_host : NULL;
	sp.err_fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600);
	s->pid = test_spawn(&sp);
	if (sp.err_fd >= 0) {
		close(sp.err_fd);
	}
	return s->pid < 0 ? -1 : 0;
}

static int
spawn(struct test_server *s, uint64_t size, const char *const extra[])
{
	return launch(s, size, extra) != 0 ? -1 : wait_ready(s);
}

int
test_server_start(struct test_server *s, uint64_t size,
    const char *const extra_args[])
{
	return test_server_start_host(s, size, extra_args, NULL);
}

int
test_server_start_host(struct test_server *s, uint64_t size,
    const char *const extra_args[], const char *host)
{
	static int seq;
	int id = getpid() * 100 + (seq++ % 100);

	memset(s, 0, sizeof(*s));
	if (host != NULL && snprintf(s->sim_host, sizeof(s->sim_host), "%s",
	    host) >= (int)sizeof(s->sim_host)) {
		fprintf(stderr, "test_server: host name %s too long\n", host);
		return -1;
	}
	snprintf(s->pool, sizeof(s->pool), "/dev/shm/cxlp-test-%d.pool", id);
	snprintf(s->url, sizeof(s->url), "ipc:///tmp/cxlp-test-%d.sock", id);
	snprintf(s->log, sizeof(s->log), "/tmp/cxlp-test-%d.log", id);
	unlink(s->pool);
	return spawn(s, size, extra_args);
}

int
test_server_restart(struct test_server *s, const char *const extra_args[])
{
	return spawn(s, 0, extra_args);
}

int
test_server_launch(struct test_server *s, const char *const extra_args[])
{
	return launch(s, 0, extra_args);
}

void
test_server_kill(struct test_server *s, int sig)
{
	if (s->pid > 0) {
		kill(s->pid, sig);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
}

/* SIGTERM s and reap it, waiting at most ms (0: for ever); if it is
 * still running then, SIGKILL it. Returns its exit status as waitpid gave
 * it, or -1 if it had to be killed or could not be reaped. */
static int
term_and_reap(struct test_server *s, unsigned ms)
{
	int status = -1;

	kill(s->pid, SIGCONT); /* a test may have stopped it */
	kill(s->pid, SIGTERM);
	for (unsigned waited = 0; ms > 0 && waited < ms; waited += 10) {
		pid_t r = waitpid(s->pid, &status, WNOHANG);

		if (r != 0) {
			s->pid = 0;
			return r == -1 ? -1 : status;
		}
		test_sleep_ms(10);
	}
	if (ms > 0) {
		kill(s->pid, SIGKILL);
	}
	if (waitpid(s->pid, &status, 0) < 0 || ms > 0) {
		status = -1;
	}
	s->pid = 0;
	return status;
}

/* the simulator's files beside s's pool: every host's cache, twin and
 * lock, and the line locks (pool/sim.c note 1) */
static void
unlink_sim_files(const struct test_server *s)
{
	char pat[160];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s.sim*", s->pool);
	if (glob(pat, GLOB_NOSORT, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			unlink(g.gl_pathv[i]);
		}
	}
	globfree(&g);
}

int
test_server_stop_within(struct test_server *s, unsigned ms)
{
	int status = s->pid > 0 ? term_and_reap(s, ms) : -1;

	unlink(s->pool);
	unlink_sim_files(s);
	unlink(s->url + strlen("ipc://"));
	if (status == 0) {
		if (getenv("CXLP_TEST_KEEP_LOGS") == NULL) {
			unlink(s->log); /* kept on request, for a flaky run */
		}
	}
	return status;
}

int
test_server_stop(struct test_server *s)
{
	return test_server_stop_within(s, 0);
}
