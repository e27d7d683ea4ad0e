/*
 * test_hostile.c -- DESIGN contract 7 over a real socket: a table of bad
 * inputs, each sent as a raw frame. Each gets an error reply with the exact
 * code, the server keeps serving (a good request right after succeeds),
 * and nothing is registered by a refused request.
 */
#include <poll.h>
#include <stdlib.h>

#include "itest.h"
#include "proto.h"
#include "probe.h"
#include "rawclient.h"

TestSuite(hostile, .init = itest_start, .fini = itest_stop, .timeout = 60);

/* frame -- a request header for c's session (raw_frame), the body to
 * follow. */
static void
frame(struct pbuf *b, struct raw_client *c, uint16_t version, uint16_t op,
    uint64_t token)
{
	raw_frame(b, c, version, op, token);
}

/* send_expect -- send len bytes of b, return the reply's status. The
 * reply header is read by hand: a frame too short to name its op is
 * answered with op 0, which the codec's reply decoder rightly refuses. */
static int
send_expect(struct raw_client *c, const struct pbuf *b, size_t len)
{
	uint8_t *rep = NULL;
	size_t rep_len = 0;
	int32_t status;
	uint32_t magic;
	int rc = raw_call(c, b->data, len, &rep, &rep_len);

	cr_assert_eq(rc, 0, "no reply to a bad frame (%d)", rc);
	cr_assert_geq(rep_len, PROTO_REP_HDR_LEN, "short error reply");
	memcpy(&magic, rep, 4);
	memcpy(&status, rep + 16, 4); /* little-endian host assumed */
	cr_assert_eq(magic, PROTO_MAGIC);
	free(rep);
	return status;
}

/* still_serving -- a HEARTBEAT on c succeeds. */
static void
still_serving(struct raw_client *c)
{
	cr_assert_rc(raw_request(c, PROTO_OP_HEARTBEAT, NULL, NULL, 0, NULL),
	    0);
}

static void
open_session(struct raw_client *c)
{
	cr_assert_rc(raw_open(c, srv.url), 0);
	cr_assert_rc(raw_hello(c), 0);
}

static void
put_key(struct pbuf *b, const char *k, size_t len)
{
	pbuf_put_u16(b, (uint16_t)len);
	pbuf_put_bytes(b, k, len);
}

Test(hostile, truncated_frames_get_a_proto_error)
{
	struct raw_client c;
	struct pbuf b;
	const void *kp[1] = { "key" };
	size_t kl[1] = { 3 };

	open_session(&c);
	frame(&b, &c, PROTO_VERSION, PROTO_OP_LOOKUP, c.token);
	proto_put_keys(&b, 0, 1, kp, kl);
	for (size_t cut = 1; cut < b.len; cut++) {
		int st = send_expect(&c, &b, cut);

		cr_assert(st == CXLP_E_PROTO || st == CXLP_E_BATCH,
		    "frame cut at %zu: status %d", cut, st);
	}
	pbuf_fini(&b);
	still_serving(&c);
	raw_close(&c);
}

Test(hostile, key_length_past_the_frame_is_refused)
{
	struct raw_client c;
	struct pbuf b;

	open_session(&c);
	frame(&b, &c, PROTO_VERSION, PROTO_OP_EXISTS, c.token);
	pbuf_put_u32(&b, 0);
	pbuf_put_u32(&b, 1);
	pbuf_put_u16(&b, 500); /* claims 500 bytes, has 3 */
	pbuf_put_bytes(&b, "abc", 3);
	cr_assert_rc(send_expect(&c, &b, b.len), CXLP_E_PROTO);
	pbuf_fini(&b);
	still_serving(&c);
	raw_close(&c);
}

