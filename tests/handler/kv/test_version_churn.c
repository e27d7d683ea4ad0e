/*
 * test_version_churn.c -- contract 10 under load: readers that hold no
 * pin copy values out while the pages under them are reused, and
 * cxlp_validate tells every torn or foreign copy from a good one. Two
 * ways pages are reused: owners delete their keys and store them again
 * in the pages just freed (version_churn), and an eviction storm, a
 * writer that stores new keys into a pool that is full, so that every
 * store's page is one eviction took from a key that readers may be
 * copying out at that moment (version_storm).
 *
 * Every value is one page of 64-bit words, word i = key << 32 | gen << 16
 * | i, so a copy that mixes generations, or holds another key's value,
 * fails the pattern check. Every other copy is slow, in pieces with a
 * sched_yield between and a short sleep halfway, so that copies overlap
 * the writers' page reuse often rather than by luck. The test asserts
 * that no copy that validated is bad, and that bad copies did happen and
 * were all caught.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cxlpool.h"
#include "server.h"

#define PAGE (64u << 10)
#define REGION (2u << 20)
#define WORDS (PAGE / 8)
#define NKEYS 8
#define NWRITERS 2         /* writer w owns keys k with k % NWRITERS == w */
#define NREADERS 3         /* the last one reads through the writers'
                            * handler, the others through their own */
#define PIECES 16          /* a copy is this many memcpy's */
#define RUN_MS 3000        /* at most; less once enough is seen */
#define MIN_MS 500
#define ENOUGH 20

#define STORM_POOL (16u << 20) /* full after ~190 pages */
#define STORM_WINDOW 512u      /* readers read the latest keys stored */

static struct test_server srv;

static void
setup(void)
{
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	cr_assert_eq(test_server_start(&srv, 128u << 20, NULL), 0,
	    "metaserver did not start");
}

/* sweep order: the readers' access bytes would shelter the very keys
 * they read, and the storm is meant to take them */
static void
setup_storm(void)
{
	const char *args[] = { "--evict-order", "sweep", "--evict-free", "0",
		NULL };

	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	cr_assert_eq(test_server_start(&srv, STORM_POOL, args), 0,
	    "metaserver did not start");
}

static void
teardown(void)
{
	test_server_stop(&srv);
}

TestSuite(version_churn, .init = setup, .fini = teardown, .timeout = 100);
TestSuite(version_storm, .init = setup_storm, .fini = teardown,
    .timeout = 100);

static struct cxlp_handler *
connect_h(void)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;
	int rc;

	cr_assert_eq(cxlp_config_new(&cfg), 0);
	cr_assert_eq(cxlp_config_set_server(cfg, srv.url), 0);
	cr_assert_eq(cxlp_config_set_region_size(cfg, REGION), 0);
	cr_assert_eq(cxlp_config_set_page_size(cfg, PAGE), 0);
	rc = cxlp_connect(&h, cfg);
	cxlp_config_delete(&cfg);
	cr_assert_eq(rc, 0, "connect: %s", cxlp_strerror(rc));
	return h;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
key_name(char *buf, size_t n, unsigned k)
{
	snprintf(buf, n, "churn-%u@model@rank0", k);
}

static uint64_t
word_of(unsigned key, uint32_t gen, unsigned i)
{
	return (uint64_t)key << 32 | (uint64_t)gen << 16 | i;
}

/* the copy is one whole value of key: every word of one generation */
static bool
pattern_ok(const uint64_t *v, size_t len, unsigned key)
{
	uint32_t gen = (uint32_t)(v[0] >> 16);

	if (len != PAGE) {
		return false;
	}
	for (unsigned i = 0; i < WORDS; i++) {
		if (v[i] != word_of(key, gen, i)) {
			return false;
		}
	}
	return true;
}

/* ---- writers ----------------------------------------------------------- */

struct churn {
	struct cxlp_handler *w, *r;
	int done;           /* atomic: stop */
	int failed;         /* atomic: a writer call failed (see why) */
	char why[200];
	/* reader counts, atomic */
	uint64_t good;      /* validated, pattern right */
	uint64_t bad_good;  /* validated, pattern wrong: must stay 0 */
	uint64_t torn;      /* CXLP_E_CHANGED, pattern wrong: caught */
	uint64_t stale;     /* CXLP_E_CHANGED, pattern right */
	uint64_t unchecked; /* CXLP_E_NOVERSION: asked the server */
	uint64_t missing;   /* not found (between delete and store) */
	uint64_t odd;       /* any other outcome: must stay 0 */
	uint64_t rounds;    /* writer: keys stored again */
	uint32_t latest;    /* storm: keys [0, latest] were stored (atomic) */
	unsigned nap_us;    /* the pause halfway through a slow copy */
};

struct role {
	struct churn *c;
	unsigned id;
};

