/*
 * proc.h -- test support: the child processes tests start besides the
 * metaserver (server.h): an itest-worker that a test releases through one
 * pipe and reads results from through another, pool-inspect run to
 * completion with its output kept in a file; and the small waits on a
 * file that go with them.
 *
 * Never call Criterion asserts from here: these functions return errors and
 * the test asserts. Safe to use in forked children (no Criterion state).
 */
#ifndef CXLP_TEST_PROC_H
#define CXLP_TEST_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* test_sleep_ms -- sleep ms milliseconds. */
void test_sleep_ms(unsigned ms);

/* test_wait_stopped -- whether pid is stopped (SIGSTOP, which kill sends
 * asynchronously) within ms milliseconds. */
bool test_wait_stopped(pid_t pid, unsigned ms);

/* test_file_has -- the file at path exists and its first 64 KiB contain
 * needle. */
bool test_file_has(const char *path, const char *needle);

/* test_run_logged -- run the program at path with argv (NULL-terminated;
 * argv[0] is the name it sees), its stdout and stderr to out_path (created
 * or truncated), and wait. Returns its exit status, or -1 if it could not
 * start or was killed. */
int test_run_logged(const char *path, const char *const argv[],
    const char *out_path);

/* test_inspect_check -- test_run_logged of `$CXLP_POOL_INSPECT check
 * pool`: 0 if the pool checks clean, its nonzero exit status if not, -1 if
 * CXLP_POOL_INSPECT is unset or the tool could not run. */
int test_inspect_check(const char *pool, const char *out_path);

/* test_worker_path -- where the itest-worker program is: $CXLP_ITEST_WORKER
 * if set (scripts/test.sh points it at a ThreadSanitizer build), else rel
 * taken from the directory of the running executable (e.g. "itest-worker"
 * from tests/integration, "../integration/itest-worker" from tests/crash).
 * Returns 0, or -1 if the result does not fit in out[n]. */
int test_worker_path(char *out, size_t n, const char *rel);

/*
 * The one fork + exec of the tests, the soak and the benchmark: what the
 * child's stdin, stdout and stderr are, whether it dies with the thread
 * that started it, and a hook run in the child just before the exec.
 */
struct test_spawn {
	const char *path;          /* program to exec */
	const char *const *argv;   /* NULL-terminated; argv[0] as it sees it */
	int in_fd, out_fd, err_fd; /* dup'ed onto 0, 1, 2; -1: inherited */
	/* PR_SET_PDEATHSIG SIGKILL: the child is killed when the thread
	 * that forked it ends (so never from a thread that ends first) */
	bool die_with_parent;
	/* in the child before the exec, if set; nonzero: _exit(126) */
	int (*before_exec)(void *arg);
	void *arg;
	/* the child's simulated host (pool/sim.h): its CXLP_SIM_HOST, set
	 * in the environment it is exec'd with ("": unset, host "0");
	 * NULL: this process's environment as it is */
	const char *sim_host;
};

/* test_spawn -- fork and exec sp->path as sp says. Returns the child's
 * pid, or -1 (no child). The caller reaps it and closes its own fds:
 * the child's copies are made by dup2, so pass them close-on-exec. A
 * failed exec exits 127. stdio is flushed before the fork. */
pid_t test_spawn(const struct test_spawn *sp);

/*
 * A child whose stdin is a "go" pipe and whose stdout is a results pipe:
 * it blocks until the test writes to go_fd (or closes it), then writes
 * fixed-size records that the test reads from out_fd.
 */
struct test_child {
	pid_t pid;
	int go_fd;  /* parent -> child stdin */
	int out_fd; /* child stdout -> parent */
};

/* test_child_spawn_host -- test_child_spawn of a child on simulated host
 * host (struct test_spawn's sim_host; NULL: this process's). */
int test_child_spawn_host(struct test_child *c, const char *path,
    const char *const argv[], const char *host);

/* test_child_spawn -- fork and exec path with argv (NULL-terminated;
 * argv[0] is the name it sees) on the two pipes. Returns 0, or -1 with no
 * child and no fd left open. The caller reaps it (kv_wait_child) and
 * closes both fds. */
int test_child_spawn(struct test_child *c, const char *path,
    const char *const argv[]);

/* test_child_read -- read exactly n bytes of c's output; false on EOF or
 * error. */
bool test_child_read(struct test_child *c, void *buf, size_t n);

#endif /* CXLP_TEST_PROC_H */
