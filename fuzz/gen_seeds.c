/*
 * gen_seeds.c -- write the seed corpus of fuzz_proto: a few valid frames
 * of every request and reply type, built with the codec's own encoders.
 *
 * Usage: gen_seeds DIR [DISPATCH_DIR]. Each frame goes to DIR/<name>.bin,
 * once at PROTO_VERSION and once at version 2 (DIR/v2_<name>.bin: what
 * an old peer sends), with a few version-3 frames a newer minor could
 * send (unknown header, body and record ends: v3x_*); with DISPATCH_DIR,
 * the scripts of fuzz_dispatch (see fuzz_dispatch.c for their format) go
 * there too, one of them a version-2 session's. The output is
 * deterministic, so regenerating the committed corpus changes nothing
 * unless the protocol changed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"

static const char *dir;
static int failures;
static uint16_t version = PROTO_VERSION; /* of the frames written */

static void
save(const char *name, struct pbuf *b)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s%s.bin", dir,
	    version == PROTO_VERSION ? "" : "v2_", name);
	f = fopen(path, "wb");
	if (b->err != 0 || f == NULL ||
	    fwrite(b->data, 1, b->len, f) != b->len) {
		fprintf(stderr, "gen_seeds: %s: %s\n", path, strerror(errno));
		failures++;
	}
	if (f != NULL && fclose(f) != 0) {
		failures++;
	}
	pbuf_reset(b);
}

static void
req(struct pbuf *b, unsigned op, uint64_t id)
{
	struct proto_req_hdr h = {
		.version = version, .op = (uint16_t)op, .req_id = id,
		.session = 7, .token = 0x1234567890abcdefULL,
	};

	proto_put_req_hdr(b, &h);
}

static void
rep(struct pbuf *b, unsigned op, int32_t status)
{
	struct proto_rep_hdr h = {
		.version = version, .op = (uint16_t)op, .req_id = 42,
		.status = status, .term = 5,
	};

	proto_put_rep_hdr(b, &h);
}

/* An error reply that carries its reason (PROTO_REP_F_MSG). */
static void
rep_msg(struct pbuf *b, unsigned op, int32_t status, const char *msg)
{
	struct proto_rep_hdr h = {
		.version = version, .op = (uint16_t)op, .req_id = 43,
		.status = status, .msg = msg, .msg_len = (uint16_t)strlen(msg),
		.term = 5,
	};

	proto_put_rep_hdr(b, &h);
}

static void
seed_requests(struct pbuf *b)
{
	static const char *const k[] = { "model@0@abc", "k", "model@1@ff" };
	static const size_t kl[] = { 11, 1, 10 };
	struct proto_hello hello = { .pid = 4242, .start_time = 99,
		.instance_id = 5, .host = "node1", .host_len = 5 };
	struct proto_reg regs[2] = {
		{ { (const uint8_t *)"model@0@abc", 11 }, 3, 4 << 20, 4096 },
		{ { (const uint8_t *)"x", 1 }, 4, 6 << 20, 1 },
	};

	req(b, PROTO_OP_HELLO, 1);
	proto_put_hello(b, &hello);
	save("req_hello", b);
	hello.flags = PROTO_HELLO_REATTACH;
	req(b, PROTO_OP_HELLO, 2);
	proto_put_hello(b, &hello);
	save("req_hello_reattach", b);
	hello.flags = 0;
	hello.secret = (const uint8_t *)"s3cret";
	hello.secret_len = 6;
	req(b, PROTO_OP_HELLO, 2);
	proto_put_hello(b, &hello);
	save("req_hello_secret", b);
	hello.flags = PROTO_HELLO_KEEPALIVE | PROTO_HELLO_ERRMSG;
	hello.secret = NULL;
	hello.secret_len = 0;
	hello.keepalive_ms = 1000;
	req(b, PROTO_OP_HELLO, 2);
	proto_put_hello(b, &hello);
	save("req_hello_keepalive", b);
	req(b, PROTO_OP_REGION_ALLOC, 3);
	proto_put_region_req(b, 2 << 20, 65536);
	save("req_region_alloc", b);
	req(b, PROTO_OP_REGION_FREE, 4);
	proto_put_region_free(b, 3, 1);
	save("req_region_free", b);
	req(b, PROTO_OP_REGISTER, 5);
	proto_put_regs(b, PROTO_F_PIN, 2, regs);
	save("req_register", b);
	for (unsigned op = PROTO_OP_LOOKUP; op <= PROTO_OP_DELETE; op++) {
		char name[32];

		snprintf(name, sizeof(name), "req_%s", proto_op_name(op));
		req(b, op, op);
		proto_put_keys(b, 0, 3, (const void *const *)k, kl);
		save(name, b);
	}
	req(b, PROTO_OP_STATS, 10);
	save("req_stats", b);
	req(b, PROTO_OP_HEARTBEAT, 11);
	save("req_heartbeat", b);
	req(b, PROTO_OP_BYE, 12);
	save("req_bye", b);
	req(b, PROTO_OP_SESSIONS, 13);
	save("req_sessions", b);
}

