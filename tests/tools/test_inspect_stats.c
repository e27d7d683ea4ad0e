/*
 * test_inspect_stats.c -- pool-inspect stats (tools/pool-inspect) against
 * a live metaserver (CXLP_METASERVER), with a raw protocol client as the
 * handler to be listed, and without one.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inspect_fixture.h"
#include "rawclient.h"

TestSuite(inspect, .init = inspect_setup, .fini = inspect_teardown);

/* start a metaserver on a fresh pool; returns its pid once it serves */
static pid_t
start_server(const char *url)
{
	const char *ms = getenv("CXLP_METASERVER");
	char args[512];
	pid_t pid;

	if (ms == NULL) {
		cr_skip_test("CXLP_METASERVER unset (run via meson)");
	}
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execl(ms, ms, "--pool", path, "--size", "64M", "--listen", url,
		    "--log-level", "err", (char *)NULL);
		_exit(127);
	}
	snprintf(args, sizeof(args), "stats --server %s", url);
	for (int i = 0; i < 300 && run_to(args, false) != 0; i++) {
		usleep(50 * 1000); /* polling for readiness, not timing */
	}
	return pid;
}

static void
stop_server(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
}

Test(inspect, stats_asks_a_live_metaserver)
{
	char url[300];
	pid_t pid;

	snprintf(url, sizeof(url), "ipc:///tmp/cxlp-inspect-%d.sock",
	    (int)getpid());
	pid = start_server(url);
	cr_assert_eq(run("stats --server %s", url), 0, "%s", out);
	has("\npool_bytes      64.0 MiB\n");
	has("\nsessions        1 (this one included)\n");
	cr_assert_eq(run_json("stats --server %s", url), 0, "%s", out);
	has("\"pool_size\": 67108864");
	has("\"keys\": 0,");
	stop_server(pid);
}

/* a handler session on url: one region, one key pinned once */
static void
handler_session(struct raw_client *c, const char *url)
{
	const void *k[] = { "k" };
	size_t kl[] = { 1 };
	struct proto_result res;
	struct proto_loc loc;
	struct pbuf b;
	uint32_t n = 0;

	cr_assert_eq(raw_open(c, url), 0, "%s", cxlp_errormsg());
	cr_assert_eq(raw_hello(c), 0, "%s", cxlp_errormsg());
	cr_assert_eq(raw_region(c, 2u << 20, 65536, &loc), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(raw_register(c, "k", loc.region, loc.region_off, 100,
	    &res), 0);
	cr_assert_eq(res.status, 0);
	pbuf_init(&b);
	proto_put_keys(&b, 0, 1, k, kl);
	cr_assert_eq(raw_request(c, PROTO_OP_PIN, &b, &res, 1, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(res.status, 0);
	pbuf_fini(&b);
}

/* the text row of the session whose host is "rawclient" */
static void
text_row(unsigned *pid, char *state, unsigned *regions, unsigned *pins)
{
	const char *at = strstr(out, "rawclient");
	const char *line;
	unsigned long long id, inst;
	char host[32];

	cr_assert_not_null(at, "no rawclient session in:\n%s", out);
	for (line = at; line > out && line[-1] != '\n'; line--) {
	}
	cr_assert_eq(sscanf(line, "%llu %u %31s %llx %15s %u %u", &id, pid,
	    host, &inst, state, regions, pins), 7, "row: %.100s", line);
}

Test(inspect, stats_lists_a_live_handler_session_but_not_its_own)
{
	struct raw_client c;
	char url[300], want[64], state[16], *owner;
	unsigned pid = 0, regions = 0, pins = 0;
	pid_t srv;

	snprintf(url, sizeof(url), "ipc:///tmp/cxlp-inspect-s-%d.sock",
	    (int)getpid());
	srv = start_server(url);
	handler_session(&c, url);
	cr_assert_eq(run("stats --server %s", url), 0, "%s", out);
	has("\nsessions        2 (this one included)\n");
	has("STATE");
	text_row(&pid, state, &regions, &pins);
	cr_assert_eq(pid, (unsigned)getpid());
	cr_assert_str_eq(state, "attached");
	cr_assert_eq(regions, 1);
	cr_assert_eq(pins, 1);
	has("\n1 session besides this one\n");
	cr_assert_eq(run_json("stats --server %s", url), 0, "%s", out);
	snprintf(want, sizeof(want), "\"pid\": %d,", (int)getpid());
	has(want);
	has("\"host\": \"rawclient\"");
	has("\"state\": \"attached\"");
	has("\"regions\": 1,");
	has("\"pins\": 1");
	if ((owner = strstr(out, "\"owner\": {")) != NULL) {
		*owner = '\0'; /* the pool's owner record has a state too */
	}
	cr_assert_null(strstr(strstr(out, "\"state\"") + 1, "\"state\""),
	    "pool-inspect's own session is not listed: %s", out);
	raw_close(&c);
	stop_server(srv);
}

/* A tcp:// address whose listener never speaks (its backlog completes
 * the connect, nobody accepts): the dial gives up after --timeout-ms with
 * its message, not after nng's own 10 s handshake timeout or the
 * kernel's connect timeout. */
Test(inspect, stats_gives_up_on_a_silent_address_within_its_timeout)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct timespec t0, t1;
	char port[16];
	double secs;

	cr_assert_geq(l, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(l, 8), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
	snprintf(port, sizeof(port), "%u", (unsigned)ntohs(a.sin_port));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(run("stats --server tcp://127.0.0.1:%s --timeout-ms 500",
	    port), 1, "%s", out);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	has("cannot reach");
	has("no connection within --timeout-ms");
	cr_assert_lt(secs, 5.0, "took %.1f s for a 500 ms timeout", secs);
	close(l);
}

Test(inspect, stats_without_a_server_fails_with_a_message)
{
	cr_assert_eq(run("stats --server ipc:///tmp/cxlp-nobody-%s.sock "
	    "--timeout-ms 500", "x"), 1, "%s", out);
	has("cannot reach");
	cr_assert_eq(run("stats", NULL), 2, "%s", out);
}