static void
writer_fail(struct churn *c, const char *what, unsigned k, int rc)
{
	if (!__atomic_exchange_n(&c->failed, 1, __ATOMIC_ACQ_REL)) {
		snprintf(c->why, sizeof(c->why), "%s key %u: %s (%s)", what,
		    k, cxlp_strerror(rc), cxlp_errormsg());
	}
}

/* store key k at generation gen in a fresh (likely just freed) page */
static bool
put(struct churn *c, unsigned k, uint32_t gen)
{
	char key[64];
	cxlp_page_t pg;
	uint64_t *buf;
	bool stored = false;
	int rc;

	key_name(key, sizeof(key), k);
	if ((rc = cxlp_alloc(c->w, &pg, (void **)&buf)) != 0) {
		writer_fail(c, "alloc", k, rc);
		return false;
	}
	for (unsigned i = 0; i < WORDS; i++) {
		buf[i] = word_of(k, gen, i);
	}
	rc = cxlp_store(c->w, key, strlen(key), pg, PAGE, 0, &stored);
	if (rc != 0 || !stored) {
		writer_fail(c, "store", k, rc);
		return false;
	}
	return true;
}

static void *
writer_main(void *arg)
{
	struct role *ro = arg;
	struct churn *c = ro->c;
	uint32_t gen[NKEYS] = { 0 };
	char key[64];
	int rc;

	for (unsigned n = 0; !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
	    n++) {
		unsigned k = ro->id + NWRITERS * (n % (NKEYS / NWRITERS));

		key_name(key, sizeof(key), k);
		if ((rc = cxlp_delete(c->w, key, strlen(key))) != 0) {
			writer_fail(c, "delete", k, rc);
			break;
		}
		if (!put(c, k, ++gen[k])) {
			break;
		}
		__atomic_fetch_add(&c->rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* ---- readers ----------------------------------------------------------- */

/* copy len bytes from src slowly (pieces, yields, a sleep of nap_us
 * halfway), or at once: the slow copies overlap page reuse, the quick
 * ones mostly not, so that both outcomes are seen on a fast machine and a
 * loaded one */
static void
copy_out(uint8_t *dst, const uint8_t *src, size_t len, bool slow,
    unsigned nap_us)
{
	size_t piece = len / PIECES;

	if (!slow) {
		memcpy(dst, src, len);
		return;
	}
	for (unsigned p = 0; p < PIECES; p++) {
		size_t at = p * piece, n = p + 1 < PIECES ? piece : len - at;

		memcpy(dst + at, src + at, n);
		sched_yield();
		if (p == PIECES / 2) {
			usleep(nap_us);
		}
	}
}

static void
count(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* one retrieve, copy and validate of key k; the outcome counted */
static void
read_one(struct churn *c, struct cxlp_handler *h, unsigned k, bool slow,
    uint64_t *copy)
{
	const void *data = NULL;
	size_t len = 0;
	cxlp_version_t v;
	char key[64];
	bool ok;
	int rc;

	key_name(key, sizeof(key), k);
	rc = cxlp_retrieve_v(h, key, strlen(key), 0, &data, &len, &v);
	if (rc == CXLP_E_NOTFOUND) {
		count(&c->missing);
		return;
	}
	if (rc != 0 || len > PAGE) {
		count(&c->odd);
		return;
	}
	copy_out((uint8_t *)copy, data, len, slow, c->nap_us);
	rc = cxlp_validate(h, &v);
	ok = pattern_ok(copy, len, k);
	if (rc == 0) {
		count(ok ? &c->good : &c->bad_good);
	} else if (rc == CXLP_E_CHANGED) {
		count(ok ? &c->stale : &c->torn);
	} else if (rc == CXLP_E_NOVERSION) {
		count(&c->unchecked);
	} else {
		count(&c->odd);
	}
}

/* the key a reader reads n-th: in the churn one of NKEYS, in the storm
 * one of the last STORM_WINDOW stored */
static unsigned
key_to_read(struct churn *c, unsigned n)
{
	uint32_t latest = __atomic_load_n(&c->latest, __ATOMIC_ACQUIRE);
	uint32_t back = (n * 7919u) % STORM_WINDOW;

	if (latest == 0) {
		return n % NKEYS;
	}
	return back < latest ? latest - back : latest;
}

static void *
reader_main(void *arg)
{
	struct role *ro = arg;
	struct churn *c = ro->c;
	struct cxlp_handler *h = ro->id + 1 < NREADERS ? c->r : c->w;
	static _Thread_local uint64_t copy[WORDS];

	for (unsigned n = ro->id; !__atomic_load_n(&c->done,
	    __ATOMIC_ACQUIRE); n++) {
		read_one(c, h, key_to_read(c, n), n % 2 == 0, copy);
	}
	return NULL;
}

static uint64_t
get(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

/* run until RUN_MS, or past MIN_MS once ENOUGH copies were caught torn
 * and ENOUGH validated */
static void
run(struct churn *c)
{
	uint64_t start = now_ms();

	while (!__atomic_load_n(&c->failed, __ATOMIC_ACQUIRE)) {
		uint64_t t = now_ms() - start;

		if (t >= RUN_MS || (t >= MIN_MS && get(&c->torn) >= ENOUGH &&
		    get(&c->good) >= ENOUGH)) {
			break;
		}
		usleep(20 * 1000);
	}
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
}

/* what the readers saw: no bad copy validated, and bad copies (torn or
 * foreign) did happen and were caught */
static void
verdict(struct churn *c)
{
	cr_log_info("rounds %llu: good %llu, torn caught %llu, stale caught "
	    "%llu, unchecked %llu, missing %llu",
	    (unsigned long long)c->rounds, (unsigned long long)c->good,
	    (unsigned long long)c->torn, (unsigned long long)c->stale,
	    (unsigned long long)c->unchecked, (unsigned long long)c->missing);
	cr_assert_eq(c->failed, 0, "writer: %s", c->why);
	cr_assert_eq(c->bad_good, 0, "%llu bad copies validated",
	    (unsigned long long)c->bad_good);
	cr_assert_eq(c->odd, 0, "%llu unexpected outcomes",
	    (unsigned long long)c->odd);
	cr_assert_gt(c->torn, 0, "no torn or foreign copy in %llu rounds: "
	    "the test did not race", (unsigned long long)c->rounds);
	cr_assert_gt(c->good, 0, "no copy validated (torn %llu, stale %llu, "
	    "unchecked %llu, missing %llu)", (unsigned long long)c->torn,
	    (unsigned long long)c->stale, (unsigned long long)c->unchecked,
	    (unsigned long long)c->missing);
}

/* the storm's writer: keys latest + 1, ... stored once each into a full
 * pool, so every page it stores into is one eviction just freed */
static void *
storm_main(void *arg)
{
	struct role *ro = arg;
	struct churn *c = ro->c;

	for (uint32_t k = __atomic_load_n(&c->latest, __ATOMIC_ACQUIRE) + 1;
	    !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE); k++) {
		if (!put(c, k, 0)) {
			break;
		}
		__atomic_store_n(&c->latest, k, __ATOMIC_RELEASE);
		__atomic_fetch_add(&c->rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* nw writers running writer, NREADERS readers, until run() says stop;
 * then the verdict */
static void
race(struct churn *c, void *(*writer)(void *), unsigned nw)
{
	struct role wr[NWRITERS], rd[NREADERS];
	pthread_t wt[NWRITERS], rt[NREADERS];

	for (unsigned i = 0; i < nw; i++) {
		wr[i] = (struct role){ c, i };
		cr_assert_eq(pthread_create(&wt[i], NULL, writer, &wr[i]), 0);
	}
	for (unsigned i = 0; i < NREADERS; i++) {
		rd[i] = (struct role){ c, i };
		cr_assert_eq(pthread_create(&rt[i], NULL, reader_main, &rd[i]),
		    0);
	}
	run(c);
	for (unsigned i = 0; i < nw; i++) {
		pthread_join(wt[i], NULL);
	}
	for (unsigned i = 0; i < NREADERS; i++) {
		pthread_join(rt[i], NULL);
	}
	verdict(c);
}

Test(version_churn, every_copy_that_validates_is_one_whole_value)
{
	static struct churn c;

	c.w = connect_h();
	c.r = connect_h();
	c.nap_us = 100;
	for (unsigned k = 0; k < NKEYS; k++) {
		cr_assert(put(&c, k, 0), "%s", c.why);
	}
	race(&c, writer_main, NWRITERS);
	cxlp_close(&c.r);
	cxlp_close(&c.w);
}

/* The eviction storm: the pool is filled first, so that from the first
 * read on every store evicts, and readers race the evictions of the keys
 * they copy. */
Test(version_storm, every_copy_that_validates_survived_the_evictions)
{
	static struct churn c;
	struct cxlp_stats st;
	uint32_t k = 0;

	c.w = connect_h();
	c.r = connect_h();
	c.nap_us = 2000; /* an evicted page is stored into a batch later */
	do {
		cr_assert(put(&c, ++k, 0), "%s", c.why);
		cr_assert_eq(cxlp_stats(c.w, &st), 0);
	} while (st.evicted_pressure == 0);
	__atomic_store_n(&c.latest, k, __ATOMIC_RELEASE);
	race(&c, storm_main, 1);
	cr_assert_eq(cxlp_stats(c.w, &st), 0);
	cr_assert_gt(st.evicted_pressure, c.rounds / 2, "%llu evicted for "
	    "%llu stores: no storm", (unsigned long long)st.evicted_pressure,
	    (unsigned long long)c.rounds);
	cxlp_close(&c.r);
	cxlp_close(&c.w);
}
