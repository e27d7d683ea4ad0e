/*
 * test_frames.c -- metaserver/dispatch.c against malformed and hostile
 * frames (contract 7): each gets an error reply with the exact code, the
 * request's op and id where they can be read, and the server goes on.
 * Driven as test_dispatch.c is, with no sockets (dispatch_fixture.h).
 */
#include "dispatch_fixture.h"

TestSuite(frames, .init = dfx_setup, .fini = dfx_teardown);

/* Read a reply header without the codec's checks (the codec refuses op 0,
 * which the server uses when it cannot read the request's op). */
static void
raw_rep_hdr(const struct pbuf *rep, struct proto_rep_hdr *h)
{
	struct preader r;
	uint32_t magic = 0, status = 0, reserved = 1;

	preader_init(&r, rep->data, rep->len);
	cr_assert(preader_u32(&r, &magic) && preader_u16(&r, &h->version) &&
	    preader_u16(&r, &h->op) && preader_u64(&r, &h->req_id) &&
	    preader_u32(&r, &status) && preader_u32(&r, &reserved));
	cr_assert_eq(magic, PROTO_MAGIC);
	cr_assert(proto_version_ok(h->version));
	cr_assert(reserved == 0 || (reserved == PROTO_REP_F_MSG &&
	    status != 0), "reply flags 0x%x, status %d", reserved,
	    (int)status); /* a reason only on an error to a HELLO asking */
	cr_assert(h->op & PROTO_REPLY);
	h->op &= (uint16_t)~PROTO_REPLY;
	h->status = (int32_t)status;
	cr_assert(h->status != 0 || h->op != 0);
}

/* Dispatch bytes; check the error reply's status, op and req_id; then
 * check that a good request still works. */
static void
expect_error(struct dfx_cl *c, const void *frame, size_t len, int status,
    uint16_t op, uint64_t req_id)
{
	struct proto_rep_hdr h;
	struct pbuf rep;

	pbuf_init(&rep);
	cr_assert_eq(ms_dispatch(&dfx_ms, c->pipe, frame, len, &rep), 0);
	raw_rep_hdr(&rep, &h);
	cr_assert_eq(h.status, status, "status %d, expected %d", h.status,
	    status);
	cr_assert_eq(h.op, op);
	cr_assert_eq(h.req_id, req_id);
	cr_assert_eq(rep.len, proto_rep_hdr_len(h.version));
	pbuf_fini(&rep);
	cr_assert_eq(dfx_call(c, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
}

static void
frame_keys(struct pbuf *f, const struct dfx_cl *c, uint16_t op, uint64_t id,
    uint32_t n, size_t klen)
{
	static char key[CXLP_KEY_MAX + 2];

	memset(key, 'x', sizeof(key));
	dfx_put_req(f, c, op, id);
	pbuf_put_u32(f, 0);
	pbuf_put_u32(f, n);
	for (uint32_t i = 0; i < n; i++) {
		pbuf_put_u16(f, (uint16_t)klen);
		pbuf_put_bytes(f, key, klen);
	}
}

Test(frames, malformed_headers_get_error_replies_and_the_server_goes_on)
{
	struct dfx_cl a, old;
	struct pbuf f;
	uint8_t junk[8] = { 1, 2, 3 };

	dfx_hello(&a, 1);
	pbuf_init(&f);
	expect_error(&a, junk, 0, CXLP_E_PROTO, 0, 0);
	expect_error(&a, junk, sizeof(junk), CXLP_E_PROTO, 0, 0);
	dfx_put_req(&f, &a, PROTO_OP_HEARTBEAT, 33);
	expect_error(&a, f.data, f.len - 1, CXLP_E_PROTO, PROTO_OP_HEARTBEAT,
	    33); /* truncated */
	f.data[0] ^= 0xff;
	expect_error(&a, f.data, f.len, CXLP_E_PROTO, 0, 0); /* bad magic */
	pbuf_reset(&f);
	dfx_put_req(&f, &a, PROTO_OP_HEARTBEAT, 34);
	f.data[4] = 99; /* version */
	expect_error(&a, f.data, f.len, CXLP_E_VERSION, PROTO_OP_HEARTBEAT,
	    34);
	pbuf_reset(&f);
	dfx_put_req(&f, &a, 77, 35);
	expect_error(&a, f.data, f.len, CXLP_E_BADOP, 0, 35);
	pbuf_reset(&f);
	dfx_put_req(&f, &a, PROTO_OP_HEARTBEAT | PROTO_REPLY, 36);
	expect_error(&a, f.data, f.len, CXLP_E_PROTO, PROTO_OP_HEARTBEAT, 36);
	pbuf_reset(&f);
	dfx_hello_v(&old, 2, 2); /* version 2 refuses trailing bytes */
	dfx_put_req(&f, &old, PROTO_OP_HEARTBEAT, 37);
	pbuf_put_u32(&f, 0);
	expect_error(&old, f.data, f.len, CXLP_E_PROTO, PROTO_OP_HEARTBEAT,
	    37);
	pbuf_fini(&f);
}

Test(frames, malformed_bodies_get_the_exact_error_code)
{
	struct dfx_cl a;
	struct pbuf f;

	dfx_client(&a, 1);
	pbuf_init(&f);
	frame_keys(&f, &a, PROTO_OP_LOOKUP, 50, 1, CXLP_KEY_MAX + 1);
	expect_error(&a, f.data, f.len, CXLP_E_KEYLEN, PROTO_OP_LOOKUP, 50);
	pbuf_reset(&f);
	frame_keys(&f, &a, PROTO_OP_LOOKUP, 51, 1, 0);
	expect_error(&a, f.data, f.len, CXLP_E_KEYLEN, PROTO_OP_LOOKUP, 51);
	pbuf_reset(&f);
	frame_keys(&f, &a, PROTO_OP_EXISTS, 52, CXLP_BATCH_MAX + 1, 1);
	expect_error(&a, f.data, f.len, CXLP_E_BATCH, PROTO_OP_EXISTS, 52);
	pbuf_reset(&f);
	frame_keys(&f, &a, PROTO_OP_DELETE, 53, 0, 1);
	expect_error(&a, f.data, f.len, CXLP_E_BATCH, PROTO_OP_DELETE, 53);
	pbuf_reset(&f);
	frame_keys(&f, &a, PROTO_OP_PIN, 54, 3, 4);
	expect_error(&a, f.data, f.len - 1, CXLP_E_PROTO, PROTO_OP_PIN, 54);
	pbuf_reset(&f);
	dfx_put_req(&f, &a, PROTO_OP_DELETE, 55); /* PIN flag on delete */
	pbuf_put_u32(&f, PROTO_F_PIN);
	pbuf_put_u32(&f, 1);
	pbuf_put_u16(&f, 1);
	pbuf_put_bytes(&f, "k", 1);
	expect_error(&a, f.data, f.len, CXLP_E_PROTO, PROTO_OP_DELETE, 55);
	pbuf_reset(&f);
	dfx_put_req(&f, &a, PROTO_OP_REGION_ALLOC, 56);
	pbuf_put_u64(&f, REGION_LEN);
	expect_error(&a, f.data, f.len, CXLP_E_PROTO, PROTO_OP_REGION_ALLOC,
	    56);
	pbuf_fini(&f);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_REGIONS), 1);
}

