/*
 * index_helper.c -- cxlpool-bench-index: the KV index's lookup cost as it
 * grows, measured in-process on a real pool file (the pool library, no
 * server, no socket), so the figure is the index alone.
 *
 * It formats a sparse pool under /dev/shm sized for the largest count,
 * registers keys one by one with pool_kv_insert (the metaserver's own
 * call, persists included), and at each checkpoint (10^4, 10^5, ...)
 * times random lookups of present keys (hits) and of absent keys
 * (misses), one by one and, for hits, also in batches of 256 the way
 * the metaserver serves a batch (pool_kv_prefetch of the whole batch
 * first, so that its cache and TLB misses overlap), and reports the
 * index's bytes per key. Hits are also timed the way a handler's direct
 * reads look keys up (kvread over the same mapping, lock-free), one by
 * one and through kvread_lookup_batch. It is a separate executable
 * because it links
 * the pool library, whose error functions are also libcxlpool's public
 * ones: one process must not carry both.
 * cxlpool-bench runs it and reads its "row" lines:
 *   row KEYS INSERT_NS HIT_NS MISS_NS SLOT_B REC_B DRAM_B SLOTS BHIT_NS
 *       DHIT_NS DBHIT_NS
 * and, so that the numbers can be read, the page size behind the
 * metadata (index + key heap): once, the THP settings and what the pool
 * chose (pmap_advise_huge), and after each row how much of the metadata's
 * resident memory is mapped with 2 MiB pages (/proc/self/smaps):
 *   thp SHMEM_ENABLED POOL_CHOICE SETTING...
 *   meta KEYS PMD_KB RSS_KB
 * Usage: cxlpool-bench-index POOLPATH MAXKEYS LOOKUPS
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "kvread.h"
#include "pool.h"
#include "pool_int.h" /* the metadata mapping: page sizes, kvread */

#define KEY_LEN 32
#define KEY_BUF 40
#define PAGE 64u
#define CHUNK 512u /* lookups per timed chunk */
#define BATCH 256u /* keys per batch, as the batch section's */

static uint64_t
ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* same shape as bench_key(): 32 bytes, model@worker@tag@hash */
static void
key_of(char *buf, unsigned tag, uint64_t i)
{
	/* KEY_LEN bytes count: the NUL and the padding after the 29
	 * characters are part of the key, so they must be zero every time */
	memset(buf, 0, KEY_BUF);
	snprintf(buf, KEY_BUF, "m7b@w%02u@t%03u@%016llx", 77u, tag % 1000,
	    (unsigned long long)(i * 0x9e3779b97f4a7c15ull));
}

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t
round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* lookups [lo, hi) as the metaserver does a batch: hash every key,
 * pool_kv_prefetch them all (slots, then key records), then look up */
static size_t
lookup_batch(struct pool *p, char (*keys)[KEY_BUF], size_t lo, size_t hi,
    unsigned tag)
{
	uint64_t h[BATCH] = { 0 };
	struct pool_kv kv;
	size_t bad = 0;

	for (size_t i = lo; i < hi; i++) {
		h[i - lo] = pool_kv_hash(keys[i], KEY_LEN);
	}
	pool_kv_prefetch(p, h, hi - lo, false);
	for (size_t i = lo; i < hi; i++) {
		int rc = pool_kv_lookup(p, keys[i], KEY_LEN, &kv);

		bad += (rc == 0) != (tag == 1);
	}
	return bad;
}

/* How lookups are made: through the pool (the metaserver's calls) or
 * through kvread (a handler's direct reads), one by one or in batches. */
enum lmode { POOL_ONE, POOL_BATCH, READ_ONE, READ_BATCH };

struct lctx {
	struct pool *p;
	struct kvread kr;
	char (*keys)[KEY_BUF];
};

/* keys [lo, hi) through kvread_lookup_batch; returns the wrong answers */
static size_t
read_batch(struct lctx *x, size_t lo, size_t hi, unsigned tag)
{
	const void *kp[BATCH] = { 0 };
	size_t kl[BATCH] = { 0 }, bad = 0;
	struct kvread_loc l[BATCH];
	int rc[BATCH];

	for (size_t i = lo; i < hi; i++) {
		kp[i - lo] = x->keys[i];
		kl[i - lo] = KEY_LEN;
	}
	kvread_lookup_batch(&x->kr, hi - lo, kp, kl, l, rc);
	for (size_t i = lo; i < hi; i++) {
		bad += (rc[i - lo] == 0) != (tag == 1);
	}
	return bad;
}

