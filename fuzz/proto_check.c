/*
 * proto_check.c -- decode any frame both ways and check the codec's one
 * promise a fuzzer can test without a model: the encoding is canonical.
 *
 * Every decoder rejects reserved bits and out-of-range lengths, and in
 * version 2 trailing bytes, so a version-2 frame that decodes has exactly
 * one reading; encoding that reading must give back the input byte for
 * byte. A version-3 decoder skips what it does not know (the unknown end
 * of a header, a body, a record), so a version-3 frame re-encodes to its
 * known part, no longer than itself, which must re-encode to itself. A
 * decoder that skipped a byte, misread a width or accepted a field it
 * should not would break one of these equalities. proto_reencode also
 * translates a frame to the other version, for the tests that every
 * message of one version reads the same in the other. Reading every byte
 * of each decoded key, hostname and path lets AddressSanitizer catch a
 * pointer that escapes the frame. The module is used by fuzz/fuzz_proto.c
 * and by tests/common/test_proto_msg.c and test_proto_version.c.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "proto_check.h"

/* touch -- read every byte so ASan sees pointers that leave the frame. */
static void
touch(const void *p, size_t n)
{
	const volatile uint8_t *b = p;
	uint8_t sum = 0;

	for (size_t i = 0; i < n; i++) {
		sum = (uint8_t)(sum + b[i]);
	}
	(void)sum;
}

static bool
redo_keys(struct preader *r, struct pbuf *b)
{
	struct proto_key *keys;
	const void **ptrs;
	size_t *lens;
	uint32_t flags, n;

	if (proto_get_keys(r, &flags, &keys, &n) != 0) {
		return false;
	}
	ptrs = calloc(n, sizeof(*ptrs));
	lens = calloc(n, sizeof(*lens));
	if (ptrs == NULL || lens == NULL) {
		abort();
	}
	for (uint32_t i = 0; i < n; i++) {
		touch(keys[i].data, keys[i].len);
		ptrs[i] = keys[i].data;
		lens[i] = keys[i].len;
	}
	proto_put_keys(b, flags, n, ptrs, lens);
	free(lens);
	free(ptrs);
	free(keys);
	return true;
}

static bool
redo_regs(struct preader *r, struct pbuf *b)
{
	struct proto_reg *regs;
	uint32_t flags, n;

	if (proto_get_regs(r, &flags, &regs, &n) != 0) {
		return false;
	}
	for (uint32_t i = 0; i < n; i++) {
		touch(regs[i].key.data, regs[i].key.len);
	}
	proto_put_regs(b, flags, n, regs);
	free(regs);
	return true;
}

static bool
redo_small_req(struct preader *r, unsigned op, struct pbuf *b)
{
	struct proto_hello m;
	uint64_t a, c;
	uint32_t x, y;

	switch (op) {
	case PROTO_OP_HELLO:
		if (proto_get_hello(r, &m) != 0) {
			return false;
		}
		touch(m.host, m.host_len);
		touch(m.secret, m.secret_len);
		if (b->version != r->version) { /* translated: the default */
			m.ver_min = m.ver_max = 0;
		}
		proto_put_hello(b, &m);
		return true;
	case PROTO_OP_REGION_ALLOC:
		if (proto_get_region_req(r, &a, &c) != 0) {
			return false;
		}
		proto_put_region_req(b, a, c);
		return true;
	case PROTO_OP_REGION_FREE:
		if (proto_get_region_free(r, &x, &y) != 0) {
			return false;
		}
		proto_put_region_free(b, x, y);
		return true;
	default:
		return preader_end(r) == 0;
	}
}

