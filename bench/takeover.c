/*
 * takeover.c -- the takeover section (`--only takeover`, issue 28):
 * what a standby's takeover costs a client. The section starts its own
 * etcd member on free loopback ports (Debian's etcd-server; $CXLP_ETCD
 * overrides /usr/bin/etcd: without one the section fails, saying so)
 * and two metaservers with --elect on one pool, a leader and a standby;
 * then, TAKEOVERS times in a row, it kills the leader -9 and times from
 * the kill to the first successful call on the standby (a handler's
 * connect: HELLO answered, so the pool is open, recovered and served),
 * and starts the killed one again as the new standby, as its service
 * manager would. p50/p99 are printed with the command that made them.
 *
 * Why it has this shape: the time is TTL-bound (the old lease must run
 * out at etcd before anyone may win, and a standby looks every TTL/4),
 * so it is measured end to end, from outside, as a client sees it;
 * each server's own record of its takeover (from the vacancy it saw to
 * serving: pool-inspect summary) is read from its log alongside, which
 * splits the total into waiting for etcd and opening the pool.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cxlpool.h"
#include "proc.h"

#define TAKEOVERS 20
#define TAKEOVERS_QUICK 3
#define TTL "2s"
#define WAIT_MS 60000u   /* any one step, on a slow machine */
#define RECORD_KEY "takeover_ms="

struct tk_server {
	pid_t pid;
	char url[128], log[128];
	unsigned lives;
};

struct tk {
	struct bench *b;
	char dir[64], etcd_spec[64], key[64], pool[96];
	pid_t etcd;
	struct tk_server s[2];
	double total_ms[TAKEOVERS], own_ms[TAKEOVERS];
	unsigned n;
};

static uint64_t
ms_now(void)
{
	return now_ns() / 1000000u;
}

static const char *
etcd_path(void)
{
	const char *p = getenv("CXLP_ETCD");

	return p != NULL && p[0] != '\0' ? p : "/usr/bin/etcd";
}

static int
free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0) {
		port = ntohs(a.sin_port);
	}
	if (fd >= 0) {
		close(fd);
	}
	return port;
}

/* the etcd member, its data and log in t->dir */
static int
etcd_start(struct tk *t)
{
	char data[96], curl[48], purl[48], cluster[64], log[96];
	const char *argv[] = { etcd_path(), "--name", "m0", "--data-dir", data,
		"--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls",
		purl, "--initial-cluster", cluster, NULL };
	struct test_spawn sp = { .path = argv[0], .argv = argv, .in_fd = -1 };
	int cp = free_port(), pp = free_port();

	if (access(etcd_path(), X_OK) != 0 || cp < 0 || pp < 0) {
		fprintf(stderr, "cxlpool-bench: takeover: no etcd at %s "
		    "(apt-get install etcd-server, or set CXLP_ETCD)\n",
		    etcd_path());
		return -1;
	}
	snprintf(data, sizeof(data), "%s/etcd", t->dir);
	snprintf(log, sizeof(log), "%s/etcd.log", t->dir);
	snprintf(curl, sizeof(curl), "http://127.0.0.1:%d", cp);
	snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", pp);
	snprintf(cluster, sizeof(cluster), "m0=%s", purl);
	snprintf(t->etcd_spec, sizeof(t->etcd_spec), "etcd://127.0.0.1:%d",
	    cp);
	sp.out_fd = sp.err_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	t->etcd = test_spawn(&sp);
	close(sp.out_fd);
	return t->etcd > 0 ? 0 : -1;
}

/* server i started (again): a standby until elected; its log anew */
static int
server_start(struct tk *t, unsigned i)
{
	struct tk_server *s = &t->s[i];
	const char *argv[] = { t->b->ms_bin, "--pool", t->pool, "--size",
		"256M", "--listen", s->url, "--elect", t->etcd_spec,
		"--elect-key", t->key, "--elect-ttl", TTL, NULL };
	struct test_spawn sp = { .path = argv[0], .argv = argv, .in_fd = -1 };

	snprintf(s->url, sizeof(s->url), "ipc://%s/ms%u.sock", t->dir, i);
	snprintf(s->log, sizeof(s->log), "%s/ms%u-%u.log", t->dir, i,
	    s->lives++);
	sp.out_fd = sp.err_fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	s->pid = test_spawn(&sp);
	close(sp.out_fd);
	return s->pid > 0 ? 0 : -1;
}

