/*
 * evict.c -- a full pool (issue 17): what storing costs when every alloc
 * round evicts, against the same stores with space free, and what the
 * access byte costs a direct read.
 *
 * The section starts a metaserver of its own on a small pool (the shared
 * one is too large to fill, and may be another's: --server), with no
 * background eviction (--evict-free 0), and one handler on it. Each of
 * EV_ROUNDS rounds deletes every key (the handler's regions, which by
 * then fill the pool, are all free pages again) and times batch_store of
 * n keys in batches of 256 and then m single stores ("space free": no
 * eviction); it then stores a pool's worth more, so that the pool holds
 * nothing but this handler's keys and its free list is empty, and times
 * the same stores again ("full": the pages the fill's last RECLAIM gave
 * back are used up first): every alloc round now asks RECLAIM, which
 * evicts a batch of keys in CLOCK order and hands their pages back
 * (metaserver/evict.c note 2). The two halves of a round run within a
 * second of each other, so each round gives a ratio; the median round's
 * ratio is the result (this box's load moves more between rounds than
 * within one), and the server's count of evictions shows that the full
 * stores evicted.
 *
 * Direct reads: the handler sets a key's access byte on a hit, a store
 * to the byte only when it is clear. A pool formatted without the access
 * area cannot be made any more, so "without" is a key whose byte is set
 * already (a load, no store) and "with" is a first touch (the store):
 * EV_CHUNKS chunks of keys never read are each retrieved once (bytes
 * clear) and, after the next chunk's first pass, again (bytes set), in
 * batches of 256; the median chunk's ratio is the result. Nothing was
 * read before (the stores read nothing), so every byte was clear. The
 * first pass of a chunk is also this process's first read of the chunk's
 * index lines; the other chunk's pass between a chunk's two passes (as
 * large as the chunk, larger than L2) leaves the second mostly cold too,
 * and what remains of that difference counts against the access byte.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cxlpool.h"

#define EV_PAGE 4096u
#define EV_REGION (8u << 20)
#define EV_VALUE 64u  /* bytes written into each page */
#define EV_BATCH 256u
#define EV_DEL_BATCH 1024u
#define EV_ROUNDS 5
#define EV_CHUNKS 5
#define EV_WORKER 61  /* key names: bench_key(.., EV_WORKER, 0, i) */

/* sizes for the full run and for --quick */
struct ev_sizes {
	const char *pool, *slots; /* metaserver --size, --index-slots */
	size_t n, m, chunk;       /* batch-stored, single-stored, read keys */
};

static const struct ev_sizes ev_full = { "320M", "262144", 8192, 1000,
	8192 };
static const struct ev_sizes ev_quick = { "40M", "32768", 512, 30, 512 };

struct ev {
	struct bench *b;
	const struct ev_sizes *sz;
	struct cxlp_handler *h;
	uint64_t next;  /* keys named so far: 0..next */
	uint64_t pages; /* the pool's data area, in pages */
	char (*keys)[BENCH_KEY_BUF];
	const void **kp, **data;
	size_t *kl, *lens;
	cxlp_page_t *pg;
	bool *ok;
	int *st;
	double *us;
	size_t errors;
};

/* one round's figures */
struct ev_round {
	double free_kps, full_kps;   /* batch_store keys/s */
	double free_p50, full_p50;   /* single store, us */
	double free_p99, full_p99;
	uint64_t evicted;            /* by the full stores */
};

/* name keys [first, first + n) into e->keys[0..n) */
static void
ev_name(struct ev *e, uint64_t first, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bench_key(e->keys[i], EV_WORKER, 0, first + i);
		e->kp[i] = e->keys[i];
		e->kl[i] = BENCH_KEY_LEN;
	}
}

/* alloc, write and batch_store the next n keys (n <= EV_BATCH) */
static void
ev_store_batch(struct ev *e, size_t n)
{
	void *buf;

	ev_name(e, e->next, n);
	e->next += n;
	for (size_t i = 0; i < n; i++) {
		if (cxlp_alloc(e->h, &e->pg[i], &buf) != 0) {
			fprintf(stderr, "evict: alloc: %s\n", cxlp_errormsg());
			e->errors += n; /* pages so far leak: the run ends */
			return;
		}
		memcpy(buf, e->kp[i], BENCH_KEY_LEN);
		memset((char *)buf + BENCH_KEY_LEN, 0x3d,
		    EV_VALUE - BENCH_KEY_LEN);
		e->lens[i] = EV_VALUE;
	}
	if (cxlp_batch_store(e->h, n, e->kp, e->kl, e->pg, e->lens, 0,
	    e->ok) != 0) {
		e->errors += n;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		e->errors += !e->ok[i];
	}
}

