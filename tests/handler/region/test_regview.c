/*
 * test_regview.c -- tests of handler/region/regview.c's arguments and edges:
 * NULL and closed handlers, empty batches, counting-only listings, the
 * callback turned off. Its behaviour between handlers (locations,
 * foreign views, callback order) is tests/integration/test_regview.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "handler_fixture.h"

static void
start(void)
{
	hfx_start(8192, 4u << 20);
}

TestSuite(regview, .init = start, .fini = hfx_stop, .timeout = 30);

Test(regview, every_call_refuses_a_null_handler_with_einval)
{
	struct cxlp_region_info v = {0};
	uint32_t r;
	uint64_t o;
	cxlp_page_t pg;

	cr_assert_eq(cxlp_locate(NULL, &v, &r, &o), -EINVAL);
	cr_assert_eq(cxlp_region_list(NULL, &v, 1), -EINVAL);
	cr_assert_eq(cxlp_region_view(NULL, 0, &v), -EINVAL);
	cr_assert_eq(cxlp_page_at(NULL, 0, 0, &pg, NULL), -EINVAL);
	cr_assert_eq(cxlp_set_region_fn(NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(cxlp_prepare_read(NULL, &v, 1), -EINVAL);
}

Test(regview, bad_arguments_are_einval)
{
	struct cxlp_handler *h = hfx_connect();
	uint32_t r;
	uint64_t o;

	cr_assert_eq(cxlp_locate(h, &r, NULL, &o), -EINVAL);
	cr_assert_eq(cxlp_batch_locate(h, 1, NULL, &r, &o), -EINVAL);
	cr_assert_eq(cxlp_batch_locate(h, 0, NULL, NULL, NULL), 0);
	cr_assert_eq(cxlp_region_list(h, NULL, 1), -EINVAL);
	cr_assert_eq(cxlp_region_view(h, 0, NULL), -EINVAL);
	cr_assert_eq(cxlp_page_at(h, 0, 0, NULL, NULL), -EINVAL);
	cxlp_close(&h);
}

Test(regview, the_own_region_is_listed_and_its_pages_named)
{
	struct cxlp_handler *h = hfx_connect();
	struct cxlp_region_info v[2];
	cxlp_page_t pg, at;
	void *buf, *abuf;
	uint32_t r;
	uint64_t o;

	cr_assert_eq(cxlp_region_list(h, NULL, 0), 1);
	cr_assert_eq(cxlp_region_list(h, v, 2), 1);
	cr_assert_eq(v[0].page_size, 8192);
	cr_assert_eq(v[0].pages, v[0].len / 8192);
	cr_assert(v[0].writable);
	cr_assert_eq(cxlp_alloc(h, &pg, &buf), 0);
	cr_assert_eq(cxlp_locate(h, (char *)buf + 8191, &r, &o), 0);
	cr_assert_eq(r, v[0].region);
	cr_assert_eq(o % 8192, 8191);
	cr_assert_eq(cxlp_page_at(h, r, (uint32_t)(o / 8192), &at, &abuf), 0);
	cr_assert(at == pg && abuf == buf);
	cr_assert_eq(cxlp_locate(h, (char *)v[0].addr + v[0].len, &r, &o),
	    CXLP_E_NOTFOUND, "one past the end is in no region");
	cr_assert_eq(cxlp_free(h, pg), 0);
	cxlp_close(&h);
}

static int calls;

static void
count(void *arg, int event, const struct cxlp_region_info *info)
{
	(void)arg;
	(void)event;
	(void)info;
	calls++;
}

Test(regview, a_callback_turned_off_hears_nothing_more)
{
	struct cxlp_handler *h = hfx_connect();

	cr_assert_eq(cxlp_set_region_fn(h, count, NULL), 0);
	cr_assert_eq(calls, 1, "the replay");
	cr_assert_eq(cxlp_set_region_fn(h, count, NULL), 0);
	cr_assert_eq(calls, 2, "set again: replayed again");
	cr_assert_eq(cxlp_set_region_fn(h, NULL, NULL), 0);
	cxlp_close(&h);
	cr_assert_eq(calls, 2, "no UNMAPPING once turned off");
}

Test(regview, prepare_read_takes_ranges_inside_one_mapped_region)
{
	struct cxlp_handler *h = hfx_connect();
	struct cxlp_region_info v;
	cxlp_page_t pg;
	const void *data;
	size_t len;
	bool ok;
	void *buf;
	char local[64];

	cr_assert_eq(cxlp_region_list(h, &v, 1), 1);
	cr_assert_eq(cxlp_alloc(h, &pg, &buf), 0);
	memset(buf, 7, 8192);
	cr_assert_eq(cxlp_store(h, "pr", 2, pg, 8192, 0, &ok), 0);
	cr_assert_eq(cxlp_retrieve(h, "pr", 2, 0, &data, &len), 0);
	cr_assert_eq(cxlp_prepare_read(h, data, len), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(((const char *)data)[len - 1], 7, "bytes unchanged");
	cr_assert_eq(cxlp_prepare_read(h, data, 0), 0);
	cr_assert_eq(cxlp_prepare_read(h, v.addr, v.len), 0, "a whole region");
	cr_assert_eq(cxlp_prepare_read(h, v.addr, v.len + 1), -EINVAL,
	    "one byte past the region's end");
	cr_assert_eq(cxlp_prepare_read(h, (char *)v.addr + v.len, 1), -EINVAL);
	cr_assert_eq(cxlp_prepare_read(h, local, sizeof(local)), -EINVAL,
	    "memory of no mapping");
	cr_assert_eq(cxlp_prepare_read(h, NULL, 1), -EINVAL);
	cr_assert_eq(cxlp_delete(h, "pr", 2), 0);
	cxlp_close(&h);
}