Test(frames, a_frame_larger_than_the_maximum_is_refused)
{
	struct dfx_cl a;
	struct pbuf f;

	dfx_hello(&a, 1);
	pbuf_init(&f);
	dfx_put_req(&f, &a, PROTO_OP_HEARTBEAT, 60);
	while (f.len <= PROTO_FRAME_MAX) {
		pbuf_put_u64(&f, 0);
	}
	expect_error(&a, f.data, f.len, CXLP_E_PROTO, PROTO_OP_HEARTBEAT, 60);
	pbuf_fini(&f);
}

Test(frames, hello_with_a_malformed_body_is_refused)
{
	struct dfx_cl a;
	struct pbuf f;

	dfx_hello(&a, 1);
	pbuf_init(&f);
	dfx_put_req(&f, NULL, PROTO_OP_HELLO, 3);
	pbuf_put_u32(&f, 1);
	expect_error(&a, f.data, f.len, CXLP_E_PROTO, PROTO_OP_HELLO, 3);
	pbuf_fini(&f);
}

Test(frames, random_frames_always_get_a_decodable_reply)
{
	struct dfx_cl a;
	struct pbuf f, rep;
	struct proto_rep_hdr h;
	struct preader r;
	unsigned seed = 12345;

	dfx_client(&a, 1);
	pbuf_init(&f);
	pbuf_init(&rep);
	for (int i = 0; i < 3000; i++) {
		uint16_t op = (uint16_t)(1 + rand_r(&seed) %
		    (PROTO_OP_MAX + 1)); /* one unknown op too */

		pbuf_reset(&f);
		dfx_put_req(&f, &a, op == PROTO_OP_BYE ? PROTO_OP_HELLO : op,
		    (uint64_t)i + 1000);
		for (int j = rand_r(&seed) % 80; j > 0; j--) {
			uint8_t byte = (uint8_t)(rand_r(&seed) % 4 == 0 ?
			    rand_r(&seed) : rand_r(&seed) % 3);

			pbuf_put_bytes(&f, &byte, 1);
		}
		if (rand_r(&seed) % 8 == 0) {
			f.data[rand_r(&seed) % f.len] ^= 0x5a;
		}
		cr_assert_eq(ms_dispatch(&dfx_ms, 1, f.data, f.len, &rep), 0);
		raw_rep_hdr(&rep, &h);
		if (h.op != 0) {
			cr_assert_eq(proto_get_rep_hdr(rep.data, rep.len, &h,
			    &r), 0);
		}
	}
	pbuf_fini(&f);
	pbuf_fini(&rep);
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
	cr_assert_eq(pool_check(dfx_ms.pool, NULL, NULL), 0);
}
