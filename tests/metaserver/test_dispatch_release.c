/*
 * test_dispatch_release.c -- metaserver/dispatch.c, the requests that
 * give something back: DELETE, REGION_FREE and BYE (and a region freed
 * with its last key), UNPIN and BATCH_PIN, and replayed requests (a
 * retry with the same req_id answered from the reply cache, never
 * applied twice). Driven through ms_dispatch as in test_dispatch.c
 * (sessions, REGISTER, LOOKUP/EXISTS), which shares its fixture
 * (dispatch_fixture.h) and its suite name.
 */
#include "dispatch_fixture.h"
#include "layout.h"

TestSuite(dispatch, .init = dfx_setup, .fini = dfx_teardown);

/* ---- delete ------------------------------------------------------------- */

Test(dispatch, delete_of_a_pinned_key_is_refused_with_pinned)
{
	struct dfx_cl a, b;
	struct proto_result res;

	dfx_client(&a, 1);
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &res), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_PIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_DELETE, 0, "k"), CXLP_E_PINNED);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_EXISTS, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_UNPIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_DELETE, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_DELETE, 0, "k"), CXLP_E_NOTFOUND);
}

Test(dispatch, delete_of_another_live_sessions_key_is_refused_with_perm)
{
	struct dfx_cl a, b;
	struct proto_result res;

	dfx_client(&a, 1);
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &res), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), CXLP_E_PERM);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_EXISTS, 0, "k"), 0);
}

Test(dispatch, delete_returns_the_old_location_to_the_owner)
{
	static const char *const key = "k";
	struct proto_result res[1];
	struct dfx_cl a;
	uint32_t m = 0;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 4, res), 0);
	cr_assert_eq(dfx_keyop(&a, PROTO_OP_DELETE, 0, 1, &key, res, &m), 0);
	cr_assert_eq(res[0].status, 0);
	cr_assert_eq(res[0].loc.off, dfx_page_off(&a, 4));
	cr_assert_eq(res[0].loc.region, a.region.region);
}

Test(dispatch, delete_is_allowed_after_the_owner_said_bye)
{
	struct dfx_cl a, b;
	struct proto_result res;

	dfx_client(&a, 1);
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &res), 0);
	cr_assert_eq(dfx_call(&a, PROTO_OP_BYE, NULL, NULL, NULL), 0);
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_EXISTS, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), 0);
}

Test(dispatch, deleting_the_last_key_of_an_orphan_region_frees_it)
{
	struct dfx_cl a, b;
	struct proto_result res;
	uint64_t free0;

	dfx_hello(&b, 2);
	free0 = dfx_stat_of(&b, PROTO_STAT_FREE_BYTES);
	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "k1", 0, &res), 0);
	cr_assert_eq(dfx_reg_page(&a, 0, "k2", 1, &res), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_FREE_BYTES),
	    free0 - REGION_LEN);
	cr_assert_eq(dfx_call(&a, PROTO_OP_BYE, NULL, NULL, NULL), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_ORPHAN_REGIONS), 1);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k1"), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_FREE_BYTES),
	    free0 - REGION_LEN);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k2"), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_FREE_BYTES), free0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_REGIONS), 0);
}

Test(dispatch, bye_frees_a_region_with_no_keys_at_once)
{
	struct dfx_cl a, b;
	uint64_t free0;

	dfx_hello(&b, 2);
	free0 = dfx_stat_of(&b, PROTO_STAT_FREE_BYTES);
	dfx_client(&a, 1);
	cr_assert_eq(dfx_call(&a, PROTO_OP_BYE, NULL, NULL, NULL), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_FREE_BYTES), free0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_SESSIONS), 1);
}

/* ---- regions ------------------------------------------------------------ */

