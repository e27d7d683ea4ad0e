/*
 * hostile.c -- cxlp-soak --hostile: while the workers run, a prober
 * (tests/support/probe.c) connects to the metaserver's ipc socket and a
 * loopback tcp port every few milliseconds and hangs up mid-handshake,
 * sends half headers, garbage and truncated frames, or sits silent; and
 * a newcomer thread connects a fresh handler every NEWCOMER_MS, on ipc
 * and on tcp in turn, stores a key, reads it back, deletes it and
 * closes. Every newcomer must succeed: a server that stops accepting
 * (nng#1518) fails the soak here, and its workers' calls fail through
 * CXLP_SOAK_STRICT (soak_worker.c), since a hostile soak kills no one.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlpool.h"
#include "kvtest.h"
#include "probe.h"
#include "proc.h"
#include "soak.h"

#define PROBE_PERIOD_MS 3
#define NEWCOMER_MS 250
#define NEWCOMER_TIMEOUT_MS 2000
#define SECRET "soak-hostile-secret"

static struct {
	char tcp_url[64];
	char secret_path[96];
	const char *urls[2];
	struct prober *prober;
	pthread_t newcomer;
	atomic_bool stop;
	unsigned ok, failed;
	char first_failure[320];
} H;

/* hostile_server_args -- the metaserver flags of a hostile soak: a tcp
 * listener and its secret file. Returns a NULL-terminated array (static),
 * or NULL. */
const char *const *
hostile_server_args(void)
{
	static const char *args[5];
	unsigned port = probe_free_tcp_port();
	int fd;

	snprintf(H.secret_path, sizeof(H.secret_path),
	    "/tmp/cxlp-soak-%d.secret", (int)getpid());
	fd = open(H.secret_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (port == 0 || fd < 0 || write(fd, SECRET, strlen(SECRET)) !=
	    (ssize_t)strlen(SECRET)) {
		if (fd >= 0) {
			close(fd);
		}
		return NULL;
	}
	close(fd);
	snprintf(H.tcp_url, sizeof(H.tcp_url), "tcp://127.0.0.1:%u", port);
	args[0] = "--listen";
	args[1] = H.tcp_url;
	args[2] = "--secret-file";
	args[3] = H.secret_path;
	args[4] = NULL;
	return args;
}

static struct cxlp_handler *
newcomer_connect(const char *url)
{
	return kv_connect_secret(url, SOAK_PAGE, SOAK_REGION,
	    NEWCOMER_TIMEOUT_MS, 1, strncmp(url, "tcp://", 6) == 0 ? SECRET :
	    NULL);
}

/* Store key n with a pattern, read it back, delete it. 0 or the step that
 * failed (its message in cxlp_errormsg). */
static const char *
newcomer_round(struct cxlp_handler *h, unsigned n)
{
	char key[48];
	cxlp_page_t pg;
	const void *data;
	size_t len, klen;
	uint32_t writer;
	bool stored = false;
	void *buf;

	klen = (size_t)snprintf(key, sizeof(key), "soak/newcomer/%u", n);
	if (cxlp_alloc(h, &pg, &buf) != 0) {
		return "alloc";
	}
	kv_fill(buf, 1024, 9999, n);
	if (cxlp_store(h, key, klen, pg, 1024, 0, &stored) != 0 || !stored) {
		return "store";
	}
	if (cxlp_retrieve(h, key, klen, 0, &data, &len) != 0 ||
	    !kv_check(data, len, n, &writer) || writer != 9999) {
		return "retrieve";
	}
	return cxlp_delete(h, key, klen) != 0 ? "delete" : NULL;
}

static void
newcomer_once(unsigned n)
{
	const char *url = H.urls[n % 2];
	struct cxlp_handler *h = newcomer_connect(url);
	const char *step = h == NULL ? "connect" : newcomer_round(h, n);

	if (step == NULL) {
		H.ok++;
	} else if (H.failed++ == 0) {
		snprintf(H.first_failure, sizeof(H.first_failure),
		    "newcomer %u on %s: %s: %s", n, url, step, cxlp_errormsg());
	}
	cxlp_close(&h);
}

static void *
newcomer_main(void *arg)
{
	(void)arg;
	for (unsigned n = 0; !atomic_load(&H.stop); n++) {
		newcomer_once(n);
		test_sleep_ms(NEWCOMER_MS);
	}
	return NULL;
}

/* hostile_start -- start the prober on ipc_url and the tcp listener of
 * hostile_server_args, and the newcomers. 0 or -1 (reason on stderr). */
int
hostile_start(const char *ipc_url)
{
	H.urls[0] = ipc_url;
	H.urls[1] = H.tcp_url;
	if (prober_start(&H.prober, H.urls, 2, PROBE_PERIOD_MS,
	    (unsigned)getpid()) != 0 ||
	    pthread_create(&H.newcomer, NULL, newcomer_main, NULL) != 0) {
		fprintf(stderr, "cxlp-soak: cannot start the prober\n");
		return -1;
	}
	return 0;
}

/* hostile_stop -- stop both threads; 0 if every newcomer succeeded, else
 * -1 with the first failure on stderr. */
int
hostile_stop(void)
{
	uint64_t probes;

	atomic_store(&H.stop, true);
	pthread_join(H.newcomer, NULL);
	probes = prober_stop(&H.prober);
	unlink(H.secret_path);
	fprintf(stderr, "cxlp-soak: hostile: %llu probes, %u newcomers "
	    "served, %u failed\n", (unsigned long long)probes, H.ok, H.failed);
	if (H.failed > 0 || H.ok == 0) {
		fprintf(stderr, "cxlp-soak: FAIL: %s\n", H.failed > 0 ?
		    H.first_failure : "no newcomer was served");
		return -1;
	}
	return 0;
}
