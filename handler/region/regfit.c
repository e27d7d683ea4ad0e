/*
 * regfit.c -- why a region does not fit, said in numbers.
 *
 * The metaserver refuses a REGION_ALLOC it has no room for with a bare
 * CXLP_E_NOSPACE. At connect that is almost always a pool too small for
 * the handler's region size (a 64 MiB pool and the default 64 MiB region:
 * the metadata takes the pool's first megabytes), and the user needs to
 * know which of the two numbers to change. So on that refusal the handler
 * asks for the pool's stats (one more round trip, on the failure path
 * only) and says: the region size asked, the data area and how much of it
 * is free, the largest region size that would fit now, and the smallest
 * --size whose data area holds the region (computed with the same
 * layout_plan the metaserver formats with, default index size).
 * It also notes whether the region is larger than the whole data area
 * (h->regions.unfit): then no wait for other handlers' regions would make
 * it fit, and cxlp_connect fails instead of connecting without a region.
 */
#include <stdio.h>

#include "err.h"
#include "region.h"
#include "layout.h"

#define MIB (1024.0 * 1024.0)

/* Smallest pool size (a multiple of align) whose data area, laid out
 * with the default index for that size, holds len bytes; 0 if none
 * below 2^62. */
static uint64_t
size_that_fits(uint64_t len, uint64_t align)
{
	uint64_t size = (len / align + 1) * align;
	struct pool_sb sb;
	char why[128];

	while (size < (1ull << 62)) {
		uint64_t data = 0;

		if (layout_plan(&sb, size, align, 0, 0, why, sizeof(why)) ==
		    0) {
			data = sb.area[POOL_AREA_DATA].len;
		}
		if (data >= len) {
			return size;
		}
		size += (len - data + align - 1) / align * align;
	}
	return 0;
}

/* regfit_why -- see region.h */
int
regfit_why(struct cxlp_handler *h, uint64_t len)
{
	uint64_t align = h->align ? h->align : (2u << 20);
	uint64_t fit, need, v[PROTO_STATS_MAX];
	struct { uint64_t data_bytes, free_bytes; } st;

	h->regions.unfit = false;
	if (h_pool_stats(h, v) != 0) {
		return cxlp_fail(CXLP_E_NOSPACE, "no room in the pool for a "
		    "region of %.1f MiB (and no stats to say more: %s)",
		    len / MIB, cxlp_errormsg());
	}
	st.data_bytes = v[PROTO_STAT_DATA_BYTES];
	st.free_bytes = v[PROTO_STAT_FREE_BYTES];
	h->regions.unfit = len > st.data_bytes;
	fit = st.free_bytes / align * align;
	need = size_that_fits(len, align);
	need = (need + (1u << 20) - 1) >> 20; /* MiB, rounded up */
	if (fit >= h->cfg.page_size) {
		return cxlp_fail(CXLP_E_NOSPACE, "region of %.1f MiB does not "
		    "fit the pool's %.1f MiB data area (%.1f MiB free): a "
		    "region size of %llu bytes or less would "
		    "(cxlp_config_set_region_size), or a pool made with "
		    "--size %lluM or more", len / MIB, st.data_bytes / MIB,
		    st.free_bytes / MIB, (unsigned long long)fit,
		    (unsigned long long)need);
	}
	return cxlp_fail(CXLP_E_NOSPACE, "region of %.1f MiB does not fit "
	    "the pool's %.1f MiB data area (%.1f MiB free, not one page): "
	    "free some (delete keys, close handlers), or use a pool made "
	    "with --size %lluM or more", len / MIB, st.data_bytes / MIB,
	    st.free_bytes / MIB, (unsigned long long)need);
}
