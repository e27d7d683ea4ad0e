/*
 * worker.c -- itest-worker: the handler processes of the integration tests.
 *
 * A test cannot fork a child that then uses nng (Criterion's worker has
 * already started threads, and nng refuses to run in a forked copy), so
 * every child is this program, exec'd fresh. It waits for one byte on
 * stdin (the test's "go"), plays its role, writes results to stdout and
 * exits 0, or exits with a code naming the first thing that went wrong.
 *
 *   itest-worker reader URL N           read rt-1..rt-N, all by writer 7
 *   itest-worker write-foreign URL KEY  write into KEY's page (must fault)
 *   itest-worker racer URL WRITER       the register race (test_race.c)
 *   itest-worker pin-and-die URL KEY    pin KEY, say "p", wait to be killed
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvtest.h"
#include "worker.h"

#define MiB (1024ull * 1024)

static const char *url;

static int
reader(int argc, char **argv)
{
	unsigned n = (unsigned)atoi(argv[0]);
	struct cxlp_handler *h = kv_connect(url, 4096, 4 * MiB, true);
	int bad = 0;

	if (h == NULL) {
		return 100;
	}
	for (unsigned i = 1; i <= n && bad == 0; i++) {
		char k[64];
		size_t kl = kv_key(k, sizeof(k), "rt", i);
		const void *data;
		size_t len;
		uint32_t w = 0;

		if (cxlp_retrieve(h, k, kl, 0, &data, &len) != 0 ||
		    !kv_check(data, len, i, &w) || w != 7) {
			bad = (int)i;
		}
	}
	cxlp_close(&h);
	return bad;
}

static int
write_foreign(int argc, char **argv)
{
	struct cxlp_handler *h = kv_connect(url, 4096, 4 * MiB, true);
	const void *data;
	size_t len;

	if (h == NULL ||
	    cxlp_retrieve(h, argv[0], strlen(argv[0]), 0, &data, &len) != 0) {
		return 100;
	}
	signal(SIGSEGV, SIG_DFL); /* sanitizers install their own handler */
	*(volatile uint8_t *)data = 0xff;
	return 0;
}

/* Keys in a writer-specific order, so that writers interleave. */
static void
key_order(uint32_t *order, uint32_t writer)
{
	for (uint32_t i = 0; i < RACE_KEYS; i++) {
		order[i] = i;
	}
	srand(writer * 7919u + 1);
	for (uint32_t i = RACE_KEYS - 1; i > 0; i--) {
		uint32_t j = (uint32_t)rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

static int
race_batch(struct cxlp_handler *h, const uint32_t *ids, uint32_t writer,
    struct race_result *r)
{
	char keys[RACE_BATCH][32];
	const void *kp[RACE_BATCH];
	size_t kl[RACE_BATCH], lens[RACE_BATCH];
	cxlp_page_t pages[RACE_BATCH];
	bool ok[RACE_BATCH];
	void *buf;

	for (int i = 0; i < RACE_BATCH; i++) {
		kl[i] = kv_key(keys[i], sizeof(keys[i]), "race", ids[i]);
		kp[i] = keys[i];
		lens[i] = 1024 + ids[i] % 3000;
		if (cxlp_alloc(h, &pages[i], &buf) != 0) {
			return 10;
		}
		kv_fill(buf, lens[i], writer, ids[i]);
	}
	if (cxlp_batch_store(h, RACE_BATCH, kp, kl, pages, lens, 0, ok) != 0) {
		return 11;
	}
	for (int i = 0; i < RACE_BATCH; i++) {
		r->false_keys += !ok[i];
	}
	return 0;
}

static int
racer(int argc, char **argv)
{
	uint32_t writer = (uint32_t)atoi(argv[0]);
	uint32_t order[RACE_KEYS];
	struct race_result r = { 0 };
	struct cxlp_handler *h = kv_connect(url, 4096, 8 * MiB, true);
	struct cxlp_stats st;
	int rc;

	if (h == NULL) {
		return 100;
	}
	key_order(order, writer);
	for (int b = 0; b < RACE_KEYS / RACE_BATCH; b++) {
		rc = race_batch(h, order + b * RACE_BATCH, writer, &r);
		if (rc != 0) {
			return rc;
		}
	}
	st = kv_stats(h);
	r.pages_total = st.pages_total;
	r.pages_free = st.pages_free;
	r.pages_allocated = st.pages_allocated;
	r.pages_registered = st.pages_registered;
	if (write(STDOUT_FILENO, &r, sizeof(r)) != sizeof(r)) {
		return 12;
	}
	cxlp_close(&h); /* keys stay: the regions become orphans */
	return 0;
}

static int
pin_and_die(int argc, char **argv)
{
	struct cxlp_handler *h = kv_connect(url, 4096, 4 * MiB, true);

	if (h == NULL || cxlp_pin(h, argv[0], strlen(argv[0])) != 0) {
		return 1;
	}
	if (write(STDOUT_FILENO, "p", 1) != 1) {
		return 2;
	}
	pause(); /* killed by the test */
	return 3;
}

static const struct role {
	const char *name;
	int nargs;
	int (*fn)(int argc, char **argv);
} roles[] = {
	{ "reader", 1, reader },
	{ "write-foreign", 1, write_foreign },
	{ "racer", 1, racer },
	{ "pin-and-die", 1, pin_and_die },
};

int
main(int argc, char **argv)
{
	char go;

	if (argc < 3) {
		fprintf(stderr, "usage: itest-worker ROLE URL ARGS...\n");
		return 2;
	}
	url = argv[2];
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
		if (strcmp(argv[1], roles[i].name) != 0) {
			continue;
		}
		if (argc - 3 != roles[i].nargs) {
			return 2;
		}
		if (read(STDIN_FILENO, &go, 1) != 1) {
			return 99;
		}
		return roles[i].fn(argc - 3, argv + 3);
	}
	fprintf(stderr, "itest-worker: unknown role %s\n", argv[1]);
	return 2;
}
