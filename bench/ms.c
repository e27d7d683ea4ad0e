/*
 * ms.c -- the metaserver processes cxlpool-bench starts: the one every
 * section shares (unless --server names a running one), on a pool in
 * /dev/shm sized for the run, and those a section needs of its own (the
 * evict section's small pool, which it fills). Each is b->ms_bin with its
 * own pool, ipc socket and log, confined to --server-cpus when given;
 * stopping it removes all three, the log only after a clean exit, and
 * the simulator's files beside a pool formatted sim (POOL.sim*: each
 * simulated host's cache, twin and lock, and the line lock).
 */
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "proc.h"

#define READY_LINE "cxlpool-metaserver: ready"

static int
ms_wait_ready(struct bench_ms *m)
{
	struct timespec ts = { 0, 10000000 };

	for (int i = 0; i < 3000; i++) {
		if (test_file_has(m->log, READY_LINE)) {
			return 0;
		}
		if (waitpid(m->pid, NULL, WNOHANG) == m->pid) {
			m->pid = 0;
			break;
		}
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "cxlpool-bench: metaserver did not start; see %s\n",
	    m->log);
	return -1;
}

/* in the metaserver's child: confine it to --server-cpus, if given */
static int
server_cpus(void *arg)
{
	const struct bench *b = arg;

	return b->server_cpus != NULL ? cpus_apply(b->server_cpus) : 0;
}

/* bench_ms_start -- see bench.h */
int
bench_ms_start(const struct bench *b, const char *tag, const char *size,
    const char *const args[], struct bench_ms *m)
{
	const char *argv[BENCH_MAX_ARGS] = { b->ms_bin, "--pool", m->pool,
		"--size", size, "--listen", m->url, "--reformat" };
	struct test_spawn sp = { .argv = argv, .path = b->ms_bin,
		.in_fd = -1, .before_exec = server_cpus, .arg = (void *)b };
	int n = 8, id = (int)getpid();

	snprintf(m->pool, sizeof(m->pool), "/dev/shm/cxlpool-bench-%d%s.pool",
	    id, tag);
	snprintf(m->url, sizeof(m->url), "ipc:///tmp/cxlpool-bench-%d%s.sock",
	    id, tag);
	snprintf(m->log, sizeof(m->log), "/tmp/cxlpool-bench-%d%s.log", id,
	    tag);
	for (int i = 0; args != NULL && args[i] != NULL &&
	    n < BENCH_MAX_ARGS - 1; i++) {
		argv[n++] = args[i];
	}
	sp.out_fd = sp.err_fd = open(m->log, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	m->pid = test_spawn(&sp);
	if (sp.out_fd >= 0) {
		close(sp.out_fd);
	}
	if (m->pid < 0) {
		m->pid = 0;
		return -1;
	}
	return ms_wait_ready(m);
}

/* every file of pool's directory whose name is pool's + ".sim..." */
static void
remove_sim_files(const char *pool)
{
	char dir[sizeof(((struct bench_ms *)0)->pool)], base[sizeof(dir)];
	char full[2 * sizeof(dir) + 8];
	const char *dn;
	struct dirent *e;
	size_t blen;
	DIR *d;

	if (strchr(pool, '/') == NULL) {
		return; /* never started: no pool named */
	}
	snprintf(dir, sizeof(dir), "%s", pool);
	snprintf(base, sizeof(base), "%s.sim", basename(dir));
	snprintf(dir, sizeof(dir), "%s", pool);
	blen = strlen(base);
	if ((d = opendir(dn = dirname(dir))) == NULL) {
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, base, blen) == 0 &&
		    snprintf(full, sizeof(full), "%s/%s", dn, e->d_name) <
		    (int)sizeof(full)) {
			unlink(full);
		}
	}
	closedir(d);
}

/* bench_ms_stop -- see bench.h */
int
bench_ms_stop(struct bench_ms *m)
{
	int status = -1;

	if (m->pid > 0) {
		kill(m->pid, SIGTERM);
		waitpid(m->pid, &status, 0);
	}
	unlink(m->pool);
	remove_sim_files(m->pool);
	unlink(m->url + strlen("ipc://"));
	if (status == 0) {
		unlink(m->log);
	} else if (m->pid > 0) {
		fprintf(stderr, "cxlpool-bench: metaserver exit status %d; "
		    "log kept in %s\n", status, m->log);
	}
	m->pid = 0;
	return status == 0 ? 0 : -1;
}
