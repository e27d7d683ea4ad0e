/*
 * test_probes.c -- the metaserver keeps accepting handlers after peers
 * that hang up during the SP handshake (nng#1518: one such peer used to
 * stop its listener for good; deps/nng/README.md), on ipc and on tcp, and
 * after it was stopped (SIGSTOP) while a handler retried, which made the
 * handler's redial hang up mid-handshake itself. Each test: a handler
 * connected before the probe keeps storing, and a new handler connects
 * with one-second timeouts and stores.
 *
 * The stop test also runs against a metaserver built with the system's
 * unpatched libnng (CXLP_METASERVER_SYSNNG, where the build has one): it
 * shows that the handler by itself no longer wedges such a server.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "itest.h"
#include "probe.h"

#define SECRET "probe-test-secret"

static struct test_server ps;
static char tcp_url[64], secret_path[96];

static void
write_secret(void)
{
	int fd;

	snprintf(secret_path, sizeof(secret_path), "/tmp/cxlp-probe-%d.secret",
	    (int)getpid());
	fd = open(secret_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, SECRET, strlen(SECRET)),
	    (ssize_t)strlen(SECRET));
	close(fd);
}

/* A metaserver on an ipc socket and a loopback tcp port. */
static void
probes_start(void)
{
	unsigned port = probe_free_tcp_port();
	const char *args[] = { "--listen", tcp_url, "--secret-file",
		secret_path, NULL };

	cr_assert_neq(port, 0);
	snprintf(tcp_url, sizeof(tcp_url), "tcp://127.0.0.1:%u", port);
	write_secret();
	cr_assert_eq(test_server_start(&ps, 256 * MiB, args), 0);
}

static void
probes_stop(void)
{
	if (ps.pid > 0) {
		test_server_stop(&ps);
	}
	unlink(secret_path);
}

TestSuite(probes, .timeout = 120);

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A handler on url (the secret on tcp) with the given request timeout. */
static struct cxlp_handler *
connect_to(const char *url, unsigned timeout_ms, unsigned retries)
{
	return kv_connect_secret(url, 4096, 4 * MiB, timeout_ms, retries,
	    strncmp(url, "tcp://", 6) == 0 ? SECRET : NULL);
}

/* A handler connected before, a probe of kind, then: a new handler
 * connects with 1 s timeouts (two tries) and stores, and the first one
 * stores too. Reports how long the connect took. */
static void
probe_then_connect(const char *url, enum probe_kind kind)
{
	struct cxlp_handler *before, *after;
	uint64_t t0;

	before = connect_to(url, 2000, 3);
	cr_assert_not_null(before, "first handler: %s", cxlp_errormsg());
	itest_put(before, "before", 1, 0, 512);
	cr_assert_eq(probe_once(url, kind, 2000), 0, "probe of %s", url);
	t0 = mono_ms();
	after = connect_to(url, 1000, 1);
	cr_assert_not_null(after, "%s: no handler could connect after probe "
	    "kind %d: %s", url, (int)kind, cxlp_errormsg());
	cr_log_info("%s probe %d: connect took %llu ms", url, (int)kind,
	    (unsigned long long)(mono_ms() - t0));
	itest_put(after, "after", 2, 0, 512);
	itest_put(before, "before", 1, 1, 512);
	cr_assert_eq(itest_get_check(after, "before", 0), 1);
	cr_assert_eq(itest_get_check(before, "after", 0), 2);
	cxlp_close(&after);
	cxlp_close(&before);
}

Test(probes, ipc_connect_and_close, .init = probes_start, .fini = probes_stop)
{
	probe_then_connect(ps.url, PROBE_CLOSE);
}

Test(probes, ipc_half_a_header_then_close, .init = probes_start,
    .fini = probes_stop)
{
	probe_then_connect(ps.url, PROBE_HALF_HEADER);
}

Test(probes, ipc_silent_for_2_s_then_close, .init = probes_start,
    .fini = probes_stop)
{
	probe_then_connect(ps.url, PROBE_SILENT);
}