Test(hostile, empty_and_oversized_keys_are_refused)
{
	struct raw_client c;
	struct pbuf b;
	static char big[CXLP_KEY_MAX + 1];

	open_session(&c);
	frame(&b, &c, PROTO_VERSION, PROTO_OP_EXISTS, c.token);
	pbuf_put_u32(&b, 0);
	pbuf_put_u32(&b, 1);
	put_key(&b, "", 0);
	cr_assert_rc(send_expect(&c, &b, b.len), CXLP_E_KEYLEN);
	pbuf_fini(&b);
	memset(big, 'x', sizeof(big));
	frame(&b, &c, PROTO_VERSION, PROTO_OP_EXISTS, c.token);
	pbuf_put_u32(&b, 0);
	pbuf_put_u32(&b, 1);
	put_key(&b, big, sizeof(big));
	cr_assert_rc(send_expect(&c, &b, b.len), CXLP_E_KEYLEN);
	pbuf_fini(&b);
	still_serving(&c);
	raw_close(&c);
}

Test(hostile, batch_larger_than_the_limit_is_refused)
{
	struct raw_client c;
	struct pbuf b;

	open_session(&c);
	frame(&b, &c, PROTO_VERSION, PROTO_OP_EXISTS, c.token);
	pbuf_put_u32(&b, 0);
	pbuf_put_u32(&b, CXLP_BATCH_MAX + 1);
	for (int i = 0; i <= CXLP_BATCH_MAX; i++) {
		put_key(&b, "k", 1);
	}
	cr_assert_rc(send_expect(&c, &b, b.len), CXLP_E_BATCH);
	pbuf_fini(&b);
	still_serving(&c);
	raw_close(&c);
}

Test(hostile, unknown_operation_is_refused)
{
	struct raw_client c;
	struct pbuf b;

	open_session(&c);
	frame(&b, &c, PROTO_VERSION, 0x7777, c.token);
	cr_assert_rc(send_expect(&c, &b, b.len), CXLP_E_BADOP);
	pbuf_fini(&b);
	still_serving(&c);
	raw_close(&c);
}

Test(hostile, wrong_protocol_version_is_refused)
{
	struct raw_client c;
	struct pbuf b;

	open_session(&c);
	frame(&b, &c, PROTO_VERSION + 1, PROTO_OP_HEARTBEAT, c.token);
	cr_assert_rc(send_expect(&c, &b, b.len), CXLP_E_VERSION);
	pbuf_fini(&b);
	still_serving(&c);
	raw_close(&c);
}

Test(hostile, wrong_or_stolen_token_is_refused)
{
	struct raw_client a, thief;
	struct pbuf b;

	open_session(&a);
	open_session(&thief);
	frame(&b, &thief, PROTO_VERSION, PROTO_OP_HEARTBEAT, a.token + 1);
	cr_assert_rc(send_expect(&thief, &b, b.len), CXLP_E_SESSION);
	pbuf_fini(&b);
	/* the thief names a's session with its own token */
	thief.session = a.session;
	frame(&b, &thief, PROTO_VERSION, PROTO_OP_HEARTBEAT, thief.token);
	cr_assert_rc(send_expect(&thief, &b, b.len), CXLP_E_SESSION);
	pbuf_fini(&b);
	still_serving(&a);
	raw_close(&a);
	raw_close(&thief);
}

Test(hostile, no_session_is_refused)
{
	struct raw_client c;
	struct pbuf b;

	cr_assert_rc(raw_open(&c, srv.url), 0);
	frame(&b, &c, PROTO_VERSION, PROTO_OP_HEARTBEAT, 0);
	cr_assert_rc(send_expect(&c, &b, b.len), CXLP_E_SESSION);
	pbuf_fini(&b);
	raw_close(&c);
}

