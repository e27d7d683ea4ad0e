/*
 * kvdemo.c -- a minimal inference-side client of cxlpool, used by the
 * README's demo: store a range of KV "chunks" with batch_store, then read
 * a range back in place, checking every byte and saying who wrote it.
 *
 *   cxlpool-kvdemo [--server URL] --writer ID --store FIRST:COUNT
 *                  [--read FIRST:COUNT] [--chunk BYTES] [--wait-keys N]
 *
 * Two demos started with overlapping --store ranges race on the shared
 * keys: each shared key is registered once, the loser's pages are freed.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlpool.h"

#define BATCH 64

struct opts {
	const char *server;
	unsigned writer, store_first, store_n, read_first, read_n;
	size_t chunk;
	unsigned wait_keys;
};

static void
fill(uint8_t *p, size_t len, unsigned writer, unsigned key)
{
	for (size_t i = 0; i < len; i++) {
		p[i] = (uint8_t)(writer * 31u + key * 7u + i);
	}
	memcpy(p, &writer, sizeof(writer));
}

static int
check(const uint8_t *p, size_t len, unsigned key, unsigned *writer)
{
	memcpy(writer, p, sizeof(*writer));
	for (size_t i = sizeof(*writer); i < len; i++) {
		if (p[i] != (uint8_t)(*writer * 31u + key * 7u + i)) {
			return -1;
		}
	}
	return 0;
}

static int
die(const char *what, int rc)
{
	fprintf(stderr, "kvdemo: %s: %s (%s)\n", what, cxlp_strerror(rc),
	    cxlp_errormsg());
	return 1;
}

static int
store_batch(struct cxlp_handler *h, const struct opts *o, unsigned first,
    unsigned n, unsigned *stored)
{
	char keys[BATCH][48];
	const void *kp[BATCH];
	size_t kl[BATCH], lens[BATCH];
	cxlp_page_t pages[BATCH];
	bool ok[BATCH];
	void *buf;
	int rc;

	for (unsigned i = 0; i < n; i++) {
		kl[i] = (size_t)snprintf(keys[i], sizeof(keys[i]),
		    "demo-model@rank0@chunk%u", first + i);
		kp[i] = keys[i];
		lens[i] = o->chunk;
		if ((rc = cxlp_alloc(h, &pages[i], &buf)) != 0) {
			return die("alloc", rc);
		}
		fill(buf, o->chunk, o->writer, first + i);
	}
	if ((rc = cxlp_batch_store(h, n, kp, kl, pages, lens, 0, ok)) != 0) {
		return die("batch_store", rc);
	}
	for (unsigned i = 0; i < n; i++) {
		*stored += ok[i];
	}
	return 0;
}

static int
do_store(struct cxlp_handler *h, const struct opts *o)
{
	unsigned stored = 0;
	struct cxlp_stats st;
	int rc;

	for (unsigned i = 0; i < o->store_n; i += BATCH) {
		unsigned n = o->store_n - i < BATCH ? o->store_n - i : BATCH;

		if (store_batch(h, o, o->store_first + i, n, &stored) != 0) {
			return 1;
		}
	}
	if ((rc = cxlp_stats(h, &st)) != 0) {
		return die("stats", rc);
	}
	printf("writer %u: batch_store %u keys: %u in the pool, %llu with "
	    "this writer's pages, %u already there (pages freed)\n",
	    o->writer, o->store_n, stored,
	    (unsigned long long)st.pages_registered,
	    stored - (unsigned)st.pages_registered);
	return stored == o->store_n ? 0 : 1;
}

static int
do_read(struct cxlp_handler *h, const struct opts *o)
{
	unsigned by_me = 0, by_other = 0, missing = 0, bad = 0;

	for (unsigned k = o->read_first; k < o->read_first + o->read_n; k++) {
		char key[48];
		int kl = snprintf(key, sizeof(key), "demo-model@rank0@chunk%u",
		    k);
		const void *data;
		size_t len;
		unsigned w;

		if (cxlp_retrieve(h, key, (size_t)kl, 0, &data, &len) != 0) {
			missing++;
		} else if (check(data, len, k, &w) != 0) {
			bad++;
		} else if (w == o->writer) {
			by_me++;
		} else {
			by_other++;
		}
	}
	printf("writer %u: read %u keys in place: %u written by me, %u by "
	    "another writer, %u missing, %u damaged\n", o->writer, o->read_n,
	    by_me, by_other, missing, bad);
	return missing || bad ? 1 : 0;
}

static int
wait_for_keys(struct cxlp_handler *h, unsigned want)
{
	struct cxlp_stats st;

	for (int i = 0; i < 3000; i++) {
		if (cxlp_stats(h, &st) == 0 && st.keys >= want) {
			return 0;
		}
		usleep(10000);
	}
	fprintf(stderr, "kvdemo: timed out waiting for %u keys\n", want);
	return 1;
}

static int
parse_range(const char *s, unsigned *first, unsigned *n)
{
	return sscanf(s, "%u:%u", first, n) == 2 ? 0 : -1;
}

static int
parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "server", required_argument, NULL, 's' },
		{ "writer", required_argument, NULL, 'w' },
		{ "store", required_argument, NULL, 'S' },
		{ "read", required_argument, NULL, 'R' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "wait-keys", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .server = "ipc:///tmp/cxlpool.sock",
		.chunk = 64 * 1024 };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if ((c == 'S' && parse_range(optarg, &o->store_first,
		    &o->store_n) != 0) || (c == 'R' && parse_range(optarg,
		    &o->read_first, &o->read_n) != 0) || c == '?') {
			return -1;
		}
		o->server = c == 's' ? optarg : o->server;
		o->writer = c == 'w' ? (unsigned)atoi(optarg) : o->writer;
		o->chunk = c == 'c' ? (size_t)atol(optarg) : o->chunk;
		o->wait_keys = c == 'k' ? (unsigned)atoi(optarg) : o->wait_keys;
	}
	return o->chunk >= 64 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;
	struct opts o;
	int rc;

	if (parse(argc, argv, &o) != 0) {
		fprintf(stderr, "usage: cxlpool-kvdemo [--server URL] --writer "
		    "ID --store FIRST:COUNT [--read FIRST:COUNT] [--chunk "
		    "BYTES] [--wait-keys N]\n");
		return 2;
	}
	if ((rc = cxlp_config_new(&cfg)) != 0 ||
	    (rc = cxlp_config_set_server(cfg, o.server)) != 0 ||
	    (rc = cxlp_config_set_page_size(cfg, (o.chunk + 4095) & ~4095ul))
	    != 0 || (rc = cxlp_connect(&h, cfg)) != 0) {
		cxlp_config_delete(&cfg);
		return die("connect", rc);
	}
	cxlp_config_delete(&cfg);
	rc = o.store_n ? do_store(h, &o) : 0;
	if (rc == 0 && o.wait_keys) {
		rc = wait_for_keys(h, o.wait_keys);
	}
	if (rc == 0 && o.read_n) {
		rc = do_read(h, &o);
	}
	cxlp_close(&h);
	return rc;
}
