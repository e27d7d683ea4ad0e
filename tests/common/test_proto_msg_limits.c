/*
 * test_proto_msg_limits.c -- tests of common/proto_msg.c at its bounds:
 * bodies built by hand with pbuf primitives at each limit (key length,
 * batch size, frame size, host, path and secret lengths, result, stats
 * and session counts) and one past it, and counts that lie about a
 * short frame. calloc is wrapped at link time (-Wl,--wrap=calloc) so a
 * test can see that a lying count allocates nothing. Round trips,
 * truncation, reserved bits and mutated frames: test_proto_msg.c.
 */
#include "proto_check.h"
#include "proto_fixture.h"

/* ---- calloc accounting ---- */

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

static size_t calloc_bytes; /* largest request since a test zeroed it */

void *
__wrap_calloc(size_t n, size_t size)
{
	if (n != 0 && size != 0 && n * size > calloc_bytes) {
		calloc_bytes = n * size;
	}
	return __real_calloc(n, size);
}

TestSuite(proto_msg, .init = setup);

/* ---- bounded lengths: at the limit and one past it ---- */

/* key_body -- flags, n, then n keys all of length klen. */
static void
key_body(struct pbuf *b, uint32_t n, uint32_t klen, bool regs)
{
	pbuf_put_u32(b, 0);
	pbuf_put_u32(b, n);
	for (uint32_t i = 0; i < n; i++) {
		pbuf_put_u16(b, (uint16_t)klen);
		pbuf_put_bytes(b, keybytes, klen);
		if (regs) {
			pbuf_put_bytes(b, keybytes, 20);
		}
	}
}

static int
keys_rc(uint32_t n, uint32_t klen)
{
	struct proto_key *k = NULL;
	uint32_t flags, got;
	struct preader r;
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	b.version = 2; /* the layouts below are version 2's */
	key_body(&b, n, klen, false);
	preader_init(&r, b.data, b.len);
	r.version = 2;
	rc = proto_get_keys(&r, &flags, &k, &got);
	cr_assert_eq(k == NULL, rc != 0);
	cr_assert_eq(got, rc == 0 ? n : 0);
	free(k);
	pbuf_fini(&b);
	return rc;
}

static int
regs_rc(uint32_t n, uint32_t klen, size_t *frame_len)
{
	struct proto_reg *g = NULL;
	uint32_t flags, got;
	struct preader r;
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	b.version = 2; /* the layouts below are version 2's */
	pbuf_put_bytes(&b, keybytes, PROTO_REQ_HDR_LEN_V3); /* a header's */
	key_body(&b, n, klen, true);
	*frame_len = b.len;
	preader_init(&r, b.data + PROTO_REQ_HDR_LEN_V3,
	    b.len - PROTO_REQ_HDR_LEN_V3);
	r.version = 2;
	rc = proto_get_regs(&r, &flags, &g, &got);
	cr_assert_eq(g == NULL, rc != 0);
	free(g);
	pbuf_fini(&b);
	return rc;
}

Test(proto_msg, key_length_is_bounded_by_key_max)
{
	cr_assert_eq(keys_rc(3, 1), 0);
	cr_assert_eq(keys_rc(3, CXLP_KEY_MAX), 0);
	cr_assert_eq(keys_rc(3, CXLP_KEY_MAX + 1), CXLP_E_KEYLEN);
	cr_assert(strstr(cxlp_errormsg(), "key 0") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_eq(keys_rc(3, 0), CXLP_E_KEYLEN);
}

Test(proto_msg, batch_size_is_bounded_by_batch_max)
{
	cr_assert_eq(keys_rc(CXLP_BATCH_MAX, 1), 0);
	cr_assert_eq(keys_rc(CXLP_BATCH_MAX + 1, 1), CXLP_E_BATCH);
	cr_assert(strstr(cxlp_errormsg(), "keys.n") != NULL);
	cr_assert_eq(keys_rc(0, 1), CXLP_E_BATCH);
}

Test(proto_msg, register_bounds_keys_and_batch_and_fills_the_frame_max)
{
	size_t len;

	cr_assert_eq(regs_rc(CXLP_BATCH_MAX, CXLP_KEY_MAX, &len), 0);
	cr_assert_eq(len, PROTO_FRAME_MAX, "a full batch of largest keys");
	cr_assert_eq(regs_rc(2, CXLP_KEY_MAX + 1, &len), CXLP_E_KEYLEN);
	cr_assert_eq(regs_rc(2, 0, &len), CXLP_E_KEYLEN);
	cr_assert_eq(regs_rc(CXLP_BATCH_MAX + 1, 1, &len), CXLP_E_BATCH);
	cr_assert_eq(regs_rc(0, 1, &len), CXLP_E_BATCH);
}

static int
string_rc(bool hello, uint32_t slen)
{
	struct proto_hello m;
	struct proto_welcome w;
	struct preader r;
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	b.version = 2; /* the layouts below are version 2's */
	pbuf_put_bytes(&b, (uint8_t[32]){ 0 }, hello ? 24 : 32);
	pbuf_put_u16(&b, (uint16_t)slen);
	pbuf_put_bytes(&b, keybytes, slen);
	if (hello) {
		pbuf_put_u16(&b, 0); /* no secret */
	}
	preader_init(&r, b.data, b.len);
	r.version = 2;
	rc = hello ? proto_get_hello(&r, &m) : proto_get_welcome(&r, &w);
	pbuf_fini(&b);
	return rc;
}

Test(proto_msg, hostname_and_path_lengths_are_bounded)
{
	cr_assert_eq(string_rc(true, 0), 0);
	cr_assert_eq(string_rc(true, PROTO_HOST_MAX), 0);
	cr_assert_eq(string_rc(true, PROTO_HOST_MAX + 1), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "hostname") != NULL);
	cr_assert_eq(string_rc(false, PROTO_PATH_MAX), 0);
	cr_assert_eq(string_rc(false, PROTO_PATH_MAX + 1), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "path") != NULL);
}

