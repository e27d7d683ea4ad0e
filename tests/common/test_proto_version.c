/*
 * test_proto_version.c -- the codec's two versions (common/proto.h,
 * "Versions"), for every message type of the fixture (proto_fixture.h):
 * a version-2 frame reads the same at version 3 and back, byte for byte,
 * with the fields version 3 added at their defaults; a version-3 frame
 * with what a newer minor would append (a header field, body bytes,
 * longer records) reads as the frame without them; version 2 keeps
 * refusing trailing bytes (test_proto_msg.c, every_message_with_a_
 * trailing_byte_is_rejected). Apart from test_proto.c for its size: the
 * headers' own version rules (hdr_len, term, the range) are there.
 */
#include "proto_check.h"
#include "proto_fixture.h"

TestSuite(proto_version, .init = setup);

/* a frame of type t at version v (the builders' random stream) */
static void
build_at(const struct msg_type *t, uint16_t v, struct pbuf *b)
{
	fx_version = v;
	pbuf_init(b);
	t->build(b);
	cr_assert_eq(b->err, 0);
	fx_version = PROTO_VERSION;
}

Test(proto_version, every_v2_message_reads_the_same_at_v3_and_back)
{
	for (int rep = 0; rep < 20; rep++) {
		for (size_t i = 0; i < MSG_NTYPES; i++) {
			const struct msg_type *t = &msg_types[i];
			struct pbuf f2, f3, back;

			build_at(t, 2, &f2);
			pbuf_init(&f3);
			pbuf_init(&back);
			cr_assert_eq(decode_exact(t, f2.data, f2.len), 0, "%s",
			    t->name);
			cr_assert(proto_reencode(f2.data, f2.len, t->request, 3,
			    &f3), "%s", t->name);
			cr_assert_eq(f3.data[4], 3);
			cr_assert_eq(decode_exact(t, f3.data, f3.len), 0,
			    "%s at 3: %s", t->name, cxlp_errormsg());
			cr_assert(proto_reencode(f3.data, f3.len, t->request, 2,
			    &back), "%s", t->name);
			cr_assert_eq(back.len, f2.len, "%s", t->name);
			cr_assert_arr_eq(back.data, f2.data, f2.len, "%s: "
			    "v2 -> v3 -> v2 changed it", t->name);
			pbuf_fini(&back);
			pbuf_fini(&f3);
			pbuf_fini(&f2);
		}
	}
}

/* What version 3 added, read from version-2 frames: no term, minor 0, a
 * HELLO that speaks 2 only. */
Test(proto_version, v2_frames_decode_with_the_new_fields_at_their_defaults)
{
	struct proto_hello m = { .pid = 1, .host = "h", .host_len = 1 }, g;
	struct proto_rep_hdr rh = { .version = 2, .op = PROTO_OP_STATS,
		.term = 99 }, rg;
	struct proto_req_hdr qh = { .version = 2, .op = PROTO_OP_HELLO }, qg;
	struct preader body;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_rep_hdr(&b, &rh);
	cr_assert_eq(b.len, PROTO_REP_HDR_LEN, "no term on the wire");
	cr_assert_eq(proto_get_rep_hdr(b.data, b.len, &rg, &body), 0);
	cr_assert_eq(rg.term, 0);
	cr_assert_eq(rg.minor, 0);
	pbuf_reset(&b);
	proto_put_req_hdr(&b, &qh);
	proto_put_hello(&b, &m);
	cr_assert_eq(proto_get_req_hdr(b.data, b.len, &qg, &body), 0);
	cr_assert_eq(proto_get_hello(&body, &g), 0);
	cr_assert_eq(g.ver_min, 2);
	cr_assert_eq(g.ver_max, 2);
	cr_assert_eq(g.pid, 1);
	pbuf_reset(&b);
	qh.version = 3;
	proto_put_req_hdr(&b, &qh);
	proto_put_hello(&b, &m);
	cr_assert_eq(proto_get_req_hdr(b.data, b.len, &qg, &body), 0);
	cr_assert_eq(proto_get_hello(&body, &g), 0);
	cr_assert_eq(g.ver_min, PROTO_VERSION_MIN);
	cr_assert_eq(g.ver_max, PROTO_VERSION);
	pbuf_fini(&b);
}

/* A HELLO's range must hold its frame's version. */
Test(proto_version, a_hello_range_without_its_frames_version_is_refused)
{
	struct proto_hello m = { .pid = 1, .host = "h", .host_len = 1,
		.ver_min = 4, .ver_max = 5 }, g;
	struct preader r;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_hello(&b, &m);
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_hello(&r, &g), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "versions 4..5 in a frame of "
	    "version 3") != NULL, "%s", cxlp_errormsg());
	pbuf_fini(&b);
}

/* ---- what a newer minor appends ---- */

/* f with its header's hdr_len grown by 4 and 4 bytes inserted after the
 * header, and 8 bytes after the body */
static void
add_minor_fields(const struct msg_type *t, const struct pbuf *f,
    struct pbuf *out)
{
	size_t hl = t->request ? PROTO_REQ_HDR_LEN_V3 : PROTO_REP_HDR_LEN_V3;

	pbuf_init(out);
	pbuf_put_bytes(out, f->data, hl);
	out->data[hl - 4] = (uint8_t)(hl + 4); /* u16 hdr_len */
	pbuf_put_u32(out, 0xfeedbeef);
	pbuf_put_bytes(out, f->data + hl, f->len - hl);
	pbuf_put_u64(out, 0x3131313131313131ULL);
}

