/*
 * client.c -- compat-client: a handler the compat tests drive line by
 * line, built twice: against this tree's libcxlpool (tests/compat's
 * meson.build) and against the previous release's
 * (tests/compat/build-previous.sh), so that the same test runs an old
 * handler and a new one side by side.
 *
 * It uses only the public API that both releases share (cxlpool.h of
 * tests/compat/PREVIOUS has every call here): nothing of this tree's
 * internals, so that it compiles against the old header unchanged.
 *
 *   compat-client URL       connect (4 KiB pages, 4 MiB regions), then
 *                           read commands from stdin, one reply line
 *                           each on stdout:
 *   store P A N [pin]       store P-A .. P-(A+N-1), each value derived
 *                           from its key; "ok K" (K acknowledged) or
 *                           "err I RC" (key I, the error)
 *   check P A N             retrieve each and compare every byte; "ok N"
 *                           or "bad I RC" (RC 0: wrong bytes or length)
 *   pin P A N, unpin P A N  "ok" or "err I RC"
 *   del P A N               delete each; "ok" or "rc I RC" (the first
 *                           key whose delete did not return 0)
 *   health                  cxlp_healthcheck until it answers 0 or 20 s
 *                           pass (a metaserver restarting); "rc RC"
 *   stats                   "keys K pins P sessions S"
 *   quit                    close and exit 0
 * The first line is "ready LIB" after the connect (LIB: the file of the
 * libcxlpool it runs, so that a test knows which release it drives), or
 * "error RC" and exit 2.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cxlpool.h"

#define PAGE 4096u
#define REGION (4u << 20)
#define KEY_MAX 96

static struct cxlp_handler *h;

/* FNV-1a of the key: the seed of its value and its length */
static uint64_t
key_hash(const char *k, size_t n)
{
	uint64_t x = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		x = (x ^ (uint8_t)k[i]) * 1099511628211ull;
	}
	return x;
}

static size_t
value_len(uint64_t seed)
{
	return 64 + (size_t)(seed % (PAGE - 64));
}

/* the value of a key: xorshift64 bytes from its hash */
static void
value_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
}

static bool
value_good(const uint8_t *buf, size_t len, uint64_t seed)
{
	uint8_t want[PAGE];

	if (len != value_len(seed)) {
		return false;
	}
	value_fill(want, len, seed);
	return memcmp(buf, want, len) == 0;
}

static size_t
key_of(char *k, const char *prefix, unsigned i)
{
	int n = snprintf(k, KEY_MAX, "%s-%u", prefix, i);

	return n > 0 && n < KEY_MAX ? (size_t)n : 0;
}

static void
cmd_store(const char *p, unsigned a, unsigned n, bool pin)
{
	unsigned acked = 0;

	for (unsigned i = a; i < a + n; i++) {
		char k[KEY_MAX];
		size_t kl = key_of(k, p, i);
		uint64_t seed = key_hash(k, kl);
		cxlp_page_t pg;
		void *buf;
		bool stored = false;
		int rc = cxlp_alloc(h, &pg, &buf);

		if (rc == 0) {
			value_fill(buf, value_len(seed), seed);
			rc = cxlp_store(h, k, kl, pg, value_len(seed),
			    pin ? CXLP_STORE_PIN : 0, &stored);
		}
		if (rc != 0 || !stored) {
			printf("err %u %d\n", i, rc);
			return;
		}
		acked++;
	}
	printf("ok %u\n", acked);
}

static void
cmd_check(const char *p, unsigned a, unsigned n)
{
	for (unsigned i = a; i < a + n; i++) {
		char k[KEY_MAX];
		size_t kl = key_of(k, p, i), len;
		const void *data;
		int rc = cxlp_retrieve(h, k, kl, 0, &data, &len);

		if (rc != 0 || !value_good(data, len, key_hash(k, kl))) {
			printf("bad %u %d\n", i, rc);
			return;
		}
	}
	printf("ok %u\n", n);
}

