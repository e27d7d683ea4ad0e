/*
 * cline_helper.c -- cxlpool-bench-cline: what the cache-line primitives of
 * the coherence modes cost, in ns per 64-byte line, measured on 64 KiB
 * (1024 lines, one value of the coherence section), and what the pools
 * the section formatted really are.
 *
 * Each primitive is timed on one 64 KiB range in three states of its
 * lines, set up untimed before each call: "dirty" (just written),
 * "clean" (just read: cached, unmodified) and "absent" (just dropped: not
 * in this CPU's cache). Beside them, a copy of the same 64 KiB out to a
 * private buffer from a cached source and right after a drop (each line
 * fetched from memory again): what a reader's drop adds to the copy it
 * precedes; and the drop pipelined with the copy in chunks (a fence a
 * chunk), to show whether a CPU overlaps its flushes with the loads
 * (docs/multihost.md, "Cost": this one does not). The sim primitives
 * act on a scratch device of the helper's own (a simulated host "bench"
 * of it), never on a pool. Each figure is the median of REPS calls. A
 * separate executable because it links the pool library (the index
 * helper says why).
 *
 * Usage:
 *   cxlpool-bench-cline SCRATCH prims     time the primitives; SCRATCH is
 *                                         the scratch device (a plain file
 *                                         it creates and removes, with its
 *                                         simulated host's files)
 *   cxlpool-bench-cline SCRATCH probe POOL...   each pool's coherence, read
 *                                         from the device (coh_probe)
 * Lines printed:
 *   method NAME FORCED      cline_method_name(cline_method()), and the
 *                           CXLP_CLINE asked for ("-": none)
 *   prim OP STATE NS_PER_LINE
 *   probe POOL MODE
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cline.h"
#include "coh.h"
#include "err.h"
#include "sim.h"

#define SPAN (64u << 10)          /* one value of the coherence section */
#define LINES (SPAN / CLINE_SIZE)
#define REPS 1001                 /* calls per figure; the median counts */
#define DEV_SIZE (4u << 20)       /* the scratch device */
#define DEV_OFF (1u << 20)        /* where on it the 64 KiB lies */

enum state { ST_DIRTY, ST_CLEAN, ST_ABSENT, ST_N };

static const char *const state_names[ST_N] = { "dirty", "clean",
	"absent" };

static volatile uint64_t sink; /* keeps the reads of st_clean */

static uint64_t
ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* the lines of p in state st: written, read, or dropped (this CPU) */
static void
set_state(uint8_t *p, enum state st, unsigned rep)
{
	uint64_t sum = 0;

	if (st == ST_DIRTY) {
		memset(p, (int)(rep % 255) + 1, SPAN); /* bytes that change */
	} else if (st == ST_CLEAN) {
		cline_drop(p, SPAN); /* clean everywhere, then cached */
		for (size_t i = 0; i < SPAN; i += CLINE_SIZE) {
			sum += p[i];
		}
		sink += sum;
	} else {
		cline_drop(p, SPAN);
	}
}

/* One primitive over [p, p + SPAN) (sim: device offset DEV_OFF): fn,
 * or with chunk set drop_copy_chunked in chunks of that many bytes. */
struct prim {
	const char *name;
	void (*fn)(struct sim *s, uint8_t *p, uint8_t *dst);
	size_t chunk;
};

static void
p_writeback(struct sim *s, uint8_t *p, uint8_t *dst)
{
	(void)s;
	(void)dst;
	cline_writeback(p, SPAN);
}

static void
p_drop(struct sim *s, uint8_t *p, uint8_t *dst)
{
	(void)s;
	(void)dst;
	cline_drop(p, SPAN);
}

static void
p_copy(struct sim *s, uint8_t *p, uint8_t *dst)
{
	(void)s;
	memcpy(dst, p, SPAN);
}

static void
p_drop_copy(struct sim *s, uint8_t *p, uint8_t *dst)
{
	(void)s;
	cline_drop(p, SPAN);
	memcpy(dst, p, SPAN);
}

/* the drop of p_drop_copy pipelined with its copy in chunks of ch
 * bytes: chunk k+1's lines dropped, unfenced, while chunk k (dropped and
 * fenced before) is copied, then the fence before chunk k+1's copy (a
 * load may pass a drop of its line; the fence orders them): a copy-out
 * call's way to overlap the drops with the loads, at a fence a chunk */
static void
drop_copy_chunked(uint8_t *p, uint8_t *dst, size_t ch)
{
	cline_drop(p, ch);
	for (size_t off = 0; off < SPAN; off += ch) {
		bool more = off + ch < SPAN;

		if (more) {
			cline_drop_unfenced(p + off + ch, ch);
		}
		memcpy(dst + off, p + off, ch);
		if (more) {
			cline_drop_fence();
		}
	}
}

static void
p_sim_writeback(struct sim *s, uint8_t *p, uint8_t *dst)
{
	(void)p;
	(void)dst;
	sim_writeback(s, DEV_OFF, SPAN);
}

static void
p_sim_drop(struct sim *s, uint8_t *p, uint8_t *dst)
{
	(void)p;
	(void)dst;
	sim_drop(s, DEV_OFF, SPAN);
}

