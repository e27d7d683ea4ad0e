/*
 * test_proto.c -- tests of common/proto.c: the growable write buffer
 * (pbuf), the bounds-checked field reader (preader), the request and reply
 * headers and the op names, and the frame compatibility rules (an error
 * reply's reason, HELLO's optional keepalive). Message bodies
 * (common/proto_msg.c) are tested in test_proto_msg.c; both share
 * proto_fixture.h. The header tests build bad headers field by field
 * with pbuf primitives, since the encoders write what they are given.
 */
#include "proto_fixture.h"

TestSuite(proto, .init = setup);

/* ---- pbuf and preader ---- */

Test(proto, pbuf_writes_little_endian_whatever_the_host)
{
	static const uint8_t want[] = { 0x01, 0x02, 0x01, 0x02, 0x03, 0x04,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08 };
	struct pbuf b;

	pbuf_init(&b);
	pbuf_put_u16(&b, 0x0201);
	pbuf_put_u32(&b, 0x04030201);
	pbuf_put_u64(&b, 0x0807060504030201ULL);
	cr_assert_eq(b.err, 0);
	cr_assert_eq(b.len, sizeof(want));
	cr_assert_arr_eq(b.data, want, sizeof(want));
	pbuf_fini(&b);
}

Test(proto, pbuf_grows_and_keeps_every_byte)
{
	struct pbuf b;

	pbuf_init(&b);
	for (size_t i = 0; i < 100000; i++) {
		pbuf_put_bytes(&b, &(uint8_t){ (uint8_t)(i * 7) }, 1);
	}
	cr_assert_eq(b.err, 0);
	cr_assert_eq(b.len, 100000);
	cr_assert_geq(b.cap, b.len);
	for (size_t i = 0; i < b.len; i++) {
		cr_assert_eq(b.data[i], (uint8_t)(i * 7));
	}
	pbuf_reset(&b);
	cr_assert_eq(b.len, 0);
	cr_assert_geq(b.cap, 100000);
	pbuf_fini(&b);
	cr_assert_null(b.data);
}

Test(proto, pbuf_records_enomem_and_ignores_later_appends)
{
	struct pbuf b;

	pbuf_init(&b);
	pbuf_put_u32(&b, 1);
	pbuf_put_bytes(&b, keybytes, SIZE_MAX / 2);
	cr_assert_eq(b.err, -ENOMEM);
	pbuf_put_u64(&b, 2);
	cr_assert_eq(b.len, 4);
	pbuf_reset(&b);
	cr_assert_eq(b.err, 0);
	pbuf_put_u16(&b, 3);
	cr_assert_eq(b.len, 2);
	pbuf_fini(&b);
}

Test(proto, preader_fails_past_the_end_and_stays_failed)
{
	static const uint8_t f[] = { 1, 2, 3, 4, 5, 6 };
	struct preader r;
	uint32_t v32;
	uint16_t v16;

	preader_init(&r, f, sizeof(f));
	cr_assert(preader_u32(&r, &v32));
	cr_assert_eq(v32, 0x04030201);
	cr_assert_not(preader_u32(&r, &v32));
	cr_assert_eq(r.err, CXLP_E_PROTO);
	cr_assert_not(preader_u16(&r, &v16), "a failed reader stays failed");
	cr_assert_eq(preader_end(&r), CXLP_E_PROTO);
}

Test(proto, preader_end_rejects_trailing_bytes)
{
	static const uint8_t f[] = { 1, 2, 3 };
	struct preader r;
	const uint8_t *p;
	uint16_t v;

	preader_init(&r, f, sizeof(f));
	r.version = 2; /* version 2 is strict */
	cr_assert(preader_u16(&r, &v));
	cr_assert_eq(preader_end(&r), CXLP_E_PROTO);
	preader_init(&r, f, sizeof(f)); /* version 3 skips a newer minor's */
	cr_assert(preader_u16(&r, &v));
	cr_assert_eq(preader_end(&r), 0);
	cr_assert_eq(r.left, 0);
	preader_init(&r, f, sizeof(f));
	cr_assert(preader_bytes(&r, 3, &p));
	cr_assert_eq(p, f);
	cr_assert_eq(preader_end(&r), 0);
	preader_init(&r, NULL, 0);
	cr_assert_eq(preader_end(&r), 0);
}

