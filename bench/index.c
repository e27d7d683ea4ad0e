/*
 * index.c -- lookup cost as the index grows from 10^4 to 10^7 keys.
 *
 * Measured in-process, not through the server: the round trip (about
 * 100x a lookup) would bury the index's own cost, and 10^7 registers
 * through the server would take minutes. The work is done by
 * cxlpool-bench-index (index_helper.c), which sits next to this
 * executable; this section runs it on a sparse pool file in /dev/shm and
 * turns its "row" lines into the table, the JSON and the targets. The
 * server's CPU per looked-up key comes from the batch section. "dhit"
 * and "dbhit" are the same hits the way a handler's direct reads make
 * them (kvread_lookup, kvread_lookup_batch: lock-free, seqlock-checked).
 * The page size behind the metadata decides how the lookup cost grows
 * (a lookup touches two random pages), so the section also prints the
 * THP settings the helper ran with, what the pool chose
 * (pmap_advise_huge) and, per row, the share of the metadata's resident
 * memory mapped with 2 MiB pages (ShmemPmdMapped / Rss from smaps).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

struct irow {
	unsigned long long keys, slots, pmd_kb, rss_kb;
	double ins, hit, miss, slot_b, rec_b, dram_b, bhit;
	double dhit, dbhit; /* direct reads (kvread): one by one, batched */
};

/* the helper's "thp" line: shmem_enabled, the pool's choice, why */
struct ithp {
	char shmem[32], choice[16], setting[96];
};

#define IROWS 8

/* a "meta KEYS PMD_KB RSS_KB" line, for the row of KEYS */
static void
read_meta(const char *line, struct irow *rows, int n)
{
	unsigned long long keys, pmd, rss;

	if (sscanf(line, "meta %llu %llu %llu", &keys, &pmd, &rss) == 3 &&
	    n > 0 && rows[n - 1].keys == keys) {
		rows[n - 1].pmd_kb = pmd;
		rows[n - 1].rss_kb = rss;
	}
}

/* What the helper printed so far. */
struct iread {
	struct irow rows[IROWS];
	int n;
	struct ithp thp;
};

/* one line of the helper's: thp, row or meta */
static void
read_line(const char *line, void *arg)
{
	struct iread *rd = arg;
	struct ithp *t = &rd->thp;
	struct irow *r = &rd->rows[rd->n < IROWS ? rd->n : IROWS - 1];
	int off = 0;

	if (sscanf(line, "thp %31s %15s %n", t->shmem, t->choice,
	    &off) == 2 && off > 0) {
		snprintf(t->setting, sizeof(t->setting), "%s", line + off);
	} else if (rd->n < IROWS && sscanf(line, "row %llu %lf %lf %lf %lf "
	    "%lf %lf %llu %lf %lf %lf", &r->keys, &r->ins, &r->hit,
	    &r->miss, &r->slot_b, &r->rec_b, &r->dram_b, &r->slots, &r->bhit,
	    &r->dhit, &r->dbhit) == 11) {
		r->pmd_kb = r->rss_kb = 0;
		rd->n++;
	} else {
		read_meta(line, rd->rows, rd->n);
	}
}

static void
print_thp(struct bench *b, const struct ithp *t)
{
	printf("# THP: shmem_enabled=%s; pool metadata: %s pages (%s)\n",
	    t->shmem, t->choice, t->setting);
	jw_obj(&b->json, "index_thp");
	jw_str(&b->json, "shmem_enabled", t->shmem);
	jw_str(&b->json, "metadata_pages", t->choice);
	jw_str(&b->json, "setting", t->setting);
	jw_close(&b->json);
}

