/*
 * coh_report.c -- the coherence section's output: what the helper
 * cxlpool-bench-cline says (each pool's mode read back from its device,
 * the cache-line method, the primitives' ns per line) and the tables,
 * mode by mode with each mode's ratio to host taken round by round (the
 * median round's, and the range).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_coh.h"

static const struct {
	const char *key, *what;
} coh_paths[P_N] = {
	[P_STORE] = { "store", "store: alloc + write + store" },
	[P_READ] = { "direct_read", "direct read: retrieve_v+copy+validate" },
	[P_READ_COLD] = { "direct_read_cold", "  the same, values not cached" },
	[P_BSTORE] = { "batch_store", "batch_store: write + store" },
	[P_BREAD] = { "batch_read", "batch_retrieve_v+copy+batch_validate" },
	[P_BREAD_COLD] = { "batch_read_cold", "  the same, values not cached" },
};

/* ---- the helper's lines ------------------------------------------------- */

struct prim_row {
	char op[24], state[12];
	double ns;
};

#define PRIMS_MAX 32

struct helper_out {
	struct coh *c;
	struct prim_row prims[PRIMS_MAX];
	int nprims;
};

static void
on_helper_line(const char *line, void *arg)
{
	struct helper_out *o = arg;
	struct coh *c = o->c;
	struct prim_row *r = &o->prims[o->nprims];
	char pool[128], mode[16];

	if (sscanf(line, "method %31s %31s", c->method, c->forced) == 2) {
		return;
	}
	if (o->nprims < PRIMS_MAX && sscanf(line, "prim %23s %11s %lf",
	    r->op, r->state, &r->ns) == 3) {
		o->nprims++;
		return;
	}
	if (sscanf(line, "probe %127s %15s", pool, mode) == 2) {
		for (int i = 0; i < c->nmodes; i++) {
			if (strcmp(c->modes[i].ms.pool, pool) == 0) {
				snprintf(c->modes[i].probed,
				    sizeof(c->modes[i].probed), "%s", mode);
			}
		}
	}
}

static void
scratch_path(char *buf, size_t n)
{
	snprintf(buf, n, "/dev/shm/cxlpool-bench-%d-cline.dev",
	    (int)getpid());
}

/* every pool's mode read back from its device; 0 if each is the one its
 * metaserver was asked for */
/* coh_probe_pools -- see coh.h */
int
coh_probe_pools(struct coh *c)
{
	struct helper_out o = { .c = c };
	const char *args[COH_MODES_MAX + 2] = { "probe" };
	char scratch[96];
	int rc = 0;

	for (int i = 0; i < c->nmodes; i++) {
		args[i + 1] = c->modes[i].ms.pool;
	}
	scratch_path(scratch, sizeof(scratch));
	if (helper_run(c->b, "cxlpool-bench-cline", scratch, args,
	    on_helper_line, &o) != 0) {
		return -1;
	}
	for (int i = 0; i < c->nmodes; i++) {
		if (strcmp(c->modes[i].probed, c->modes[i].name) != 0) {
			fprintf(stderr, "coherence: the %s pool %s reads as "
			    "'%s' on its device\n", c->modes[i].name,
			    c->modes[i].ms.pool, c->modes[i].probed);
			rc = -1;
		}
	}
	return rc;
}

/* ---- output ---------------------------------------------------------- */

static double
median(const double *v, unsigned n)
{
	double tmp[COH_ROUNDS_MAX];

	memcpy(tmp, v, n * sizeof(*v));
	return pctl(tmp, n, 50);
}

/* the ratios of mode m to host, round by round: median, min, max */
static void
ratios(const struct coh *c, const struct cmode *m, const struct cmode *host,
    int p, double out[3])
{
	double r[COH_ROUNDS_MAX];

	out[1] = out[2] = 0;
	for (unsigned i = 0; i < c->rounds; i++) {
		r[i] = host->us[p][i] > 0 ? m->us[p][i] / host->us[p][i] : 0;
		out[1] = i == 0 || r[i] < out[1] ? r[i] : out[1];
		out[2] = r[i] > out[2] ? r[i] : out[2];
	}
	out[0] = median(r, c->rounds);
}

static const struct cmode *
host_mode(const struct coh *c)
{
	for (int i = 0; i < c->nmodes; i++) {
		if (strcmp(c->modes[i].name, "host") == 0) {
			return &c->modes[i];
		}
	}
	return NULL;
}