/* the bodies of a full pool: RECLAIM and LEASE requests */
static bool
redo_evict_req(struct preader *r, unsigned op, struct pbuf *b)
{
	struct proto_key *keys;
	uint64_t a, c;
	uint32_t ms, wait, flags, n;

	if (op == PROTO_OP_RECLAIM) {
		if (proto_get_reclaim_req(r, &a, &c, &ms, &wait) != 0) {
			return false;
		}
		proto_put_reclaim_req(b, a, c, ms, wait);
		return true;
	}
	if (proto_get_lease_req(r, &ms, &flags, &keys, &n) != 0) {
		return false;
	}
	pbuf_put_u32(b, ms);
	pbuf_put_u32(b, flags);
	pbuf_put_u32(b, n);
	for (uint32_t i = 0; i < n; i++) {
		touch(keys[i].data, keys[i].len);
		pbuf_put_u16(b, keys[i].len);
		pbuf_put_bytes(b, keys[i].data, keys[i].len);
	}
	free(keys);
	return true;
}

/* the bodies of request groups: GROUP, and the id that opens those of
 * GROUP_REGISTER and GROUP_LOOKUP */
static bool
redo_group_req(struct preader *r, unsigned op, struct pbuf *b)
{
	struct proto_group g;

	if (op == PROTO_OP_GROUP) {
		if (proto_get_group(r, &g) != 0) {
			return false;
		}
		touch(g.id, g.id_len);
		proto_put_group(b, &g);
		return true;
	}
	if (proto_get_group_id(r, &g.id, &g.id_len) != 0) {
		return false;
	}
	touch(g.id, g.id_len);
	proto_put_group_id(b, g.id, g.id_len);
	return op == PROTO_OP_GROUP_REGISTER ? redo_regs(r, b) :
	    redo_keys(r, b);
}

/* redo_req_body -- decode the body op selects and re-encode it into b. */
static bool
redo_req_body(struct preader *r, unsigned op, struct pbuf *b)
{
	switch (op) {
	case PROTO_OP_REGISTER:
		return redo_regs(r, b);
	case PROTO_OP_LOOKUP:
	case PROTO_OP_EXISTS:
	case PROTO_OP_PIN:
	case PROTO_OP_UNPIN:
	case PROTO_OP_DELETE:
		return redo_keys(r, b);
	case PROTO_OP_RECLAIM:
	case PROTO_OP_LEASE:
		return redo_evict_req(r, op, b);
	case PROTO_OP_GROUP:
	case PROTO_OP_GROUP_REGISTER:
	case PROTO_OP_GROUP_LOOKUP:
		return redo_group_req(r, op, b);
	default:
		return redo_small_req(r, op, b);
	}
}

static bool
redo_results(struct preader *r, struct pbuf *b)
{
	static struct proto_result res[CXLP_BATCH_MAX];
	uint32_t n;

	if (proto_get_results(r, res, CXLP_BATCH_MAX, &n) != 0) {
		return false;
	}
	proto_put_results(b, n, res);
	return true;
}

static bool
redo_sessions(struct preader *r, struct pbuf *b)
{
	struct proto_session_info *v;
	uint32_t n;

	if (proto_get_sessions(r, &v, &n) != 0) {
		return false;
	}
	for (uint32_t i = 0; i < n; i++) {
		touch(v[i].host, v[i].host_len);
	}
	proto_put_sessions(b, n, v);
	free(v);
	return true;
}

/* RECLAIM's reply, and HEARTBEAT's (empty, or asks) */
static bool
redo_evict_rep(struct preader *r, unsigned op, struct pbuf *b)
{
	static struct proto_region_ref v[PROTO_ASKS_MAX];
	struct proto_reclaimed m;
	uint32_t n;

	if (op == PROTO_OP_HEARTBEAT) {
		if (r->left == 0) {
			return true;
		}
		if (proto_get_asks(r, v, &n) != 0) {
			return false;
		}
		proto_put_asks(b, n, v);
		return true;
	}
	if (proto_get_reclaimed(r, &m) != 0) {
		return false;
	}
	proto_put_reclaimed(b, &m);
	free(m.pages);
	return true;
}

/* A WELCOME's body says nothing of whether it holds the pool's identity
 * (its HELLO's flag does): read with it when that works, else without. */
