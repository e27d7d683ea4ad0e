/*
 * batch.c -- batch throughput: batch_store, batch_retrieve, batch_exists
 * (and batch_delete, to give the pages back) at batch sizes 1..1024 with
 * 1, 2, 4 and 8 handler processes, plus the metaserver's CPU per key.
 * retrieve and exists read the index in place (direct reads, the
 * default); "lookup" is batch_retrieve through the metaserver (a second
 * handler with direct reads off), as every pinned retrieve is, so the
 * server's CPU per looked-up key is measured too.
 *
 * Each handler is a worker process exec'ed as `cxlpool-bench
 * --batch-worker URL ID` (fresh processes: nng cannot be forked). The
 * parent drives all workers in lock step over pipes: it sends one command
 * line ("store 256 4096 3") to every worker, each runs it and answers
 * "done ERRORS", and the phase's wall time runs from the first command to
 * the last answer. Keys/s is all workers' keys over that time. Around the
 * phase the parent samples the metaserver's and the workers' CPU from
 * /proc, so per-key CPU and how many cores each side kept busy come from
 * the same phase.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cxlpool.h"

#define BW_PAGE 4096u
#define BW_REGION (64u << 20)
#define BW_VALUE 64u /* bytes written into each page */
#define NPROCS 4
#define NBATCH 5
#define NOPS 5

static const unsigned procs_full[NPROCS] = { 1, 2, 4, 8 };
static const unsigned batches[NBATCH] = { 1, 16, 64, 256, 1024 };
/* keys per phase, all workers together */
static const unsigned total_full[NBATCH] = { 2000, 16384, 32768, 65536,
	65536 };
static const unsigned total_quick[NBATCH] = { 20, 64, 128, 256, 1024 };
static const char *const op_names[NOPS] = { "store", "retrieve", "exists",
	"lookup", "delete" };
enum { OP_STORE, OP_RETRIEVE, OP_EXISTS, OP_LOOKUP, OP_DELETE };

/* ---- worker process ------------------------------------------------------ */

struct wctx {
	struct cxlp_handler *h;
	struct cxlp_handler *hs; /* direct reads off: lookups go to server */
	unsigned id;
	char (*keys)[BENCH_KEY_BUF];
	const void **kp;
	size_t *kl, *lens;
	cxlp_page_t *pages;
	const void **data;
	int *status;
	bool *flags;
};

/* store keys[0..n): alloc, write BW_VALUE bytes, batch_store */
static size_t
w_store(struct wctx *w, size_t n)
{
	size_t bad = 0;
	void *buf;

	for (size_t i = 0; i < n; i++) {
		if (cxlp_alloc(w->h, &w->pages[i], &buf) != 0) {
			fprintf(stderr, "worker: alloc: %s\n",
			    cxlp_errormsg());
			return n; /* pages so far are leaked: bench ends */
		}
		memcpy(buf, w->kp[i], BENCH_KEY_LEN);
		memset((char *)buf + BENCH_KEY_LEN, 0x3c,
		    BW_VALUE - BENCH_KEY_LEN);
		w->lens[i] = BW_VALUE;
	}
	if (cxlp_batch_store(w->h, n, w->kp, w->kl, w->pages, w->lens, 0,
	    w->flags) != 0) {
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		bad += !w->flags[i];
	}
	return bad;
}

/* One batch of op over the keys at kp[0..n); returns keys that failed. */
static size_t
w_batch(struct wctx *w, const char *op, size_t n)
{
	size_t bad = 0;

	if (strcmp(op, "store") == 0) {
		return w_store(w, n);
	}
	if (strcmp(op, "retrieve") == 0 || strcmp(op, "lookup") == 0) {
		struct cxlp_handler *h = op[0] == 'r' ? w->h : w->hs;

		if (cxlp_batch_retrieve(h, n, w->kp, w->kl, 0, w->data,
		    w->lens, w->status) != 0) {
			return n;
		}
		for (size_t i = 0; i < n; i++) {
			bad += w->status[i] != 0 || w->lens[i] != BW_VALUE;
		}
	} else if (strcmp(op, "exists") == 0) {
		if (cxlp_batch_exists(w->h, n, w->kp, w->kl, w->flags) != 0) {
			return n;
		}
		for (size_t i = 0; i < n; i++) {
			bad += !w->flags[i];
		}
	} else {
		if (cxlp_batch_delete(w->h, n, w->kp, w->kl, w->status) != 0) {
			return n;
		}
		for (size_t i = 0; i < n; i++) {
			bad += w->status[i] != 0;
		}
	}
	return bad;
}