/* ---- header round trips ---- */

Test(proto, request_header_round_trips)
{
	for (int i = 0; i < 100; i++) {
		uint16_t v = PROTO_VERSION_MIN + (uint16_t)(i % 2);
		struct proto_req_hdr h = { v,
			(uint16_t)(1 + rnd_below(PROTO_OP_MAX)), rnd(), rnd(),
			rnd(), 0 }, g;
		struct preader body;
		struct pbuf b;

		pbuf_init(&b);
		proto_put_req_hdr(&b, &h);
		cr_assert_eq(b.len, proto_req_hdr_len(v));
		cr_assert_eq(b.version, v, "the body follows the header");
		cr_assert_eq(proto_get_req_hdr(b.data, b.len, &g, &body), 0);
		cr_assert_eq(g.version, h.version);
		cr_assert_eq(body.version, v);
		cr_assert_eq(g.minor, v >= 3 ? PROTO_MINOR : 0);
		cr_assert_eq(g.op, h.op);
		cr_assert_eq(g.req_id, h.req_id);
		cr_assert_eq(g.session, h.session);
		cr_assert_eq(g.token, h.token);
		cr_assert_eq(preader_end(&body), 0);
		pbuf_fini(&b);
	}
}

Test(proto, reply_header_round_trips_with_the_reply_bit)
{
	for (int i = 0; i < 100; i++) {
		uint16_t v = PROTO_VERSION_MIN + (uint16_t)(i % 2);
		struct proto_rep_hdr h = { v,
			(uint16_t)(1 + rnd_below(PROTO_OP_MAX)), rnd(),
			-(int32_t)rnd_below(2000), NULL, 0, false, rnd(), 0 },
		    g;
		struct preader body;
		struct pbuf b;

		pbuf_init(&b);
		proto_put_rep_hdr(&b, &h);
		cr_assert_eq(b.len, proto_rep_hdr_len(v));
		cr_assert_eq(b.data[7] & 0x80, 0x80, "op carries PROTO_REPLY");
		cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &g, &body), 0);
		cr_assert_eq(g.op, h.op);
		cr_assert_eq(g.req_id, h.req_id);
		cr_assert_eq(g.status, h.status);
		cr_assert_eq(g.term, v >= 3 ? h.term : 0, "the term: 3 only");
		pbuf_fini(&b);
	}
}

Test(proto, zero_version_in_a_header_struct_encodes_the_current_one)
{
	struct proto_req_hdr h = { .op = PROTO_OP_BYE }, g;
	struct preader body;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_req_hdr(&b, &h);
	cr_assert_eq(proto_get_req_hdr(b.data, b.len, &g, &body), 0);
	cr_assert_eq(g.version, PROTO_VERSION);
	pbuf_fini(&b);
}

Test(proto, every_op_has_a_distinct_name)
{
	for (unsigned a = 1; a <= PROTO_OP_MAX; a++) {
		cr_assert_str_neq(proto_op_name(a), "UNKNOWN");
		for (unsigned b = a + 1; b <= PROTO_OP_MAX; b++) {
			cr_assert_str_neq(proto_op_name(a), proto_op_name(b));
		}
	}
	cr_assert_str_eq(proto_op_name(0), "UNKNOWN");
	cr_assert_str_eq(proto_op_name(PROTO_OP_MAX + 1), "UNKNOWN");
	cr_assert_str_eq(proto_op_name(PROTO_OP_REGISTER), "REGISTER");
	cr_assert_str_eq(proto_op_name(PROTO_OP_SESSIONS), "SESSIONS");
}

/* ---- headers: magic, version, op, reply bit, reserved ---- */