/* batch_store of n new keys; keys/s */
static double
ev_store_run(struct ev *e, size_t n)
{
	uint64_t t0 = now_ns();

	for (size_t done = 0; done < n; done += EV_BATCH) {
		ev_store_batch(e, n - done < EV_BATCH ? n - done : EV_BATCH);
	}
	return (double)n / ((double)(now_ns() - t0) / 1e9);
}

/* n single stores of new keys, each timed into e->us; p50 and p99, us */
static void
ev_single(struct ev *e, size_t n, double *p50, double *p99)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		ev_store_batch(e, 1);
		e->us[i] = (double)(now_ns() - t0) / 1e3;
	}
	*p50 = pctl(e->us, n, 50);
	*p99 = pctl(e->us, n, 99);
}

/* delete every key named so far (the evicted ones answer NOTFOUND) */
static void
ev_delete_all(struct ev *e)
{
	for (uint64_t first = 0; first < e->next; first += EV_DEL_BATCH) {
		size_t n = e->next - first < EV_DEL_BATCH ? e->next - first :
		    EV_DEL_BATCH;

		ev_name(e, first, n);
		if (cxlp_batch_delete(e->h, n, e->kp, e->kl, e->st) != 0) {
			e->errors++;
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			e->errors += e->st[i] != 0 &&
			    e->st[i] != CXLP_E_NOTFOUND;
		}
	}
}

/* pages the handler can hand out without asking the server (what the
 * last RECLAIM gave back and the stores have not taken yet) */
static size_t
ev_pages_free(struct ev *e)
{
	struct cxlp_stats st;

	if (cxlp_stats(e->h, &st) != 0) {
		e->errors++;
		return 0;
	}
	return (size_t)st.pages_free;
}

static uint64_t
ev_evicted(struct ev *e)
{
	struct cxlp_stats st;

	if (cxlp_stats(e->h, &st) != 0) {
		e->errors++;
		return 0;
	}
	return st.evicted_pressure + st.evicted_orphan +
	    st.evicted_watermark;
}

/* One round: the stores with space free, then on the filled pool. */
static void
ev_round(struct ev *e, struct ev_round *r)
{
	uint64_t ev0;

	ev_delete_all(e);
	r->free_kps = ev_store_run(e, e->sz->n);
	ev_single(e, e->sz->m, &r->free_p50, &r->free_p99);
	(void)ev_store_run(e, e->pages); /* full: nothing but my keys */
	/* counted from here: the handler's refills (handler/region/reclaim.c note
	 * 7) evict ahead of the stores, from the first RECLAIM on */
	ev0 = ev_evicted(e);
	(void)ev_store_run(e, ev_pages_free(e)); /* and no page left */
	r->full_kps = ev_store_run(e, e->sz->n);
	ev_single(e, e->sz->m, &r->full_p50, &r->full_p99);
	r->evicted = ev_evicted(e) - ev0;
}

/* batch_retrieve of keys [first, first + n); keys/s */
static double
ev_read_pass(struct ev *e, uint64_t first, size_t n)
{
	uint64_t t0 = now_ns();

	for (size_t done = 0; done < n; done += EV_BATCH) {
		size_t k = n - done < EV_BATCH ? n - done : EV_BATCH;

		ev_name(e, first + done, k);
		if (cxlp_batch_retrieve(e->h, k, e->kp, e->kl, 0, e->data,
		    e->lens, e->st) != 0) {
			e->errors += k;
			continue;
		}
		for (size_t i = 0; i < k; i++) {
			e->errors += e->st[i] != 0 || e->lens[i] != EV_VALUE;
		}
	}
	return (double)n / ((double)(now_ns() - t0) / 1e9);
}

/* The direct reads, keys/s of the median chunk: its first touch, its
 * second pass (byte set) and their ratio. */
