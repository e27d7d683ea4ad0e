/*
 * test_regions.c -- contracts 6 and 7 over a real socket: registers must
 * point inside a region the caller owns; a closed owner's region stays
 * readable while keys point into it and returns to the pool with its last
 * key; deleting a live owner's key is refused, a gone owner's allowed.
 */
#include "itest.h"
#include "rawclient.h"

TestSuite(regions, .init = itest_start, .fini = itest_stop, .timeout = 60);

Test(regions, register_into_a_region_the_caller_does_not_own_is_refused)
{
	struct raw_client a, b;
	struct proto_loc la;
	struct proto_result res;

	cr_assert_rc(raw_open(&a, srv.url), 0);
	cr_assert_rc(raw_open(&b, srv.url), 0);
	cr_assert_rc(raw_hello(&a), 0);
	cr_assert_rc(raw_hello(&b), 0);
	cr_assert_rc(raw_region(&a, 2 * MiB, 4096, &la), 0);
	cr_assert_rc(raw_register(&b, "stolen", la.region, la.region_off, 64,
	    &res), 0);
	cr_assert_eq(res.status, CXLP_E_PERM);
	cr_assert_rc(raw_register(&a, "mine", la.region, la.region_off, 64,
	    &res), 0);
	cr_assert_eq(res.status, 0, "owner's own register failed: %d",
	    res.status);
	raw_close(&a);
	raw_close(&b);
}

Test(regions, register_past_the_region_end_is_refused)
{
	struct raw_client a;
	struct proto_loc l;
	struct proto_result res;

	cr_assert_rc(raw_open(&a, srv.url), 0);
	cr_assert_rc(raw_hello(&a), 0);
	cr_assert_rc(raw_region(&a, 2 * MiB, 4096, &l), 0);
	cr_assert_rc(raw_register(&a, "end", l.region,
	    l.region_off + l.region_len, 64, &res), 0);
	cr_assert_eq(res.status, CXLP_E_BOUNDS);
	cr_assert_rc(raw_register(&a, "tail", l.region,
	    l.region_off + l.region_len - 4096, 4097, &res), 0);
	cr_assert_neq(res.status, 0, "a value spilling past the end");
	cr_assert_rc(raw_register(&a, "before", l.region, l.region_off - 4096,
	    64, &res), 0);
	cr_assert_eq(res.status, CXLP_E_BOUNDS);
	cr_assert_rc(raw_register(&a, "unaligned", l.region,
	    l.region_off + 100, 64, &res), 0);
	cr_assert_eq(res.status, CXLP_E_BOUNDS);
	raw_close(&a);
}

Test(regions, closed_owners_region_lives_until_its_last_key_is_deleted)
{
	struct cxlp_handler *owner = itest_connect();
	struct cxlp_handler *reader = itest_connect();
	struct cxlp_stats before, st;

	before = kv_stats(reader);
	itest_put(owner, "o", 3, 1, 1000);
	itest_put(owner, "o", 3, 2, 2000);
	cxlp_close(&owner);

	st = kv_stats(reader);
	cr_assert_eq(st.orphan_regions, 1);
	cr_assert_eq(itest_get_check(reader, "o", 1), 3);
	cr_assert_rc(cxlp_delete(reader, "o-1", 3), 0,
	    "a gone owner's key must be deletable by anyone");
	st = kv_stats(reader);
	cr_assert_eq(st.orphan_regions, 1, "freed while a key points in");
	cr_assert_eq(itest_get_check(reader, "o", 2), 3);
	cr_assert_rc(cxlp_delete(reader, "o-2", 3), 0);
	st = kv_stats(reader);
	cr_assert_eq(st.orphan_regions, 0);
	cr_assert_eq(st.regions, before.regions - 1,
	    "owner's region not returned");
	cr_assert_eq(st.free_bytes, before.free_bytes + 4 * MiB,
	    "free bytes %llu, want %llu", (unsigned long long)st.free_bytes,
	    (unsigned long long)(before.free_bytes + 4 * MiB));
	cxlp_close(&reader);
}

Test(regions, delete_of_a_live_handlers_key_is_refused)
{
	struct cxlp_handler *owner = itest_connect();
	struct cxlp_handler *other = itest_connect();

	itest_put(owner, "o", 3, 1, 100);
	cr_assert_rc(cxlp_delete(other, "o-1", 3), CXLP_E_PERM);
	cr_assert_eq(itest_get_check(other, "o", 1), 3);
	cxlp_close(&other);
	cxlp_close(&owner);
}

Test(regions, closing_with_unregistered_pages_returns_the_region)
{
	struct cxlp_handler *a = itest_connect();
	struct cxlp_handler *b = itest_connect();
	struct cxlp_stats before, after;
	cxlp_page_t pg;
	void *buf;

	before = kv_stats(b);
	for (int i = 0; i < 10; i++) {
		cr_assert_rc(cxlp_alloc(a, &pg, &buf), 0);
	}
	cxlp_close(&a);
	after = kv_stats(b);
	cr_assert_eq(after.regions, before.regions - 1);
	cr_assert_eq(after.orphan_regions, 0);
	cxlp_close(&b);
}