Test(hostile, register_of_a_bad_location_registers_nothing)
{
	struct raw_client c;
	struct proto_loc l;
	struct proto_result r;
	struct pbuf b;
	uint32_t n = 0;
	const void *kp[1] = { "bad" };
	size_t kl[1] = { 3 };

	open_session(&c);
	cr_assert_rc(raw_region(&c, 2 * MiB, 4096, &l), 0);
	cr_assert_rc(raw_register(&c, "bad", l.region + 100, l.region_off, 64,
	    &r), 0);
	cr_assert(r.status == CXLP_E_PERM || r.status == CXLP_E_NOTFOUND,
	    "unknown region: %d", r.status);
	cr_assert_rc(raw_register(&c, "bad", l.region,
	    l.region_off + 4096 * 600, 64, &r), 0); /* page index 600 of 512 */
	cr_assert_eq(r.status, CXLP_E_BOUNDS);
	pbuf_init(&b);
	proto_put_keys(&b, 0, 1, kp, kl);
	cr_assert_rc(raw_request(&c, PROTO_OP_EXISTS, &b, &r, 1, &n), 0);
	cr_assert_eq(r.status, CXLP_E_NOTFOUND, "a refused key was stored");
	pbuf_fini(&b);
	raw_close(&c);
}

Test(hostile, request_id_reused_for_another_operation_is_refused)
{
	struct raw_client c;
	struct pbuf b;
	const void *kp[1] = { "key" };
	size_t kl[1] = { 3 };

	open_session(&c);
	frame(&b, &c, PROTO_VERSION, PROTO_OP_EXISTS, c.token);
	proto_put_keys(&b, 0, 1, kp, kl);
	cr_assert_rc(send_expect(&c, &b, b.len), 0);
	pbuf_fini(&b);
	c.next_id--; /* same id, another op: not a retry */
	frame(&b, &c, PROTO_VERSION, PROTO_OP_DELETE, c.token);
	proto_put_keys(&b, 0, 1, kp, kl);
	cr_assert_rc(send_expect(&c, &b, b.len), CXLP_E_PROTO,
	    "answered with the reply of the first request");
	pbuf_fini(&b);
	still_serving(&c);
	raw_close(&c);
}

/* Zeros after b's header until it is one byte past max. */
static void
pad_past(struct pbuf *b, size_t max)
{
	static const uint8_t zero[4096];

	while (b->len <= max) {
		size_t n = max + 1 - b->len;

		pbuf_put_bytes(b, zero, n < sizeof(zero) ? n : sizeof(zero));
	}
}

/* A frame past the limit, up to twice it, is read and answered: the
 * sender learns why instead of seeing its connection dropped. */
Test(hostile, an_oversized_frame_gets_a_proto_error)
{
	struct raw_client c;
	struct pbuf b;

	open_session(&c);
	frame(&b, &c, PROTO_VERSION, PROTO_OP_HEARTBEAT, c.token);
	pad_past(&b, PROTO_FRAME_MAX);
	cr_assert_eq(send_expect(&c, &b, b.len), CXLP_E_PROTO);
	pbuf_fini(&b);
	still_serving(&c);
	raw_close(&c);
}

/* A frame past twice the limit is not read: its connection is dropped
 * (nng's limit) as soon as its length is seen, and the server goes on
 * serving everyone else. A plain socket plays the sender: an nng client
 * would resend the frame on every redial. */
Test(hostile, a_frame_past_twice_the_limit_drops_only_its_connection)
{
	struct raw_client other;
	struct pollfd p;
	uint8_t buf[64];
	ssize_t n = 1;
	int fd;

	open_session(&other);
	fd = probe_connect(srv.url);
	cr_assert_geq(fd, 0, "connect: %s", strerror(-fd));
	cr_assert_eq(probe_announce_frame(fd, true, 2 * PROTO_FRAME_MAX + 1),
	    0);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	for (int i = 0; i < 100 && n > 0; i++) { /* its header, then EOF */
		cr_assert_eq(poll(&p, 1, 10000), 1, "the server kept the "
		    "connection of a %zu-byte frame open",
		    2 * PROTO_FRAME_MAX + 1);
		n = read(fd, buf, sizeof(buf));
	}
	cr_assert_leq(n, 0, "the server answered a frame it cannot read");
	close(fd);
	still_serving(&other);
	raw_close(&other);
}
