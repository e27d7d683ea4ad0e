/*
 * datapath.c -- the bytes: write + batch_store and batch_retrieve + read
 * of 64 KiB and 1 MiB pages, in GB/s, against a plain memcpy into warm
 * private memory of the same total size in the same run.
 *
 * One handler whose single region holds the whole working set. Pass 1
 * starts right after connect, so it shows whether the handler's
 * prefault of a fresh region really stays off the hot path; pass 2
 * reuses the same pages after a delete (steady state). "read" copies each
 * retrieved page into a warm private buffer, so both directions move the
 * same bytes as the memcpy baseline.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cxlpool.h"

/* bytes per batch_store / batch_retrieve: one round trip per 16 MiB, the
 * size of a long prompt's KV for one layer group; the page count follows.
 * The 64 KiB pages run again with 64 MiB per batch (1024 pages): how much
 * of the round trip a larger batch hides. */
#define DP_BATCH_BYTES (16u << 20)
#define DP_BIG_BATCH_BYTES (64u << 20)
#define DP_THREADS_MAX 2 /* writers sharing the handler, "2 writers" row */

struct dp {
	struct bench *b;
	struct cxlp_handler *h;
	size_t page, npages, batch;
	char *src;       /* one page of pattern, warm */
	char *dst;       /* npages * page, warm private memory */
	char (*keys)[BENCH_KEY_BUF];
	const void **kp, **data;
	size_t *kl, *lens;
	cxlp_page_t *pages;
	int *status;
	bool *stored;
	size_t errors;
	uint64_t write_ns; /* alloc + memcpy of the last store pass, summed
	                    * over its threads (atomic) */
};

static double
gbs(size_t bytes, uint64_t ns)
{
	return ns == 0 ? 0 : (double)bytes / (double)ns;
}

/* memcpy of every stride-th batch from batch first into dst */
static size_t
copy_batches(struct dp *d, size_t first, size_t stride)
{
	for (size_t i = first * d->batch; i < d->npages;
	    i += stride * d->batch) {
		size_t n = d->npages - i < d->batch ? d->npages - i : d->batch;

		for (size_t k = 0; k < n; k++) {
			memcpy(d->dst + (i + k) * d->page, d->src, d->page);
		}
	}
	return 0;
}

/* write + batch_store of every stride-th batch from batch first; returns
 * the errors */
static size_t
store_batches(struct dp *d, size_t first, size_t stride)
{
	size_t errors = 0;

	for (size_t i = first * d->batch; i < d->npages;
	    i += stride * d->batch) {
		size_t n = d->npages - i < d->batch ? d->npages - i : d->batch;
		uint64_t t0 = now_ns();
		void *buf;

		for (size_t k = 0; k < n; k++) {
			if (cxlp_alloc(d->h, &d->pages[i + k], &buf) != 0) {
				return errors + 1;
			}
			memcpy(buf, d->src, d->page);
			d->lens[i + k] = d->page;
		}
		__atomic_add_fetch(&d->write_ns, now_ns() - t0,
		    __ATOMIC_RELAXED);
		if (cxlp_batch_store(d->h, n, d->kp + i, d->kl + i,
		    d->pages + i, d->lens + i, 0, d->stored + i) != 0) {
			errors++;
		}
		for (size_t k = 0; k < n; k++) {
			errors += !d->stored[i + k];
		}
	}
	return errors;
}

typedef size_t (*dp_work_fn)(struct dp *d, size_t first, size_t stride);

struct dp_thread {
	struct dp *d;
	dp_work_fn fn;
	size_t first, stride, errors;
	pthread_t tid;
};

static void *
dp_thread_main(void *arg)
{
	struct dp_thread *t = arg;

	t->errors = t->fn(t->d, t->first, t->stride);
	return NULL;
}

/* fn over every batch, by nthr threads taking every nthr-th batch (one
 * handler, shared, as the threads of an engine share it); GB/s */
static double
dp_parallel(struct dp *d, unsigned nthr, dp_work_fn fn)
{
	struct dp_thread t[DP_THREADS_MAX];
	uint64_t t0 = now_ns();
	unsigned started = 0;

	for (unsigned i = 0; i < nthr; i++) {
		t[i] = (struct dp_thread){ .d = d, .fn = fn, .first = i,
			.stride = nthr };
		if (nthr == 1) {
			dp_thread_main(&t[i]);
		} else if (pthread_create(&t[i].tid, NULL, dp_thread_main,
		    &t[i]) != 0) {
			t[i].errors = d->npages; /* this share never ran */
		} else {
			started |= 1u << i;
		}
	}
	for (unsigned i = 0; i < nthr; i++) {
		if (started & (1u << i)) {
			pthread_join(t[i].tid, NULL);
		}
	}
	uint64_t ns = now_ns() - t0;

	for (unsigned i = 0; i < nthr; i++) {
		d->errors += t[i].errors;
	}
	return gbs(d->npages * d->page, ns);
}