Test(dispatch, region_free_needs_the_owner_and_the_right_gen)
{
	struct dfx_cl a, b;
	struct pbuf body;
	uint64_t free0;

	dfx_hello(&b, 2);
	free0 = dfx_stat_of(&b, PROTO_STAT_FREE_BYTES);
	dfx_client(&a, 1);
	pbuf_init(&body);
	proto_put_region_free(&body, a.region.region, a.region.gen);
	cr_assert_eq(dfx_call(&b, PROTO_OP_REGION_FREE, &body, NULL, NULL),
	    CXLP_E_PERM);
	pbuf_reset(&body);
	proto_put_region_free(&body, a.region.region, a.region.gen + 1);
	cr_assert_eq(dfx_call(&a, PROTO_OP_REGION_FREE, &body, NULL, NULL),
	    CXLP_E_PERM);
	pbuf_reset(&body);
	proto_put_region_free(&body, a.region.region, a.region.gen);
	cr_assert_eq(dfx_call(&a, PROTO_OP_REGION_FREE, &body, NULL, NULL), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_FREE_BYTES), free0);
	cr_assert_eq(dfx_call(&a, PROTO_OP_REGION_FREE, &body, NULL, NULL),
	    CXLP_E_PERM);
	pbuf_fini(&body);
}

Test(dispatch, region_alloc_beyond_the_pool_fails_with_nospace)
{
	struct dfx_cl a;
	struct proto_loc loc;

	dfx_hello(&a, 1);
	cr_assert_eq(dfx_region_alloc(&a, POOL_SIZE, PAGE, &loc),
	    CXLP_E_NOSPACE); /* the metadata area takes some */
	cr_assert_eq(dfx_region_alloc(&a, REGION_LEN, 1, &loc), -EINVAL);
	cr_assert_eq(dfx_region_alloc(&a, REGION_LEN, PAGE, &loc), 0);
}

/* ---- pins --------------------------------------------------------------- */

Test(dispatch, another_sessions_unpin_cannot_release_my_pin)
{
	struct dfx_cl a, b;
	struct proto_result res;

	dfx_client(&a, 1);
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &res), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_PIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_UNPIN, 0, "k"), CXLP_E_NOTPINNED);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 1);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), CXLP_E_PINNED);
}

Test(dispatch, unpin_without_a_pin_fails_and_of_a_missing_key_is_notfound)
{
	struct dfx_cl a;
	struct proto_result res;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &res), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "k"), CXLP_E_NOTPINNED);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "nope"), CXLP_E_NOTFOUND);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_PIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_PIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "k"), CXLP_E_NOTPINNED);
}

Test(dispatch, batch_pin_stops_after_the_first_missing_key)
{
	static const char *const keys[] = { "a", "b", "missing", "c" };
	struct proto_result res[4];
	struct dfx_cl c;
	uint32_t m = 0;

	dfx_client(&c, 1);
	cr_assert_eq(dfx_reg_page(&c, 0, "a", 0, res), 0);
	cr_assert_eq(dfx_reg_page(&c, 0, "b", 1, res), 0);
	cr_assert_eq(dfx_reg_page(&c, 0, "c", 2, res), 0);
	cr_assert_eq(dfx_keyop(&c, PROTO_OP_PIN, 0, 4, keys, res, &m), 0);
	cr_assert_eq(m, 3);
	cr_assert_eq(res[0].status, 0);
	cr_assert_eq(res[1].status, 0);
	cr_assert_eq(res[2].status, CXLP_E_NOTFOUND);
	cr_assert_eq(dfx_stat_of(&c, PROTO_STAT_PINS), 2);
	cr_assert_eq(dfx_key1(&c, PROTO_OP_UNPIN, 0, "c"), CXLP_E_NOTPINNED);
}

Test(dispatch, bye_releases_all_pins_of_the_session)
{
	struct dfx_cl a, b;
	struct proto_result res;

	dfx_client(&a, 1);
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_reg_page(&a, PROTO_F_PIN, "k", 0, &res), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_PIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_PIN, 0, "k"), 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 3);
	cr_assert_eq(dfx_call(&b, PROTO_OP_BYE, NULL, NULL, NULL), 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 1);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_DELETE, 0, "k"), 0);
}

/* ---- replies are cached by req_id -------------------------------------- */

