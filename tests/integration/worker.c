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
 *   itest-worker store-loop URL PREFIX  batch_store PREFIX-0.. until killed,
 *                                       reporting the count acknowledged
 *   itest-worker crash-storer URL WRITER  store in a loop while the
 *                                       metaserver is killed (test_kill)
 *   itest-worker stall-threads URL PROXY_URL  8 threads store through the
 *                                       proxy across a connection stall
 *                                       (test_redial.c, run under TSan)
 *   itest-worker hold URL PREFIX:FOREIGN  store and pin keys, pin FOREIGN,
 *                                       allocate pages it never registers
 *                                       (two regions' worth), report, wait
 *                                       to be killed
 *   itest-worker fill-and-wait URL -    fill the pool with 64 KiB pages
 *                                       (test_evict.c), say "f", wait to
 *                                       be killed
 *   itest-worker group-writer URL ID, group-reader URL ID: request
 *                                       groups (worker_group.c)
 *   itest-worker coh-writer URL HOST, coh-reader URL HOST: a handler on
 *                                       simulated host HOST, driven by
 *                                       commands (worker_coh.c)
 *   itest-worker read-rounds URL PREFIX:N:P  direct retrieves of the keys
 *                                       PREFIX-k, k < N, k % 2 == P: one
 *                                       round at go and one per byte on
 *                                       stdin, each answered with the
 *                                       u32 count found intact; EOF ends
 *                                       it (test_evict_hosts.c)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvtest.h"
#include "worker.h"

#define MiB (1024ull * 1024)

const char *worker_url;
#define url worker_url

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

static int
fill_and_wait(int argc, char **argv)
{
	struct cxlp_handler *h = kv_connect(url, 64 * 1024, 4 * MiB, true);
	struct cxlp_stats st = { 0 };

	for (uint32_t k = 0; h != NULL; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "fill", k);
		cxlp_page_t pg;
		void *buf;
		bool ok = false;

		if (cxlp_stats(h, &st) != 0) {
			return 1;
		}
		if (st.free_bytes < 4 * MiB && st.pages_free == 0) {
			break;
		}
		if (cxlp_alloc(h, &pg, &buf) != 0) {
			return 2;
		}
		kv_fill(buf, 256, 1, k);
		if (cxlp_store(h, key, kl, pg, 256, 0, &ok) != 0 || !ok) {
			return 3;
		}
	}
	if (h == NULL || write(STDOUT_FILENO, "f", 1) != 1) {
		return 4;
	}
	pause(); /* killed by the test */
	return 5;
}

/* Store keys prefix-first .. in batches of LOOP_BATCH (the value length
 * varies per key); *acked counts the keys confirmed so far. */
static int
loop_batch(struct cxlp_handler *h, const char *prefix, uint32_t first)
{
	char keys[LOOP_BATCH][64];
	const void *kp[LOOP_BATCH];
	size_t kl[LOOP_BATCH], lens[LOOP_BATCH];
	cxlp_page_t pages[LOOP_BATCH];
	bool ok[LOOP_BATCH];
	void *buf;

	for (uint32_t i = 0; i < LOOP_BATCH; i++) {
		kl[i] = kv_key(keys[i], sizeof(keys[i]), prefix, first + i);
		kp[i] = keys[i];
		lens[i] = 64 + (first + i) * 37 % 4000;
		if (cxlp_alloc(h, &pages[i], &buf) != 0) {
			return 10;
		}
		kv_fill(buf, lens[i], DEATH_WRITER, first + i);
	}
	if (cxlp_batch_store(h, LOOP_BATCH, kp, kl, pages, lens, 0, ok) != 0) {
		return 11;
	}
	for (uint32_t i = 0; i < LOOP_BATCH; i++) {
		if (!ok[i]) {
			return 12;
		}
	}
	return 0;
}

