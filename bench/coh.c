/*
 * coh.c -- what the coherence modes cost (issue 27, section 5): the paths
 * of 64 KiB values on a pool formatted host, then sw, then sim, each
 * mode's figure a ratio against host measured in the same run.
 *
 * Each mode has a metaserver of its own (`--coherence MODE` on a fresh
 * pool in /dev/shm) and one handler of 64 KiB pages whose region holds
 * the whole working set. A round runs, on each mode in turn (host, sw,
 * sim, then the next round, which starts one mode later: sw, sim, host;
 * the modes alternate, so the load of this shared machine falls on all
 * of them alike, and none is always first): single stores (alloc +
 * write the 64 KiB + cxlp_store), direct reads with the version check
 * (cxlp_retrieve_v + copy out to warm private memory + cxlp_validate),
 * then the batch paths (write + cxlp_batch_store of 256 values;
 * cxlp_batch_retrieve_v + copies + cxlp_batch_validate), each read
 * pass twice (as it comes after the stores, then cold: below), each
 * timed and taken as us per value (single ops: the median op;
 * batches: the median batch), then every key deleted. The ratio of a
 * mode is taken per round against that round's host, and the median
 * round's ratio is reported, with the range over rounds. Whatever the library does in a mode is
 * what is measured: write-backs at store (pmap_persist), and the drops a
 * reader makes before its copy once it makes them.
 *
 * In sim every process of the run is host "0" (or the CXLP_SIM_HOST the
 * bench was started with): the handler and its metaserver share one
 * simulated cache, so what is timed is the simulator's work per line, not
 * a cross-host exchange. The primitives alone (cline_writeback and
 * cline_drop of this CPU, sim_writeback and sim_drop, ns per line) come
 * from the helper cxlpool-bench-cline, which also reads each pool's mode
 * back from the device, so a mode the metaserver did not format is
 * caught rather than measured under the wrong name.
 *
 * Cold reads [values_evict]: in this bench the reader is the writer's
 * process, so a host-mode read may copy a value its own cache still
 * holds, while an sw read drops those lines and reads memory. On a
 * switch pool the reader is another host and never holds the writer's
 * lines. So each read path runs a second time after the bench has
 * flushed every value's lines from this CPU's caches (clflush of each
 * line through the page it wrote the value into, then mfence; outside
 * the timing), in every mode alike: host and sw both read the values
 * from memory, and the ratio shows what the drops and their fences add.
 * Only the values are flushed: index slots, key and region records stay
 * as the passes left them (sw drops them anyway; that is its cost).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_coh.h"

static const char *const mode_names[] = { "host", "hw", "sw", "sim" };

/* coh_modes_parse -- see bench.h */
int
coh_modes_parse(struct bench *b, const char *list)
{
	const char *p = list;

	b->ncoh = 0;
	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		int found = -1;

		for (int i = 0; i < 4; i++) {
			if (strlen(mode_names[i]) == len &&
			    strncmp(p, mode_names[i], len) == 0) {
				found = i;
			}
		}
		for (int i = 0; found >= 0 && i < b->ncoh; i++) {
			if (b->coh_modes[i] == mode_names[found]) {
				found = -1; /* twice */
			}
		}
		if (found < 0 || b->ncoh == COH_MODES_MAX) {
			fprintf(stderr, "cxlpool-bench: --coherence %s: a "
			    "list of distinct modes of host, hw, sw, sim\n",
			    list);
			return -1;
		}
		b->coh_modes[b->ncoh++] = mode_names[found];
		p += len + (p[len] == ',');
	}
	if (b->ncoh == 0) {
		fprintf(stderr, "cxlpool-bench: --coherence: no mode\n");
		return -1;
	}
	return 0;
}

/* ---- one mode's paths -------------------------------------------------- */

/* Flush every line of the n values from this CPU's caches (see the top
 * note): clflush is on every x86-64, DC CIVAC on aarch64; elsewhere
 * nothing is flushed and the cold rows are warm ones. */
