/*
 * index_helper.c -- cxlpool-bench-index: the KV index's lookup cost as it
 * grows, measured in-process on a real pool file (the pool library, no
 * server, no socket), so the figure is the index alone.
 *
 * It formats a sparse pool under /dev/shm sized for the largest count,
 * registers keys one by one with pool_kv_insert (the metaserver's own
 * call, persists included), and at each checkpoint (10^4, 10^5, ...)
 * times random lookups of present keys (hits) and of absent keys
 * (misses), and reports the index's bytes per key. It is a separate
 * executable because it links the pool library, whose error functions
 * are also libcxlpool's public ones: one process must not carry both.
 * cxlpool-bench runs it and reads its "row" lines:
 *   row KEYS INSERT_NS HIT_NS MISS_NS SLOT_B REC_B DRAM_B SLOTS
 * Usage: cxlpool-bench-index POOLPATH MAXKEYS LOOKUPS
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "pool.h"
#include "pool_int.h"

#define KEY_LEN 32
#define KEY_BUF 40
#define PAGE 64u

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

/* Average ns of m lookups of random keys among the first n (tag 1 =
 * present) or absent ones (tag 2). Keys are made before the clock. */
static double
time_lookups(struct pool *p, uint64_t n, size_t m, unsigned tag,
    char (*keys)[KEY_BUF], size_t *bad)
{
	uint64_t seed = 88172645463325252ull + n, t0;
	struct pool_kv kv;

	for (size_t i = 0; i < m; i++) {
		key_of(keys[i], tag, rnd(&seed) % n);
	}
	t0 = ns_now();
	for (size_t i = 0; i < m; i++) {
		int rc = pool_kv_lookup(p, keys[i], KEY_LEN, &kv);

		*bad += (rc == 0) != (tag == 1);
	}
	return (double)(ns_now() - t0) / (double)m;
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

static void
report(struct pool *p, uint64_t n, double ins, double hit, double miss)
{
	struct pool_stats st;
	double slot_b, rec_b, dram_b;

	pool_stats(p, &st);
	slot_b = (double)st.index_slots * sizeof(struct kv_slot) / (double)n;
	rec_b = (double)p->heap.used * KV_GRANULE / (double)n;
	/* keyheap DRAM: a next link (4 B) and a live bit per granule */
	dram_b = (double)p->heap.ngran * (4.0 + 1.0 / 8) / (double)n;
	printf("row %llu %.1f %.1f %.1f %.1f %.1f %.1f %llu\n",
	    (unsigned long long)n, ins, hit, miss, slot_b, rec_b, dram_b,
	    (unsigned long long)st.index_slots);
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	struct pool *p = NULL;
	struct pool_region r;
	struct pool_kv kv;
	uint64_t maxkeys, owner = 0, n = 0, prev = 0, next = 10000, t0;
	size_t m, bad = 0;
	char (*keys)[KEY_BUF];
	char key[KEY_BUF];
	bool ins;

	if (argc != 4) {
		fprintf(stderr, "usage: %s POOLPATH MAXKEYS LOOKUPS\n",
		    argv[0]);
		return 2;
	}
	maxkeys = strtoull(argv[2], NULL, 10);
	m = strtoul(argv[3], NULL, 10);
	next = maxkeys < next ? maxkeys : next;
	keys = calloc(m, KEY_BUF);
	if (keys == NULL || maxkeys == 0 ||
	    open_pool(&p, argv[1], maxkeys, &r, &owner) != 0) {
		free(keys);
		unlink(argv[1]);
		return 1;
	}
	t0 = ns_now();
	while (n < maxkeys && bad == 0) {
		key_of(key, 1, n);
		bad += pool_kv_insert(p, owner, key, KEY_LEN, r.id,
		    r.off + n * PAGE, PAGE, &kv, &ins) != 0 || !ins;
		if (++n == next) {
			double insert_ns = (double)(ns_now() - t0) /
			    (double)(n - prev);
			double hit = time_lookups(p, n, m, 1, keys, &bad);
			double miss = time_lookups(p, n, m, 2, keys, &bad);

			report(p, n, insert_ns, hit, miss);
			next = next * 10 < maxkeys ? next * 10 : maxkeys;
			prev = n;
			t0 = ns_now();
		}
	}
	if (bad > 0) {
		fprintf(stderr, "index: %zu wrong answers at %llu keys: %s\n",
		    bad, (unsigned long long)n, cxlp_errormsg());
	}
	pool_close(&p);
	unlink(argv[1]);
	free(keys);
	return bad == 0 ? 0 : 1;
}