static int
store_loop(int argc, char **argv)
{
	struct cxlp_handler *h = kv_connect(url, 4096, 2 * MiB, true);

	if (h == NULL) {
		return 100;
	}
	for (uint32_t n = 0;; n += LOOP_BATCH) {
		int rc = loop_batch(h, argv[0], n);
		uint32_t acked = n + LOOP_BATCH;

		if (rc != 0) {
			return rc;
		}
		if (write(STDOUT_FILENO, &acked, sizeof(acked)) !=
		    sizeof(acked)) {
			return 13;
		}
	}
}

/* Store and pin keys (each own key pinned twice: once with the store,
 * once by cxlp_pin), pin the foreign key, then allocate and fill pages
 * it never registers until it owns `regions` regions. */
static int
hold_all(struct cxlp_handler *h, const char *prefix, const char *foreign,
    struct hold_report *r)
{
	const void *data;
	size_t len;
	void *buf;
	cxlp_page_t pg;
	bool ok;

	for (uint32_t i = 0; i < 20; i++) {
		char k[64];
		size_t kl = kv_key(k, sizeof(k), prefix, i);

		if (cxlp_alloc(h, &pg, &buf) != 0) {
			return 20;
		}
		kv_fill(buf, 100 + i, DEATH_WRITER, i);
		if (cxlp_store(h, k, kl, pg, 100 + i, CXLP_STORE_PIN, &ok) != 0 ||
		    !ok || cxlp_pin(h, k, kl) != 0) {
			return 21;
		}
		r->keys++;
		r->pins += 2;
	}
	if (cxlp_retrieve(h, foreign, strlen(foreign), CXLP_RETRIEVE_PIN,
	    &data, &len) != 0) {
		return 22;
	}
	r->pins++;
	/* every free page of the first region, and one of a second */
	for (uint64_t n = kv_stats(h).pages_free + 1; n > 0; n--) {
		if (cxlp_alloc(h, &pg, &buf) != 0) {
			return 23;
		}
		memset(buf, 0xab, 4096);
		r->unregistered++;
	}
	r->regions = (uint32_t)kv_stats(h).own_regions;
	return 0;
}

static int
hold(int argc, char **argv)
{
	char prefix[64];
	char *colon = strchr(argv[0], ':');
	struct hold_report r = { 0 };
	struct cxlp_handler *h;
	int rc;

	if (colon == NULL || (size_t)(colon - argv[0]) >= sizeof(prefix)) {
		return 2;
	}
	memcpy(prefix, argv[0], (size_t)(colon - argv[0]));
	prefix[colon - argv[0]] = '\0';
	h = kv_connect(url, 4096, 2 * MiB, true);
	if (h == NULL) {
		return 100;
	}
	rc = hold_all(h, prefix, colon + 1, &r);
	if (rc != 0) {
		return rc;
	}
	if (write(STDOUT_FILENO, &r, sizeof(r)) != sizeof(r)) {
		return 24;
	}
	pause(); /* killed by the test */
	return 25;
}

/* crash-storer (tests/crash/test_kill.c): batch_store keys
 * "w<WRITER>-<i>" in a loop while the metaserver is killed and restarted
 * under it; write each key index whose store reported true to stdout (a
 * u32), and on SIGUSR1 finish the batch, settle lost registers, write
 * CRASH_END and a struct crash_result, close and exit 0. */
static volatile sig_atomic_t crash_stop;

static void
on_usr1(int sig)
{
	(void)sig;
	crash_stop = 1;
}

static struct cxlp_handler *
crash_connect(void)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	if (cxlp_config_new(&cfg) != 0 ||
	    cxlp_config_set_server(cfg, url) != 0 ||
	    cxlp_config_set_page_size(cfg, 4096) != 0 ||
	    cxlp_config_set_region_size(cfg, 4 * MiB) != 0 ||
	    cxlp_config_set_auto_expand(cfg, true) != 0 ||
	    cxlp_config_set_timeout_ms(cfg, 2000) != 0 ||
	    cxlp_config_set_retries(cfg, 10) != 0 ||
	    cxlp_connect(&h, cfg) != 0) {
		fprintf(stderr, "crash-storer: %s\n", cxlp_errormsg());
	}
	cxlp_config_delete(&cfg);
	return h;
}

