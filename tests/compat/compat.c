/*
 * compat.c -- the compat suite's fixture (compat.h): where the previous
 * release's programs are, metaservers and handlers of either release.
 *
 * Why a line-driven client rather than itest-worker: the worker is
 * built from this tree's test sources, which follow this tree's API and
 * helpers; the compat client is one file on the public API alone, so
 * the same source builds against the old header and library
 * (build-previous.sh) and the new ones (meson.build), and a test talks
 * to either the same way. Metaservers run through tests/support's
 * server.c, which starts whatever $CXLP_METASERVER names: it is set to
 * the release's binary for each start.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat.h"
#include "layout.h"

#define WAIT_MS 60000

static char new_ms[512]; /* $CXLP_METASERVER as meson set it */

/* the commit tests/compat/PREVIOUS names, into out[n]; false if none */
static bool
previous_commit(char *out, size_t n)
{
	char path[512], line[128];
	const char *src = getenv("CXLP_SRCDIR");
	FILE *f;
	bool ok = false;

	snprintf(path, sizeof(path), "%s/tests/compat/PREVIOUS",
	    src != NULL ? src : ".");
	if ((f = fopen(path, "r")) == NULL) {
		return false;
	}
	while (!ok && fgets(line, sizeof(line), f) != NULL) {
		ok = line[0] != '#' && sscanf(line, "%40s", out) == 1;
	}
	fclose(f);
	return ok && n > 40;
}

/* why the previous release cannot be used, or NULL if it can */
static const char *
previous_missing(void)
{
	static char why[256];
	char commit[64], path[512], stamp[64] = "";
	const char *dir = getenv("CXLP_PREV_DIR");
	FILE *f;

	if (dir == NULL || !previous_commit(commit, sizeof(commit))) {
		return "CXLP_PREV_DIR or tests/compat/PREVIOUS missing";
	}
	snprintf(path, sizeof(path), "%s/stamp", dir);
	if ((f = fopen(path, "r")) != NULL) {
		if (fscanf(f, "%63s", stamp) != 1) {
			stamp[0] = '\0';
		}
		fclose(f);
	}
	if (strcmp(stamp, commit) != 0) {
		snprintf(why, sizeof(why), "the previous release (%.12s) is "
		    "not built in %s: run tests/compat/build-previous.sh",
		    commit, dir);
		return why;
	}
	return NULL;
}

/* compat_need_previous -- see compat.h */
void
compat_need_previous(void)
{
	const char *why = previous_missing();
	const char *req = getenv("CXLP_COMPAT_REQUIRE");

	if (new_ms[0] == '\0' && getenv("CXLP_METASERVER") != NULL) {
		snprintf(new_ms, sizeof(new_ms), "%s",
		    getenv("CXLP_METASERVER"));
	}
	if (why == NULL) {
		return;
	}
	if (req != NULL && strcmp(req, "1") == 0) {
		cr_assert_fail("%s (CXLP_COMPAT_REQUIRE=1: it must be there)",
		    why);
	}
	cr_skip_test("%s", why);
}

/* compat_path -- see compat.h */
const char *
compat_path(enum compat_rel rel, const char *name)
{
	static char buf[2][3][512];
	static const char *const names[3] = { "cxlpool-metaserver",
		"pool-inspect", "compat-client" };
	static const char *const new_env[3] = { NULL, "CXLP_POOL_INSPECT",
		"CXLP_COMPAT_CLIENT" };
	int i = 0;

	while (i < 2 && strcmp(names[i], name) != 0) {
		i++;
	}
	if (rel == COMPAT_OLD) {
		snprintf(buf[rel][i], sizeof(buf[rel][i]), "%s/bin/%s",
		    getenv("CXLP_PREV_DIR"), names[i]);
	} else if (i == 0) {
		snprintf(buf[rel][i], sizeof(buf[rel][i]), "%s", new_ms);
	} else {
		snprintf(buf[rel][i], sizeof(buf[rel][i]), "%s",
		    getenv(new_env[i]) != NULL ? getenv(new_env[i]) : "");
	}
	return buf[rel][i];
}

static void
use_server(enum compat_rel rel)
{
	setenv("CXLP_METASERVER", compat_path(rel, "cxlpool-metaserver"), 1);
}

/* compat_server_start -- see compat.h */
int
compat_server_start(struct test_server *s, enum compat_rel rel,
    uint64_t size, const char *const extra[])
{
	use_server(rel);
	return test_server_start(s, size, extra);
}

/* compat_server_restart -- see compat.h */
int
compat_server_restart(struct test_server *s, enum compat_rel rel,
    const char *const extra[])
{
	use_server(rel);
	return test_server_restart(s, extra);
}

/* compat_server_launch -- see compat.h */
int
compat_server_launch(struct test_server *s, enum compat_rel rel,
    const char *const extra[])
{
	use_server(rel);
	return test_server_launch(s, extra);
}