static void
ev_reads(struct ev *e, double *touch, double *set, double *ratio)
{
	double t[EV_CHUNKS], v[EV_CHUNKS], r[EV_CHUNKS];
	size_t c = e->sz->chunk;
	uint64_t base;

	ev_delete_all(e); /* free pages: no eviction while these go in */
	base = e->next;
	(void)ev_store_run(e, (EV_CHUNKS + 1) * c);
	(void)ev_read_pass(e, base, c); /* warm: the mappings faulted in */
	base += c;
	t[0] = ev_read_pass(e, base, c);
	for (int k = 0; k < EV_CHUNKS; k++) {
		if (k + 1 < EV_CHUNKS) {
			t[k + 1] = ev_read_pass(e, base + (k + 1) * c, c);
		}
		v[k] = ev_read_pass(e, base + k * c, c);
		r[k] = t[k] / v[k];
	}
	*touch = pctl(t, EV_CHUNKS, 50);
	*set = pctl(v, EV_CHUNKS, 50);
	*ratio = pctl(r, EV_CHUNKS, 50);
}

static int
ev_alloc(struct ev *e)
{
	size_t n = EV_DEL_BATCH > e->sz->m ? EV_DEL_BATCH : e->sz->m;

	e->keys = calloc(n, BENCH_KEY_BUF);
	e->kp = calloc(n, sizeof(*e->kp));
	e->data = calloc(n, sizeof(*e->data));
	e->kl = calloc(n, sizeof(*e->kl));
	e->lens = calloc(n, sizeof(*e->lens));
	e->pg = calloc(n, sizeof(*e->pg));
	e->ok = calloc(n, sizeof(*e->ok));
	e->st = calloc(n, sizeof(*e->st));
	e->us = calloc(n, sizeof(*e->us));
	return e->keys && e->kp && e->data && e->kl && e->lens && e->pg &&
	    e->ok && e->st && e->us ? 0 : -1;
}

static void
ev_free(struct ev *e)
{
	cxlp_close(&e->h);
	free(e->keys);
	free(e->kp);
	free(e->data);
	free(e->kl);
	free(e->lens);
	free(e->pg);
	free(e->ok);
	free(e->st);
	free(e->us);
}

/* the rounds' medians (each figure apart), and of the two ratios */
struct ev_result {
	struct ev_round med;
	double kps_ratio, p50_ratio; /* full / free, median round */
	double touch, set, read_ratio; /* direct reads, median chunk */
};

static double
ev_median(const struct ev_round *r, size_t off)
{
	double v[EV_ROUNDS];

	for (int i = 0; i < EV_ROUNDS; i++) {
		v[i] = *(const double *)((const char *)&r[i] + off);
	}
	return pctl(v, EV_ROUNDS, 50);
}

static void
ev_medians(const struct ev_round *r, struct ev_result *res)
{
	double kr[EV_ROUNDS], pr[EV_ROUNDS];
	struct ev_round *m = &res->med;

	m->free_kps = ev_median(r, offsetof(struct ev_round, free_kps));
	m->full_kps = ev_median(r, offsetof(struct ev_round, full_kps));
	m->free_p50 = ev_median(r, offsetof(struct ev_round, free_p50));
	m->full_p50 = ev_median(r, offsetof(struct ev_round, full_p50));
	m->free_p99 = ev_median(r, offsetof(struct ev_round, free_p99));
	m->full_p99 = ev_median(r, offsetof(struct ev_round, full_p99));
	m->evicted = 0;
	for (int i = 0; i < EV_ROUNDS; i++) {
		kr[i] = r[i].full_kps / r[i].free_kps;
		pr[i] = r[i].full_p50 / r[i].free_p50;
		m->evicted += r[i].evicted;
	}
	res->kps_ratio = pctl(kr, EV_ROUNDS, 50);
	res->p50_ratio = pctl(pr, EV_ROUNDS, 50);
}

static void
ev_print(const struct ev *e, const struct ev_result *res, double stored)
{
	const struct ev_round *r = &res->med;

	printf("\n## evict: a full pool (%zu-page pool of %u-byte pages), "
	    "median of %d rounds\n", (size_t)e->pages, EV_PAGE, EV_ROUNDS);
	printf("%-34s %12s %12s %8s\n", "", "space free", "full pool",
	    "full/free");
	printf("%-34s %12.0f %12.0f %8.3f\n", "batch_store 256, keys/s",
	    r->free_kps, r->full_kps, res->kps_ratio);
	printf("%-34s %12.1f %12.1f %8.3f\n", "single store p50, us",
	    r->free_p50, r->full_p50, res->p50_ratio);
	printf("%-34s %12.1f %12.1f %8s\n", "single store p99, us",
	    r->free_p99, r->full_p99, "");
	printf("# the full stores evicted %llu keys for %.0f stored (%.2f "
	    "per store)\n", (unsigned long long)r->evicted, stored,
	    (double)r->evicted / stored);
	printf("%-34s %12s %12s %8s\n", "direct batch_retrieve 256, keys/s",
	    "byte set", "first touch", "touch/set");
	printf("%-34s %12.0f %12.0f %8.3f\n", "", res->set, res->touch,
	    res->read_ratio);
}

