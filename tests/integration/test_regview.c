/*
 * test_regview.c -- issue 19 over a real metaserver: value locations
 * (cxlp_locate), the region listing, region views by id, page handles
 * from (region, index), and the region callback (handler/region/regview.c):
 * replayed, fired for own and foreign regions before the pointer is
 * handed out, fired before unmap with exactly the mapped range, and safe
 * to call back into the library from.
 *
 * Two handlers in this process stand for two processes: b maps a's
 * regions read-only, as another process would (tests/python/test_maru.py
 * has the two-process runs).
 */
#include <stdlib.h>

#include "itest.h"

#define PAGE 4096u
#define REGION (4 * MiB)

TestSuite(regview, .init = itest_start, .fini = itest_stop, .timeout = 30);

static struct cxlp_handler *
connect_opts(size_t region, bool direct, unsigned reserve)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, srv.url), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, PAGE), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, region), 0);
	cr_assert_rc(cxlp_config_set_direct_reads(cfg, direct), 0);
	cr_assert_rc(cxlp_config_set_reserve_regions(cfg, reserve), 0);
	cr_assert_rc(cxlp_connect(&h, cfg), 0);
	cxlp_config_delete(&cfg);
	return h;
}

/* store len bytes of pattern c under key; returns the page's address */
static void *
put(struct cxlp_handler *h, const char *key, int c, size_t len,
    cxlp_page_t *pgp)
{
	cxlp_page_t pg;
	void *buf;
	bool ok = false;

	cr_assert_rc(cxlp_alloc(h, &pg, &buf), 0);
	memset(buf, c, len);
	cr_assert_rc(cxlp_store(h, key, strlen(key), pg, len, 0, &ok), 0);
	cr_assert(ok);
	if (pgp != NULL) {
		*pgp = pg;
	}
	return buf;
}

Test(regview, locate_names_the_same_region_and_offset_in_both_handlers)
{
	struct cxlp_handler *a = itest_connect(), *b = itest_connect();
	uint32_t ra, rb, rs[3];
	uint64_t oa, ob, os[3];
	const void *data, *ptrs[3];
	size_t len;
	void *buf;

	(void)put(a, "k0", 1, 100, NULL);
	buf = put(a, "k1", 2, 100, NULL);
	cr_assert_rc(cxlp_locate(a, buf, &ra, &oa), 0);
	cr_assert_eq(oa % PAGE, 0, "a page starts at a page boundary");
	cr_assert_rc(cxlp_retrieve(b, "k1", 2, 0, &data, &len), 0);
	cr_assert_rc(cxlp_locate(b, data, &rb, &ob), 0);
	cr_assert_eq(rb, ra);
	cr_assert_eq(ob, oa);
	ptrs[0] = data;
	ptrs[1] = (const uint8_t *)data + 99;
	ptrs[2] = &len; /* not in any region */
	cr_assert_rc(cxlp_batch_locate(b, 3, ptrs, rs, os), CXLP_E_NOTFOUND);
	cr_assert(rs[0] == ra && os[0] == oa && rs[1] == ra &&
	    os[1] == oa + 99);
	cr_assert(rs[2] == UINT32_MAX && os[2] == UINT64_MAX);
	cr_assert(strstr(cxlp_errormsg(), "1 of 3") != NULL, "%s",
	    cxlp_errormsg());
	cxlp_close(&b);
	cxlp_close(&a);
}

