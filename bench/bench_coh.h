/*
 * bench_coh.h -- the coherence section's shared state: coh.c formats the pools
 * and runs the rounds, coh_report.c reads the helper cxlpool-bench-cline
 * (the pools' modes, the primitives) and prints the tables.
 */
#ifndef CXLP_BENCH_BENCH_COH_H
#define CXLP_BENCH_BENCH_COH_H

#include "bench.h"
#include "cxlpool.h"

#define COH_PAGE (64u << 10)
#define COH_BATCH 256u

/* the paths; the _COLD ones read values the reader's CPU cache does not
 * hold (coh.c, values_evict) */
enum { P_STORE, P_READ, P_READ_COLD, P_BSTORE, P_BREAD, P_BREAD_COLD,
	P_N };

struct cmode {
	const char *name;
	struct bench_ms ms;
	struct cxlp_handler *h;
	char probed[16];         /* the mode the pool's device says */
	double us[P_N][COH_ROUNDS_MAX]; /* us per value, per round */
};

struct coh {
	struct bench *b;
	size_t n, batch;
	unsigned rounds;
	char *src, *dst;
	char (*keys)[BENCH_KEY_BUF];
	const void **kp, **data;
	void **bufs;             /* each value's page as written (cxlp_alloc) */
	size_t *kl, *lens;
	cxlp_page_t *pages;
	int *status;
	bool *stored;
	cxlp_version_t *vers;
	double *op_us;           /* n per-op (or per-batch) times */
	size_t errors;
	char method[32], forced[32];
	struct cmode modes[COH_MODES_MAX];
	int nmodes;
};

/* coh_probe_pools -- every pool's mode read back from its device (sets
 * modes[].probed, and method); 0 if each is the one asked for, else -1
 * with the reason on stderr. */
int coh_probe_pools(struct coh *c);
/* coh_header, coh_table -- the section's title and its table of paths
 * (JSON "paths"; the sw direct-read target). */
void coh_header(struct coh *c);
void coh_table(struct coh *c);
/* coh_prims -- the primitives' table (JSON "primitives"); 0 or -1. */
int coh_prims(struct coh *c);

#endif /* CXLP_BENCH_BENCH_COH_H */