/* lookups [lo, hi) in mode; returns the wrong answers */
static size_t
lookup_range(struct lctx *x, enum lmode mode, size_t lo, size_t hi,
    unsigned tag)
{
	struct kvread_loc l;
	struct pool_kv kv;
	size_t bad = 0;

	for (size_t i = lo; i < hi; i += BATCH) {
		size_t end = i + BATCH < hi ? i + BATCH : hi;

		if (mode == POOL_BATCH) {
			bad += lookup_batch(x->p, x->keys, i, end, tag);
		} else if (mode == READ_BATCH) {
			bad += read_batch(x, i, end, tag);
		}
		for (size_t k = i; k < end && mode == POOL_ONE; k++) {
			bad += (pool_kv_lookup(x->p, x->keys[k], KEY_LEN,
			    &kv) == 0) != (tag == 1);
		}
		for (size_t k = i; k < end && mode == READ_ONE; k++) {
			bad += (kvread_lookup(&x->kr, x->keys[k], KEY_LEN,
			    &l) == 0) != (tag == 1);
		}
	}
	return bad;
}

/* ns per lookup of m lookups of random keys among the first n (tag 1 =
 * present) or absent ones (tag 2) in mode, timed in chunks of CHUNK: the
 * median chunk, so that a chunk in which the process was preempted (this
 * box runs other work) does not count. Keys are made before the clock. */
static double
time_lookups(struct lctx *x, uint64_t n, size_t m, unsigned tag,
    enum lmode mode, double *chunk_ns, size_t *bad)
{
	uint64_t seed = 88172645463325252ull + n + (uint64_t)mode;
	size_t nchunks = (m + CHUNK - 1) / CHUNK;

	for (size_t i = 0; i < m; i++) {
		key_of(x->keys[i], tag, rnd(&seed) % n);
	}
	for (size_t c = 0; c < nchunks; c++) {
		size_t lo = c * CHUNK, hi = lo + CHUNK < m ? lo + CHUNK : m;
		uint64_t t0 = ns_now();

		*bad += lookup_range(x, mode, lo, hi, tag);
		chunk_ns[c] = (double)(ns_now() - t0) / (double)(hi - lo);
	}
	qsort(chunk_ns, nchunks, sizeof(*chunk_ns), cmp_double);
	return chunk_ns[nchunks / 2];
}

static int
open_pool(struct pool **p, const char *path, uint64_t maxkeys,
    struct pool_region *r, uint64_t *owner)
{
	uint64_t slots = 64, region = round_up(maxkeys * PAGE, 2u << 20);
	struct pool_params pp = { 0 };
	struct pool_session s = { .pid = (uint32_t)getpid() };
	int rc;

	while (slots - slots / 4 < maxkeys) {
		slots <<= 1;
	}
	pp.index_slots = slots;
	/* metadata: slots * (32 index + 64 heap + 4 pin table) + tables;
	 * then the data */
	pp.size = round_up(slots * 100 + (8u << 20) + region + (4u << 20),
	    2u << 20);
	unlink(path);
	rc = pool_open(p, path, POOL_CREATE | POOL_REFORMAT, &pp);
	if (rc == 0) {
		rc = pool_session_add(*p, &s);
	}
	if (rc == 0) {
		*owner = s.id;
		rc = pool_region_alloc(*p, s.id, region, PAGE, r);
	}
	if (rc != 0) {
		fprintf(stderr, "index: %s: %s\n", path, cxlp_errormsg());
	}
	return rc;
}

/* the THP settings the run sees and what the pool chose for its
 * metadata: "thp never advised tmpfs huge=advise" */
static void
report_thp(const struct pool *p)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled",
	    "re");
	char line[128] = "", *a, *e;

	if (f != NULL) {
		if (fgets(line, sizeof(line), f) == NULL) {
			line[0] = '\0';
		}
		fclose(f);
	}
	a = strchr(line, '[');
	e = a != NULL ? strchr(a, ']') : NULL;
	if (e != NULL) {
		*e = '\0';
	}
	printf("thp %s %s %s\n", e != NULL ? a + 1 : "?",
	    pmap_huge(p->map) == PMAP_HUGE_NONE ? "base" : "huge",
	    pmap_huge_setting(p->map));
}

