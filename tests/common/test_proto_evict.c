/*
 * test_proto_evict.c -- the limits of the full-pool bodies
 * (common/proto_reclaim.c) and of the flags eviction added to HELLO and
 * the reply header, built by hand at each bound and one past it (their
 * truncation, trailing bytes and mutation go through test_proto_msg.c's
 * table).
 */
#include "proto_fixture.h"

TestSuite(proto_evict, .init = setup);

static struct preader
reader(const struct pbuf *b)
{
	struct preader r;

	preader_init(&r, b->data, b->len);
	return r;
}

Test(proto_evict, reclaim_want_is_one_to_the_max)
{
	uint32_t wants[] = { 0, 1, PROTO_RECLAIM_MAX, PROTO_RECLAIM_MAX + 1 };
	int want_rc[] = { CXLP_E_PROTO, 0, 0, CXLP_E_PROTO };

	for (size_t i = 0; i < 4; i++) {
		struct pbuf b;
		struct preader r;
		uint64_t len, ps;
		uint32_t w, wait;

		pbuf_init(&b);
		proto_put_reclaim_req(&b, 4096, 64, wants[i], 1500 + i);
		r = reader(&b);
		cr_assert_eq(proto_get_reclaim_req(&r, &len, &ps, &w, &wait),
		    want_rc[i], "want %u", wants[i]);
		if (want_rc[i] == 0) {
			cr_assert(len == 4096 && ps == 64 && w == wants[i] &&
			    wait == 1500 + i);
		}
		pbuf_fini(&b);
	}
}

Test(proto_evict, reclaimed_pages_round_trip_and_counts_are_checked)
{
	struct proto_page pages[3] = { { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } };
	struct proto_reclaimed m = { .kind = PROTO_RECLAIM_PAGES, .n = 3,
		.pages = pages }, got;
	struct pbuf b;
	struct preader r;

	pbuf_init(&b);
	proto_put_reclaimed(&b, &m);
	r = reader(&b);
	cr_assert_eq(proto_get_reclaimed(&r, &got), 0);
	cr_assert_eq(got.n, 3);
	cr_assert_eq(memcmp(got.pages, pages, sizeof(pages)), 0);
	free(got.pages);
	/* no pages, an unknown kind, a count past the bytes: refused */
	pbuf_reset(&b);
	pbuf_put_u32(&b, PROTO_RECLAIM_PAGES);
	pbuf_put_u32(&b, 0);
	r = reader(&b);
	cr_assert_eq(proto_get_reclaimed(&r, &got), CXLP_E_PROTO);
	cr_assert_null(got.pages);
	pbuf_reset(&b);
	pbuf_put_u32(&b, 3);
	r = reader(&b);
	cr_assert_eq(proto_get_reclaimed(&r, &got), CXLP_E_PROTO);
	pbuf_reset(&b);
	pbuf_put_u32(&b, PROTO_RECLAIM_PAGES);
	pbuf_put_u32(&b, PROTO_RECLAIM_MAX);
	pbuf_put_u32(&b, 1);
	r = reader(&b);
	cr_assert_eq(proto_get_reclaimed(&r, &got), CXLP_E_PROTO);
	cr_assert_null(got.pages, "allocated from a count the bytes deny");
	pbuf_fini(&b);
}

Test(proto_evict, asks_are_at_most_the_max)
{
	struct proto_region_ref v[PROTO_ASKS_MAX + 1] = { { 0 } };
	uint32_t n;
	struct pbuf b;
	struct preader r;

	pbuf_init(&b);
	proto_put_asks(&b, PROTO_ASKS_MAX, v);
	r = reader(&b);
	cr_assert_eq(proto_get_asks(&r, v, &n), 0);
	cr_assert_eq(n, PROTO_ASKS_MAX);
	pbuf_reset(&b);
	proto_put_asks(&b, PROTO_ASKS_MAX + 1, v);
	r = reader(&b);
	cr_assert_eq(proto_get_asks(&r, v, &n), CXLP_E_PROTO);
	cr_assert_eq(n, 0);
	pbuf_fini(&b);
}

Test(proto_evict, the_ask_flag_rides_only_on_success)
{
	struct proto_rep_hdr h = { .version = PROTO_VERSION,
		.op = PROTO_OP_STATS, .req_id = 9, .ask = true }, got;
	struct preader body;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_rep_hdr(&b, &h);
	cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &got, &body), 0);
	cr_assert(got.ask);
	/* an error reply never carries it; one that says so is refused */
	b.data[20] = PROTO_REP_F_ASK;
	b.data[16] = 0xfc; /* status -4 */
	b.data[17] = b.data[18] = b.data[19] = 0xff;
	cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &got, &body),
	    CXLP_E_PROTO);
	pbuf_fini(&b);
}

Test(proto_evict, a_hello_lease_is_not_zero)
{
	struct proto_hello m = { .pid = 1, .flags = PROTO_HELLO_LEASE,
		.host = "h", .host_len = 1, .lease_ms = 5000 }, got;
	struct pbuf b;
	struct preader r;

	pbuf_init(&b);
	proto_put_hello(&b, &m);
	r = reader(&b);
	cr_assert_eq(proto_get_hello(&r, &got), 0);
	cr_assert_eq(got.lease_ms, 5000);
	pbuf_reset(&b);
	m.lease_ms = 0;
	proto_put_hello(&b, &m);
	r = reader(&b);
	cr_assert_eq(proto_get_hello(&r, &got), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "lease_ms") != NULL, "%s",
	    cxlp_errormsg());
	pbuf_fini(&b);
}
