/*
 * echo.c -- the floor: an nng REQ/REP round trip of a 64-byte frame
 * between two processes, built exactly like the real pair (a rep0 server
 * with four context workers, each a thread waiting on callback-less recv
 * and send aios, as metaserver/server.c; a req0 client sending and
 * receiving on a context with
 * nng_aio_wait, resend timer off, as handler/net/client.c). A store or
 * retrieve cannot be faster than this, so the latency section reports its
 * ops against it. A second shape has the frame sizes of a REGISTER of 256
 * BENCH_KEY_LEN-byte keys and its reply: the floor under the batch
 * section's server CPU per registered key. This is the only file in
 * bench/ that includes nng.
 *
 * The server runs in a child exec'ed as `cxlpool-bench --echo-server URL
 * [CPUS]` (CPUS: --server-cpus, applied before nng starts a thread)
 * (a fresh process: nng must not be inherited across fork); it prints
 * "ready" once listening and exits when its stdin closes. A request's
 * first 4 bytes (little-endian) give the reply's length: the server cuts
 * or pads the message to it before sending it back.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "bench.h"

#define ECHO_WORKERS 4

/* One frame shape: request and reply bytes. */
struct eshape {
	const char *name;
	size_t req, rep;
};

/* 64-byte frames; then REGISTER of 256 keys (header 32 + flags and n 8 +
 * 256 x {u16 len, key, u32 region, u64 off, u64 len}) and its reply
 * (header 24 + n 4 + 256 results of 48 bytes): common/proto.h */
static const struct eshape shapes[] = {
	{ "nng echo", 64, 64 },
	{ "nng echo REGISTER-256", 32 + 8 + 256 * (2 + BENCH_KEY_LEN + 20),
	    24 + 4 + 256 * 48 },
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* the reply length a request asks for (its first 4 bytes, LE) */
static size_t
want_len(nng_msg *m)
{
	const uint8_t *b = nng_msg_body(m);

	if (nng_msg_len(m) < 4) {
		return nng_msg_len(m);
	}
	return (size_t)b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 |
	    (size_t)b[3] << 24;
}

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
		nng_msg *m = nng_aio_get_msg(w->recv);

		if (nng_msg_realloc(m, want_len(m)) != 0) {
			nng_msg_free(m);
			continue;
		}
		nng_aio_set_msg(w->send, m);
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

/* One round trip of shape sh on ctx; 0 or an nng error. */
static int
echo_once(nng_ctx ctx, nng_aio *aio, const struct eshape *sh)
{
	nng_msg *m;
	uint8_t *b;
	int rv = nng_msg_alloc(&m, sh->req);

	if (rv != 0) {
		return rv;
	}
	b = nng_msg_body(m);
	memset(b, 0x5a, sh->req);
	for (int i = 0; i < 4; i++) {
		b[i] = (uint8_t)(sh->rep >> (8 * i));
	}
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
	rv = nng_msg_len(m) == sh->rep ? 0 : NNG_EPROTO;
	nng_msg_free(m);
	return rv;
}

/* Time n round trips of shape sh into us[]; 0 or an nng error. */
static int
echo_client(const char *url, const struct eshape *sh, double *us, size_t n,
    size_t warm)
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

		rv = echo_once(ctx, aio, sh);
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

/* What one shape measured. */
struct eres {
	double p50, p99, srv, cli; /* us; CPU per round trip */
	size_t n;
};

/* Run shape sh against the server child c; 0 or -1. */
static int
echo_shape(struct child *c, const char *url, const struct eshape *sh,
    size_t n, size_t warm, struct eres *r)
{
	double *us = calloc(n, sizeof(*us));
	struct cpu_sample s0, s1, m0, m1;
	int rv;

	if (us == NULL) {
		return -1;
	}
	cpu_read(c->pid, &s0);
	cpu_read(getpid(), &m0);
	rv = echo_client(url, sh, us, n, warm);
	cpu_read(c->pid, &s1);
	cpu_read(getpid(), &m1);
	if (rv != 0) {
		fprintf(stderr, "echo: %s: %s\n", sh->name, nng_strerror(rv));
	} else {
		r->p50 = pctl(us, n, 50);
		r->p99 = pctl(us, n, 99);
		r->srv = cpu_us(&s0, &s1) / (double)(n + warm);
		r->cli = cpu_us(&m0, &m1) / (double)(n + warm);
		r->n = n;
	}
	free(us);
	return rv == 0 ? 0 : -1;
}

static void
echo_report(struct bench *b, const struct eres *r, const char *cpus)
{
	printf("\n## echo: nng REQ/REP round trip, ipc, two processes "
	    "(echo server on CPUs %s)\n", cpus);
	printf("%-24s %7s %7s %10s %10s %8s %12s %12s\n", "op", "req B",
	    "rep B", "p50 us", "p99 us", "n", "srv cpu us", "cli cpu us");
	for (size_t i = 0; i < NSHAPES; i++) {
		printf("%-24s %7zu %7zu %10.1f %10.1f %8zu %12.1f %12.1f\n",
		    shapes[i].name, shapes[i].req, shapes[i].rep, r[i].p50,
		    r[i].p99, r[i].n, r[i].srv, r[i].cli);
	}
	printf("floor under server CPU per registered key at batch 256: "
	    "%.3f us\n", r[1].srv / 256);
	for (size_t i = 0; i < NSHAPES; i++) {
		jw_obj(&b->json, i == 0 ? "echo" : "echo_register256");
		jw_num(&b->json, "p50_us", r[i].p50);
		jw_num(&b->json, "p99_us", r[i].p99);
		jw_i64(&b->json, "n", (int64_t)r[i].n);
		jw_i64(&b->json, "frame_bytes", (int64_t)shapes[i].req);
		jw_i64(&b->json, "reply_bytes", (int64_t)shapes[i].rep);
		jw_num(&b->json, "server_cpu_us_per_rt", r[i].srv);
		jw_num(&b->json, "client_cpu_us_per_rt", r[i].cli);
		jw_str(&b->json, "server_cpus", cpus);
		jw_close(&b->json);
	}
}

/* echo_section -- measure the nng round trip floor for each shape; sets
 * b->echo_p50_us (64-byte frames) and b->echo256_srv_us. Returns 0 or -1.
 */
int
echo_section(struct bench *b)
{
	size_t n = b->quick ? 50 : 5000, warm = b->quick ? 5 : 200;
	char url[96];
	const char *argv[] = { b->self, "--echo-server", url, b->server_cpus,
		NULL };
	struct eres r[NSHAPES];
	struct child c;
	char line[64], cpus[128] = "?";
	int rv = -1;

	memset(r, 0, sizeof(r));
	snprintf(url, sizeof(url), "ipc:///tmp/cxlpool-bench-echo-%d.sock",
	    (int)getpid());
	if (child_spawn(&c, argv) != 0) {
		return -1;
	}
	if (child_line(&c, line, sizeof(line)) == 0 &&
	    strcmp(line, "ready") == 0) {
		(void)cpus_of(c.pid, cpus, sizeof(cpus));
		rv = 0;
		for (size_t i = 0; i < NSHAPES && rv == 0; i++) {
			rv = echo_shape(&c, url, &shapes[i], n, warm, &r[i]);
		}
	}
	child_wait(&c);
	unlink(url + strlen("ipc://"));
	if (rv == 0) {
		b->echo_p50_us = r[0].p50;
		b->echo256_srv_us = r[1].srv;
		echo_report(b, r, cpus);
	}
	return rv;
}