static void
values_evict(const struct coh *c)
{
#if defined(__x86_64__) || defined(__aarch64__)
	for (size_t i = 0; i < c->n; i++) {
		const char *p = c->bufs[i];

		for (size_t off = 0; p != NULL && off < COH_PAGE; off += 64) {
#if defined(__x86_64__)
			__asm__ volatile("clflush %0"
			    : "+m"(*(volatile char *)(p + off)));
#else
			__asm__ volatile("dc civac, %0"
			    :: "r"(p + off) : "memory");
#endif
		}
	}
#if defined(__x86_64__)
	__asm__ volatile("mfence" ::: "memory");
#else
	__asm__ volatile("dsb sy" ::: "memory");
#endif
#else
	(void)c;
#endif
}

static void
count_err(struct coh *c, const char *what, int rc)
{
	if (c->errors++ == 0) {
		fprintf(stderr, "coherence: %s: %s (%s)\n", what,
		    cxlp_strerror(rc), cxlp_errormsg());
	}
}

/* n single stores; the median op, us */
static double
single_stores(struct coh *c, struct cxlp_handler *h)
{
	for (size_t i = 0; i < c->n; i++) {
		uint64_t t0 = now_ns();
		bool stored = false;
		void *buf;
		int rc = cxlp_alloc(h, &c->pages[i], &buf);

		if (rc == 0) {
			memcpy(buf, c->src, COH_PAGE);
			c->bufs[i] = buf;
			rc = cxlp_store(h, c->kp[i], c->kl[i], c->pages[i],
			    COH_PAGE, 0, &stored);
		}
		c->op_us[i] = (double)(now_ns() - t0) / 1e3;
		if (rc != 0 || !stored) {
			count_err(c, "store", rc != 0 ? rc : CXLP_E_PROTO);
		}
	}
	return pctl(c->op_us, c->n, 50);
}

/* n direct reads with the version check; the median op, us */
static double
single_reads(struct coh *c, struct cxlp_handler *h)
{
	for (size_t i = 0; i < c->n; i++) {
		uint64_t t0 = now_ns();
		cxlp_version_t ver;
		const void *data;
		size_t len = 0;
		int rc = cxlp_retrieve_v(h, c->kp[i], c->kl[i], 0, &data,
		    &len, &ver);

		if (rc == 0 && len == COH_PAGE) {
			memcpy(c->dst + i * COH_PAGE, data, len);
			rc = cxlp_validate(h, &ver);
		}
		c->op_us[i] = (double)(now_ns() - t0) / 1e3;
		if (rc != 0 || len != COH_PAGE) {
			count_err(c, "retrieve_v/validate", rc != 0 ? rc :
			    CXLP_E_PROTO);
		}
	}
	return pctl(c->op_us, c->n, 50);
}

static size_t
batch_len(const struct coh *c, size_t i)
{
	return c->n - i < c->batch ? c->n - i : c->batch;
}

/* write + batch_store by batches; the median batch, us per value */
static double
batch_stores(struct coh *c, struct cxlp_handler *h)
{
	size_t nb = 0;

	for (size_t i = 0; i < c->n; i += c->batch) {
		size_t n = batch_len(c, i);
		uint64_t t0 = now_ns();
		int rc = 0;
		void *buf;

		for (size_t k = 0; k < n && rc == 0; k++) {
			if ((rc = cxlp_alloc(h, &c->pages[i + k], &buf)) ==
			    0) {
				memcpy(buf, c->src, COH_PAGE);
				c->bufs[i + k] = buf;
				c->lens[i + k] = COH_PAGE;
			}
		}
		if (rc == 0) {
			rc = cxlp_batch_store(h, n, c->kp + i, c->kl + i,
			    c->pages + i, c->lens + i, 0, c->stored + i);
		}
		c->op_us[nb++] = (double)(now_ns() - t0) / 1e3 / (double)n;
		for (size_t k = 0; k < n && rc == 0; k++) {
			if (!c->stored[i + k]) {
				count_err(c, "batch_store", CXLP_E_PROTO);
			}
		}
		if (rc != 0) {
			count_err(c, "batch_store", rc);
		}
	}
	return pctl(c->op_us, nb, 50);
}

