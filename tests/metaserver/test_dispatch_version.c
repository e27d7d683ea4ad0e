/*
 * test_dispatch_version.c -- sessions of both protocol versions at one
 * server, through ms_dispatch (common/proto.h, "Negotiation";
 * metaserver/dispatch.c): a version-2 HELLO is served at 2 with replies
 * a version-2 server would send byte for byte (no term, no record sizes),
 * a version-3 one at 3 with the term, and a frame of another version
 * than its session's is refused naming both. The same through sockets,
 * and the handler's side: tests/integration/test_protover.c.
 */
#include "dispatch_fixture.h"

TestSuite(dispatch_version, .init = dfx_setup, .fini = dfx_teardown);

/* The reply of c's op with body (may be NULL) in *rep, its header in *h,
 * its body in *r. */
static int
send_op(struct dfx_cl *c, uint16_t op, const struct pbuf *body,
    struct pbuf *rep, struct proto_rep_hdr *h, struct preader *r)
{
	struct pbuf f;
	int st;

	pbuf_init(&f);
	dfx_put_req(&f, c, op, ++c->next_id);
	if (body != NULL) {
		pbuf_put_bytes(&f, body->data, body->len);
	}
	pbuf_reset(rep);
	st = dfx_send_raw(c->pipe, &f, rep, h, r);
	pbuf_fini(&f);
	return st;
}

/* the u16 version and, in version 3, the u64 term of a reply frame, as
 * bytes on the wire */
static uint16_t
wire_version(const struct pbuf *rep)
{
	return (uint16_t)(rep->data[4] | rep->data[5] << 8);
}

Test(dispatch_version, a_v2_hello_is_served_at_v2_as_a_v2_server_would)
{
	struct dfx_cl a;
	struct proto_rep_hdr h;
	struct proto_result res[1];
	struct preader r;
	struct pbuf rep;
	uint32_t n;

	dfx_ms.term = 42; /* an elected server: version 2 never sees it */
	dfx_hello_v(&a, 1, 2);
	pbuf_init(&rep);
	cr_assert_eq(send_op(&a, PROTO_OP_HEARTBEAT, NULL, &rep, &h, &r), 0);
	cr_assert_eq(wire_version(&rep), 2);
	cr_assert_eq(rep.len, PROTO_REP_HDR_LEN, "a version-2 header, no "
	    "term");
	cr_assert_eq(h.term, 0);
	cr_assert_eq(dfx_region_alloc(&a, REGION_LEN, PAGE, &a.region), 0);
	cr_assert_eq(dfx_reg_page(&a, 0, "k2", 0, res), 0);
	pbuf_reset(&rep);
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_LOOKUP, ++a.next_id, NULL,
	    &rep, NULL, NULL), CXLP_E_PROTO, "an empty LOOKUP body");
	{
		struct pbuf body;

		pbuf_init(&body);
		dfx_put_keys(&body, 0, 1, (const char *[]){ "k2" });
		cr_assert_eq(send_op(&a, PROTO_OP_LOOKUP, &body, &rep, &h, &r),
		    0);
		pbuf_fini(&body);
	}
	cr_assert_eq(rep.len, PROTO_REP_HDR_LEN + 4 + PROTO_RESULT_LEN,
	    "a version-2 result list: no record size");
	cr_assert_eq(proto_get_results(&r, res, 1, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(res[0].status, 0);
	pbuf_fini(&rep);
}

Test(dispatch_version, a_v3_hello_gets_v3_and_every_reply_the_term)
{
	struct dfx_cl a;
	struct proto_rep_hdr h;
	struct preader r;
	struct pbuf rep;

	dfx_ms.term = 42;
	dfx_hello_v(&a, 1, 3);
	pbuf_init(&rep);
	cr_assert_eq(send_op(&a, PROTO_OP_HEARTBEAT, NULL, &rep, &h, &r), 0);
	cr_assert_eq(wire_version(&rep), 3);
	cr_assert_eq(rep.len, PROTO_REP_HDR_LEN_V3);
	cr_assert_eq(h.term, 42);
	cr_assert_eq(send_op(&a, PROTO_OP_DELETE, NULL, &rep, &h, &r),
	    CXLP_E_PROTO);
	cr_assert_eq(h.term, 42, "error replies carry it too");
	pbuf_fini(&rep);
}

Test(dispatch_version, a_frame_of_another_version_than_its_session_is_refused)
{
	struct dfx_cl a, b;
	struct proto_rep_hdr h;
	struct preader r;
	struct pbuf rep;

	dfx_hello_v(&a, 1, 3);
	dfx_hello_v(&b, 2, 2);
	pbuf_init(&rep);
	a.version = 2;
	cr_assert_eq(send_op(&a, PROTO_OP_HEARTBEAT, NULL, &rep, &h, &r),
	    CXLP_E_VERSION);
	cr_assert_eq(wire_version(&rep), 2, "answered at the frame's");
	cr_assert(strstr(cxlp_errormsg(), "request.version: 2, but session") &&
	    strstr(cxlp_errormsg(), "speaks protocol version 3"), "%s",
	    cxlp_errormsg());
	b.version = 3;
	cr_assert_eq(send_op(&b, PROTO_OP_HEARTBEAT, NULL, &rep, &h, &r),
	    CXLP_E_VERSION);
	a.version = 3; /* and each goes on at its own */
	b.version = 2;
	cr_assert_eq(send_op(&a, PROTO_OP_HEARTBEAT, NULL, &rep, &h, &r), 0);
	cr_assert_eq(send_op(&b, PROTO_OP_HEARTBEAT, NULL, &rep, &h, &r), 0);
	/* a reattach at another version moves the session there */
	cr_assert_eq(dfx_hello_flags(&b, 2, PROTO_HELLO_REATTACH,
	    (uint32_t)getpid(), 0), 0, "%s", cxlp_errormsg());
	cr_assert_eq(send_op(&b, PROTO_OP_HEARTBEAT, NULL, &rep, &h, &r), 0);
	b.version = 3;
	cr_assert_eq(dfx_hello_flags(&b, 2, PROTO_HELLO_REATTACH,
	    (uint32_t)getpid(), 0), 0, "%s", cxlp_errormsg());
	cr_assert_eq(send_op(&b, PROTO_OP_HEARTBEAT, NULL, &rep, &h, &r), 0);
	b.version = 2;
	cr_assert_eq(send_op(&b, PROTO_OP_HEARTBEAT, NULL, &rep, &h, &r),
	    CXLP_E_VERSION);
	pbuf_fini(&rep);
}

/* Versions the server does not speak: refused at the header, answered
 * at the nearest version it speaks, the message naming both. */
Test(dispatch_version, a_peer_outside_the_range_is_refused_at_the_nearest)
{
	static const uint16_t vs[] = { 1, 4, 0x7fff };
	struct dfx_cl a = { 0 };
	struct proto_rep_hdr h;
	struct preader r;
	struct pbuf rep;

	pbuf_init(&rep);
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		a.version = vs[i];
		cr_assert_eq(send_op(&a, PROTO_OP_HELLO, NULL, &rep, &h, &r),
		    CXLP_E_VERSION);
		cr_assert_eq(wire_version(&rep), vs[i] < 2 ? 2 : 3);
		cr_assert(strstr(cxlp_errormsg(), "this side speaks 2..3"),
		    "%s", cxlp_errormsg());
	}
	pbuf_fini(&rep);
}