static void
ev_json(struct ev *e, const struct ev_result *res)
{
	struct jw *j = &e->b->json;
	const struct ev_round *r = &res->med;

	jw_obj(j, "evict");
	jw_i64(j, "pool_pages", (int64_t)e->pages);
	jw_i64(j, "rounds", EV_ROUNDS);
	jw_num(j, "free_batch_store_keys_per_s", r->free_kps);
	jw_num(j, "full_batch_store_keys_per_s", r->full_kps);
	jw_num(j, "batch_store_full_over_free", res->kps_ratio);
	jw_num(j, "free_store_p50_us", r->free_p50);
	jw_num(j, "full_store_p50_us", r->full_p50);
	jw_num(j, "store_p50_full_over_free", res->p50_ratio);
	jw_num(j, "free_store_p99_us", r->free_p99);
	jw_num(j, "full_store_p99_us", r->full_p99);
	jw_i64(j, "full_evicted_keys", (int64_t)r->evicted);
	jw_num(j, "retrieve_byte_set_keys_per_s", res->set);
	jw_num(j, "retrieve_first_touch_keys_per_s", res->touch);
	jw_num(j, "retrieve_touch_over_set", res->read_ratio);
	jw_close(j);
}

static void
ev_report(struct ev *e, const struct ev_result *res)
{
	double stored = (double)EV_ROUNDS * (double)(e->sz->n + e->sz->m);
	char note[96];

	ev_print(e, res, stored);
	ev_json(e, res);
	snprintf(note, sizeof(note), "%.2f keys evicted per store",
	    (double)res->med.evicted / stored);
	target_add(e->b, "full pool: batch_store 256 keys/s / space free",
	    res->kps_ratio, 0.9, "x", false, note);
	target_add(e->b, "full pool: single store p50 / space free",
	    res->p50_ratio, 1.1, "x", true, NULL);
	target_add(e->b, "direct retrieve keys/s: first touch / byte set",
	    res->read_ratio, 0.9, "x", false, "first touch stores the "
	    "access byte");
}

/* The rounds and the reads on the section's own server. 0 or -1. */
static int
ev_run(struct ev *e)
{
	struct ev_round r[EV_ROUNDS];
	struct ev_result res;
	struct cxlp_stats st;

	if (cxlp_stats(e->h, &st) != 0) {
		return -1;
	}
	e->pages = st.data_bytes / EV_PAGE;
	for (int i = 0; i < EV_ROUNDS && e->errors == 0; i++) {
		ev_round(e, &r[i]);
	}
	if (e->errors == 0) {
		ev_reads(e, &res.touch, &res.set, &res.read_ratio);
	}
	if (e->errors != 0) {
		fprintf(stderr, "evict: %zu errors\n", e->errors);
		return -1;
	}
	ev_medians(r, &res);
	ev_report(e, &res);
	return res.med.evicted > 0 ? 0 : -1; /* the full pool must evict */
}

/* evict_section -- a full pool's stores and direct reads. 0 or -1. */
int
evict_section(struct bench *b)
{
	struct ev e = { .b = b, .sz = b->quick ? &ev_quick : &ev_full };
	const char *args[] = { "--evict-free", "0", "--index-slots",
		e.sz->slots, NULL };
	struct bench_ms m = { 0 };
	int rc = -1;

	if (ev_alloc(&e) == 0 &&
	    bench_ms_start(b, "-evict", e.sz->pool, args, &m) == 0 &&
	    bench_connect(m.url, EV_PAGE, EV_REGION, true, &e.h) == 0) {
		rc = ev_run(&e);
	}
	ev_free(&e);
	if (bench_ms_stop(&m) != 0) {
		rc = -1;
	}
	return rc;
}
