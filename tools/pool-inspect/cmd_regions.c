/*
 * cmd_regions.c -- `pool-inspect regions POOL [--json]`: one row per
 * live region of the region table: id, state, owner session, offset,
 * size, page size, pages, and pages used (= keys pointing in: a page
 * holds one key), then a total line. Free table slots are not listed.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cxlpool.h"
#include "inspect.h"
#include "pool.h"

static const char *const state_names[] = {
	[POOL_REGION_FREE] = "free",
	[POOL_REGION_OWNED] = "owned",
	[POOL_REGION_ORPHAN] = "orphan",
};

static const char *
state_name(uint32_t s)
{
	return s < sizeof(state_names) / sizeof(state_names[0]) ?
	    state_names[s] : "?";
}

static void
row_text(const struct pool_region *r)
{
	char size[FMT_SIZE_LEN], page[FMT_SIZE_LEN], owner[24] = "-";
	uint64_t pages = r->len / r->page_size;

	if (r->state == POOL_REGION_OWNED) {
		snprintf(owner, sizeof(owner), "%" PRIu64, r->owner);
	}
	printf("%5u  %-6s  %6s  %#12" PRIx64 "  %10s  %10s  %7" PRIu64
	    "  %7" PRIu64 "  %5.1f%%\n", r->id, state_name(r->state), owner,
	    r->off, fmt_size(size, r->len), fmt_size(page, r->page_size),
	    pages, r->nkeys, pages ? 100.0 * (double)r->nkeys /
	    (double)pages : 0.0);
}

static void
row_json(struct jw *w, const struct pool_region *r)
{
	jw_obj(w, NULL);
	jw_u64(w, "id", r->id);
	jw_u64(w, "gen", r->gen);
	jw_str(w, "state", state_name(r->state));
	jw_u64(w, "owner", r->owner);
	jw_u64(w, "offset", r->off);
	jw_u64(w, "size", r->len);
	jw_u64(w, "page_size", r->page_size);
	jw_u64(w, "pages", r->len / r->page_size);
	jw_u64(w, "pages_used", r->nkeys);
	jw_u64(w, "keys", r->nkeys);
	jw_close(w);
}

static void
list(const struct pool *p, struct jw *w, uint64_t *n, uint64_t *bytes)
{
	struct pool_region r;

	for (uint32_t id = 0; id < pool_region_max(p); id++) {
		if (pool_region_get(p, id, &r) != 0) {
			continue;
		}
		if (w != NULL) {
			row_json(w, &r);
		} else {
			row_text(&r);
		}
		(*n)++;
		*bytes += r.len;
	}
}

/* cmd_regions -- see inspect.h */
int
cmd_regions(int argc, char **argv)
{
	char a[FMT_SIZE_LEN], b[FMT_SIZE_LEN];
	struct inspect_opts o;
	struct pool_stats st;
	uint64_t n = 0, bytes = 0;
	struct pool *p;
	struct jw w;
	int rc;

	if ((rc = inspect_args(argc, argv, OPT_POOL, "POOL [--json]",
	    &o)) != 0 || (rc = inspect_open(o.path, &p)) != 0) {
		return rc;
	}
	pool_stats(p, &st);
	if (o.json) {
		jw_begin(&w, stdout, 0);
		jw_str(&w, "pool", o.path);
		jw_arr(&w, "regions");
		list(p, &w, &n, &bytes);
		jw_close(&w);
		jw_u64(&w, "count", n);
		jw_u64(&w, "allocated_bytes", bytes);
		jw_u64(&w, "data_bytes", st.data_bytes);
		jw_end(&w);
	} else {
		printf("%5s  %-6s  %6s  %12s  %10s  %10s  %7s  %7s  %6s\n",
		    "ID", "STATE", "OWNER", "OFFSET", "SIZE", "PAGE SIZE",
		    "PAGES", "USED", "FILL");
		list(p, NULL, &n, &bytes);
		printf("%" PRIu64 " region%s (%" PRIu64 " orphan), %s of %s "
		    "data allocated\n", n, n == 1 ? "" : "s",
		    st.orphan_regions, fmt_size(a, bytes),
		    fmt_size(b, st.data_bytes));
	}
	pool_close(&p);
	return 0;
}