/* A SESSIONS reply: an attached session with a region and a pin, and a
 * detached one with an empty host. */
static void
seed_sessions(struct pbuf *b)
{
	struct proto_session_info v[2] = {
		{ 7, 4242, PROTO_SESS_ATTACHED, 99, 5, 1, 2, "node1", 5 },
		{ 8, 4343, PROTO_SESS_DETACHED, 100, 6, 0, 0, "", 0 },
	};

	rep(b, PROTO_OP_SESSIONS, 0);
	proto_put_sessions(b, 2, v);
	save("rep_sessions", b);
}

static void
seed_replies(struct pbuf *b)
{
	struct proto_welcome w = { 7, 0x1234567890abcdefULL, 1ULL << 30,
		2 << 20, "/dev/shm/cxlpool", 16 };
	struct proto_loc loc = { 3, 1, 4 << 20, 2 << 20, 0, 0 };
	struct proto_result res[2] = {
		{ 0, PROTO_R_NEW, { 3, 1, 4 << 20, 2 << 20, 4 << 20, 4096 } },
		{ CXLP_E_NOTFOUND, 0, { 0 } },
	};
	uint64_t stats[PROTO_STAT_COUNT];

	for (unsigned i = 0; i < PROTO_STAT_COUNT; i++) {
		stats[i] = 1000 * i;
	}
	rep(b, PROTO_OP_HELLO, 0);
	proto_put_welcome(b, &w);
	save("rep_welcome", b);
	rep(b, PROTO_OP_REGION_ALLOC, 0);
	proto_put_loc(b, &loc);
	save("rep_region_alloc", b);
	rep(b, PROTO_OP_REGION_FREE, 0);
	save("rep_region_free", b);
	rep(b, PROTO_OP_REGISTER, 0);
	proto_put_results(b, 2, res);
	save("rep_register", b);
	rep(b, PROTO_OP_PIN, 0);
	proto_put_results(b, 1, res + 1);
	save("rep_pin", b);
	rep(b, PROTO_OP_STATS, 0);
	proto_put_stats(b, PROTO_STAT_COUNT, stats);
	save("rep_stats", b);
	rep(b, PROTO_OP_LOOKUP, CXLP_E_SESSION);
	save("rep_error", b);
	rep_msg(b, PROTO_OP_HELLO, CXLP_E_NOSPACE, "session table full "
	    "(1024 sessions)");
	save("rep_error_reason", b);
	rep(b, PROTO_OP_BYE, 0);
	save("rep_bye", b);
	seed_sessions(b);
}

/* Version-3 frames of a newer minor: a header with a field 3.0 does not
 * know, a body with one appended, results of longer records. */