Test(regview, the_listing_gives_own_and_foreign_regions_with_page_counts)
{
	struct cxlp_handler *a = itest_connect(), *b = itest_connect();
	struct cxlp_region_info ia[4], ib[4];
	const void *data;
	size_t len;
	uint32_t ra;
	uint64_t oa;
	void *buf = put(a, "k", 7, 10, NULL);
	int n;

	cr_assert_rc(cxlp_locate(a, buf, &ra, &oa), 0);
	cr_assert_rc(cxlp_region_list(a, ia, 4), 1);
	cr_assert_eq(ia[0].region, ra);
	cr_assert(ia[0].writable);
	cr_assert_eq(ia[0].len, REGION);
	cr_assert_eq(ia[0].page_size, PAGE);
	cr_assert_eq(ia[0].pages, REGION / PAGE);
	cr_assert_eq((uint8_t *)ia[0].addr + oa, (uint8_t *)buf);
	cr_assert_rc(cxlp_retrieve(b, "k", 1, 0, &data, &len), 0);
	n = cxlp_region_list(b, ib, 4);
	cr_assert_eq(n, 2, "b's own region and a's: %d", n);
	for (int i = 0; i < n; i++) {
		if (ib[i].region != ra) {
			cr_assert(ib[i].writable);
			continue;
		}
		cr_assert_not(ib[i].writable, "a's region is read-only in b");
		cr_assert_eq(ib[i].pages, REGION / PAGE,
		    "page count from the region table");
		cr_assert_eq((const uint8_t *)ib[i].addr + oa,
		    (const uint8_t *)data);
	}
	cr_assert_rc(cxlp_region_list(b, NULL, 0), 2, "count only");
	cxlp_close(&b);
	cxlp_close(&a);
}

