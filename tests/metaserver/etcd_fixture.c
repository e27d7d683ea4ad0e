/*
 * etcd_fixture.c -- see etcd_fixture.h.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "etcd.h"
#include "etcd_fixture.h"

#define ETCDFX_READY_MS 30000 /* a slow machine's first start */

static const char *
etcd_path(void)
{
	const char *p = getenv("CXLP_ETCD");

	return p != NULL && p[0] != '\0' ? p : "/usr/bin/etcd";
}

void
etcdfx_skip_unless_present(void)
{
	if (access(etcd_path(), X_OK) != 0) {
		cr_skip_test("no etcd at %s (apt-get install etcd-server, or "
		    "set CXLP_ETCD)", etcd_path());
	}
}

/* A port free now on 127.0.0.1 (the kernel's pick; etcd binds it soon
 * after, and ephemeral picks rarely come back that fast). */
static int
free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	cr_assert(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static void
spawn(struct etcdfx *fx, unsigned i)
{
	char name[16], data[320], curl[64], purl[64], cluster[256], log[320];
	size_t off = 0;
	pid_t pid;

	snprintf(name, sizeof(name), "m%u", i);
	snprintf(data, sizeof(data), "%s/%s", fx->dir, name);
	snprintf(log, sizeof(log), "%s/%s.log", fx->dir, name);
	snprintf(curl, sizeof(curl), "http://127.0.0.1:%d",
	    fx->client_port[i]);
	snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", fx->peer_port[i]);
	for (unsigned j = 0; j < fx->n; j++) {
		off += (size_t)snprintf(cluster + off, sizeof(cluster) - off,
		    "%sm%u=http://127.0.0.1:%d", j > 0 ? "," : "", j,
		    fx->peer_port[j]);
	}
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		/* a test that dies (a failed assert, a crash) takes its
		 * etcd along */
		prctl(PR_SET_PDEATHSIG, SIGKILL);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(etcd_path(), "etcd", "--name", name, "--data-dir", data,
		    "--listen-client-urls", curl, "--advertise-client-urls",
		    curl, "--listen-peer-urls", purl,
		    "--initial-advertise-peer-urls", purl,
		    "--initial-cluster", cluster, "--initial-cluster-token",
		    fx->dir, (char *)NULL);
		_exit(127);
	}
	fx->pid[i] = pid;
}

void
etcdfx_wait_ready(struct etcdfx *fx)
{
	struct etcd_endpoints ep;
	struct etcd_kv kv;
	struct etcd *c;
	uint64_t end = cxlp_now_ms() + ETCDFX_READY_MS;
	int rc;

	cr_assert_eq(etcd_endpoints_parse(fx->spec, &ep), 0);
	cr_assert_eq(etcd_new(&c, &ep, 1000), 0);
	do {
		rc = etcd_get(c, "/etcdfx/ready", &kv);
		if (rc != -ENOENT && rc != 0) {
			cxlp_sleep_ms(50);
		}
	} while (rc != -ENOENT && rc != 0 && cxlp_now_ms() < end);
	etcd_delete(&c);
	cr_assert(rc == -ENOENT || rc == 0, "etcd at %s not ready in %d ms "
	    "(logs in %s)", fx->spec, ETCDFX_READY_MS, fx->dir);
}

/* A failed assert ends the test without its .fini: the data goes at
 * exit then (the members went with the test, PR_SET_PDEATHSIG). */
static struct etcdfx *atexit_fx;

static void
stop_at_exit(void)
{
	if (atexit_fx != NULL) {
		etcdfx_stop(atexit_fx);
	}
}

void
etcdfx_start(struct etcdfx *fx, unsigned n)
{
	size_t off;

	if (atexit_fx == NULL) {
		atexit(stop_at_exit);
	}
	atexit_fx = fx;

	cr_assert(n >= 1 && n <= ETCDFX_MAX);
	memset(fx, 0, sizeof(*fx));
	fx->n = n;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/cxlp-etcd-XXXXXX");
	cr_assert(mkdtemp(fx->dir) != NULL);
	off = (size_t)snprintf(fx->spec, sizeof(fx->spec), "etcd://");
	for (unsigned i = 0; i < n; i++) {
		fx->client_port[i] = free_port();
		fx->peer_port[i] = free_port();
		off += (size_t)snprintf(fx->spec + off, sizeof(fx->spec) - off,
		    "%s127.0.0.1:%d", i > 0 ? "," : "", fx->client_port[i]);
	}
	for (unsigned i = 0; i < n; i++) {
		spawn(fx, i);
	}
	etcdfx_wait_ready(fx);
}

void
etcdfx_kill(struct etcdfx *fx, unsigned i)
{
	if (fx->pid[i] > 0) {
		kill(fx->pid[i], SIGKILL);
		waitpid(fx->pid[i], NULL, 0);
		fx->pid[i] = 0;
	}
}

void
etcdfx_restart(struct etcdfx *fx, unsigned i)
{
	cr_assert_eq(fx->pid[i], 0);
	spawn(fx, i);
}

void
etcdfx_stop(struct etcdfx *fx)
{
	char cmd[300];

	for (unsigned i = 0; i < fx->n; i++) {
		etcdfx_kill(fx, i);
	}
	if (fx->dir[0] != '\0' && getenv("CXLP_KEEP_ETCD") == NULL) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
		if (system(cmd) != 0) {
			fprintf(stderr, "etcdfx: cannot remove %s\n", fx->dir);
		}
	}
	fx->dir[0] = '\0';
}