static int
secret_rc(uint32_t slen, size_t have)
{
	struct proto_hello m;
	struct preader r;
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	b.version = 2; /* the layouts below are version 2's */
	pbuf_put_bytes(&b, (uint8_t[24]){ 0 }, 24);
	pbuf_put_u16(&b, 2);
	pbuf_put_bytes(&b, "h1", 2);
	pbuf_put_u16(&b, (uint16_t)slen);
	pbuf_put_bytes(&b, keybytes, have);
	preader_init(&r, b.data, b.len);
	r.version = 2;
	rc = proto_get_hello(&r, &m);
	if (rc == 0 && (m.secret_len != slen ||
	    (slen > 0 && memcmp(m.secret, keybytes, slen) != 0))) {
		rc = -1;
	}
	pbuf_fini(&b);
	return rc;
}

Test(proto_msg, hello_secret_is_bounded_and_must_fit_the_frame)
{
	cr_assert_eq(secret_rc(0, 0), 0);
	cr_assert_eq(secret_rc(PROTO_SECRET_MAX, PROTO_SECRET_MAX), 0);
	cr_assert_eq(secret_rc(PROTO_SECRET_MAX + 1, PROTO_SECRET_MAX + 1),
	    CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "hello.secret") != NULL);
	cr_assert_eq(secret_rc(10, 9), CXLP_E_PROTO, "secret past the frame");
	cr_assert_eq(secret_rc(10, 11), CXLP_E_PROTO, "trailing bytes");
}

static int
results_rc(uint32_t n, uint32_t max)
{
	struct proto_result res[8], out[8];
	uint32_t got;
	struct preader r;
	struct pbuf b;
	int rc;

	memset(res, 0, sizeof(res));
	pbuf_init(&b);
	b.version = 2; /* the layouts below are version 2's */
	proto_put_results(&b, n, res);
	preader_init(&r, b.data, b.len);
	r.version = 2;
	rc = proto_get_results(&r, out, max, &got);
	pbuf_fini(&b);
	return rc;
}

Test(proto_msg, result_count_is_bounded_by_max)
{
	cr_assert_eq(results_rc(0, 4), 0);
	cr_assert_eq(results_rc(4, 4), 0);
	cr_assert_eq(results_rc(5, 4), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "results.n") != NULL);
}

Test(proto_msg, stats_count_is_bounded_by_stats_max)
{
	uint64_t v[PROTO_STATS_MAX + 1] = { 0 }, out[PROTO_STATS_MAX];
	uint32_t n;
	struct preader r;
	struct pbuf b;

	pbuf_init(&b);
	b.version = 2; /* the layouts below are version 2's */
	proto_put_stats(&b, PROTO_STATS_MAX, v);
	preader_init(&r, b.data, b.len);
	r.version = 2;
	cr_assert_eq(proto_get_stats(&r, out, PROTO_STATS_MAX, &n), 0);
	pbuf_reset(&b);
	proto_put_stats(&b, PROTO_STATS_MAX + 1, v);
	preader_init(&r, b.data, b.len);
	r.version = 2;
	cr_assert_eq(proto_get_stats(&r, out, PROTO_STATS_MAX, &n),
	    CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "stats.n") != NULL);
	pbuf_fini(&b);
}