static int
req_hdr_rc(uint32_t magic, uint16_t version, uint16_t op)
{
	struct proto_req_hdr h;
	struct preader body;
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	pbuf_put_u32(&b, magic);
	pbuf_put_u16(&b, version);
	pbuf_put_u16(&b, op);
	pbuf_put_bytes(&b, keybytes, 24);
	if (version >= 3) {
		pbuf_put_u16(&b, PROTO_REQ_HDR_LEN_V3);
		pbuf_put_u16(&b, 0);
	}
	rc = proto_get_req_hdr(b.data, b.len, &h, &body);
	if (rc != 0) {
		cr_assert_eq(preader_end(&body), CXLP_E_PROTO,
		    "a failed header leaves a failed body reader");
	}
	pbuf_fini(&b);
	return rc;
}

Test(proto, request_header_rejects_bad_magic_version_and_op)
{
	cr_assert_eq(req_hdr_rc(PROTO_MAGIC, PROTO_VERSION, 1), 0);
	cr_assert_eq(req_hdr_rc(PROTO_MAGIC ^ 1, PROTO_VERSION, 1),
	    CXLP_E_PROTO);
	cr_assert_eq(req_hdr_rc(PROTO_MAGIC, PROTO_VERSION_MIN, 1), 0);
	cr_assert_eq(req_hdr_rc(PROTO_MAGIC, PROTO_VERSION + 1, 1),
	    CXLP_E_VERSION);
	cr_assert(strstr(cxlp_errormsg(), "version: 4, this side speaks "
	    "2..3") != NULL, "%s", cxlp_errormsg());
	cr_assert_eq(req_hdr_rc(PROTO_MAGIC, PROTO_VERSION_MIN - 1, 1),
	    CXLP_E_VERSION);
	cr_assert_eq(req_hdr_rc(PROTO_MAGIC, 0, 1), CXLP_E_VERSION);
	cr_assert_eq(req_hdr_rc(PROTO_MAGIC, PROTO_VERSION, 0), CXLP_E_BADOP);
	cr_assert_eq(req_hdr_rc(PROTO_MAGIC, PROTO_VERSION, PROTO_OP_MAX + 1),
	    CXLP_E_BADOP);
	cr_assert(strstr(cxlp_errormsg(), "op") != NULL);
	cr_assert_eq(req_hdr_rc(PROTO_MAGIC, PROTO_VERSION,
	    PROTO_OP_HELLO | PROTO_REPLY), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "reply bit") != NULL);
}

Test(proto, request_header_fills_req_id_even_when_rejected)
{
	struct proto_req_hdr h = { 7, PROTO_OP_LOOKUP, 0xabcdef, 1, 2, 0 }, g;
	struct preader body;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_req_hdr(&b, &h);
	cr_assert_eq(proto_get_req_hdr(b.data, b.len, &g, &body),
	    CXLP_E_VERSION);
	cr_assert_eq(g.req_id, 0xabcdef);
	pbuf_fini(&b);
}

/* A version-2 reply header written by hand, then body bytes. */
static int
rep_hdr_rc(uint16_t op, uint32_t status, uint32_t reserved, size_t body)
{
	struct proto_rep_hdr h;
	struct preader r;
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	pbuf_put_u32(&b, PROTO_MAGIC);
	pbuf_put_u16(&b, 2);
	pbuf_put_u16(&b, op);
	pbuf_put_u64(&b, 1);
	pbuf_put_u32(&b, status);
	pbuf_put_u32(&b, reserved);
	pbuf_put_bytes(&b, keybytes, body);
	rc = proto_get_rep_hdr(b.data, b.len, &h, &r);
	pbuf_fini(&b);
	return rc;
}