static void
print_rows(struct bench *b, const struct irow *rows, int n,
    const struct ithp *t)
{
	printf("\n## index: in-process pool_kv_lookup on a /dev/shm pool, "
	    "%d-byte keys\n", BENCH_KEY_LEN);
	print_thp(b, t);
	printf("%10s %9s %9s %9s %9s %9s %9s %8s %8s %8s %9s %8s\n", "keys",
	    "insert ns", "hit ns", "miss ns", "bhit ns", "dhit ns",
	    "dbhit ns", "slot B", "rec B", "DRAM B", "slots", "meta 2M");
	jw_arr(&b->json, "index");
	for (int i = 0; i < n; i++) {
		const struct irow *r = &rows[i];

		printf("%10llu %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %8.1f "
		    "%8.1f %8.1f %9llu %7.0f%%\n", r->keys, r->ins, r->hit,
		    r->miss, r->bhit, r->dhit, r->dbhit, r->slot_b, r->rec_b,
		    r->dram_b, r->slots,
		    r->rss_kb == 0 ? 0.0 :
		    100.0 * (double)r->pmd_kb / (double)r->rss_kb);
		jw_obj(&b->json, NULL);
		jw_i64(&b->json, "keys", (int64_t)r->keys);
		jw_num(&b->json, "insert_ns", r->ins);
		jw_num(&b->json, "lookup_hit_ns", r->hit);
		jw_num(&b->json, "lookup_miss_ns", r->miss);
		jw_num(&b->json, "lookup_hit_batch256_ns", r->bhit);
		jw_num(&b->json, "direct_hit_ns", r->dhit);
		jw_num(&b->json, "direct_hit_batch256_ns", r->dbhit);
		jw_num(&b->json, "slot_bytes_per_key", r->slot_b);
		jw_num(&b->json, "record_bytes_per_key", r->rec_b);
		jw_num(&b->json, "dram_bytes_per_key", r->dram_b);
		jw_i64(&b->json, "slots", (int64_t)r->slots);
		jw_i64(&b->json, "meta_pmd_kb", (int64_t)r->pmd_kb);
		jw_i64(&b->json, "meta_rss_kb", (int64_t)r->rss_kb);
		jw_close(&b->json);
	}
	jw_close(&b->json);
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
	target_add(b, what, hi->hit / lo->hit, 1.5, "x", true, "one by one");
	snprintf(what, sizeof(what), "batch-256 lookup ns, %llu / %llu keys",
	    hi->keys, lo->keys);
	target_add(b, what, hi->bhit / lo->bhit, 1.5, "x", true,
	    "pool_kv_prefetch first");
	snprintf(note, sizeof(note), "direct reads: %.0f ns one by one, "
	    "%.0f batched, at %llu keys", hi->dhit, hi->dbhit, hi->keys);
	target_add(b, "direct-read batch lookup ns, 10^7 / 10^4 keys",
	    hi->dbhit / lo->dbhit, 1.5, "x", true, note);
	snprintf(note, sizeof(note), "at this fill %.0f B; + key heap DRAM "
	    "%.0f B", hi->slot_b + hi->rec_b, hi->dram_b);
	target_add(b, "index metadata per key at full load", full, limit, "B",
	    true, note);
}

/* index_section -- run cxlpool-bench-index and report. 0 or -1. */
int
index_section(struct bench *b)
{
	char pool[96], maxk[24], look[24];
	const char *args[] = { maxk, look, NULL };
	struct iread rd = { .n = 0, .thp = { "?", "?", "" } };

	snprintf(pool, sizeof(pool), "/dev/shm/cxlpool-bench-index-%d.pool",
	    (int)getpid());
	snprintf(maxk, sizeof(maxk), "%u", b->quick ? 20000u : 10000000u);
	snprintf(look, sizeof(look), "%u", b->quick ? 2000u : 200000u);
	if (helper_run(b, "cxlpool-bench-index", pool, args, read_line,
	    &rd) != 0 || rd.n == 0) {
		return -1;
	}
	print_rows(b, rd.rows, rd.n, &rd.thp);
	index_targets(b, rd.rows, rd.n);
	return 0;
}
