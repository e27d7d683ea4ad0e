/*
 * echo.c -- the floor: an nng REQ/REP round trip of a 64-byte frame
 * between two processes, built exactly like the real pair (a rep0 server
 * with four context workers, each a thread waiting on callback-less recv
 * and send aios, as metaserver/server.c; a req0 client sending and
 * receiving on a context with
 * nng_aio_wait, resend timer off, as handler/client.c). A store or
 * retrieve cannot be faster than this, so the latency section reports its
 * ops against it. This is the only file in bench/ that includes nng.
 *
 * The server runs in a child exec'ed as `cxlpool-bench --echo-server URL`
 * (a fresh process: nng must not be inherited across fork); it prints
 * "ready" once listening and exits when its stdin closes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "bench.h"

#define ECHO_FRAME 64
#define ECHO_WORKERS 4

struct eworker {
	nng_ctx ctx;
	nng_aio *recv, *send;
	pthread_t thread;
};

/* Echo each request back until the socket closes. */
static void *
eworker_main(void *arg)
{
	struct eworker *w = arg;

	for (;;) {
		nng_ctx_recv(w->ctx, w->recv);
		nng_aio_wait(w->recv);
		if (nng_aio_result(w->recv) != 0) {
			return NULL;
		}
		nng_aio_set_msg(w->send, nng_aio_get_msg(w->recv));
		nng_ctx_send(w->ctx, w->send);
		nng_aio_wait(w->send);
		if (nng_aio_result(w->send) != 0) {
			nng_msg_free(nng_aio_get_msg(w->send));
		}
	}
}

/* echo_server_main -- serve echoes on url until stdin closes; exit code. */
int
echo_server_main(const char *url)
{
	struct eworker w[ECHO_WORKERS];
	nng_socket s;
	char c;

	memset(w, 0, sizeof(w));
	if (nng_rep0_open(&s) != 0 || nng_listen(s, url, NULL, 0) != 0) {
		fprintf(stderr, "echo: cannot listen on %s\n", url);
		return 1;
	}
	for (int i = 0; i < ECHO_WORKERS; i++) {
		if (nng_aio_alloc(&w[i].recv, NULL, NULL) != 0 ||
		    nng_aio_alloc(&w[i].send, NULL, NULL) != 0 ||
		    nng_ctx_open(&w[i].ctx, s) != 0 ||
		    pthread_create(&w[i].thread, NULL, eworker_main,
		    &w[i]) != 0) {
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (read(STDIN_FILENO, &c, 1) > 0) {
	}
	nng_close(s);
	for (int i = 0; i < ECHO_WORKERS; i++) {
		pthread_join(w[i].thread, NULL);
		nng_aio_free(w[i].recv);
		nng_aio_free(w[i].send);
	}
	return 0;
}

/* One round trip on ctx; 0 or an nng error. */
static int
echo_once(nng_ctx ctx, nng_aio *aio)
{
	nng_msg *m;
	int rv = nng_msg_alloc(&m, ECHO_FRAME);

	if (rv != 0) {
		return rv;
	}
	memset(nng_msg_body(m), 0x5a, ECHO_FRAME);
	nng_aio_set_msg(aio, m);
	nng_ctx_send(ctx, aio);
	nng_aio_wait(aio);
	if ((rv = nng_aio_result(aio)) != 0) {
		nng_msg_free(m);
		return rv;
	}
	nng_ctx_recv(ctx, aio);
	nng_aio_wait(aio);
	if ((rv = nng_aio_result(aio)) != 0) {
		return rv;
	}
	m = nng_aio_get_msg(aio);
	rv = nng_msg_len(m) == ECHO_FRAME ? 0 : NNG_EPROTO;
	nng_msg_free(m);
	return rv;
}

/* Time n round trips into us[]; 0 or an nng error. */
static int
echo_client(const char *url, double *us, size_t n, size_t warm)
{
	nng_socket s;
	nng_aio *aio = NULL;
	nng_ctx ctx;
	int rv;

	if ((rv = nng_req0_open(&s)) != 0) {
		return rv;
	}
	nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	if ((rv = nng_dial(s, url, NULL, 0)) != 0 ||
	    (rv = nng_ctx_open(&ctx, s)) != 0 ||
	    (rv = nng_aio_alloc(&aio, NULL, NULL)) != 0) {
		goto out;
	}
	nng_aio_set_timeout(aio, 5000);
	for (size_t i = 0; i < warm + n && rv == 0; i++) {
		uint64_t t0 = now_ns();

		rv = echo_once(ctx, aio);
		if (i >= warm) {
			us[i - warm] = (double)(now_ns() - t0) / 1e3;
		}
	}
out:
	if (aio != NULL) {
		nng_aio_free(aio);
	}
	nng_close(s);
	return rv;
}

/* echo_section -- measure the nng round trip floor; sets b->echo_p50_us.
 * Returns 0 or -1. */
int
echo_section(struct bench *b)
{
	size_t n = b->quick ? 50 : 5000, warm = b->quick ? 5 : 200;
	char url[96];
	const char *argv[] = { b->self, "--echo-server", url, NULL };
	double *us = calloc(n, sizeof(*us));
	struct cpu_sample s0, s1, m0, m1;
	struct child c;
	char line[64];
	int rv = -1;

	snprintf(url, sizeof(url), "ipc:///tmp/cxlpool-bench-echo-%d.sock",
	    (int)getpid());
	if (us == NULL || child_spawn(&c, argv) != 0) {
		free(us);
		return -1;
	}
	if (child_line(&c, line, sizeof(line)) == 0 &&
	    strcmp(line, "ready") == 0) {
		cpu_read(c.pid, &s0);
		cpu_read(getpid(), &m0);
		rv = echo_client(url, us, n, warm);
		cpu_read(c.pid, &s1);
		cpu_read(getpid(), &m1);
		if (rv != 0) {
			fprintf(stderr, "echo: %s\n", nng_strerror(rv));
		}
	}
	child_wait(&c);
	unlink(url + strlen("ipc://"));
	if (rv == 0) {
		double p50 = pctl(us, n, 50), p99 = pctl(us, n, 99);
		double srv = cpu_us(&s0, &s1) / (double)(n + warm);
		double cli = cpu_us(&m0, &m1) / (double)(n + warm);

		b->echo_p50_us = p50;
		printf("\n## echo: nng REQ/REP round trip, %d-byte frame, "
		    "ipc, two processes\n", ECHO_FRAME);
		printf("%-24s %10s %10s %8s %12s %12s\n", "op", "p50 us",
		    "p99 us", "n", "srv cpu us", "cli cpu us");
		printf("%-24s %10.1f %10.1f %8zu %12.1f %12.1f\n", "nng echo",
		    p50, p99, n, srv, cli);
		jw_begin(&b->json, "echo", '{');
		jw_num(&b->json, "p50_us", p50);
		jw_num(&b->json, "p99_us", p99);
		jw_int(&b->json, "n", (long long)n);
		jw_int(&b->json, "frame_bytes", ECHO_FRAME);
		jw_num(&b->json, "server_cpu_us_per_rt", srv);
		jw_num(&b->json, "client_cpu_us_per_rt", cli);
		jw_end(&b->json, '}');
	}
	free(us);
	return rv == 0 ? 0 : -1;
}