static void
seed_newer_minor(struct pbuf *b)
{
	struct proto_result res = { 0, PROTO_R_NEW,
		{ 3, 1, 4 << 20, 2 << 20, 4 << 20, 4096 } };

	req(b, PROTO_OP_HEARTBEAT, 20);
	b->data[32] = PROTO_REQ_HDR_LEN_V3 + 4; /* u16 hdr_len */
	pbuf_put_u32(b, 0xfeedbeef);
	save("v3x_req_header", b);
	req(b, PROTO_OP_REGION_FREE, 21);
	proto_put_region_free(b, 3, 1);
	pbuf_put_u64(b, 0xfeedbeef);
	save("v3x_req_body", b);
	rep(b, PROTO_OP_LOOKUP, 0);
	pbuf_put_u32(b, 1);                     /* n */
	pbuf_put_u16(b, PROTO_RESULT_LEN + 8);  /* rec */
	pbuf_put_u32(b, (uint32_t)res.status);
	pbuf_put_u32(b, res.flags);
	pbuf_put_u32(b, res.loc.region);
	pbuf_put_u32(b, res.loc.gen);
	pbuf_put_u64(b, res.loc.region_off);
	pbuf_put_u64(b, res.loc.region_len);
	pbuf_put_u64(b, res.loc.off);
	pbuf_put_u64(b, res.loc.len);
	pbuf_put_u64(b, 0xfeedbeef);            /* a 3.1 field */
	save("v3x_rep_records", b);
}

/* ---- fuzz_dispatch scripts: u8 mode, then { u16 len, frame } ... ---- */

/* Append the frame in f to script s as { u16 len, bytes }; reset f. */
static void
step(struct pbuf *s, struct pbuf *f)
{
	pbuf_put_u16(s, (uint16_t)f->len);
	pbuf_put_bytes(s, f->data, f->len);
	pbuf_reset(f);
}

static void
step_keys(struct pbuf *s, struct pbuf *f, unsigned op, uint64_t id,
    uint32_t flags)
{
	static const char *const k[] = { "model@0@abc", "k", "model@1@ff" };
	static const size_t kl[] = { 11, 1, 10 };

	req(f, op, id);
	proto_put_keys(f, flags, 3, (const void *const *)k, kl);
	step(s, f);
}

static void
step_register(struct pbuf *s, struct pbuf *f, uint64_t id, uint32_t flags)
{
	struct proto_reg regs[3] = {
		{ { (const uint8_t *)"model@0@abc", 11 }, 0, 0, 100 },
		{ { (const uint8_t *)"k", 1 }, 0, 4096, 4096 },
		{ { (const uint8_t *)"model@1@ff", 10 }, 0, 8192, 1 },
	};

	req(f, PROTO_OP_REGISTER, id);
	proto_put_regs(f, flags, 3, regs);
	step(s, f);
}

static void
step_empty(struct pbuf *s, struct pbuf *f, unsigned op, uint64_t id)
{
	req(f, op, id);
	step(s, f);
}

static void
step_region(struct pbuf *s, struct pbuf *f, uint64_t id)
{
	req(f, PROTO_OP_REGION_ALLOC, id);
	proto_put_region_req(f, 2 << 20, 4096);
	step(s, f);
}

/* Every op in a session's life, ending with BYE (mode 0x07; 0x17 for
 * a version-2 session). */
static void
script_session(struct pbuf *s, struct pbuf *f, uint8_t mode)
{
	pbuf_put_bytes(s, &mode, 1);
	step_region(s, f, 2);
	step_register(s, f, 3, PROTO_F_PIN);
	step_keys(s, f, PROTO_OP_LOOKUP, 4, PROTO_F_PIN);
	step_keys(s, f, PROTO_OP_PIN, 5, 0);
	step_keys(s, f, PROTO_OP_DELETE, 6, 0);
	step_keys(s, f, PROTO_OP_UNPIN, 7, 0);
	step_keys(s, f, PROTO_OP_UNPIN, 8, 0);
	step_keys(s, f, PROTO_OP_UNPIN, 9, 0);
	step_keys(s, f, PROTO_OP_DELETE, 10, 0);
	step_keys(s, f, PROTO_OP_EXISTS, 11, 0);
	step_empty(s, f, PROTO_OP_STATS, 12);
	req(f, PROTO_OP_REGION_FREE, 13);
	proto_put_region_free(f, 0, 1);
	step(s, f);
	step_empty(s, f, PROTO_OP_HEARTBEAT, 14);
	step_empty(s, f, PROTO_OP_BYE, 15);
	save("session_life", s);
}

