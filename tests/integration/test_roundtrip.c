/*
 * test_roundtrip.c -- bytes one handler process writes are read, in place,
 * by another process; the reader's view of a foreign region is read-only.
 */
#include "itest.h"

TestSuite(roundtrip, .init = itest_start, .fini = itest_stop, .timeout = 60);

Test(roundtrip, bytes_stored_by_one_process_are_read_by_another)
{
	struct test_child c;
	unsigned n = 50;
	struct cxlp_handler *h;

	itest_spawn(&c, "reader", "50");
	h = itest_connect();
	for (unsigned i = 1; i <= n; i++) {
		itest_put(h, "rt", 7, i, 100 + i * 61);
	}
	itest_go(&c);
	cr_assert_eq(itest_wait(&c), 0, "reader saw wrong bytes");
	cxlp_close(&h);
}

Test(roundtrip, retrieve_of_own_key_points_into_own_page)
{
	struct cxlp_handler *h = itest_connect();
	cxlp_page_t pg;
	void *buf;
	const void *data;
	size_t len;
	bool ok;

	cr_assert_rc(cxlp_alloc(h, &pg, &buf), 0);
	kv_fill(buf, 4096, 1, 1);
	cr_assert_rc(cxlp_store(h, "own", 3, pg, 4096, 0, &ok), 0);
	cr_assert(ok);
	cr_assert_rc(cxlp_retrieve(h, "own", 3, 0, &data, &len), 0);
	cr_assert_eq(data, buf, "retrieve copied instead of pointing in place");
	cr_assert_eq(len, 4096);
	cxlp_close(&h);
}

Test(roundtrip, missing_key_is_not_found)
{
	struct cxlp_handler *h = itest_connect();
	const void *data;
	size_t len;

	cr_assert_rc(cxlp_retrieve(h, "nope", 4, 0, &data, &len),
	    CXLP_E_NOTFOUND);
	cr_assert_rc(cxlp_exists(h, "nope", 4), 0);
	itest_put(h, "yes", 1, 1, 64);
	cr_assert_rc(cxlp_exists(h, "yes-1", 5), 1);
	cxlp_close(&h);
}

Test(roundtrip, reader_mapping_of_a_foreign_region_is_read_only)
{
	struct test_child c;
	struct cxlp_handler *h;

	itest_spawn(&c, "write-foreign", "rt-1");
	h = itest_connect();
	itest_put(h, "rt", 7, 1, 4096);
	itest_go(&c);
	cr_assert_eq(itest_wait(&c), 128 + SIGSEGV,
	    "a write into a foreign region did not fault");
	cr_assert_eq(itest_get_check(h, "rt", 1), 7, "bytes changed");
	cxlp_close(&h);
}

/* A reader's pointer into a foreign region stays mapped after that region
 * is freed and its id reused by another handler (the reader remaps the new
 * generation): reading it gives undefined bytes but never faults. */
Test(roundtrip, old_pointer_survives_reuse_of_its_region_id)
{
	struct cxlp_handler *reader = itest_connect();
	struct cxlp_handler *a = itest_connect();
	struct cxlp_handler *c;
	const void *old, *fresh;
	size_t len;
	volatile uint8_t sink;

	itest_put(a, "gen", 1, 1, 4096);
	cr_assert_rc(cxlp_retrieve(reader, "gen-1", 5, 0, &old, &len), 0);
	cr_assert_rc(cxlp_delete(a, "gen-1", 5), 0);
	cxlp_close(&a); /* its region, now empty, returns to the pool */
	c = itest_connect(); /* takes the same region id, next gen */
	itest_put(c, "gen", 2, 2, 4096);
	cr_assert_rc(cxlp_retrieve(reader, "gen-2", 5, 0, &fresh, &len), 0);
	cr_assert(kv_check(fresh, len, 2, NULL));
	sink = *(const volatile uint8_t *)old; /* must not fault */
	(void)sink;
	cr_assert_eq(kv_stats(reader).foreign_maps, 1,
	    "the replaced mapping is still counted as cached");
	cxlp_close(&c);
	cxlp_close(&reader);
}