/* batch_retrieve + read of every stride-th batch from batch first;
 * returns the errors */
static size_t
retrieve_batches(struct dp *d, size_t first, size_t stride)
{
	size_t errors = 0;

	for (size_t i = first * d->batch; i < d->npages;
	    i += stride * d->batch) {
		size_t n = d->npages - i < d->batch ? d->npages - i : d->batch;

		if (cxlp_batch_retrieve(d->h, n, d->kp + i, d->kl + i, 0,
		    d->data + i, d->lens + i, d->status + i) != 0) {
			errors++;
			continue;
		}
		for (size_t k = 0; k < n; k++) {
			if (d->status[i + k] != 0 ||
			    d->lens[i + k] != d->page) {
				errors++;
				continue;
			}
			memcpy(d->dst + (i + k) * d->page, d->data[i + k],
			    d->page);
		}
	}
	return errors;
}

static void
dp_delete(struct dp *d)
{
	for (size_t i = 0; i < d->npages; i += d->batch) {
		size_t n = d->npages - i < d->batch ? d->npages - i : d->batch;

		if (cxlp_batch_delete(d->h, n, d->kp + i, d->kl + i,
		    d->status + i) != 0) {
			d->errors++;
		}
	}
}

static int
dp_alloc(struct dp *d, size_t total)
{
	size_t n = d->npages = total / d->page;

	d->src = malloc(d->page);
	d->dst = malloc(total);
	d->keys = calloc(n, BENCH_KEY_BUF);
	d->kp = calloc(n, sizeof(*d->kp));
	d->data = calloc(n, sizeof(*d->data));
	d->kl = calloc(n, sizeof(*d->kl));
	d->lens = calloc(n, sizeof(*d->lens));
	d->pages = calloc(n, sizeof(*d->pages));
	d->status = calloc(n, sizeof(*d->status));
	d->stored = calloc(n, sizeof(*d->stored));
	if (!d->src || !d->dst || !d->keys || !d->kp || !d->data || !d->kl ||
	    !d->lens || !d->pages || !d->status || !d->stored) {
		return -1;
	}
	memset(d->src, 0x6b, d->page);
	/* warm: every page faulted in. Not with 0: the compiler turns
	 * malloc + memset(0) into calloc, which leaves a fresh mmap cold
	 * (first-use retrieve then paid a fault per 4 KiB of dst) */
	memset(d->dst, 0x5a, total);
	for (size_t i = 0; i < n; i++) {
		bench_key(d->keys[i], 50, (unsigned)(d->page >> 16), i);
		d->kp[i] = d->keys[i];
		d->kl[i] = BENCH_KEY_LEN;
	}
	return 0;
}

static void
dp_free(struct dp *d)
{
	cxlp_close(&d->h);
	free(d->src);
	free(d->dst);
	free(d->keys);
	free(d->kp);
	free(d->data);
	free(d->kl);
	free(d->lens);
	free(d->pages);
	free(d->status);
	free(d->stored);
}

/* the better of two memcpy passes by nthr threads */
static double
dp_memcpy(struct dp *d, unsigned nthr)
{
	double a = dp_parallel(d, nthr, copy_batches);
	double b = dp_parallel(d, nthr, copy_batches);

	return a > b ? a : b;
}

/* One pass's figures, GB/s: write + store, the writes alone (alloc and
 * memcpy into pool pages; one-thread passes only, else 0), retrieve +
 * read. */
struct dp_pass {
	double st, wr, rt;
};

/* One table row and JSON object: pass, nthr threads, against mc. */
static void
dp_row(struct dp *d, const char *pass, unsigned nthr, double mc,
    const struct dp_pass *f, double conn_ms)
{
	struct jw *j = &d->b->json;

	printf("%6zu KiB %5zu %-10s %9.2f %9.2f %6.0f%% %9.2f %6.0f%% ",
	    d->page >> 10, d->batch, pass, mc, f->st, 100 * f->st / mc, f->rt,
	    100 * f->rt / mc);
	if (f->wr > 0) {
		printf("%6.0f%%", 100 * f->wr / mc);
	} else {
		printf("%7s", "-"); /* threads overlap: no one write time */
	}
	if (conn_ms > 0) {
		printf(" %8.0f\n", conn_ms); /* connect + prefault */
	} else {
		printf("\n");
	}
	jw_obj(j, NULL);
	jw_i64(j, "page_bytes", (int64_t)d->page);
	jw_str(j, "pass", pass);
	jw_i64(j, "threads", nthr);
	jw_i64(j, "total_bytes", (int64_t)(d->npages * d->page));
	jw_i64(j, "batch_pages", (int64_t)d->batch);
	jw_num(j, "memcpy_gbs", mc);
	jw_num(j, "write_store_gbs", f->st);
	jw_num(j, "write_only_gbs", f->wr);
	jw_num(j, "retrieve_read_gbs", f->rt);
	jw_num(j, "connect_ms", conn_ms);
	jw_close(j);
}

