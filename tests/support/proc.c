/*
 * proc.c -- child processes for tests (see proc.h): the fork/exec/pipe
 * plumbing that the crash, integration and soak tests and cxlpool-bench
 * each need, written once. test_spawn is the only fork + exec; on it,
 * two shapes cover the tests: a child the test talks to over a pair of
 * pipes while it runs (itest-worker), and a tool run to completion with its
 * output kept in a file for the failure message (pool-inspect check).
 * Pipes are close-on-exec, so a child never holds another child's pipe
 * ends and each sees EOF when the test closes its own.
 *
 * libc only (no Criterion, no nng, nothing of cxlpool): cxlpool-bench,
 * which is installed, links this file alone (test_proc_dep).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"
#include "procstat.h"

void
test_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

bool
test_file_has(const char *path, const char *needle)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL) {
		return false;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

extern char **environ;

#define SIM_HOST_VAR "CXLP_SIM_HOST="

/* this process's environment with CXLP_SIM_HOST=host instead of its own
 * (host "": without it), made before the fork so that the child only
 * execs; NULL when out of memory. The caller frees the array and its
 * last entry (env_free). */
static char **
env_with_host(const char *host)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n] != NULL) {
		n++;
	}
	if ((env = calloc(n + 2, sizeof(*env))) == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (strncmp(environ[i], SIM_HOST_VAR,
		    strlen(SIM_HOST_VAR)) != 0) {
			env[k++] = environ[i];
		}
	}
	if (host[0] != '\0') {
		size_t len = strlen(SIM_HOST_VAR) + strlen(host) + 1;

		if ((env[k] = malloc(len)) == NULL) {
			free(env);
			return NULL;
		}
		snprintf(env[k], len, "%s%s", SIM_HOST_VAR, host);
	}
	return env;
}

static void
env_free(char **env, const char *host)
{
	size_t n = 0;

	if (env == NULL) {
		return;
	}
	while (env[n] != NULL) {
		n++;
	}
	if (host[0] != '\0') {
		free(env[n - 1]); /* the one entry of our own */
	}
	free(env);
}

/* in the child: the fds, the death signal and the hook, then exec (with
 * env, if not NULL) */
static _Noreturn void
spawn_child(const struct test_spawn *sp, pid_t parent, char **env)
{
	const int fds[3] = { sp->in_fd, sp->out_fd, sp->err_fd };

	if (sp->die_with_parent && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
	    getppid() != parent)) {
		_exit(127);
	}
	for (int i = 0; i < 3; i++) {
		if (fds[i] >= 0 && dup2(fds[i], i) < 0) {
			_exit(127);
		}
	}
	if (sp->before_exec != NULL && sp->before_exec(sp->arg) != 0) {
		_exit(126);
	}
	if (env != NULL) {
		execve(sp->path, (char *const *)sp->argv, env);
	} else {
		execv(sp->path, (char *const *)sp->argv);
	}
	dprintf(STDERR_FILENO, "exec %s: %s\n", sp->path, strerror(errno));
	_exit(127);
}

/* test_spawn -- see proc.h */
pid_t
test_spawn(const struct test_spawn *sp)
{
	pid_t parent = getpid(), pid;
	char **env = NULL;

	if (sp->sim_host != NULL &&
	    (env = env_with_host(sp->sim_host)) == NULL) {
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		spawn_child(sp, parent, env);
	}
	if (env != NULL) {
		env_free(env, sp->sim_host);
	}
	return pid < 0 ? -1 : pid;
}

/* test_run_logged -- see proc.h */
int
test_run_logged(const char *path, const char *const argv[],
    const char *out_path)
{
	int status, fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	struct test_spawn sp = { path, argv, -1, fd, fd, false, NULL, NULL,
		NULL };
	pid_t pid = test_spawn(&sp);

	if (fd >= 0) {
		close(fd);
	}
	if (pid < 0) {
		return -1;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		return -1;
	}
	return WEXITSTATUS(status);
}

int
test_inspect_check(const char *pool, const char *out_path)
{
	const char *bin = getenv("CXLP_POOL_INSPECT");
	const char *const argv[] = { "pool-inspect", "check", pool, NULL };

	if (bin == NULL) {
		return -1;
	}
	return test_run_logged(bin, argv, out_path);
}

/* fits -- an snprintf result r wrote all of it into room bytes */
static int
fits(int r, size_t room)
{
	return r >= 0 && (size_t)r < room ? 0 : -1;
}

int
test_worker_path(char *out, size_t n, const char *rel)
{
	const char *env = getenv("CXLP_ITEST_WORKER");
	ssize_t k;
	char *dir_end;

	if (env != NULL && env[0] != '\0') {
		return fits(snprintf(out, n, "%s", env), n);
	}
	k = readlink("/proc/self/exe", out, n - 1);
	if (k <= 0) {
		return -1;
	}
	out[k] = '\0';
	dir_end = strrchr(out, '/');
	if (dir_end == NULL) {
		return -1;
	}
	dir_end++;
	return fits(snprintf(dir_end, n - (size_t)(dir_end - out), "%s", rel),
	    n - (size_t)(dir_end - out));
}

/* test_child_spawn_host -- see proc.h. The child is killed when the test
 * process ends (PR_SET_PDEATHSIG): a test that fails an assert while its
 * worker waits to be killed (pin-and-die, hold) would otherwise leave
 * the worker holding the test's stderr, and meson would wait for that
 * pipe until the test's timeout. */
int
test_child_spawn_host(struct test_child *c, const char *path,
    const char *const argv[], const char *host)
{
	struct test_spawn sp = { path, argv, -1, -1, -1, true, NULL, NULL,
		host };
	int go[2], out[2];

	c->pid = -1;
	c->go_fd = c->out_fd = -1;
	if (pipe2(go, O_CLOEXEC) != 0) {
		return -1;
	}
	if (pipe2(out, O_CLOEXEC) != 0) {
		goto err_go;
	}
	sp.in_fd = go[0];
	sp.out_fd = out[1];
	c->pid = test_spawn(&sp);
	if (c->pid < 0) {
		goto err_out;
	}
	close(go[0]);
	close(out[1]);
	c->go_fd = go[1];
	c->out_fd = out[0];
	return 0;

err_out:
	close(out[0]);
	close(out[1]);
err_go:
	close(go[0]);
	close(go[1]);
	return -1;
}

int
test_child_spawn(struct test_child *c, const char *path,
    const char *const argv[])
{
	return test_child_spawn_host(c, path, argv, NULL);
}

bool
test_child_read(struct test_child *c, void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n > 0) {
		ssize_t k = read(c->out_fd, p, n);

		if (k < 0 && errno == EINTR) {
			continue;
		}
		if (k <= 0) {
			return false;
		}
		p += k;
		n -= (size_t)k;
	}
	return true;
}

/* test_wait_stopped -- see proc.h */
bool
test_wait_stopped(pid_t pid, unsigned ms)
{
	char state = 0;
	uint64_t start;

	for (unsigned waited = 0; waited <= ms; waited += 5) {
		if (procstat_read((uint64_t)pid, &state, &start) &&
		    state == 'T') {
			return true;
		}
		test_sleep_ms(5);
	}
	return false;
}