/* ShmemPmdMapped and Rss, kB, of the mappings that hold [lo, hi) */
static void
report_meta(uint64_t n, uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	unsigned long long pmd = 0, rss = 0, v;
	uintptr_t a, b;
	bool in = false;
	char line[256];

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &a, &b) == 2) {
			in = a < hi && b > lo;
		} else if (in && sscanf(line, "Rss: %llu", &v) == 1) {
			rss += v;
		} else if (in && sscanf(line, "ShmemPmdMapped: %llu",
		    &v) == 1) {
			pmd += v;
		}
	}
	if (f != NULL) {
		fclose(f);
	}
	printf("meta %llu %llu %llu\n", (unsigned long long)n, pmd, rss);
}

static void
report(struct pool *p, uint64_t n, double ins, const double t[5])
{
	struct pool_stats st;
	double slot_b, rec_b, dram_b;

	pool_stats(p, &st);
	slot_b = (double)st.index_slots * sizeof(struct kv_slot) / (double)n;
	rec_b = (double)p->heap.used * KV_GRANULE / (double)n;
	/* keyheap DRAM: a next link (4 B) and a live bit per granule */
	dram_b = (double)p->heap.ngran * (4.0 + 1.0 / 8) / (double)n;
	printf("row %llu %.1f %.1f %.1f %.1f %.1f %.1f %llu %.1f %.1f %.1f\n",
	    (unsigned long long)n, ins, t[0], t[1], slot_b, rec_b, dram_b,
	    (unsigned long long)st.index_slots, t[2], t[3], t[4]);
	report_meta(n, (uintptr_t)p->base, (uintptr_t)p->base + p->data_off);
	fflush(stdout);
}

/* the lookup figures at n keys: hit, miss, batched hit through the pool;
 * hit and batched hit through kvread */
static void
measure(struct lctx *x, uint64_t n, size_t m, double *chunk_ns,
    size_t *bad, double t[5])
{
	t[0] = time_lookups(x, n, m, 1, POOL_ONE, chunk_ns, bad);
	t[1] = time_lookups(x, n, m, 2, POOL_ONE, chunk_ns, bad);
	t[2] = time_lookups(x, n, m, 1, POOL_BATCH, chunk_ns, bad);
	t[3] = time_lookups(x, n, m, 1, READ_ONE, chunk_ns, bad);
	t[4] = time_lookups(x, n, m, 1, READ_BATCH, chunk_ns, bad);
}

int
main(int argc, char **argv)
{
	struct lctx x = { 0 };
	struct pool_region r;
	struct pool_kv kv;
	uint64_t maxkeys, owner = 0, n = 0, prev = 0, next = 10000, t0;
	size_t m, bad = 0;
	char key[KEY_BUF], why[200];
	double *chunk_ns, t[5];
	bool ins;

	if (argc != 4) {
		fprintf(stderr, "usage: %s POOLPATH MAXKEYS LOOKUPS\n",
		    argv[0]);
		return 2;
	}
	maxkeys = strtoull(argv[2], NULL, 10);
	m = strtoul(argv[3], NULL, 10);
	next = maxkeys < next ? maxkeys : next;
	x.keys = calloc(m, KEY_BUF);
	chunk_ns = calloc(m / CHUNK + 1, sizeof(*chunk_ns));
	if (x.keys == NULL || chunk_ns == NULL || maxkeys == 0 || m == 0 ||
	    open_pool(&x.p, argv[1], maxkeys, &r, &owner) != 0) {
		free(x.keys);
		free(chunk_ns);
		unlink(argv[1]);
		return 1;
	}
	if (kvread_init(&x.kr, x.p->sb, x.p->base, x.p->data_off, why,
	    sizeof(why)) != 0) {
		fprintf(stderr, "index: kvread: %s\n", why);
		bad = 1;
	}
	report_thp(x.p);
	t0 = ns_now();
	while (n < maxkeys && bad == 0) {
		key_of(key, 1, n);
		bad += pool_kv_insert(x.p, owner, key, KEY_LEN, r.id,
		    r.off + n * PAGE, PAGE, &kv, &ins) != 0 || !ins;
		if (++n == next) {
			double insert_ns = (double)(ns_now() - t0) /
			    (double)(n - prev);

			measure(&x, n, m, chunk_ns, &bad, t);
			report(x.p, n, insert_ns, t);
			next = next * 10 < maxkeys ? next * 10 : maxkeys;
			prev = n;
			t0 = ns_now();
		}
	}
	if (bad > 0) {
		fprintf(stderr, "index: %zu wrong answers at %llu keys: %s\n",
		    bad, (unsigned long long)n, cxlp_errormsg());
	}
	pool_close(&x.p);
	unlink(argv[1]);
	free(x.keys);
	free(chunk_ns);
	return bad == 0 ? 0 : 1;
}