/* prim's median ns per line with its lines in state st */
static double
time_prim(const struct prim *pr, enum state st, struct sim *s, uint8_t *p,
    uint8_t *dst)
{
	static uint64_t ns[REPS];

	for (unsigned r = 0; r < REPS; r++) {
		if (s != NULL && st == ST_ABSENT) {
			sim_drop(s, DEV_OFF, SPAN); /* the host's copy clean */
		}
		set_state(p, st, r);
		uint64_t t0 = ns_now();
		if (pr->chunk > 0) {
			drop_copy_chunked(p, dst, pr->chunk);
		} else {
			pr->fn(s, p, dst);
		}
		ns[r] = ns_now() - t0;
	}
	qsort(ns, REPS, sizeof(ns[0]), cmp_u64);
	return (double)ns[REPS / 2] / LINES;
}

static void
run_prims(const struct prim *prims, size_t n, struct sim *s, uint8_t *p,
    uint8_t *dst)
{
	for (size_t i = 0; i < n; i++) {
		for (int st = 0; st < ST_N; st++) {
			printf("prim %s %s %.2f\n", prims[i].name,
			    state_names[st], time_prim(&prims[i],
			    (enum state)st, s, p, dst));
			fflush(stdout);
		}
	}
}

/* this CPU's primitives on a private buffer */
static int
cpu_prims(void)
{
	static const struct prim prims[] = {
		{ "cline_writeback", p_writeback, 0 },
		{ "cline_drop", p_drop, 0 },
		{ "copy", p_copy, 0 },
		{ "cline_drop+copy", p_drop_copy, 0 },
		{ "chunked_copy_32K", NULL, 32u << 10 },
		{ "chunked_copy_16K", NULL, 16u << 10 },
		{ "chunked_copy_4K", NULL, 4u << 10 },
	};
	uint8_t *p = aligned_alloc(4096, SPAN), *dst = aligned_alloc(4096,
	    SPAN);

	if (p == NULL || dst == NULL) {
		free(p);
		free(dst);
		return -ENOMEM;
	}
	memset(p, 0x5a, SPAN);
	memset(dst, 0xa5, SPAN);
	run_prims(prims, sizeof(prims) / sizeof(prims[0]), NULL, p, dst);
	free(p);
	free(dst);
	return 0;
}

static int
scratch_device(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = 0;

	if (fd < 0) {
		return -errno;
	}
	if (ftruncate(fd, DEV_SIZE) != 0) {
		rc = -errno;
	}
	close(fd);
	return rc;
}

/* the simulator's primitives on a scratch device, as host "bench"; the
 * lines' state is set through the host's cache, as a process of that host
 * would (the state names what the CPU holds; the simulator's own notion,
 * dirty against the twin, follows the writes) */
static int
sim_prims(const char *scratch)
{
	static const struct prim prims[] = {
		{ "sim_writeback", p_sim_writeback, 0 },
		{ "sim_drop", p_sim_drop, 0 },
	};
	struct sim *s = NULL;
	uint8_t *cache = MAP_FAILED;
	char simlock[4096];
	int fd = -1, rc;

	if ((rc = scratch_device(scratch)) != 0 ||
	    (rc = sim_open(&s, scratch, "bench")) != 0) {
		goto out;
	}
	fd = open(sim_cache_path(s), O_RDWR | O_CLOEXEC);
	cache = fd < 0 ? MAP_FAILED : mmap(NULL, DEV_SIZE, PROT_READ |
	    PROT_WRITE, MAP_SHARED, fd, 0);
	if (cache == MAP_FAILED) {
		rc = -errno;
		goto out;
	}
	memset(cache + DEV_OFF, 0x5a, SPAN);
	sim_writeback(s, DEV_OFF, SPAN);
	run_prims(prims, sizeof(prims) / sizeof(prims[0]), s,
	    cache + DEV_OFF, NULL);
out:
	if (cache != MAP_FAILED) {
		munmap(cache, DEV_SIZE);
	}
	if (fd >= 0) {
		close(fd);
	}
	sim_close(&s);
	(void)sim_forget_hosts(scratch);
	snprintf(simlock, sizeof(simlock), "%s.simlock", scratch);
	unlink(simlock);
	unlink(scratch);
	return rc;
}

static int
probe(int n, char **pools)
{
	for (int i = 0; i < n; i++) {
		enum pool_coh m;
		int rc = coh_probe(pools[i], &m);

		if (rc != 0) {
			fprintf(stderr, "cxlpool-bench-cline: %s: %s\n",
			    pools[i], cxlp_errormsg());
			return rc;
		}
		printf("probe %s %s\n", pools[i], pool_coh_name(m));
	}
	return 0;
}

int
main(int argc, char **argv)
{
	const char *forced = getenv("CXLP_CLINE");
	int rc;

	if (argc < 3 || (strcmp(argv[2], "prims") != 0 &&
	    strcmp(argv[2], "probe") != 0)) {
		fprintf(stderr, "usage: cxlpool-bench-cline SCRATCH prims | "
		    "SCRATCH probe POOL...\n");
		return 2;
	}
	printf("method %s %s\n", cline_method_name(cline_method()),
	    forced != NULL && forced[0] != '\0' ? forced : "-");
	if (strcmp(argv[2], "probe") == 0) {
		return probe(argc - 3, argv + 3) == 0 ? 0 : 1;
	}
	if (cline_method() == CLINE_NONE) {
		fprintf(stderr, "cxlpool-bench-cline: no cache-line "
		    "maintenance on this CPU\n");
		return 1;
	}
	rc = cpu_prims();
	if (rc == 0) {
		rc = sim_prims(argv[1]);
	}
	if (rc != 0) {
		fprintf(stderr, "cxlpool-bench-cline: %s (%s)\n", strerror(-rc),
		    cxlp_errormsg());
	}
	return rc == 0 ? 0 : 1;
}