/* Run op over nkeys keys of tag, batch at a time; returns failures. */
static size_t
w_run(struct wctx *w, const char *op, size_t batch, size_t nkeys,
    unsigned tag)
{
	size_t bad = 0;

	for (size_t done = 0; done < nkeys; done += batch) {
		size_t n = nkeys - done < batch ? nkeys - done : batch;

		for (size_t i = 0; i < n; i++) {
			bench_key(w->keys[i], w->id, tag, done + i);
			w->kp[i] = w->keys[i];
			w->kl[i] = BENCH_KEY_LEN;
		}
		bad += w_batch(w, op, n);
	}
	return bad;
}

static int
w_alloc(struct wctx *w)
{
	size_t m = CXLP_BATCH_MAX;

	w->keys = calloc(m, BENCH_KEY_BUF);
	w->kp = calloc(m, sizeof(*w->kp));
	w->kl = calloc(m, sizeof(*w->kl));
	w->lens = calloc(m, sizeof(*w->lens));
	w->pages = calloc(m, sizeof(*w->pages));
	w->data = calloc(m, sizeof(*w->data));
	w->status = calloc(m, sizeof(*w->status));
	w->flags = calloc(m, sizeof(*w->flags));
	return w->keys && w->kp && w->kl && w->lens && w->pages && w->data &&
	    w->status && w->flags ? 0 : -ENOMEM;
}

static void
w_free(struct wctx *w)
{
	free(w->keys);
	free(w->kp);
	free(w->kl);
	free(w->lens);
	free(w->pages);
	free(w->data);
	free(w->status);
	free(w->flags);
}

/* batch_worker_main -- serve commands from stdin until EOF; exit code. */
int
batch_worker_main(const char *url, unsigned id)
{
	struct wctx w = { .id = id };
	char line[128], op[16];
	unsigned long batch, nkeys;
	unsigned tag;
	int rc = 1;

	if (w_alloc(&w) != 0 ||
	    bench_connect(url, BW_PAGE, BW_REGION, true, &w.h) != 0 ||
	    bench_connect(url, BW_PAGE, BW_PAGE, false, &w.hs) != 0) {
		goto out;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		if (sscanf(line, "%15s %lu %lu %u", op, &batch, &nkeys,
		    &tag) != 4 || batch == 0 || batch > CXLP_BATCH_MAX) {
			break;
		}
		printf("done %zu\n", w_run(&w, op, batch, nkeys, tag));
		fflush(stdout);
	}
	rc = 0;
out:
	cxlp_close(&w.hs);
	cxlp_close(&w.h);
	w_free(&w);
	return rc;
}

/* ---- parent ------------------------------------------------------------ */

struct bres {
	double keys_s;      /* all workers' keys per second */
	double srv_us_key;  /* metaserver CPU per key, us */
	double srv_cores;   /* metaserver CPU / wall */
	double cli_cores;   /* all workers' CPU / wall */
	size_t errors;
	bool ran;
};

struct bctx {
	struct bench *b;
	struct child w[8];
	unsigned nw;
	struct bres res[NPROCS][NBATCH][NOPS];
	size_t errors;
};

static void
cpu_clients(struct bctx *c, struct cpu_sample *s)
{
	struct cpu_sample one;

	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < c->nw; i++) {
		if (cpu_read(c->w[i].pid, &one) == 0) {
			s->sched_ns += one.sched_ns;
			s->ticks += one.ticks;
		}
	}
}