Test(proto_version, every_v3_message_with_a_newer_minors_fields_reads_the_same)
{
	for (int rep = 0; rep < 20; rep++) {
		for (size_t i = 0; i < MSG_NTYPES; i++) {
			const struct msg_type *t = &msg_types[i];
			struct pbuf f, longer, known;

			build_at(t, 3, &f);
			add_minor_fields(t, &f, &longer);
			pbuf_init(&known);
			cr_assert_eq(decode_exact(t, longer.data, longer.len),
			    0, "%s: %s", t->name, cxlp_errormsg());
			cr_assert(proto_reencode(longer.data, longer.len,
			    t->request, 0, &known), "%s", t->name);
			cr_assert_eq(known.len, f.len, "%s", t->name);
			cr_assert_arr_eq(known.data, f.data, f.len, "%s: read "
			    "otherwise", t->name);
			cr_assert_eq(proto_check_frame(longer.data, longer.len),
			    0, "%s", t->name);
			pbuf_fini(&known);
			pbuf_fini(&longer);
			pbuf_fini(&f);
		}
	}
}

/* Records of rec + ext bytes: n records of rec bytes at body[at..] grown
 * by ext bytes each (and the u16 record size before them rewritten). */
static void
widen(const struct pbuf *f, size_t at, uint32_t n, size_t rec, size_t ext,
    struct pbuf *out)
{
	pbuf_init(out);
	pbuf_put_bytes(out, f->data, at - 2);
	pbuf_put_u16(out, (uint16_t)(rec + ext));
	for (uint32_t i = 0; i < n; i++) {
		pbuf_put_bytes(out, f->data + at + i * rec, rec);
		pbuf_put_bytes(out, keybytes, ext);
	}
	pbuf_put_bytes(out, f->data + at + n * rec, f->len - at - n * rec);
}

Test(proto_version, longer_records_are_read_by_their_known_prefix)
{
	struct proto_result res[5], out[5];
	struct proto_region_ref asks[3] = { { 1, 2 }, { 3, 4 }, { 5, 6 } },
	    got[PROTO_ASKS_MAX];
	size_t at = PROTO_REP_HDR_LEN_V3 + 4 + 2; /* header, n, rec */
	struct proto_rep_hdr h = { .op = PROTO_OP_LOOKUP };
	struct preader r;
	struct pbuf f, w;
	uint32_t n;

	rnd_results(5, res);
	pbuf_init(&f);
	proto_put_rep_hdr(&f, &h);
	proto_put_results(&f, 5, res);
	widen(&f, at, 5, PROTO_RESULT_LEN, 16, &w);
	cr_assert_eq(proto_get_rep_hdr(w.data, w.len, &h, &r), 0);
	cr_assert_eq(proto_get_results(&r, out, 5, &n), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(n, 5);
	for (uint32_t i = 0; i < n; i++) {
		cr_assert(out[i].status == res[i].status &&
		    out[i].flags == res[i].flags &&
		    memcmp(&out[i].loc, &res[i].loc, sizeof(res[i].loc)) == 0,
		    "result %u", i);
	}
	pbuf_fini(&w);
	widen(&f, at, 5, PROTO_RESULT_LEN, 0, &w); /* 3.0's own */
	w.data[at - 2] = PROTO_RESULT_LEN - 1;    /* shorter than 3.0's */
	cr_assert_eq(proto_get_rep_hdr(w.data, w.len, &h, &r), 0);
	cr_assert_eq(proto_get_results(&r, out, 5, &n), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "results.rec") != NULL);
	pbuf_fini(&w);
	pbuf_reset(&f);
	h.op = PROTO_OP_HEARTBEAT;
	proto_put_rep_hdr(&f, &h);
	proto_put_asks(&f, 3, asks);
	widen(&f, at, 3, 8, 4, &w);
	cr_assert_eq(proto_get_rep_hdr(w.data, w.len, &h, &r), 0);
	cr_assert_eq(proto_get_asks(&r, got, &n), 0, "%s", cxlp_errormsg());
	cr_assert(n == 3 && got[2].region == 5 && got[2].gen == 6);
	pbuf_fini(&w);
	pbuf_fini(&f);
}

/* SESSIONS entries vary in size, so each carries its length: a longer
 * one is read by its known fields. */
Test(proto_version, longer_session_entries_are_read_by_their_known_fields)
{
	struct proto_session_info v[2], *got = NULL;
	struct preader r;
	struct pbuf f;
	uint32_t n;
	uint16_t len;

	rnd_sessions(2, v);
	pbuf_init(&f);
	proto_put_sessions(&f, 1, v);
	len = (uint16_t)(f.data[4] | f.data[5] << 8);
	cr_assert_eq(len, f.len - 6, "u32 n, u16 len, the entry");
	pbuf_reset(&f);
	pbuf_put_u32(&f, 2);
	for (int i = 0; i < 2; i++) {
		struct pbuf one;

		pbuf_init(&one);
		proto_put_sessions(&one, 1, &v[i]);
		pbuf_put_u16(&f, (uint16_t)(one.len - 6 + 5));
		pbuf_put_bytes(&f, one.data + 6, one.len - 6);
		pbuf_put_bytes(&f, "3.1!!", 5);
		pbuf_fini(&one);
	}
	preader_init(&r, f.data, f.len);
	cr_assert_eq(proto_get_sessions(&r, &got, &n), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(n, 2);
	for (int i = 0; i < 2; i++) {
		cr_assert(got[i].id == v[i].id && got[i].pins == v[i].pins &&
		    got[i].host_len == v[i].host_len, "entry %d", i);
	}
	free(got);
	f.data[4] = 3; /* an entry shorter than its known fields */
	f.data[5] = 0;
	preader_init(&r, f.data, f.len);
	cr_assert_eq(proto_get_sessions(&r, &got, &n), CXLP_E_PROTO);
	pbuf_fini(&f);
}