Test(dispatch, a_replayed_request_gets_the_identical_reply_bytes)
{
	struct dfx_cl a;
	struct proto_reg g;
	struct pbuf body, r1, r2;

	dfx_client(&a, 1);
	g = (struct proto_reg){ { (const uint8_t *)"k", 1 }, a.region.region,
		dfx_page_off(&a, 0), 10 };
	pbuf_init(&body);
	pbuf_init(&r1);
	pbuf_init(&r2);
	proto_put_regs(&body, PROTO_F_PIN, 1, &g);
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_REGISTER, 77, &body, &r1, NULL,
	    NULL), 0);
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_REGISTER, 77, &body, &r2, NULL,
	    NULL), 0);
	cr_assert_eq(r1.len, r2.len);
	cr_assert(memcmp(r1.data, r2.data, r1.len) == 0);
	/* applied once: the key is NEW in both, and pinned once */
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 1);
	pbuf_fini(&body);
	pbuf_fini(&r1);
	pbuf_fini(&r2);
}

Test(dispatch, a_replayed_unpin_does_not_release_two_pins)
{
	static const char *const key = "k";
	struct proto_result res;
	struct dfx_cl a;
	struct pbuf body, rep;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, PROTO_F_PIN, "k", 0, &res), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_PIN, 0, "k"), 0);
	pbuf_init(&body);
	pbuf_init(&rep);
	dfx_put_keys(&body, 0, 1, &key);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(dfx_call_id(&a, PROTO_OP_UNPIN, 500, &body, &rep,
		    NULL, NULL), 0);
	}
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 1);
	pbuf_fini(&body);
	pbuf_fini(&rep);
}

Test(dispatch, a_replayed_delete_answers_the_first_result)
{
	static const char *const key = "k";
	struct proto_result res[1];
	struct dfx_cl a;
	struct pbuf body, rep;
	uint32_t m = 0;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, res), 0);
	pbuf_init(&body);
	pbuf_init(&rep);
	dfx_put_keys(&body, 0, 1, &key);
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_DELETE, 900, &body, &rep, res,
	    &m), 0);
	cr_assert_eq(res[0].status, 0);
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_DELETE, 900, &body, &rep, res,
	    &m), 0);
	cr_assert_eq(res[0].status, 0, "replay must answer the first result");
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_DELETE, 901, &body, &rep, res,
	    &m), 0);
	cr_assert_eq(res[0].status, CXLP_E_NOTFOUND);
	pbuf_fini(&body);
	pbuf_fini(&rep);
}

/* A busy handler can retry a request after more than RCACHE_ENTRIES other
 * requests of its session: the reply is gone from the cache, and the
 * retry must not be applied again (a second pin, taken by a PIN whose
 * caller believes it holds one) but answered CXLP_E_UNKNOWN. */
Test(dispatch, a_retry_whose_reply_was_evicted_is_not_applied_again)
{
	static const char *const key = "k";
	struct proto_result res;
	struct dfx_cl a;
	struct pbuf body, rep;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &res), 0);
	pbuf_init(&body);
	pbuf_init(&rep);
	dfx_put_keys(&body, 0, 1, &key);
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_PIN, 200, &body, &rep, NULL,
	    NULL), 0);
	a.next_id = 1000;
	for (int i = 0; i < RCACHE_ENTRIES; i++) {
		cr_assert_eq(dfx_key1(&a, PROTO_OP_EXISTS, 0, "k"), 0);
	}
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_PIN, 200, &body, &rep, NULL,
	    NULL), CXLP_E_UNKNOWN);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 1, "the retry pinned "
	    "again");
	pbuf_fini(&body);
	pbuf_fini(&rep);
}

Test(dispatch, another_sessions_same_req_id_is_not_a_replay)
{
	struct dfx_cl a, b;
	struct pbuf rep;
	struct proto_loc loc;

	dfx_hello(&a, 1);
	dfx_hello(&b, 2);
	pbuf_init(&rep);
	a.next_id = 41;
	b.next_id = 41;
	cr_assert_eq(dfx_region_alloc(&a, REGION_LEN, PAGE, &loc), 0);
	cr_assert_eq(dfx_region_alloc(&b, REGION_LEN, PAGE, &loc), 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_REGIONS), 2);
	pbuf_fini(&rep);
}