static int
crash_batch(struct cxlp_handler *h, uint32_t writer, uint32_t first,
    struct crash_result *r)
{
	char keys[CRASH_BATCH][32];
	const void *kp[CRASH_BATCH];
	size_t kl[CRASH_BATCH], lens[CRASH_BATCH];
	cxlp_page_t pages[CRASH_BATCH];
	bool ok[CRASH_BATCH];
	void *buf;
	int rc;

	for (uint32_t i = 0; i < CRASH_BATCH; i++) {
		char prefix[16];

		snprintf(prefix, sizeof(prefix), "w%u", writer);
		kl[i] = kv_key(keys[i], sizeof(keys[i]), prefix, first + i);
		kp[i] = keys[i];
		lens[i] = crash_len(first + i);
		if (cxlp_alloc(h, &pages[i], &buf) != 0) {
			return 30;
		}
		kv_fill(buf, lens[i], writer, first + i);
	}
	rc = cxlp_batch_store(h, CRASH_BATCH, kp, kl, pages, lens, 0, ok);
	if (rc == CXLP_E_UNKNOWN) {
		r->unknown++; /* pages kept; settled by a later store */
		return 0;
	}
	for (uint32_t i = 0; rc == 0 && i < CRASH_BATCH; i++) {
		uint32_t k = first + i;

		r->false_keys += !ok[i];
		if (ok[i] && write(STDOUT_FILENO, &k, sizeof(k)) != sizeof(k)) {
			return 31;
		}
	}
	return rc == 0 ? 0 : 32;
}

static int
crash_storer(int argc, char **argv)
{
	uint32_t writer = (uint32_t)atoi(argv[0]), end = CRASH_END;
	uint32_t ready = CRASH_READY;
	struct crash_result r = { 0 };
	struct cxlp_handler *h;
	struct cxlp_stats st;
	int rc = 0;

	signal(SIGUSR1, on_usr1);
	if ((h = crash_connect()) == NULL) {
		return 100;
	}
	if (write(STDOUT_FILENO, &ready, sizeof(ready)) != sizeof(ready)) {
		return 34;
	}
	for (uint32_t k = 0; !crash_stop && rc == 0; k += CRASH_BATCH) {
		rc = k + CRASH_BATCH <= CRASH_KEYS_MAX ?
		    crash_batch(h, writer, k, &r) : 0;
		usleep(k + CRASH_BATCH <= CRASH_KEYS_MAX ? 1000 : 10000);
	}
	for (int i = 0; rc == 0 && i < 100; i++) { /* settle lost ones */
		if (cxlp_stats(h, &st) == 0 && st.pages_unresolved == 0) {
			break;
		}
		usleep(50000);
	}
	r.stats_rc = cxlp_stats(h, &st);
	r.pages_total = st.pages_total;
	r.pages_free = st.pages_free;
	r.pages_allocated = st.pages_allocated;
	r.pages_registered = st.pages_registered;
	r.pages_unresolved = st.pages_unresolved;
	if (rc == 0 && (write(STDOUT_FILENO, &end, sizeof(end)) !=
	    sizeof(end) || write(STDOUT_FILENO, &r, sizeof(r)) != sizeof(r))) {
		rc = 33;
	}
	cxlp_close(&h);
	return rc;
}

/* ---- stall-threads ---- */

static struct {
	struct cxlp_handler *h;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned halfway;     /* threads past their first STALL_HALF keys */
	struct stall_result r;
} stall = { .lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER };

static bool
stall_store(uint32_t writer, uint32_t k)
{
	char key[32];
	size_t kl = kv_key(key, sizeof(key), "st", writer * 100000 + k);
	cxlp_page_t pg;
	bool stored = false;
	void *buf;

	if (cxlp_alloc(stall.h, &pg, &buf) != 0) {
		return false;
	}
	kv_fill(buf, 128, writer, k);
	return cxlp_store(stall.h, key, kl, pg, 128, 0, &stored) == 0 &&
	    stored && cxlp_healthcheck(stall.h) == 0;
}