Test(proto, reply_header_rejects_bad_op_reserved_and_status)
{
	uint16_t ok = PROTO_OP_STATS | PROTO_REPLY;

	cr_assert_eq(rep_hdr_rc(ok, 0, 0, 8), 0);
	cr_assert_eq(rep_hdr_rc(ok, (uint32_t)CXLP_E_NOTFOUND, 0, 0), 0);
	cr_assert_eq(rep_hdr_rc(PROTO_OP_STATS, 0, 0, 0), CXLP_E_PROTO);
	cr_assert_eq(rep_hdr_rc(PROTO_REPLY, 0, 0, 0), CXLP_E_BADOP);
	cr_assert_eq(rep_hdr_rc((PROTO_OP_MAX + 1) | PROTO_REPLY, 0, 0, 0),
	    CXLP_E_BADOP);
	cr_assert_eq(rep_hdr_rc(ok, 0, 1, 0), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "reply.flags") != NULL);
	cr_assert_eq(rep_hdr_rc(ok, (uint32_t)CXLP_E_NOTFOUND, 2, 0),
	    CXLP_E_PROTO);
	cr_assert_eq(rep_hdr_rc(ok, 5, 0, 0), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "status") != NULL);
	cr_assert_eq(rep_hdr_rc(ok, (uint32_t)CXLP_E_NOTFOUND, 0, 4),
	    CXLP_E_PROTO, "an error reply carries no body");
}

/* Version 3: a header longer than 3.0's (a newer minor's fields) is
 * skipped to its hdr_len; a shorter one, or one past the frame, refused;
 * an error reply's unknown body is skipped. */
Test(proto, a_v3_header_is_read_by_its_known_prefix)
{
	struct proto_rep_hdr h = { .op = PROTO_OP_STATS, .req_id = 5,
		.status = CXLP_E_NOTFOUND, .term = 77 }, g;
	struct preader body;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_rep_hdr(&b, &h);
	b.data[32] = PROTO_REP_HDR_LEN_V3 + 4; /* u16 hdr_len */
	pbuf_put_u32(&b, 0xfeedbeef);          /* a 3.1 header field */
	pbuf_put_u32(&b, 0xfeedbeef);          /* a 3.1 body of an error */
	cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &g, &body), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(g.term, 77);
	cr_assert_eq(g.status, CXLP_E_NOTFOUND);
	cr_assert_eq(body.left, 0);
	b.data[32] = PROTO_REP_HDR_LEN_V3 - 1;
	cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &g, &body),
	    CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "hdr_len") != NULL);
	b.data[32] = 200;
	cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &g, &body),
	    CXLP_E_PROTO);
	pbuf_fini(&b);
}

/* Negotiation's rules, and the sender's check of an op against the
 * session's version. */
Test(proto, versions_speak_their_range_and_ops_name_theirs)
{
	cr_assert(proto_version_ok(2) && proto_version_ok(3));
	cr_assert(!proto_version_ok(1) && !proto_version_ok(4));
	cr_assert_eq(proto_op_version(PROTO_OP_HELLO), 1);
	cr_assert_eq(proto_op_version(PROTO_OP_RECLAIM), 2);
	cr_assert_eq(proto_op_version(PROTO_OP_GROUP_LOOKUP), 2);
	cr_assert_eq(proto_op_version(PROTO_OP_MAX + 1), 0);
	cr_assert_eq(proto_op_check(PROTO_OP_LEASE, 2), 0);
	cr_assert_eq(proto_op_check(PROTO_OP_LEASE, 1), CXLP_E_VERSION);
	cr_assert(strstr(cxlp_errormsg(), "LEASE needs protocol version 2; "
	    "the session speaks 1") != NULL, "%s", cxlp_errormsg());
	cr_assert_eq(proto_op_check(0, 3), CXLP_E_BADOP);
}

Test(proto, frames_up_to_the_frame_max_are_accepted)
{
	size_t len = PROTO_FRAME_MAX + 1;
	uint8_t *f = calloc(1, len);
	struct proto_req_hdr h = { PROTO_VERSION, PROTO_OP_LOOKUP, 1, 0, 0,
		0 }, g;
	struct preader body;
	struct pbuf b;

	cr_assert_not_null(f);
	pbuf_init(&b);
	proto_put_req_hdr(&b, &h);
	memcpy(f, b.data, b.len);
	cr_assert_eq(proto_get_req_hdr(f, len - 1, &g, &body), 0);
	cr_assert_eq(proto_get_req_hdr(f, len, &g, &body), CXLP_E_PROTO);
	free(f);
	pbuf_fini(&b);
}