/* Dies holding pins and keys, with a retried register and delete. */
static void
script_dies(struct pbuf *s, struct pbuf *f)
{
	pbuf_put_bytes(s, (uint8_t[]){ 0x27 }, 1);
	step_region(s, f, 2);
	step_register(s, f, 3, PROTO_F_PIN);
	step_register(s, f, 3, PROTO_F_PIN);
	step_keys(s, f, PROTO_OP_LOOKUP, 4, PROTO_F_PIN);
	step_keys(s, f, PROTO_OP_DELETE, 5, 0);
	step_keys(s, f, PROTO_OP_DELETE, 5, 0);
	step_region(s, f, 6);
	save("dies_with_pins", s);
}

/* A tcp peer: HELLO without the secret, with a wrong one, reattach. */
static void
script_tcp(struct pbuf *s, struct pbuf *f)
{
	struct proto_hello m = { .pid = 1, .host = "h", .host_len = 1 };

	pbuf_put_bytes(s, (uint8_t[]){ 0x08 }, 1);
	req(f, PROTO_OP_HELLO, 1);
	proto_put_hello(f, &m);
	step(s, f);
	m.secret = (const uint8_t *)"fuzz-secreT";
	m.secret_len = 11;
	req(f, PROTO_OP_HELLO, 2);
	proto_put_hello(f, &m);
	step(s, f);
	m.secret = (const uint8_t *)"fuzz-secret";
	req(f, PROTO_OP_HELLO, 3);
	proto_put_hello(f, &m);
	step(s, f);
	m.flags = PROTO_HELLO_REATTACH;
	req(f, PROTO_OP_HELLO, 4);
	proto_put_hello(f, &m);
	step(s, f);
	save("tcp_hello", s);
}

/* Frames the codec refuses, with a session. */
static void
script_hostile(struct pbuf *s, struct pbuf *f)
{
	struct proto_req_hdr h = { .version = PROTO_VERSION + 1,
		.op = PROTO_OP_STATS, .req_id = 9 };

	pbuf_put_bytes(s, (uint8_t[]){ 0x03 }, 1);
	proto_put_req_hdr(f, &h);
	step(s, f);
	h.version = PROTO_VERSION;
	h.op = 0x777;
	proto_put_req_hdr(f, &h);
	step(s, f);
	req(f, PROTO_OP_EXISTS, 10);
	pbuf_put_u32(f, 0);
	pbuf_put_u32(f, 1);
	pbuf_put_u16(f, 500);
	pbuf_put_bytes(f, "abc", 3);
	step(s, f);
	req(f, PROTO_OP_EXISTS, 11);
	pbuf_put_u32(f, 0);
	pbuf_put_u32(f, CXLP_BATCH_MAX + 1);
	step(s, f);
	req(f, PROTO_OP_LOOKUP, 12);
	pbuf_put_u16(f, 1);
	step(s, f);
	save("hostile", s);
}

static void
seed_dispatch(void)
{
	struct pbuf s, f;

	pbuf_init(&s);
	pbuf_init(&f);
	script_session(&s, &f, 0x07);
	version = 2; /* an old handler's session (fuzz_dispatch mode bit 4) */
	script_session(&s, &f, 0x17);
	version = PROTO_VERSION;
	script_dies(&s, &f);
	script_tcp(&s, &f);
	script_hostile(&s, &f);
	pbuf_fini(&f);
	pbuf_fini(&s);
}

int
main(int argc, char **argv)
{
	struct pbuf b;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: gen_seeds PROTO_DIR [DISPATCH_DIR]\n");
		return 2;
	}
	dir = argv[1];
	pbuf_init(&b);
	seed_requests(&b);
	seed_replies(&b);
	seed_newer_minor(&b);
	version = 2;
	seed_requests(&b);
	seed_replies(&b);
	version = PROTO_VERSION;
	pbuf_fini(&b);
	if (argc == 3) {
		dir = argv[2];
		seed_dispatch();
	}
	return failures != 0 ? 1 : 0;
}