/* sessions_rc -- n entries whose hosts are host_len bytes, with flags. */
static int
sessions_rc(uint32_t n, uint32_t host_len, uint32_t flags)
{
	struct proto_session_info *out = NULL;
	uint32_t got = 7;
	struct preader r;
	struct pbuf b;
	int rc;

	pbuf_init(&b);
	b.version = 2; /* the layouts below are version 2's */
	pbuf_put_u32(&b, n);
	for (uint32_t i = 0; i < n; i++) {
		pbuf_put_bytes(&b, keybytes, 12); /* id, pid */
		pbuf_put_u32(&b, flags);
		pbuf_put_bytes(&b, keybytes, 24); /* times, counts */
		pbuf_put_u16(&b, (uint16_t)host_len);
		pbuf_put_bytes(&b, keybytes, host_len);
	}
	preader_init(&r, b.data, b.len);
	r.version = 2;
	rc = proto_get_sessions(&r, &out, &got);
	cr_assert_eq(out == NULL, rc != 0 || n == 0);
	cr_assert_eq(got, rc == 0 ? n : 0);
	free(out);
	pbuf_fini(&b);
	return rc;
}

Test(proto_msg, session_count_is_bounded_by_sessions_max)
{
	cr_assert_eq(sessions_rc(0, 5, 0), 0);
	cr_assert_eq(sessions_rc(PROTO_SESSIONS_MAX, 0, 0), 0);
	cr_assert_eq(sessions_rc(PROTO_SESSIONS_MAX + 1, 0, 0),
	    CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "sessions.n") != NULL, "%s",
	    cxlp_errormsg());
}

Test(proto_msg, session_host_length_and_flags_are_bounded)
{
	cr_assert_eq(sessions_rc(3, PROTO_HOST_MAX, PROTO_SESS_ATTACHED), 0);
	cr_assert_eq(sessions_rc(3, PROTO_HOST_MAX + 1, 0), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "session.host") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_eq(sessions_rc(1, 4, PROTO_SESS_DETACHED), 0);
	cr_assert_eq(sessions_rc(1, 4, PROTO_SESS_FENCED), 0);
	cr_assert_eq(sessions_rc(1, 4, 8), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "session.flags") != NULL, "%s",
	    cxlp_errormsg());
}

Test(proto_msg, a_huge_session_count_in_a_short_frame_allocates_nothing)
{
	static const uint32_t counts[] = { 2, PROTO_SESSIONS_MAX, UINT32_MAX };
	struct proto_session_info *v;
	uint32_t n;
	struct preader r;
	struct pbuf b;

	for (size_t i = 0; i < 3; i++) {
		pbuf_init(&b);
		b.version = 2; /* the layouts below are version 2's */
		pbuf_put_u32(&b, counts[i]);
		pbuf_put_bytes(&b, keybytes, 60); /* one entry and a bit */
		calloc_bytes = 0;
		preader_init(&r, b.data, b.len);
		r.version = 2;
		cr_assert_eq(proto_get_sessions(&r, &v, &n), CXLP_E_PROTO);
		cr_assert_null(v);
		cr_assert_eq(calloc_bytes, 0, "count %u allocated %zu bytes",
		    counts[i], calloc_bytes);
		pbuf_fini(&b);
	}
}

/* ---- lying counts ---- */

Test(proto_msg, a_huge_count_in_a_short_frame_allocates_nothing)
{
	static const uint32_t counts[] = { CXLP_BATCH_MAX, 1000, UINT32_MAX };
	struct proto_key *k;
	struct proto_reg *g;
	uint32_t flags, n;
	struct preader r;
	struct pbuf b;

	for (size_t i = 0; i < 3; i++) {
		pbuf_init(&b);
		b.version = 2; /* the layouts below are version 2's */
		pbuf_put_u32(&b, 0);
		pbuf_put_u32(&b, counts[i]);
		pbuf_put_u16(&b, 5);
		pbuf_put_bytes(&b, "hello", 5);
		calloc_bytes = 0;
		preader_init(&r, b.data, b.len);
		r.version = 2;
		cr_assert_neq(proto_get_keys(&r, &flags, &k, &n), 0);
		preader_init(&r, b.data, b.len);
		r.version = 2;
		cr_assert_neq(proto_get_regs(&r, &flags, &g, &n), 0);
		cr_assert_eq(calloc_bytes, 0, "count %u allocated %zu bytes",
		    counts[i], calloc_bytes);
		pbuf_fini(&b);
	}
	/* The wrapper sees the codec's allocations at all. */
	calloc_bytes = 0;
	cr_assert_eq(keys_rc(CXLP_BATCH_MAX, 1), 0);
	cr_assert_geq(calloc_bytes, CXLP_BATCH_MAX * sizeof(struct proto_key));
}

