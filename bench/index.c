/*
 * index.c -- lookup cost as the index grows from 10^4 to 10^7 keys.
 *
 * Measured in-process, not through the server: the round trip (about
 * 100x a lookup) would bury the index's own cost, and 10^7 registers
 * through the server would take minutes. The work is done by
 * cxlpool-bench-index (index_helper.c), which sits next to this
 * executable; this section runs it on a sparse pool file in /dev/shm and
 * turns its "row" lines into the table, the JSON and the targets. The
 * server's CPU per looked-up key comes from the batch section.
 */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

struct irow {
	unsigned long long keys, slots;
	double ins, hit, miss, slot_b, rec_b, dram_b;
};

#define IROWS 8

static void
helper_path(const struct bench *b, char *out, size_t n)
{
	char *dup = strdup(b->self);

	snprintf(out, n, "%s/cxlpool-bench-index",
	    dup != NULL ? dirname(dup) : ".");
	free(dup);
}

static int
read_rows(struct child *c, struct irow *rows, int *nrows)
{
	char line[256];

	*nrows = 0;
	while (*nrows < IROWS && child_line(c, line, sizeof(line)) == 0) {
		struct irow *r = &rows[*nrows];

		if (sscanf(line, "row %llu %lf %lf %lf %lf %lf %lf %llu",
		    &r->keys, &r->ins, &r->hit, &r->miss, &r->slot_b,
		    &r->rec_b, &r->dram_b, &r->slots) == 8) {
			(*nrows)++;
		}
	}
	return *nrows > 0 ? 0 : -1;
}

static void
print_rows(struct bench *b, const struct irow *rows, int n)
{
	printf("\n## index: in-process pool_kv_lookup on a /dev/shm pool, "
	    "%d-byte keys\n", BENCH_KEY_LEN);
	printf("%10s %9s %9s %9s %8s %8s %8s %9s\n", "keys", "insert ns",
	    "hit ns", "miss ns", "slot B", "rec B", "DRAM B", "slots");
	jw_begin(&b->json, "index", '[');
	for (int i = 0; i < n; i++) {
		const struct irow *r = &rows[i];

		printf("%10llu %9.0f %9.0f %9.0f %8.1f %8.1f %8.1f %9llu\n",
		    r->keys, r->ins, r->hit, r->miss, r->slot_b, r->rec_b,
		    r->dram_b, r->slots);
		jw_begin(&b->json, NULL, '{');
		jw_int(&b->json, "keys", (long long)r->keys);
		jw_num(&b->json, "insert_ns", r->ins);
		jw_num(&b->json, "lookup_hit_ns", r->hit);
		jw_num(&b->json, "lookup_miss_ns", r->miss);
		jw_num(&b->json, "slot_bytes_per_key", r->slot_b);
		jw_num(&b->json, "record_bytes_per_key", r->rec_b);
		jw_num(&b->json, "dram_bytes_per_key", r->dram_b);
		jw_int(&b->json, "slots", (long long)r->slots);
		jw_end(&b->json, '}');
	}
	jw_end(&b->json, ']');
}

static void
index_targets(struct bench *b, const struct irow *rows, int n)
{
	const struct irow *lo = &rows[0], *hi = &rows[n - 1];
	double limit = 2.0 * (BENCH_KEY_LEN + 32);
	/* a slot at the 3/4 load limit, plus the key record */
	double full = 32.0 / 0.75 + hi->rec_b;
	char what[96], note[96];

	snprintf(what, sizeof(what), "lookup ns at %llu keys / at %llu keys",
	    hi->keys, lo->keys);
	target_add(b, what, hi->hit / lo->hit, 1.5, "x", true, NULL);
	snprintf(note, sizeof(note), "at this fill %.0f B; + key heap DRAM "
	    "%.0f B", hi->slot_b + hi->rec_b, hi->dram_b);
	target_add(b, "index metadata per key at full load", full, limit, "B",
	    true, note);
}

/* index_section -- run cxlpool-bench-index and report. 0 or -1. */
int
index_section(struct bench *b)
{
	char helper[1024], pool[96], maxk[24], look[24];
	const char *argv[] = { helper, pool, maxk, look, NULL };
	struct irow rows[IROWS];
	struct child c;
	int n, rc;

	helper_path(b, helper, sizeof(helper));
	snprintf(pool, sizeof(pool), "/dev/shm/cxlpool-bench-index-%d.pool",
	    (int)getpid());
	snprintf(maxk, sizeof(maxk), "%u", b->quick ? 20000u : 10000000u);
	snprintf(look, sizeof(look), "%u", b->quick ? 2000u : 200000u);
	if (child_spawn(&c, argv) != 0) {
		return -1;
	}
	rc = read_rows(&c, rows, &n);
	if (child_wait(&c) != 0) {
		rc = -1;
	}
	unlink(pool); /* the helper removes it; this covers a crash */
	if (rc == 0) {
		print_rows(b, rows, n);
		index_targets(b, rows, n);
	}
	return rc;
}