static bool
get_welcome(struct preader *r, struct proto_welcome *w)
{
	struct preader again = *r;

	if (proto_get_welcome_id(r, w) == 0) {
		return true;
	}
	*r = again;
	return proto_get_welcome(r, w) == 0;
}

/* redo_rep_body -- decode the reply body op selects, re-encode into b. */
static bool
redo_rep_body(struct preader *r, unsigned op, struct pbuf *b)
{
	struct proto_welcome w;
	struct proto_loc loc;
	uint64_t stats[PROTO_STATS_MAX];
	uint32_t n;

	switch (op) {
	case PROTO_OP_HELLO: /* with the pool's identity, if it holds one */
		if (!get_welcome(r, &w)) {
			return false;
		}
		touch(w.path, w.path_len);
		proto_put_welcome(b, &w);
		return true;
	case PROTO_OP_REGION_ALLOC:
		if (proto_get_loc(r, &loc) != 0) {
			return false;
		}
		proto_put_loc(b, &loc);
		return true;
	case PROTO_OP_STATS:
		if (proto_get_stats(r, stats, PROTO_STATS_MAX, &n) != 0) {
			return false;
		}
		proto_put_stats(b, n, stats);
		return true;
	case PROTO_OP_SESSIONS:
		return redo_sessions(r, b);
	case PROTO_OP_HEARTBEAT:
	case PROTO_OP_RECLAIM:
		return redo_evict_rep(r, op, b);
	case PROTO_OP_BYE:
	case PROTO_OP_REGION_FREE:
		return preader_end(r) == 0;
	default:
		return redo_results(r, b);
	}
}

static int
same(const struct pbuf *b, const uint8_t *data, size_t len)
{
	if (b->err != 0 || b->len != len || memcmp(b->data, data, len) != 0) {
		return -1;
	}
	return 0;
}

static bool
reencode_request(const uint8_t *data, size_t len, uint16_t v,
    struct pbuf *b)
{
	struct proto_req_hdr h;
	struct preader body;

	if (proto_get_req_hdr(data, len, &h, &body) != 0) {
		return false;
	}
	h.version = v != 0 ? v : h.version;
	proto_put_req_hdr(b, &h);
	return redo_req_body(&body, h.op, b);
}

static bool
reencode_reply(const uint8_t *data, size_t len, uint16_t v, struct pbuf *b)
{
	struct proto_rep_hdr h;
	struct preader body;

	if (proto_get_rep_hdr(data, len, &h, &body) != 0) {
		return false;
	}
	h.version = v != 0 ? v : h.version;
	if (h.version < 3) {
		h.term = 0; /* version 2 has none */
	}
	proto_put_rep_hdr(b, &h);
	return h.status != 0 || redo_rep_body(&body, h.op, b);
}

/* proto_reencode -- see proto_check.h. */
bool
proto_reencode(const uint8_t *data, size_t len, bool request, uint16_t v,
    struct pbuf *out)
{
	pbuf_reset(out);
	return request ? reencode_request(data, len, v, out) :
	    reencode_reply(data, len, v, out);
}

/* One reading of data: the same bytes again (version 2), or its known
 * part, which reads the same (version 3). */
static int
check_as(const uint8_t *data, size_t len, bool request)
{
	struct pbuf b, c;
	int rc = 0;

	pbuf_init(&b);
	pbuf_init(&c);
	if (proto_reencode(data, len, request, 0, &b)) {
		rc = same(&b, data, len);
		if (rc != 0 && len >= 6 && (data[4] | data[5] << 8) >= 3 &&
		    b.err == 0 && b.len <= len &&
		    proto_reencode(b.data, b.len, request, 0, &c)) {
			rc = same(&c, b.data, b.len);
		}
	}
	pbuf_fini(&c);
	pbuf_fini(&b);
	return rc;
}

/* proto_check_frame -- see proto_check.h. */
int
proto_check_frame(const uint8_t *data, size_t len)
{
	if (check_as(data, len, true) != 0) {
		return -1;
	}
	return check_as(data, len, false);
}