/* batch_retrieve_v + copies + batch_validate; median batch, us/value */
static double
batch_reads(struct coh *c, struct cxlp_handler *h)
{
	size_t nb = 0;

	for (size_t i = 0; i < c->n; i += c->batch) {
		size_t n = batch_len(c, i);
		uint64_t t0 = now_ns();
		int rc = cxlp_batch_retrieve_v(h, n, c->kp + i, c->kl + i, 0,
		    c->data + i, c->lens + i, c->status + i, c->vers + i);

		for (size_t k = 0; k < n && rc == 0; k++) {
			if (c->status[i + k] == 0 &&
			    c->lens[i + k] == COH_PAGE) {
				memcpy(c->dst + (i + k) * COH_PAGE,
				    c->data[i + k], COH_PAGE);
			}
		}
		if (rc == 0) {
			rc = cxlp_batch_validate(h, n, c->vers + i,
			    c->status + i);
		}
		c->op_us[nb++] = (double)(now_ns() - t0) / 1e3 / (double)n;
		if (rc != 0) { /* > 0: versions that did not validate */
			count_err(c, "batch_retrieve_v/validate", rc > 0 ?
			    CXLP_E_CHANGED : rc);
		}
	}
	return pctl(c->op_us, nb, 50);
}

static void
delete_all(struct coh *c, struct cxlp_handler *h)
{
	for (size_t i = 0; i < c->n; i += c->batch) {
		int rc = cxlp_batch_delete(h, batch_len(c, i), c->kp + i,
		    c->kl + i, c->status + i);

		if (rc != 0) {
			count_err(c, "batch_delete", rc);
		}
	}
}

/* One round on mode m: the paths; round -1 is the warm-up. */
static void
coh_round(struct coh *c, struct cmode *m, int round)
{
	double us[P_N];

	us[P_STORE] = single_stores(c, m->h);
	us[P_READ] = single_reads(c, m->h);
	values_evict(c);
	us[P_READ_COLD] = single_reads(c, m->h);
	delete_all(c, m->h);
	us[P_BSTORE] = batch_stores(c, m->h);
	us[P_BREAD] = batch_reads(c, m->h);
	values_evict(c);
	us[P_BREAD_COLD] = batch_reads(c, m->h);
	delete_all(c, m->h);
	for (int p = 0; round >= 0 && p < P_N; p++) {
		m->us[p][round] = us[p];
	}
}

/* ---- set up -------------------------------------------------------------- */

static int
coh_alloc(struct coh *c)
{
	size_t n = c->n;

	c->src = malloc(COH_PAGE);
	c->dst = malloc(n * COH_PAGE);
	c->keys = calloc(n, BENCH_KEY_BUF);
	c->kp = calloc(n, sizeof(*c->kp));
	c->data = calloc(n, sizeof(*c->data));
	c->bufs = calloc(n, sizeof(*c->bufs));
	c->kl = calloc(n, sizeof(*c->kl));
	c->lens = calloc(n, sizeof(*c->lens));
	c->pages = calloc(n, sizeof(*c->pages));
	c->status = calloc(n, sizeof(*c->status));
	c->stored = calloc(n, sizeof(*c->stored));
	c->vers = calloc(n, sizeof(*c->vers));
	c->op_us = calloc(n, sizeof(*c->op_us));
	if (!c->src || !c->dst || !c->keys || !c->kp || !c->data ||
	    !c->bufs || !c->kl ||
	    !c->lens || !c->pages || !c->status || !c->stored || !c->vers ||
	    !c->op_us) {
		return -1;
	}
	memset(c->src, 0x6b, COH_PAGE);
	memset(c->dst, 0x5a, n * COH_PAGE); /* warm; datapath.c says why */
	for (size_t i = 0; i < n; i++) {
		bench_key(c->keys[i], 60, 27, i);
		c->kp[i] = c->keys[i];
		c->kl[i] = BENCH_KEY_LEN;
	}
	return 0;
}