/* One phase on every worker; fills *r. 0 or -1 (a worker died). */
static int
phase(struct bctx *c, const char *op, unsigned batch, unsigned per,
    unsigned tag, struct bres *r)
{
	struct cpu_sample s0, s1, c0, c1;
	char line[64];
	uint64_t t0, t1;
	double wall_us;

	cpu_read(c->b->ms_pid, &s0);
	cpu_clients(c, &c0);
	t0 = now_ns();
	for (unsigned i = 0; i < c->nw; i++) {
		fprintf(c->w[i].to, "%s %u %u %u\n", op, batch, per, tag);
		fflush(c->w[i].to);
	}
	memset(r, 0, sizeof(*r));
	for (unsigned i = 0; i < c->nw; i++) {
		unsigned long bad;

		if (child_line(&c->w[i], line, sizeof(line)) != 0 ||
		    sscanf(line, "done %lu", &bad) != 1) {
			fprintf(stderr, "batch: worker %u died\n", i);
			return -1;
		}
		r->errors += bad;
	}
	t1 = now_ns();
	cpu_read(c->b->ms_pid, &s1);
	cpu_clients(c, &c1);
	wall_us = (double)(t1 - t0) / 1e3;
	r->keys_s = (double)per * c->nw / (wall_us / 1e6);
	r->srv_us_key = c->b->ms_pid > 0 ? cpu_us(&s0, &s1) /
	    ((double)per * c->nw) : 0;
	r->srv_cores = c->b->ms_pid > 0 ? cpu_us(&s0, &s1) / wall_us : 0;
	r->cli_cores = cpu_us(&c0, &c1) / wall_us;
	r->ran = true;
	c->errors += r->errors;
	return 0;
}