/* compat_server_run -- see compat.h */
int
compat_server_run(struct test_server *s, enum compat_rel rel)
{
	const char *argv[] = { compat_path(rel, "cxlpool-metaserver"),
		"--pool", s->pool, "--listen", s->url, NULL };
	struct test_spawn sp = { argv[0], argv, -1, -1, -1, false, NULL,
		NULL, NULL };
	int status;
	pid_t pid;

	sp.err_fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
	pid = test_spawn(&sp);
	if (sp.err_fd >= 0) {
		close(sp.err_fd);
	}
	if (pid < 0) {
		return -1;
	}
	for (int i = 0; i < 3000; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			return WIFEXITED(status) ? WEXITSTATUS(status) :
			    128 + WTERMSIG(status);
		}
		test_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* one line of cl's output into out[n], within WAIT_MS */
static int
read_line(struct compat_client *cl, char *out, size_t n)
{
	for (int waited = 0; waited < WAIT_MS; waited += 100) {
		char *nl = memchr(cl->buf, '\n', cl->have);
		struct pollfd pfd = { cl->c.out_fd, POLLIN, 0 };
		ssize_t got;

		if (nl != NULL) {
			size_t len = (size_t)(nl - cl->buf);

			snprintf(out, n, "%.*s", (int)len, cl->buf);
			memmove(cl->buf, nl + 1, cl->have - len - 1);
			cl->have -= len + 1;
			return 0;
		}
		if (poll(&pfd, 1, 100) <= 0) {
			continue;
		}
		got = read(cl->c.out_fd, cl->buf + cl->have,
		    sizeof(cl->buf) - 1 - cl->have);
		if (got <= 0) {
			break;
		}
		cl->have += (size_t)got;
	}
	snprintf(out, n, "(none)");
	return -1;
}

/* the library file lib is the previous release's build */
static bool
from_previous(const char *lib)
{
	const char *dir = getenv("CXLP_PREV_DIR");
	char real_dir[PATH_MAX], real_lib[PATH_MAX];

	if (dir == NULL || realpath(dir, real_dir) == NULL ||
	    realpath(lib, real_lib) == NULL) {
		return false;
	}
	return strncmp(real_lib, real_dir, strlen(real_dir)) == 0;
}

/* compat_client_start -- see compat.h */
int
compat_client_start(struct compat_client *cl, enum compat_rel rel,
    const char *url)
{
	const char *path = compat_path(rel, "compat-client");
	const char *argv[] = { path, url, NULL };
	char line[128];

	memset(cl, 0, sizeof(*cl));
	cl->rel = rel;
	if (test_child_spawn(&cl->c, path, argv) != 0) {
		return -1;
	}
	if (read_line(cl, line, sizeof(line)) != 0 ||
	    strncmp(line, "ready ", 6) != 0) {
		fprintf(stderr, "compat: %s did not connect: %s\n", path, line);
		compat_client_stop(cl);
		return -1;
	}
	if (from_previous(line + 6) != (rel == COMPAT_OLD)) {
		fprintf(stderr, "compat: %s runs the wrong release's library: "
		    "%s\n", path, line + 6);
		compat_client_stop(cl);
		return -1;
	}
	return 0;
}

/* compat_client_cmd -- see compat.h */
int
compat_client_cmd(struct compat_client *cl, char *out, size_t n,
    const char *fmt, ...)
{
	char cmd[256];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(cmd, sizeof(cmd) - 1, fmt, ap);
	va_end(ap);
	if (len < 0 || len >= (int)sizeof(cmd) - 1) {
		return -1;
	}
	cmd[len++] = '\n';
	if (write(cl->c.go_fd, cmd, (size_t)len) != len) {
		snprintf(out, n, "(none)");
		return -1;
	}
	return read_line(cl, out, n);
}

/* compat_expect -- see compat.h */
void
compat_expect(struct compat_client *cl, const char *want, const char *fmt,
    ...)
{
	char cmd[256], got[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	compat_client_cmd(cl, got, sizeof(got), "%s", cmd);
	cr_assert_str_eq(got, want, "%s handler: \"%s\" answered \"%s\", "
	    "not \"%s\"", cl->rel == COMPAT_OLD ? "old" : "new", cmd, got,
	    want);
}

/* compat_client_stop -- see compat.h */
int
compat_client_stop(struct compat_client *cl)
{
	int status;

	if (cl->c.pid <= 0) {
		return -1;
	}
	if (write(cl->c.go_fd, "quit\n", 5) != 5) {
		kill(cl->c.pid, SIGKILL);
	}
	close(cl->c.go_fd);
	close(cl->c.out_fd);
	waitpid(cl->c.pid, &status, 0);
	cl->c.pid = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	    128 + WTERMSIG(status);
}

/* compat_inspect -- see compat.h */
int
compat_inspect(enum compat_rel rel, const char *const args[],
    const char *out_path)
{
	const char *argv[16];
	int n = 0;

	argv[n++] = compat_path(rel, "pool-inspect");
	for (int i = 0; args[i] != NULL && n < 15; i++) {
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	return test_run_logged(argv[0], argv, out_path);
}

/* compat_sb_minor -- see compat.h */
int
compat_sb_minor(const char *pool)
{
	struct pool_sb sb;
	int fd = open(pool, O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? pread(fd, &sb, sizeof(sb), 0) : -1;

	if (fd >= 0) {
		close(fd);
	}
	return got == (ssize_t)sizeof(sb) ? (int)sb.minor : -1;
}
