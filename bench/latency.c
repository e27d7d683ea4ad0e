/*
 * latency.c -- single-op latency, one handler, one op at a time: store
 * (alloc + write the whole page + store), retrieve, exists and delete,
 * each timed per call and reported as p50/p99 against the nng echo round
 * trip measured in the same run (echo.c), the floor for any op that
 * crosses the socket.
 *
 * Each op runs as its own phase over the same n keys (store all, then
 * retrieve all, ...), after a warm-up that also lets the handler's
 * background prefault of its region finish.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cxlpool.h"

#define LAT_PAGE 4096u
#define LAT_REGION (16u << 20)

enum { OP_STORE, OP_RETRIEVE, OP_EXISTS, OP_DELETE, OP_N };

static const char *const op_names[OP_N] = {
	[OP_STORE] = "store", [OP_RETRIEVE] = "retrieve",
	[OP_EXISTS] = "exists", [OP_DELETE] = "delete",
};

/* One op on key; 0 or a negative error. */
static int
lat_one(struct cxlp_handler *h, int op, const char *key, const char *src)
{
	const void *data;
	cxlp_page_t pg;
	bool stored;
	size_t len;
	void *buf;
	int rc;

	switch (op) {
	case OP_STORE:
		if ((rc = cxlp_alloc(h, &pg, &buf)) != 0) {
			return rc;
		}
		memcpy(buf, src, LAT_PAGE);
		rc = cxlp_store(h, key, BENCH_KEY_LEN, pg, LAT_PAGE, 0,
		    &stored);
		return rc != 0 ? rc : stored ? 0 : CXLP_E_PROTO;
	case OP_RETRIEVE:
		rc = cxlp_retrieve(h, key, BENCH_KEY_LEN, 0, &data, &len);
		return rc != 0 ? rc : len == LAT_PAGE ? 0 : CXLP_E_PROTO;
	case OP_EXISTS:
		rc = cxlp_exists(h, key, BENCH_KEY_LEN);
		return rc == 1 ? 0 : rc == 0 ? CXLP_E_NOTFOUND : rc;
	default:
		return cxlp_delete(h, key, BENCH_KEY_LEN);
	}
}

/* Run op over keys[0..n), timing each call into us[]; errors counted. */
static size_t
lat_phase(struct cxlp_handler *h, int op, char (*keys)[BENCH_KEY_BUF],
    size_t n, const char *src, double *us)
{
	size_t errors = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = now_ns();
		int rc = lat_one(h, op, keys[i], src);

		us[i] = (double)(now_ns() - t0) / 1e3;
		if (rc != 0 && errors++ == 0) {
			fprintf(stderr, "latency: %s: %s (%s)\n", op_names[op],
			    cxlp_strerror(rc), cxlp_errormsg());
		}
	}
	return errors;
}

static void
lat_report(struct bench *b, int op, double *us, size_t n, size_t errors)
{
	double p50 = pctl(us, n, 50), p99 = pctl(us, n, 99);
	double x = b->echo_p50_us > 0 ? p50 / b->echo_p50_us : 0;

	printf("%-24s %10.1f %10.1f %8zu %8.2fx\n", op_names[op], p50, p99,
	    n, x);
	jw_obj(&b->json, op_names[op]);
	jw_num(&b->json, "p50_us", p50);
	jw_num(&b->json, "p99_us", p99);
	jw_num(&b->json, "vs_echo_p50", x);
	jw_i64(&b->json, "n", (int64_t)n);
	jw_i64(&b->json, "errors", (int64_t)errors);
	jw_close(&b->json);
	if ((op == OP_STORE || op == OP_RETRIEVE) && x > 0) {
		char what[96];

		snprintf(what, sizeof(what), "single %s p50 / echo p50",
		    op_names[op]);
		target_add(b, what, x, 1.3, "x", true, NULL);
	}
}

static void
lat_keys(char (*keys)[BENCH_KEY_BUF], size_t n, unsigned tag)
{
	for (size_t i = 0; i < n; i++) {
		bench_key(keys[i], 0, tag, i);
	}
}

/* latency_section -- p50/p99 of single ops. Returns 0 or -1. */
int
latency_section(struct bench *b)
{
	size_t n = b->quick ? 30 : 3000, warm = b->quick ? 5 : 300;
	char (*keys)[BENCH_KEY_BUF] = calloc(n + warm, BENCH_KEY_BUF);
	double *us = calloc(n + warm, sizeof(double));
	char *src = malloc(LAT_PAGE);
	struct cxlp_handler *h = NULL;
	size_t errors = 0;
	int rc = -1;

	if (keys == NULL || us == NULL || src == NULL ||
	    bench_connect(b->url, LAT_PAGE, LAT_REGION, true, &h) != 0) {
		goto out;
	}
	memset(src, 0xa5, LAT_PAGE);
	lat_keys(keys, warm, 900); /* warm-up: store and delete */
	errors += lat_phase(h, OP_STORE, keys, warm, src, us);
	errors += lat_phase(h, OP_DELETE, keys, warm, src, us);
	lat_keys(keys, n, 901);
	printf("\n## latency: single ops, one handler, %u-byte pages, "
	    "%d-byte keys\n", LAT_PAGE, BENCH_KEY_LEN);
	printf("%-24s %10s %10s %8s %9s\n", "op", "p50 us", "p99 us", "n",
	    "/echo");
	jw_obj(&b->json, "latency");
	for (int op = 0; op < OP_N; op++) {
		size_t e = lat_phase(h, op, keys, n, src, us);

		errors += e;
		lat_report(b, op, us, n, e);
	}
	jw_close(&b->json);
	rc = errors == 0 ? 0 : -1;
out:
	cxlp_close(&h);
	free(src);
	free(us);
	free(keys);
	return rc;
}
