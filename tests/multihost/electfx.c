/*
 * electfx.c -- see electfx.h. The metaservers are started as the
 * service manager would start them (no wait for ready: a standby prints
 * nothing until it is elected), and watched through their logs.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "electfx.h"

struct etcdfx sbfx_etcd;

/* sbfx_now_ms -- see electfx.h */
uint64_t
sbfx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* the child's environment is copied at the spawn (tests/support/proc.c),
 * so the record is set around it only */
static pid_t
spawn_with_record(struct test_spawn *sp, const char *record)
{
	pid_t pid;

	if (record != NULL) {
		setenv("CXLP_SIM_RECORD", record, 1);
	}
	pid = test_spawn(sp);
	unsetenv("CXLP_SIM_RECORD");
	return pid;
}

/* sbfx_spawn -- see electfx.h */
void
sbfx_spawn(struct test_server *s, const char *host, const char *tag,
    const char *ttl, const char *record, int metrics_port)
{
	sbfx_spawn_flag(s, host, tag, ttl, record, metrics_port, NULL);
}

/* sbfx_spawn_flag -- see electfx.h */
void
sbfx_spawn_flag(struct test_server *s, const char *host, const char *tag,
    const char *ttl, const char *record, int metrics_port, const char *flag)
{
	const char *bin = getenv("CXLP_METASERVER");
	char murl[64];
	const char *argv[20] = { bin, "--pool", srv.pool, "--listen", s->url,
		"--coherence", "sim", "--evict-free", "0", "--elect",
		sbfx_etcd.spec, "--elect-ttl", ttl };
	unsigned n = 13;
	struct test_spawn sp = { .path = bin, .argv = argv, .in_fd = -1,
		.out_fd = -1 };

	cr_assert_not_null(bin, "CXLP_METASERVER not set");
	snprintf(murl, sizeof(murl), "http://127.0.0.1:%d", metrics_port);
	if (metrics_port > 0) {
		argv[n++] = "--metrics";
		argv[n++] = murl;
	}
	if (flag != NULL) {
		argv[n++] = flag;
	}
	snprintf(s->pool, sizeof(s->pool), "%s", srv.pool);
	snprintf(s->url, sizeof(s->url), "ipc:///tmp/cxlp-sb-%d-%s.sock",
	    (int)getpid(), tag);
	snprintf(s->log, sizeof(s->log), "/tmp/cxlp-sb-%d-%s.log",
	    (int)getpid(), tag);
	snprintf(s->sim_host, sizeof(s->sim_host), "%s", mh_host(host));
	sp.sim_host = s->sim_host;
	sp.err_fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600);
	cr_assert(sp.err_fd >= 0);
	s->pid = spawn_with_record(&sp, record);
	close(sp.err_fd);
	cr_assert(s->pid > 0, "cannot start %s", bin);
}

/* sbfx_wait_log -- see electfx.h */
void
sbfx_wait_log(struct test_server *s, const char *needle)
{
	cr_assert_eq(test_server_wait_log(s, needle, SBFX_SERVE_WAIT_MS), 0,
	    "no '%s' from %s (log %s): the reason is on stderr", needle,
	    s->url, s->log);
}

/* sbfx_free_port -- see electfx.h */
int
sbfx_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* sbfx_metrics -- see electfx.h: one HTTP/1.0 GET, read to EOF */
void
sbfx_metrics(int port, char *out, size_t cap)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t n = 0;
	ssize_t r;

	cr_assert(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0,
	    "/metrics on port %d: %s", port, strerror(errno));
	cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	while (n < cap - 1 && (r = read(fd, out + n, cap - 1 - n)) > 0) {
		n += (size_t)r;
	}
	out[n] = '\0';
	close(fd);
}

/* sbfx_log_count -- see electfx.h */
unsigned
sbfx_log_count(const struct test_server *s, const char *needle)
{
	char line[4096];
	unsigned n = 0;
	FILE *f = fopen(s->log, "r");

	if (f == NULL) {
		return 0;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		n += strstr(line, needle) != NULL;
	}
	fclose(f);
	return n;
}

/* sbfx_serves -- see electfx.h */
bool
sbfx_serves(const char *url, unsigned timeout_ms)
{
	struct cxlp_handler *h;

	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF); /* each refusal */
	h = kv_connect_timeout(url, timeout_ms, 0);
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_ERR);
	if (h == NULL) {
		return false;
	}
	cxlp_close(&h);
	return true;
}

/* sbfx_first_call -- see electfx.h */
uint64_t
sbfx_first_call(const char *url, uint64_t t0)
{
	while (!sbfx_serves(url, 500)) {
		cr_assert_lt(sbfx_now_ms() - t0, SBFX_SERVE_WAIT_MS, "%s "
		    "serves nothing %u ms after the leader went", url,
		    SBFX_SERVE_WAIT_MS);
		test_sleep_ms(20);
	}
	return sbfx_now_ms() - t0;
}

/* sbfx_expect_exit -- see electfx.h */
void
sbfx_expect_exit(struct test_server *s, int status, unsigned ms)
{
	uint64_t end = sbfx_now_ms() + ms;
	pid_t r;
	int st = 0;

	while ((r = waitpid(s->pid, &st, WNOHANG)) == 0 &&
	    sbfx_now_ms() < end) {
		test_sleep_ms(20);
	}
	cr_assert_eq(r, s->pid, "%s still runs %u ms on (log %s)", s->url,
	    ms, s->log);
	s->pid = 0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == status, "%s ended "
	    "with status 0x%x, not exit %d (log %s)", s->url, st, status,
	    s->log);
}

/* sbfx_summary -- see electfx.h */
void
sbfx_summary(char *out, size_t cap, bool elect)
{
	const char *bin = getenv("CXLP_POOL_INSPECT");
	char cmd[768];
	size_t n;
	FILE *f;

	cr_assert_not_null(bin, "CXLP_POOL_INSPECT not set");
	snprintf(cmd, sizeof(cmd), "%s summary --json %s%s%s", bin, srv.pool,
	    elect ? " --elect " : "", elect ? sbfx_etcd.spec : "");
	cr_assert_not_null(f = popen(cmd, "r"));
	n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	cr_assert_eq(pclose(f), 0, "%s failed: %s", cmd, out);
}

/* sbfx_json_u64 -- see electfx.h */
uint64_t
sbfx_json_u64(const char *json, const char *after, const char *name)
{
	const char *at = after != NULL ? strstr(json, after) : json;
	char want[64];

	cr_assert_not_null(at, "no %s in %s", after, json);
	snprintf(want, sizeof(want), "\"%s\": ", name);
	at = strstr(at, want);
	cr_assert_not_null(at, "no %s in %s", name, json);
	return strtoull(at + strlen(want), NULL, 10);
}

/* sbfx_pool_term -- see electfx.h. The first "term" of the JSON is
 * the pool's; the owner record's comes later. */
uint64_t
sbfx_pool_term(void)
{
	static char out[16384];

	sbfx_summary(out, sizeof(out), false);
	return sbfx_json_u64(out, NULL, "term");
}

/* sbfx_log_elect_lines -- see electfx.h */
void
sbfx_log_elect_lines(const char *path)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "grep -h 'op=elect' %s >&2", path);
	(void)system(cmd);
}

/* sbfx_stop -- see electfx.h */
void
sbfx_stop(struct test_server *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGCONT);
		test_server_kill(s, SIGKILL);
		s->pid = 0;
	}
	if (s->url[0] != '\0') {
		unlink(s->url + strlen("ipc://"));
		if (getenv("CXLP_TEST_KEEP_LOGS") == NULL) {
			unlink(s->log);
		}
	}
}