Test(probes, tcp_connect_and_close, .init = probes_start, .fini = probes_stop)
{
	probe_then_connect(tcp_url, PROBE_CLOSE);
}

Test(probes, tcp_half_a_header_then_close, .init = probes_start,
    .fini = probes_stop)
{
	probe_then_connect(tcp_url, PROBE_HALF_HEADER);
}

Test(probes, tcp_silent_for_2_s_then_close, .init = probes_start,
    .fini = probes_stop)
{
	probe_then_connect(tcp_url, PROBE_SILENT);
}

/* Many probes of every kind in a row, on both endpoints, then the same
 * checks: the odds that one hang-up lands mid-handshake are then near 1. */
Test(probes, fifty_probes_of_every_kind_on_both_endpoints,
    .init = probes_start, .fini = probes_stop)
{
	for (int i = 0; i < 50; i++) {
		for (int k = 0; k < PROBE_KINDS; k++) {
			unsigned hold = k == PROBE_SILENT ? 1 : 0;

			cr_assert_eq(probe_once(ps.url, k, hold), 0);
			cr_assert_eq(probe_once(tcp_url, k, hold), 0);
		}
	}
	probe_then_connect(ps.url, PROBE_CLOSE);
	probe_then_connect(tcp_url, PROBE_CLOSE);
}

#define STOP_TIMEOUT_MS 300
#define STOP_FOR_MS (6 * STOP_TIMEOUT_MS)

struct resumer {
	pid_t pid;
	uint64_t resumed_ms;
};

static void *
resumer_main(void *arg)
{
	struct resumer *r = arg;

	test_sleep_ms(STOP_FOR_MS);
	r->resumed_ms = mono_ms();
	kill(r->pid, SIGCONT);
	return NULL;
}

/* The server (bin) is stopped for 6 request timeouts while a handler's
 * store retries (its redials fall inside the stop), then resumed: the
 * store succeeds, and a new handler connects with 2 s timeouts. */
static void
stopped_while_a_handler_retries(const char *bin)
{
	struct cxlp_handler *h, *fresh;
	struct resumer r;
	pthread_t t;

	cr_assert_eq(setenv("CXLP_METASERVER", bin, 1), 0);
	cr_assert_eq(test_server_start(&ps, 256 * MiB, NULL), 0);
	h = connect_to(ps.url, STOP_TIMEOUT_MS, 16);
	cr_assert_not_null(h, "%s", cxlp_errormsg());
	itest_put(h, "pre", 1, 0, 512);
	r.pid = ps.pid;
	cr_assert_eq(kill(ps.pid, SIGSTOP), 0);
	cr_assert_eq(pthread_create(&t, NULL, resumer_main, &r), 0);
	itest_put(h, "during", 1, 1, 512); /* retries through the stop */
	pthread_join(t, NULL);
	cr_log_info("%s: the store went through %lld ms after the resume", bin,
	    (long long)(mono_ms() - r.resumed_ms));
	fresh = connect_to(ps.url, 2000, 0);
	cr_assert_not_null(fresh, "no new handler after the server resumed: "
	    "%s", cxlp_errormsg());
	cr_assert_eq(itest_get_check(fresh, "during", 1), 1);
	itest_put(fresh, "post", 2, 0, 512);
	cr_assert_eq(itest_get_check(h, "post", 0), 2);
	cxlp_close(&fresh);
	cxlp_close(&h);
	test_server_stop(&ps);
}

Test(probes, a_stopped_server_serves_old_and_new_handlers_once_resumed)
{
	stopped_while_a_handler_retries(getenv("CXLP_METASERVER"));
}

Test(probes, the_handler_does_not_wedge_a_server_on_unpatched_nng)
{
	const char *bin = getenv("CXLP_METASERVER_SYSNNG");

	if (bin == NULL || *bin == '\0') {
		cr_skip_test("no metaserver built with the system's nng (it is "
		    "the nng this build links)");
	}
	stopped_while_a_handler_retries(bin);
}