Test(regview, a_view_maps_a_foreign_region_by_id_read_only)
{
	struct cxlp_handler *a = itest_connect(), *b = itest_connect();
	struct cxlp_handler *c = connect_opts(REGION, false, 1);
	struct cxlp_region_info v;
	void *buf = put(a, "k", 0x5a, PAGE, NULL);
	uint32_t ra;
	uint64_t oa;

	cr_assert_rc(cxlp_locate(a, buf, &ra, &oa), 0);
	cr_assert_rc(cxlp_region_view(b, ra, &v), 0, "mapped on demand");
	cr_assert_eq(v.region, ra);
	cr_assert_not(v.writable);
	cr_assert_eq(v.len, REGION);
	cr_assert_eq(v.pages, REGION / PAGE);
	cr_assert_eq(((const uint8_t *)v.addr)[oa], 0x5a);
	cr_assert_eq(((const uint8_t *)v.addr)[oa + PAGE - 1], 0x5a);
	cr_assert_rc(cxlp_region_view(b, 100000, &v), CXLP_E_NOTFOUND);
	cr_assert_rc(cxlp_region_view(b, ra + 50, &v), CXLP_E_NOTFOUND,
	    "a free record");
	cr_assert_rc(cxlp_region_view(c, ra, &v), CXLP_E_NOTFOUND,
	    "without direct reads");
	cr_assert(strstr(cxlp_errormsg(), "direct reads") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_rc(cxlp_region_view(a, ra, &v), 0);
	cr_assert(v.writable, "own region");
	cr_assert_eq((uint8_t *)v.addr + oa, (uint8_t *)buf);
	cxlp_close(&c);
	cxlp_close(&b);
	cxlp_close(&a);
}

Test(regview, page_at_names_the_page_alloc_handed_out)
{
	struct cxlp_handler *a = itest_connect(), *b = itest_connect();
	cxlp_page_t pg, at;
	void *buf, *abuf;
	uint32_t ra;
	uint64_t oa;
	bool ok = false;
	const void *data;
	size_t len;

	cr_assert_rc(cxlp_alloc(a, &pg, &buf), 0);
	cr_assert_rc(cxlp_locate(a, buf, &ra, &oa), 0);
	cr_assert_rc(cxlp_page_at(a, ra, (uint32_t)(oa / PAGE), &at, &abuf),
	    0);
	cr_assert_eq(at, pg);
	cr_assert_eq(abuf, buf);
	memcpy(abuf, "via page_at", 11);
	cr_assert_rc(cxlp_store(a, "pa", 2, at, 11, 0, &ok), 0);
	cr_assert(ok);
	cr_assert_rc(cxlp_retrieve(b, "pa", 2, 0, &data, &len), 0);
	cr_assert(len == 11 && memcmp(data, "via page_at", 11) == 0);
	cr_assert_rc(cxlp_page_at(a, ra, REGION / PAGE, &at, NULL),
	    CXLP_E_BOUNDS);
	cr_assert_rc(cxlp_page_at(b, ra, 0, &at, NULL), CXLP_E_NOTFOUND,
	    "a's region is not b's");
	cr_assert_rc(cxlp_page_at(a, ra, (uint32_t)(oa / PAGE) + 1, &at,
	    NULL), 0);
	cr_assert_rc(cxlp_store(a, "free", 4, at, 1, 0, &ok), CXLP_E_BADPAGE,
	    "a page not allocated is named, not stored");
	cxlp_close(&b);
	cxlp_close(&a);
}

/* What the callback saw. */
#define EVMAX 64
struct seen {
	struct cxlp_handler *h;
	int n;
	int kind[EVMAX];
	struct cxlp_region_info info[EVMAX];
	uint8_t first[EVMAX]; /* first byte read in the callback: mapped */
	int list_rc;          /* cxlp_region_list called from the callback */
	int set_rc;           /* cxlp_set_region_fn called from it */
	int alloc_rc;         /* cxlp_alloc (and free) called from it */
};

static void
record(void *arg, int event, const struct cxlp_region_info *info)
{
	struct seen *s = arg;

	if (s->n == EVMAX) {
		return;
	}
	s->kind[s->n] = event;
	s->info[s->n] = *info;
	s->first[s->n] = *(volatile const uint8_t *)info->addr;
	s->n++;
	if (s->h != NULL) {
		s->list_rc = cxlp_region_list(s->h, NULL, 0);
		s->set_rc = cxlp_set_region_fn(s->h, record, s);
		cxlp_page_t pg;
		void *buf;

		s->alloc_rc = cxlp_alloc(s->h, &pg, &buf); /* drains: re-entry */
		if (s->alloc_rc == 0) {
			s->alloc_rc = cxlp_free(s->h, pg);
		}
	}
}

static int
find(const struct seen *s, int kind, uint32_t region, int from)
{
	for (int i = from; i < s->n; i++) {
		if (s->kind[i] == kind && s->info[i].region == region) {
			return i;
		}
	}
	return -1;
}

Test(regview, the_callback_replays_what_is_mapped_exactly)
{
	struct cxlp_handler *a = itest_connect(), *b = itest_connect();
	struct cxlp_region_info list[4];
	struct seen s = {0};
	const void *data;
	size_t len;
	int n;

	(void)put(a, "k", 3, 10, NULL);
	cr_assert_rc(cxlp_retrieve(b, "k", 1, 0, &data, &len), 0);
	n = cxlp_region_list(b, list, 4);
	cr_assert_eq(n, 2);
	cr_assert_rc(cxlp_set_region_fn(b, record, &s), 0);
	cr_assert_eq(s.n, 2, "one MAPPED per region mapped: %d", s.n);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(s.kind[i], CXLP_REGION_MAPPED);
		cr_assert_eq(s.info[i].region, list[i].region, "in id order");
		cr_assert_eq(s.info[i].addr, list[i].addr);
		cr_assert_eq(s.info[i].len, list[i].len);
		cr_assert_eq(s.info[i].writable, list[i].writable);
	}
	cxlp_close(&b);
	cr_assert_eq(s.n, 4, "an UNMAPPING of each at close: %d", s.n);
	for (int i = 0; i < n; i++) {
		int u = find(&s, CXLP_REGION_UNMAPPING, list[i].region, 2);

		cr_assert(u >= 0, "region %u unmapped unheard", list[i].region);
		cr_assert_eq(s.info[u].addr, list[i].addr);
		cr_assert_eq(s.info[u].len, list[i].len);
	}
	cxlp_close(&a);
}