/* ---- frame compatibility: what old and new peers send each other ---- */

Test(proto, an_error_reply_carries_its_reason_only_when_flagged)
{
	struct proto_rep_hdr h = { .version = PROTO_VERSION,
		.op = PROTO_OP_HELLO, .req_id = 9, .status = CXLP_E_NOSPACE,
		.msg = "session table full", .msg_len = 18 }, g;
	struct preader body;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_rep_hdr(&b, &h);
	cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &g, &body), 0);
	cr_assert_eq(g.status, CXLP_E_NOSPACE);
	cr_assert_eq(g.msg_len, 18);
	cr_assert_eq(memcmp(g.msg, "session table full", 18), 0);
	cr_assert_eq(body.left, 0, "the reason is the whole body");
	/* an ok reply never carries one: the encoder drops it */
	pbuf_reset(&b);
	h.status = 0;
	proto_put_rep_hdr(&b, &h);
	cr_assert_eq(b.len, PROTO_REP_HDR_LEN_V3);
	cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &g, &body), 0);
	cr_assert_eq(g.msg_len, 0);
	pbuf_fini(&b);
	/* flagged, but empty, or followed by more bytes */
	cr_assert_eq(rep_hdr_rc(PROTO_OP_HELLO | PROTO_REPLY,
	    (uint32_t)CXLP_E_NOSPACE, PROTO_REP_F_MSG, 2), CXLP_E_PROTO);
}

Test(proto, a_reason_longer_than_the_bound_is_cut_and_a_forged_one_refused)
{
	char text[PROTO_ERRMSG_MAX + 50];
	struct proto_rep_hdr h = { .version = PROTO_VERSION,
		.op = PROTO_OP_HELLO, .req_id = 9, .status = CXLP_E_NOSPACE,
		.msg = text, .msg_len = sizeof(text) }, g;
	struct preader body;
	struct pbuf b;

	memset(text, 'x', sizeof(text));
	pbuf_init(&b);
	proto_put_rep_hdr(&b, &h);
	cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &g, &body), 0);
	cr_assert_eq(g.msg_len, PROTO_ERRMSG_MAX);
	/* a length above the bound, written by hand */
	b.data[PROTO_REP_HDR_LEN_V3 + 1] = 1; /* u16 len 511 */
	cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &g, &body),
	    CXLP_E_PROTO);
	pbuf_fini(&b);
}

/* An old handler's HELLO (no keepalive) still decodes; a new one carries
 * its period only behind PROTO_HELLO_KEEPALIVE, and a zero period there
 * is refused. */
Test(proto, hello_carries_keepalive_only_behind_its_flag)
{
	struct proto_hello m = { .pid = 7, .host = "h", .host_len = 1,
		.keepalive_ms = 1000 }, g;
	struct preader r;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_hello(&b, &m);
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_hello(&r, &g), 0);
	cr_assert_eq(g.keepalive_ms, 0, "no flag: the old layout");
	pbuf_reset(&b);
	m.flags = PROTO_HELLO_KEEPALIVE | PROTO_HELLO_ERRMSG;
	proto_put_hello(&b, &m);
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_hello(&r, &g), 0);
	cr_assert_eq(g.keepalive_ms, 1000);
	cr_assert_eq(g.flags, m.flags);
	preader_init(&r, b.data, b.len - 1);
	cr_assert_eq(proto_get_hello(&r, &g), CXLP_E_PROTO);
	pbuf_reset(&b);
	m.keepalive_ms = 0;
	proto_put_hello(&b, &m);
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_hello(&r, &g), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "keepalive_ms") != NULL);
	pbuf_fini(&b);
}