/* until s's log has needle (0), or it exited or WAIT_MS passed (-1) */
static int
log_wait(struct tk_server *s, const char *needle)
{
	struct timespec ts = { 0, 10000000 };
	uint64_t end = ms_now() + WAIT_MS;

	while (!test_file_has(s->log, needle)) {
		if (ms_now() > end || waitpid(s->pid, NULL, WNOHANG) ==
		    s->pid) {
			fprintf(stderr, "cxlpool-bench: takeover: no '%s' in "
			    "%s\n", needle, s->log);
			return -1;
		}
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* ms from t0 to the first connect to url that succeeds; -1 past
 * WAIT_MS */
static double
first_call(const char *url, uint64_t t0_ns)
{
	struct timespec ts = { 0, 5000000 };

	while (now_ns() - t0_ns < (uint64_t)WAIT_MS * 1000000u) {
		struct cxlp_handler *h = NULL;

		if (bench_try_connect(url, 4096, 4u << 20, false, &h) == 0) {
			double ms = (double)(now_ns() - t0_ns) / 1e6;

			cxlp_close(&h);
			return ms;
		}
		nanosleep(&ts, NULL);
	}
	return -1;
}

/* the takeover_ms the new leader logged (standby.c note 6); -1: none */
static double
own_record(const struct tk_server *s)
{
	char line[1024];
	double ms = -1;
	FILE *f = fopen(s->log, "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		const char *at = strstr(line, RECORD_KEY);

		if (at != NULL) {
			ms = strtod(at + strlen(RECORD_KEY), NULL);
		}
	}
	if (f != NULL) {
		fclose(f);
	}
	return ms;
}

/* one takeover: kill leader -9, time the standby's first call, start
 * the killed one again as the standby */
static int
one_takeover(struct tk *t, unsigned leader)
{
	struct tk_server *old = &t->s[leader], *neu = &t->s[1 - leader];
	uint64_t t0 = now_ns();
	double ms;

	kill(old->pid, SIGKILL);
	waitpid(old->pid, NULL, 0);
	old->pid = 0;
	if ((ms = first_call(neu->url, t0)) < 0) {
		fprintf(stderr, "cxlpool-bench: takeover: %s serves nothing "
		    "%u ms after the kill (log %s)\n", neu->url, WAIT_MS,
		    neu->log);
		return -1;
	}
	t->total_ms[t->n] = ms;
	t->own_ms[t->n++] = own_record(neu);
	if (server_start(t, leader) != 0 ||
	    log_wait(old, "role=standby leader=") != 0) {
		return -1;
	}
	return 0;
}

static int
tk_setup(struct tk *t)
{
	snprintf(t->dir, sizeof(t->dir), "/tmp/cxlpool-bench-tk-XXXXXX");
	if (mkdtemp(t->dir) == NULL) {
		return -1;
	}
	snprintf(t->pool, sizeof(t->pool), "/dev/shm/cxlpool-bench-tk-%d.pool",
	    (int)getpid());
	snprintf(t->key, sizeof(t->key), "/cxlpool-bench/%d", (int)getpid());
	unlink(t->pool);
	if (etcd_start(t) != 0 || server_start(t, 0) != 0 ||
	    log_wait(&t->s[0], "cxlpool-metaserver: ready") != 0 ||
	    server_start(t, 1) != 0 ||
	    log_wait(&t->s[1], "role=standby leader=") != 0) {
		return -1;
	}
	return 0;
}

static void
tk_teardown(struct tk *t)
{
	char cmd[128];

	for (unsigned i = 0; i < 2; i++) {
		if (t->s[i].pid > 0) {
			kill(t->s[i].pid, SIGKILL);
			waitpid(t->s[i].pid, NULL, 0);
		}
	}
	if (t->etcd > 0) {
		kill(t->etcd, SIGKILL);
		waitpid(t->etcd, NULL, 0);
	}
	unlink(t->pool);
	if (t->dir[0] != '\0' && getenv("CXLP_BENCH_KEEP") == NULL) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
		(void)system(cmd);
	}
}

static void
tk_report(struct tk *t)
{
	struct jw *j = &t->b->json;
	double tot[TAKEOVERS], own[TAKEOVERS];
	double p50, p99, o50, o99;

	memcpy(tot, t->total_ms, sizeof(tot));
	memcpy(own, t->own_ms, sizeof(own));
	p50 = pctl(tot, t->n, 50);
	p99 = pctl(tot, t->n, 99);
	o50 = pctl(own, t->n, 50);
	o99 = pctl(own, t->n, 99);
	printf("\n## takeover: leader killed -9, a standby elected (etcd "
	    "1 member, --elect-ttl %s, pool %s)\n", TTL, t->pool);
	printf("command: %s\n", t->b->cmdline);
	printf("%-48s %8s %8s %8s %8s\n", "", "p50 ms", "p99 ms", "min ms",
	    "max ms");
	printf("%-48s %8.0f %8.0f %8.0f %8.0f\n", "kill -9 to the first call "
	    "on the new leader", p50, p99, tot[0], tot[t->n - 1]);
	printf("%-48s %8.0f %8.0f %8.0f %8.0f\n", "  of it: vacancy seen to "
	    "serving (its record)", o50, o99, own[0], own[t->n - 1]);
	printf("%u takeovers in a row; each killed leader started again as "
	    "the standby\n", t->n);
	jw_obj(j, "takeover");
	jw_str(j, "command", t->b->cmdline);
	jw_str(j, "ttl", TTL);
	jw_i64(j, "takeovers", t->n);
	jw_num(j, "p50_ms", p50);
	jw_num(j, "p99_ms", p99);
	jw_num(j, "own_p50_ms", o50);
	jw_num(j, "own_p99_ms", o99);
	jw_arr(j, "total_ms");
	for (unsigned i = 0; i < t->n; i++) {
		jw_num(j, NULL, t->total_ms[i]);
	}
	jw_close(j);
	jw_close(j);
}

/* takeover_section -- see bench.h */
int
takeover_section(struct bench *b)
{
	static struct tk t;
	unsigned want = b->quick ? TAKEOVERS_QUICK : TAKEOVERS;
	int rc = 0;

	memset(&t, 0, sizeof(t));
	t.b = b;
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF); /* each refused connect */
	if (tk_setup(&t) != 0) {
		rc = -1;
	}
	for (unsigned i = 0; rc == 0 && i < want; i++) {
		rc = one_takeover(&t, i % 2);
	}
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_ERR);
	if (t.n > 0) {
		tk_report(&t);
	}
	if (rc != 0) {
		setenv("CXLP_BENCH_KEEP", "1", 1); /* the logs say why */
		fprintf(stderr, "cxlpool-bench: takeover: logs kept in %s\n",
		    t.dir);
	}
	tk_teardown(&t);
	return rc;
}