/* One pass by nthr threads: write + store, retrieve + read, delete. */
static void
dp_pass(struct dp *d, unsigned nthr, struct dp_pass *f)
{
	d->write_ns = 0;
	f->st = dp_parallel(d, nthr, store_batches);
	f->wr = nthr == 1 ? gbs(d->npages * d->page, d->write_ns) : 0;
	f->rt = dp_parallel(d, nthr, retrieve_batches);
	dp_delete(d);
}

/* The targets read the 64 KiB rows with 16 MiB per batch. */
static void
dp_targets(struct bench *b, const struct dp_pass f[3], double mc1,
    double mc2)
{
	char note[96];

	snprintf(note, sizeof(note), "the writes alone %.0f%% (region "
	    "prefaulted at connect); steady %.0f%%", 100 * f[0].wr / mc1,
	    100 * f[1].wr / mc1);
	target_add(b, "write+batch_store 64 KiB / memcpy, first use",
	    f[0].st / mc1, 0.8, "x", false, note);
	target_add(b, "write+batch_store 64 KiB / memcpy, steady",
	    f[1].st / mc1, 0.8, "x", false, NULL);
	target_add(b, "the same, 2 threads / 2-thread memcpy",
	    f[2].st / mc2, 0.8, "x", false, "steady; one handler");
}

/* The passes for one page size and batch: first use and steady by one
 * thread, steady by two sharing the handler; a row each. */
static int
dp_run(struct bench *b, size_t page, size_t batch_bytes, size_t total)
{
	struct dp d = { .b = b, .page = page };
	struct dp_pass f[3];
	double mc1, mc2, conn_ms;
	static const char *const pass[3] = { "first use", "steady",
		"2 threads" };
	uint64_t t0;
	int rc = -1;

	d.batch = batch_bytes / page > 0 ? batch_bytes / page : 1;
	d.batch = d.batch < total / page ? d.batch : total / page;
	if (dp_alloc(&d, total) != 0) {
		goto out;
	}
	t0 = now_ns();
	if (bench_connect(b->url, page, total, true, &d.h) != 0) {
		goto out;
	}
	conn_ms = (double)(now_ns() - t0) / 1e6;
	for (unsigned p = 0; p < 3; p++) {
		dp_pass(&d, p == 2 ? DP_THREADS_MAX : 1, &f[p]);
	}
	mc1 = dp_memcpy(&d, 1);
	mc2 = dp_memcpy(&d, DP_THREADS_MAX);
	for (unsigned p = 0; p < 3; p++) {
		dp_row(&d, pass[p], p == 2 ? DP_THREADS_MAX : 1,
		    p == 2 ? mc2 : mc1, &f[p], p == 0 ? conn_ms : 0);
	}
	if (page == (64u << 10) && batch_bytes == DP_BATCH_BYTES) {
		dp_targets(b, f, mc1, mc2);
	}
	rc = d.errors == 0 ? 0 : -1;
	if (d.errors > 0) {
		fprintf(stderr, "datapath: %zu errors\n", d.errors);
	}
out:
	dp_free(&d);
	return rc;
}

/* datapath_section -- GB/s of the data path vs memcpy. 0 or -1. */
int
datapath_section(struct bench *b)
{
	size_t total = b->quick ? (4u << 20) : (256u << 20);
	int rc = 0;

	printf("\n## data path: GB/s, %zu MiB per pass, %u MiB per batch "
	    "(%u MiB in the last rows)\n", total >> 20, DP_BATCH_BYTES >> 20,
	    DP_BIG_BATCH_BYTES >> 20);
	printf("%10s %5s %-10s %9s %9s %7s %9s %7s %7s %8s\n", "page",
	    "batch", "pass", "memcpy", "wr+store", "st/mc", "retr+rd",
	    "rd/mc", "wr/mc", "conn ms");
	jw_arr(&b->json, "datapath");
	rc |= dp_run(b, 64u << 10, DP_BATCH_BYTES, total);
	rc |= dp_run(b, 1u << 20, DP_BATCH_BYTES, total);
	rc |= dp_run(b, 64u << 10, DP_BIG_BATCH_BYTES, total);
	jw_close(&b->json);
	return rc == 0 ? 0 : -1;
}