/* pin, unpin or delete each key; "ok" or the first key's error */
static void
cmd_each(const char *p, unsigned a, unsigned n,
    int (*fn)(struct cxlp_handler *, const void *, size_t), const char *tag)
{
	for (unsigned i = a; i < a + n; i++) {
		char k[KEY_MAX];
		size_t kl = key_of(k, p, i);
		int rc = fn(h, k, kl);

		if (rc != 0) {
			printf("%s %u %d\n", tag, i, rc);
			return;
		}
	}
	printf("ok\n");
}

static void
cmd_health(void)
{
	int rc = -1;

	for (int i = 0; i < 200 && rc != 0; i++) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		if ((rc = cxlp_healthcheck(h)) != 0) {
			nanosleep(&ts, NULL);
		}
	}
	printf("rc %d\n", rc);
}

static void
cmd_stats(void)
{
	struct cxlp_stats st;
	int rc = cxlp_stats(h, &st);

	if (rc != 0) {
		printf("rc %d\n", rc);
		return;
	}
	printf("keys %llu pins %llu sessions %llu\n",
	    (unsigned long long)st.keys, (unsigned long long)st.pins,
	    (unsigned long long)st.sessions);
}

/* the file the library was loaded from: LD_LIBRARY_PATH (which meson
 * test sets to this tree's build) must not have swapped it */
static const char *
library(void)
{
	Dl_info info;

	return dladdr((void *)cxlp_connect, &info) != 0 &&
	    info.dli_fname != NULL ? info.dli_fname : "?";
}

/* one command line; false at quit or end of input */
static bool
run(const char *line)
{
	char cmd[16], p[KEY_MAX / 2], opt[8] = "";
	unsigned a = 0, n = 0;
	int got = sscanf(line, "%15s %47s %u %u %7s", cmd, p, &a, &n, opt);

	if (got >= 1 && strcmp(cmd, "quit") == 0) {
		return false;
	} else if (got >= 1 && strcmp(cmd, "health") == 0) {
		cmd_health();
	} else if (got >= 1 && strcmp(cmd, "stats") == 0) {
		cmd_stats();
	} else if (got >= 4 && strcmp(cmd, "store") == 0) {
		cmd_store(p, a, n, strcmp(opt, "pin") == 0);
	} else if (got >= 4 && strcmp(cmd, "check") == 0) {
		cmd_check(p, a, n);
	} else if (got >= 4 && strcmp(cmd, "pin") == 0) {
		cmd_each(p, a, n, cxlp_pin, "err");
	} else if (got >= 4 && strcmp(cmd, "unpin") == 0) {
		cmd_each(p, a, n, cxlp_unpin, "err");
	} else if (got >= 4 && strcmp(cmd, "del") == 0) {
		cmd_each(p, a, n, cxlp_delete, "rc");
	} else {
		printf("usage %s", line);
	}
	return true;
}

int
main(int argc, char **argv)
{
	struct cxlp_config *cfg = NULL;
	char line[256];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: compat-client URL\n");
		return 2;
	}
	if ((rc = cxlp_config_new(&cfg)) == 0 &&
	    (rc = cxlp_config_set_server(cfg, argv[1])) == 0 &&
	    (rc = cxlp_config_set_page_size(cfg, PAGE)) == 0 &&
	    (rc = cxlp_config_set_region_size(cfg, REGION)) == 0 &&
	    (rc = cxlp_config_set_auto_expand(cfg, true)) == 0) {
		rc = cxlp_connect(&h, cfg);
	}
	cxlp_config_delete(&cfg);
	if (rc != 0) {
		printf("error %d\n", rc);
		fprintf(stderr, "compat-client: %s: %s\n", cxlp_strerror(rc),
		    cxlp_errormsg());
		return 2;
	}
	printf("ready %s\n", library());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL && run(line)) {
		fflush(stdout);
	}
	cxlp_close(&h);
	return 0;
}