/* close the handlers, stop the metaservers; 0 if each exited 0 */
static int
coh_free(struct coh *c)
{
	int rc = 0;

	for (int i = 0; i < c->nmodes; i++) {
		cxlp_close(&c->modes[i].h);
		if (bench_ms_stop(&c->modes[i].ms) != 0) {
			rc = -1;
		}
	}
	free(c->src);
	free(c->dst);
	free(c->keys);
	free(c->kp);
	free(c->data);
	free(c->bufs);
	free(c->kl);
	free(c->lens);
	free(c->pages);
	free(c->status);
	free(c->stored);
	free(c->vers);
	free(c->op_us);
	return rc;
}

/* each mode's metaserver and handler */
static int
coh_start(struct coh *c)
{
	const char *size = c->b->quick ? "128M" : "512M";

	for (int i = 0; i < c->b->ncoh; i++) {
		struct cmode *m = &c->modes[c->nmodes++];
		const char *args[] = { "--coherence", c->b->coh_modes[i],
			NULL };
		char tag[16];

		m->name = c->b->coh_modes[i];
		snprintf(tag, sizeof(tag), "-coh-%s", m->name);
		if (bench_ms_start(c->b, tag, size, args, &m->ms) != 0 ||
		    bench_connect(m->ms.url, COH_PAGE, c->n * COH_PAGE, true,
		    &m->h) != 0) {
			return -1;
		}
	}
	return 0;
}

/* coherence_section -- see bench.h */
int
coherence_section(struct bench *b)
{
	struct coh c = { .b = b, .n = b->quick ? 32 : 1024,
		.batch = b->quick ? 16 : COH_BATCH };
	struct jw *j = &b->json;
	int rc = -1;

	c.rounds = b->coh_rounds > 0 ? b->coh_rounds : b->quick ? 1 : 5;
	snprintf(c.method, sizeof(c.method), "?");
	snprintf(c.forced, sizeof(c.forced), "-");
	if (b->ncoh == 0 && coh_modes_parse(b, "host,sw,sim") != 0) {
		return -1;
	}
	if (coh_alloc(&c) != 0 || coh_start(&c) != 0 ||
	    coh_probe_pools(&c) != 0) {
		goto out;
	}
	for (int i = 0; i < c.nmodes; i++) {
		coh_round(&c, &c.modes[i], -1); /* warm-up, prefault done */
	}
	for (unsigned r = 0; r < c.rounds; r++) {
		for (int i = 0; i < c.nmodes; i++) { /* each mode first once */
			coh_round(&c, &c.modes[(i + (int)r) % c.nmodes],
			    (int)r);
		}
	}
	coh_header(&c);
	jw_obj(j, "coherence");
	jw_str(j, "command", b->cmdline);
	jw_str(j, "cline_method", c.method);
	jw_str(j, "cline_forced", c.forced);
	jw_i64(j, "value_bytes", COH_PAGE);
	jw_i64(j, "values", (int64_t)c.n);
	jw_i64(j, "batch", (int64_t)c.batch);
	jw_i64(j, "rounds", c.rounds);
	coh_table(&c);
	rc = coh_prims(&c);
	jw_i64(j, "errors", (int64_t)c.errors);
	jw_close(j);
	if (c.errors > 0) {
		fprintf(stderr, "coherence: %zu errors\n", c.errors);
		rc = -1;
	}
out:
	return coh_free(&c) == 0 ? rc : -1;
}