static int
workers_start(struct bctx *c, unsigned n)
{
	char line[64], ids[8][12];

	for (c->nw = 0; c->nw < n; c->nw++) {
		const char *argv[] = { c->b->self, "--batch-worker", c->b->url,
			ids[c->nw], NULL };

		snprintf(ids[c->nw], sizeof(ids[0]), "%u", c->nw);
		if (child_spawn(&c->w[c->nw], argv) != 0) {
			return -1;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		if (child_line(&c->w[i], line, sizeof(line)) != 0 ||
		    strcmp(line, "ready") != 0) {
			fprintf(stderr, "batch: worker %u did not start\n", i);
			return -1;
		}
	}
	return 0;
}

static void
workers_stop(struct bctx *c)
{
	for (unsigned i = 0; i < c->nw; i++) {
		if (child_wait(&c->w[i]) != 0) {
			fprintf(stderr, "batch: worker %u failed\n", i);
			c->errors++;
		}
	}
	c->nw = 0;
}

/* Every batch size and op with n workers (procs index pi). */
static int
run_procs(struct bctx *c, unsigned pi, unsigned n)
{
	const unsigned *total = c->b->quick ? total_quick : total_full;
	unsigned maxper = (total[NBATCH - 1] + n - 1) / n;
	struct bres warm;
	int rc = workers_start(c, n);

	/* warm-up: take the regions and map them before timing */
	if (rc == 0) {
		rc = phase(c, "store", 256, maxper, 99, &warm);
	}
	if (rc == 0) {
		rc = phase(c, "delete", 256, maxper, 99, &warm);
	}
	for (unsigned bi = 0; rc == 0 && bi < NBATCH; bi++) {
		unsigned per = (total[bi] + n - 1) / n;

		if (c->b->batch_only != 0 && c->b->batch_only != batches[bi]) {
			continue;
		}
		per = (per + batches[bi] - 1) / batches[bi] * batches[bi];
		for (unsigned op = 0; rc == 0 && op < NOPS; op++) {
			rc = phase(c, op_names[op], batches[bi], per, bi,
			    &c->res[pi][bi][op]);
		}
	}
	workers_stop(c);
	return rc;
}

static void
print_table(struct bctx *c, unsigned nprocs, const char *title,
    int field)
{
	printf("\n%s\n%-10s %6s", title, "op", "batch");
	for (unsigned pi = 0; pi < nprocs; pi++) {
		printf(" %9u proc", procs_full[pi]);
	}
	printf("\n");
	for (unsigned op = 0; op < NOPS; op++) {
		for (unsigned bi = 0; bi < NBATCH; bi++) {
			printf("%-10s %6u", op_names[op], batches[bi]);
			for (unsigned pi = 0; pi < nprocs; pi++) {
				const struct bres *r = &c->res[pi][bi][op];
				double v = field == 0 ? r->keys_s :
				    field == 1 ? r->srv_us_key : r->srv_cores;

				if (!r->ran) {
					printf(" %14s", "-");
				} else {
					printf(field == 0 ? " %14.0f" :
					    " %14.3f", v);
				}
			}
			printf("\n");
		}
	}
}

static void
json_results(struct bctx *c, unsigned nprocs)
{
	struct jw *j = &c->b->json;

	jw_arr(j, "batch");
	for (unsigned pi = 0; pi < nprocs; pi++) {
		for (unsigned bi = 0; bi < NBATCH; bi++) {
			for (unsigned op = 0; op < NOPS; op++) {
				const struct bres *r = &c->res[pi][bi][op];

				if (!r->ran) {
					continue;
				}
				jw_obj(j, NULL);
				jw_str(j, "op", op_names[op]);
				jw_i64(j, "batch", batches[bi]);
				jw_i64(j, "procs", procs_full[pi]);
				jw_num(j, "keys_per_s", r->keys_s);
				jw_num(j, "server_cpu_us_per_key",
				    r->srv_us_key);
				jw_num(j, "server_cores", r->srv_cores);
				jw_num(j, "client_cores", r->cli_cores);
				jw_i64(j, "errors", (int64_t)r->errors);
				jw_close(j);
			}
		}
	}
	jw_close(j);
}

/* What the server CPU per registered key is made of, as far as this run
 * measured it: nng's echo of the same frame sizes, ms_dispatch alone. */
static void
server_cpu_note(const struct bench *b, char *note, size_t n)
{
	int len = 0;

	note[0] = '\0';
	if (b->echo256_srv_us > 0) {
		len = snprintf(note, n, "nng echo of these frame sizes alone: "
		    "%.3f us/key", b->echo256_srv_us / 256);
	}
	if (b->dispatch_reg_us > 0 && len >= 0 && (size_t)len < n) {
		snprintf(note + len, n - (size_t)len, "%sms_dispatch alone: "
		    "%.3f us/key", len > 0 ? "; " : "", b->dispatch_reg_us);
	}
}

static void
add_targets(struct bctx *c, unsigned nprocs)
{
	const struct bres *st = &c->res[0][3][OP_STORE];
	const struct bres *lk = &c->res[0][3][OP_LOOKUP];
	const struct bres *r4 = &c->res[2][3][OP_STORE];
	char note[96];

	if (c->b->ms_pid > 0 && st->ran) {
		server_cpu_note(c->b, note, sizeof(note));
		target_add(c->b, "server CPU per registered key, batch 256",
		    st->srv_us_key, 0.5, "us", true,
		    note[0] != '\0' ? note : NULL);
		target_add(c->b, "server CPU per looked-up key, batch 256",
		    lk->srv_us_key, 0.3, "us", true, "batch_retrieve with "
		    "direct reads off (direct reads use none)");
	}
	if (st->ran) {
		target_add(c->b, "batch_store keys/s, batch 256, 1 client",
		    st->keys_s, 1e6, "keys/s", false, NULL);
	}
	if (nprocs >= 3 && r4->ran && c->b->ms_pid > 0) {
		/* registers serialize on the pool's write lock: a server
		 * near one busy core is the bottleneck */
		snprintf(note, sizeof(note), "%.0f keys/s; clients %.2f "
		    "cores (2-core box)", r4->keys_s, r4->cli_cores);
		target_add(c->b, "server cores busy, batch_store 256, 4 "
		    "clients", r4->srv_cores, 0.9, "cores", true, note);
	}
}

/* batch_section -- the throughput grid. Returns 0 or -1. */
int
batch_section(struct bench *b)
{
	struct bctx *c = calloc(1, sizeof(*c));
	unsigned nprocs = b->quick ? 2 : NPROCS;
	int rc = 0;

	if (c == NULL) {
		return -1;
	}
	c->b = b;
	for (unsigned pi = 0; rc == 0 && pi < nprocs; pi++) {
		if (b->procs_only == 0 || b->procs_only == procs_full[pi]) {
			rc = run_procs(c, pi, procs_full[pi]);
		}
	}
	printf("\n## batch: keys/s, %d-byte keys, %u-byte values in %u-byte "
	    "pages\n# retrieve, exists: direct reads; lookup: batch_retrieve "
	    "through the metaserver\n", BENCH_KEY_LEN, BW_VALUE, BW_PAGE);
	print_table(c, nprocs, "keys/s (all handler processes together)", 0);
	if (b->ms_pid > 0) {
		print_table(c, nprocs, "metaserver CPU per key, us "
		    "(/proc schedstat)", 1);
		print_table(c, nprocs, "metaserver CPU busy, cores", 2);
	}
	json_results(c, nprocs);
	add_targets(c, nprocs);
	if (c->errors > 0) {
		fprintf(stderr, "batch: %zu keys failed\n", c->errors);
		rc = -1;
	}
	free(c);
	return rc;
}