static uint64_t
stall_redials(void)
{
	struct cxlp_stats st;

	return cxlp_stats(stall.h, &st) == 0 ? st.redials : 0;
}

/* Store STALL_HALF keys, report halfway, then store until the handler
 * has replaced its connection (at most 2000 keys) and STALL_HALF more. */
static void *
stall_thread(void *arg)
{
	uint32_t writer = (uint32_t)(uintptr_t)arg, k = 0, fails = 0;
	uint32_t end = 2 * STALL_HALF;

	for (; k < end; k++) {
		fails += !stall_store(writer, k);
		if (k + 1 == STALL_HALF) {
			pthread_mutex_lock(&stall.lock);
			stall.halfway++;
			pthread_cond_broadcast(&stall.cond);
			pthread_mutex_unlock(&stall.lock);
		}
		if (k + 1 == end && end < 2000 && stall_redials() == 0) {
			end++;
		}
	}
	pthread_mutex_lock(&stall.lock);
	stall.r.failures += fails;
	stall.r.stored += k - fails;
	pthread_mutex_unlock(&stall.lock);
	return NULL;
}

static int
stall_threads(int argc, char **argv)
{
	pthread_t t[STALL_THREADS];
	struct cxlp_stats st;
	char ready = STALL_READY;
	int rc = 0;

	(void)argc;
	stall.h = kv_connect_timeout(argv[0], 200, 6);
	if (stall.h == NULL) {
		return 100;
	}
	for (uintptr_t i = 0; i < STALL_THREADS; i++) {
		if (pthread_create(&t[i], NULL, stall_thread,
		    (void *)(i + 1)) != 0) {
			return 101;
		}
	}
	pthread_mutex_lock(&stall.lock);
	while (stall.halfway < STALL_THREADS) {
		pthread_cond_wait(&stall.cond, &stall.lock);
	}
	pthread_mutex_unlock(&stall.lock);
	if (write(STDOUT_FILENO, &ready, 1) != 1) {
		rc = 33;
	}
	for (int i = 0; i < STALL_THREADS; i++) {
		pthread_join(t[i], NULL);
	}
	if (cxlp_stats(stall.h, &st) == 0) {
		stall.r.redials = st.redials;
		stall.r.unresolved = st.pages_unresolved;
	}
	if (rc == 0 && write(STDOUT_FILENO, &stall.r, sizeof(stall.r)) !=
	    sizeof(stall.r)) {
		rc = 33;
	}
	cxlp_close(&stall.h);
	return rc;
}

static int
read_rounds(int argc, char **argv)
{
	char prefix[32], go;
	unsigned n, parity;
	struct cxlp_handler *h;

	if (argc != 1 || sscanf(argv[0], "%31[^:]:%u:%u", prefix, &n,
	    &parity) != 3) {
		return 2;
	}
	if ((h = kv_connect(url, 64 * 1024, 4 * MiB, true)) == NULL) {
		return 100;
	}
	do {
		uint32_t found = 0;

		for (unsigned k = parity; k < n; k += 2) {
			char key[64];
			size_t kl = kv_key(key, sizeof(key), prefix, k);
			const void *data;
			size_t len;
			uint32_t w;

			found += cxlp_retrieve(h, key, kl, 0, &data, &len) == 0 &&
			    kv_check(data, len, k, &w);
		}
		if (write(STDOUT_FILENO, &found, sizeof(found)) !=
		    sizeof(found)) {
			break;
		}
	} while (read(STDIN_FILENO, &go, 1) == 1);
	cxlp_close(&h);
	return 0;
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
	{ "store-loop", 1, store_loop },
	{ "hold", 1, hold },
	{ "crash-storer", 1, crash_storer },
	{ "stall-threads", 1, stall_threads },
	{ "fill-and-wait", 1, fill_and_wait },
	{ "group-writer", 1, group_writer },
	{ "group-reader", 1, group_reader },
	{ "async-storer", 1, async_storer },
	{ "coh-writer", 1, coh_writer },
	{ "coh-reader", 1, coh_reader },
	{ "read-rounds", 1, read_rounds },
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