Test(regview, foreign_and_new_own_regions_are_reported_before_use)
{
	struct cxlp_handler *a = connect_opts(64 << 10, true, 1);
	struct cxlp_handler *b = itest_connect();
	struct seen sa = {0}, sb = {0};
	const void *data;
	size_t len;
	void *buf = NULL;
	cxlp_page_t pg;
	uint32_t r;
	uint64_t off;
	int m;

	cr_assert_rc(cxlp_set_region_fn(a, record, &sa), 0);
	cr_assert_eq(sa.n, 1, "a's first region replayed");
	uint32_t per = sa.info[0].pages; /* regions are rounded to the pool's
	                                  * alignment */
	cr_assert_rc(cxlp_set_region_fn(b, record, &sb), 0);
	cr_assert_eq(sb.n, 1);
	sa.h = a; /* from now on the callback calls back into the library */
	/* the alloc after a region's last page maps a second region */
	for (uint32_t i = 0; i <= per; i++) {
		cr_assert_rc(cxlp_alloc(a, &pg, &buf), 0);
	}
	cr_assert_eq(sa.n, 2, "MAPPED of the new region before alloc "
	    "returned: %d", sa.n);
	cr_assert(sa.info[1].writable);
	cr_assert((uint8_t *)buf >= (uint8_t *)sa.info[1].addr &&
	    (uint8_t *)buf < (uint8_t *)sa.info[1].addr + sa.info[1].len);
	cr_assert_eq(sa.list_rc, 2, "region_list from the callback saw "
	    "the new region");
	cr_assert_eq(sa.set_rc, -EDEADLK);
	cr_assert_eq(sa.alloc_rc, 0, "alloc from the callback");
	memset(buf, 9, 8);
	bool ok = false;
	cr_assert_rc(cxlp_store(a, "x", 1, pg, 8, 0, &ok), 0);
	cr_assert_rc(cxlp_retrieve(b, "x", 1, 0, &data, &len), 0);
	cr_assert_rc(cxlp_locate(b, data, &r, &off), 0);
	m = find(&sb, CXLP_REGION_MAPPED, r, 1);
	cr_assert(m >= 0, "foreign region reported before retrieve returned");
	cr_assert_not(sb.info[m].writable);
	cr_assert_eq((const uint8_t *)sb.info[m].addr + off,
	    (const uint8_t *)data, "the range is the mapping");
	cr_assert_eq(sb.info[m].len, sa.info[1].len);
	cr_assert_eq(sb.first[m], 9);
	struct cxlp_region_info v;
	cr_assert_rc(cxlp_region_view(b, sa.info[0].region, &v), 0);
	m = find(&sb, CXLP_REGION_MAPPED, sa.info[0].region, 1);
	cr_assert(m >= 0, "a view's mapping reported before it returned");
	cr_assert_eq(sb.info[m].addr, v.addr);
	sa.h = NULL;
	cxlp_close(&b);
	cr_assert(find(&sb, CXLP_REGION_UNMAPPING, r, m) > m);
	cxlp_close(&a);
	cr_assert_eq(sa.n, 4, "both of a's regions unmapped, each heard "
	    "once: %d", sa.n);
}

