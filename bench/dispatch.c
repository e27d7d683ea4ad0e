/*
 * dispatch.c -- the metaserver's own work per key, without nng: runs
 * cxlpool-bench-dispatch (dispatch_helper.c), which times REGISTER and
 * DELETE frames of 256 keys through ms_dispatch on a pool the size of the
 * bench's metaserver's, and reports the median and p90 round per key.
 * Beside the echo section's REGISTER-256 floor it splits "server CPU per
 * registered key" into nng's share and ours: the batch section quotes
 * both next to that target.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* the size of the pool main.c gives the metaserver it starts */
#define POOL_BYTES(quick) ((quick) ? "536870912" : "2147483648")

/* The helper's rounds: ns per REGISTER and per DELETE of batch keys. */
struct drounds {
	double *reg, *del;
	size_t n, cap;
	unsigned batch;
};

/* "batch N" once, then "round REG_NS DEL_NS" per round */
static void
read_line(const char *line, void *arg)
{
	struct drounds *d = arg;
	double reg, del;

	if (sscanf(line, "batch %u", &d->batch) == 1 || d->n == d->cap ||
	    sscanf(line, "round %lf %lf", &reg, &del) != 2) {
		return;
	}
	d->reg[d->n] = reg;
	d->del[d->n++] = del;
}

static void
report_op(struct bench *b, const char *op, double *ns, size_t n,
    unsigned batch)
{
	double p50 = pctl(ns, n, 50) / batch, p90 = pctl(ns, n, 90) / batch;

	printf("%-10s %6u %12.1f %12.1f\n", op, batch, p50, p90);
	jw_obj(&b->json, NULL);
	jw_str(&b->json, "op", op);
	jw_i64(&b->json, "batch", batch);
	jw_i64(&b->json, "rounds", (int64_t)n);
	jw_num(&b->json, "ns_per_key_p50", p50);
	jw_num(&b->json, "ns_per_key_p90", p90);
	jw_close(&b->json);
}

static void
report(struct bench *b, struct drounds *d)
{
	printf("\n## dispatch: the metaserver's own work, ms_dispatch "
	    "in-process (no nng)\n");
	printf("%-10s %6s %12s %12s\n", "op", "batch", "p50 ns/key",
	    "p90 ns/key");
	jw_arr(&b->json, "dispatch");
	report_op(b, "register", d->reg, d->n, d->batch);
	report_op(b, "delete", d->del, d->n, d->batch);
	jw_close(&b->json);
	b->dispatch_reg_us = pctl(d->reg, d->n, 50) / d->batch / 1000;
}

/* dispatch_section -- run cxlpool-bench-dispatch and report; sets
 * b->dispatch_reg_us. 0 or -1. */
int
dispatch_section(struct bench *b)
{
	char pool[96], rounds[16];
	const char *args[] = { POOL_BYTES(b->quick), rounds, NULL };
	struct drounds d = { .cap = b->quick ? 20u : 2000u };
	int rc = -1;

	snprintf(pool, sizeof(pool), "/dev/shm/cxlpool-bench-dispatch-%d.pool",
	    (int)getpid());
	snprintf(rounds, sizeof(rounds), "%zu", d.cap);
	d.reg = calloc(d.cap, sizeof(*d.reg));
	d.del = calloc(d.cap, sizeof(*d.del));
	if (d.reg != NULL && d.del != NULL &&
	    helper_run(b, "cxlpool-bench-dispatch", pool, args, read_line,
	    &d) == 0 && d.n > 0 && d.batch > 0) {
		report(b, &d);
		rc = 0;
	}
	free(d.reg);
	free(d.del);
	return rc;
}