/* coh_table -- see coh.h */
void
coh_table(struct coh *c)
{
	const struct cmode *host = host_mode(c);
	struct jw *j = &c->b->json;

	printf("%-38s", "path, us per value (median round)");
	for (int i = 0; i < c->nmodes; i++) {
		printf(" %8s", c->modes[i].name);
		if (host != NULL && &c->modes[i] != host) {
			printf(" %5s/host %-11s", c->modes[i].name, "(range)");
		}
	}
	printf("\n");
	jw_arr(j, "paths");
	for (int p = 0; p < P_N; p++) {
		printf("%-38s", coh_paths[p].what);
		for (int i = 0; i < c->nmodes; i++) {
			const struct cmode *m = &c->modes[i];
			double r[3] = { 0, 0, 0 };

			printf(" %8.2f", median(m->us[p], c->rounds));
			if (host != NULL && m != host) {
				ratios(c, m, host, p, r);
				printf(" %10.2f (%4.2f-%4.2f)", r[0], r[1],
				    r[2]);
			}
			jw_obj(j, NULL);
			jw_str(j, "path", coh_paths[p].key);
			jw_str(j, "mode", m->name);
			jw_num(j, "us_per_value", median(m->us[p],
			    c->rounds));
			if (host != NULL) {
				jw_num(j, "ratio_vs_host", m == host ? 1 :
				    r[0]);
				jw_num(j, "ratio_min", m == host ? 1 : r[1]);
				jw_num(j, "ratio_max", m == host ? 1 : r[2]);
			}
			jw_arr(j, "rounds_us");
			for (unsigned k = 0; k < c->rounds; k++) {
				jw_num(j, NULL, m->us[p][k]);
			}
			jw_close(j);
			jw_close(j);
			if ((p == P_READ || p == P_READ_COLD) &&
			    host != NULL && strcmp(m->name, "sw") == 0) {
				char note[96];

				snprintf(note, sizeof(note), "issue 27; "
				    "median of %u rounds, %s", c->rounds,
				    c->method);
				target_add(c->b, p == P_READ ?
				    "sw direct read 64 KiB+validate / host" :
				    "sw direct read, values not cached / host",
				    r[0], 1.3, "x", true, note);
			}
		}
		printf("\n");
	}
	jw_close(j);
}

static void
prims_table(struct coh *c, const struct helper_out *o)
{
	struct jw *j = &c->b->json;

	printf("\n## cache-line primitives on 64 KiB (1024 lines), ns per "
	    "line, median of 1001 calls (cxlpool-bench-cline)\n");
	printf("%-18s %8s %8s %8s\n", "op", "dirty", "clean", "absent");
	jw_arr(j, "primitives");
	for (int i = 0; i < o->nprims; i++) {
		const struct prim_row *r = &o->prims[i];

		if (i == 0 || strcmp(r->op, o->prims[i - 1].op) != 0) {
			printf("%s%-18s", i ? "\n" : "", r->op);
		}
		printf(" %8.2f", r->ns);
		jw_obj(j, NULL);
		jw_str(j, "op", r->op);
		jw_str(j, "state", r->state);
		jw_num(j, "ns_per_line", r->ns);
		jw_close(j);
	}
	jw_close(j);
	printf("\n# dirty: just written; clean: just read (cached); absent: "
	    "just dropped. copy: the 64 KiB to a\n# private buffer; "
	    "chunked_copy_N: cline_drop+copy with the drops pipelined with "
	    "the copy,\n# a fence per N bytes (drop chunk k+1, copy chunk k, "
	    "fence); sim states are of the\n# host's cache file's lines\n");
}

/* coh_prims -- see coh.h */
int
coh_prims(struct coh *c)
{
	struct helper_out o = { .c = c };
	const char *args[] = { "prims", NULL };
	char scratch[96];
	int rc;

	scratch_path(scratch, sizeof(scratch));
	rc = helper_run(c->b, "cxlpool-bench-cline", scratch, args,
	    on_helper_line, &o);
	prims_table(c, &o);
	return rc == 0 && o.nprims > 0 ? 0 : -1;
}

/* ---- the section --------------------------------------------------------- */

/* coh_header -- see coh.h */
void
coh_header(struct coh *c)
{
	const char *forced = getenv("CXLP_CLINE");

	printf("\n## coherence (issue 27): %u KiB values, %zu per pass, "
	    "batches of %zu;\n# %u round(s) of the modes in turn, each "
	    "round starting one mode later:", COH_PAGE >> 10, c->n, c->batch,
	    c->rounds);
	for (int i = 0; i < c->nmodes; i++) {
		printf("%s%s", i ? "/" : " ", c->modes[i].name);
	}
	printf("\n# command: %s\n# cache-line method %s (CXLP_CLINE %s); "
	    "each pool's mode read from its device:", c->b->cmdline,
	    c->method, forced != NULL ? forced : "unset");
	for (int i = 0; i < c->nmodes; i++) {
		printf(" %s", c->modes[i].probed);
	}
	printf("\n");
}