Test(regview, a_region_given_back_is_reported_unmapping)
{
	struct cxlp_handler *a = connect_opts(64 << 10, true, 0);
	struct seen s = {0};
	struct cxlp_region_info first;
	cxlp_page_t *pg;
	void *buf;
	uint32_t r2, per;
	uint64_t off;
	int u = -1;

	cr_assert_rc(cxlp_region_list(a, &first, 1), 1);
	per = first.pages;
	pg = calloc(per + 1, sizeof(*pg));
	for (uint32_t i = 0; i <= per; i++) {
		cr_assert_rc(cxlp_alloc(a, &pg[i], &buf), 0);
	}
	cr_assert_rc(cxlp_locate(a, buf, &r2, &off), 0);
	cr_assert_rc(cxlp_set_region_fn(a, record, &s), 0);
	cr_assert_eq(s.n, 2);
	cr_assert_rc(cxlp_free(a, pg[per]), 0);
	for (int t = 0; t < 2000 && u < 0; t++) {
		usleep(5000); /* the keeper gives it back */
		u = find(&s, CXLP_REGION_UNMAPPING, r2, 0);
	}
	cr_assert(u >= 0, "no UNMAPPING of the region given back");
	cr_assert(s.info[u].writable);
	for (uint32_t i = 0; i < per; i++) {
		cr_assert_rc(cxlp_free(a, pg[i]), 0);
	}
	free(pg);
	cxlp_set_region_fn(a, NULL, NULL);
	cxlp_close(&a);
}

static struct cxlp_handler *
connect_page(size_t page)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, srv.url), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, page), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, 4 * MiB), 0);
	cr_assert_rc(cxlp_connect(&h, cfg), 0);
	cxlp_config_delete(&cfg);
	return h;
}

/* one chunk size: a stores values of lengths 0, 1, the page, the page
 * less one and half of it, each page filled with its own byte; b reads
 * them back through its read-only mapping of a's region, each at a page
 * boundary of the region */
static void
chunk_round_trip(size_t page)
{
	struct cxlp_handler *a = connect_page(page), *b = connect_page(page);
	const size_t lens[] = {0, 1, page, page - 1, page / 2, 0};
	struct cxlp_region_info info[4];
	char key[32];
	int n;

	for (int i = 0; i < 6; i++) {
		cxlp_page_t pg;
		void *buf;
		bool ok = false;
		const void *data = NULL;
		size_t got = 99;
		uint32_t region;
		uint64_t off;

		snprintf(key, sizeof(key), "chunk-%zu-%d", page, i);
		cr_assert_rc(cxlp_alloc(a, &pg, &buf), 0);
		memset(buf, 'a' + i, page);
		cr_assert_rc(cxlp_store(a, key, strlen(key), pg, lens[i], 0,
		    &ok), 0);
		cr_assert(ok);
		cr_assert_rc(cxlp_retrieve(b, key, strlen(key), 0, &data,
		    &got), 0, "%zu/%d", page, i);
		cr_assert_eq(got, lens[i], "%zu/%d", page, i);
		cr_assert_not_null(data, "%zu/%d: a zero-length value is an "
		    "empty range at its page, not NULL", page, i);
		for (size_t k = 0; k < lens[i]; k++) {
			cr_assert_eq(((const char *)data)[k], 'a' + i);
		}
		cr_assert_rc(cxlp_locate(b, data, &region, &off), 0);
		cr_assert_eq(off % page, 0, "%zu/%d", page, i);
	}
	/* each own region is cut into len / size pages */
	n = cxlp_region_list(a, info, 4);
	cr_assert(n >= 1 && n <= 4, "%d", n);
	for (int i = 0; i < n; i++) {
		cr_assert(info[i].writable);
		cr_assert_eq(info[i].page_size, page);
		cr_assert_eq(info[i].pages, info[i].len / page);
	}
	cxlp_close(&b);
	cxlp_close(&a);
}

/* issue 29: chunk sizes that are not multiples of 4 KiB (Maru's own
 * tests use 1 KiB) and zero-length values, read by another handler */
Test(regview, chunks_of_64_b_1_kib_4_kib_plus_64_and_1_mib_read_back)
{
	static const size_t sizes[] = {64, 1024, 4096 + 64, MiB};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		chunk_round_trip(sizes[i]);
	}
}

Test(regview, a_chunk_below_a_cache_line_is_refused_with_why)
{
	struct cxlp_config *cfg = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, 63), -EINVAL);
	cr_assert(strstr(cxlp_errormsg(), "cache line") != NULL,
	    "%s", cxlp_errormsg());
	cxlp_config_delete(&cfg);
}
