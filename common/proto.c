/*
 * proto.c -- the one codec of the cxlpool wire protocol (layouts: proto.h):
 * its buffers, field readers and frame headers; proto_msg.c has the bodies.
 *
 * Two small machines do all the work. A pbuf appends little-endian values
 * built with explicit shifts, so the bytes never depend on the host; it
 * grows geometrically and, once an allocation fails, records the error and
 * swallows every later append, so an encoder needs no error paths and its
 * caller checks b->err once. A preader is a cursor that fails closed: a
 * getter that would read past the frame fails, and so does every getter
 * after it. Decoders are then straight lines of getters joined by ||, so
 * the first field that does not fit is the one the message names.
 *
 * Every public body decoder reads one whole body. In version 2 it rejects
 * trailing bytes: a frame has exactly one valid reading, which is what
 * lets the fuzz target check that re-encoding a decoded frame gives back
 * the same bytes. In version 3 it skips them (and the unknown end of a
 * header or a record): a frame that decodes re-encodes to its known part,
 * which re-encodes to itself. Both rules live here, in pr_body_end,
 * preader_end and the record helpers, so no body decoder has its own.
 * Counts are checked against their protocol bound AND against the bytes
 * left (each entry has a known minimum size) before anything is allocated,
 * so a 40-byte frame claiming 4096 keys costs one comparison, not a malloc.
 * The module is pure: no I/O, no nng, no global state besides the
 * thread-local error message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "proto.h"
#include "proto_int.h"

#define PBUF_MIN_CAP 256

/* ---- pbuf: growable little-endian output ---- */

/* pbuf_init -- an empty buffer that owns no memory yet. */
void
pbuf_init(struct pbuf *b)
{
	memset(b, 0, sizeof(*b));
}

/* pbuf_fini -- free the buffer's memory; b is empty again afterwards. */
void
pbuf_fini(struct pbuf *b)
{
	free(b->data);
	pbuf_init(b);
}

/* pbuf_reset -- forget the contents, the error and the version, keep
 * the memory. */
void
pbuf_reset(struct pbuf *b)
{
	b->len = 0;
	b->err = 0;
	b->version = 0;
}

/* pbuf_reserve -- room for n more bytes, or false with b->err set. An
 * encoder that knows its size reserves it first: one allocation instead
 * of a doubling series of reallocs. */
bool
pbuf_reserve(struct pbuf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->err != 0) {
		return false;
	}
	if (n <= b->cap - b->len) {
		return true;
	}
	if (n > SIZE_MAX / 4 - b->len) {
		b->err = -ENOMEM;
		return false;
	}
	cap = b->cap != 0 ? b->cap : PBUF_MIN_CAP;
	while (cap < b->len + n) {
		cap *= 2;
	}
	p = realloc(b->data, cap);
	if (p == NULL) {
		b->err = -ENOMEM;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

/* pbuf_put_bytes -- append n bytes from p (p may be NULL when n == 0). */
void
pbuf_put_bytes(struct pbuf *b, const void *p, size_t n)
{
	if (n == 0 || !pbuf_reserve(b, n)) {
		return;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* pbuf_put_u16 -- append v, little-endian. */
void
pbuf_put_u16(struct pbuf *b, uint16_t v)
{
	uint8_t t[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	pbuf_put_bytes(b, t, sizeof(t));
}

/* pbuf_put_u32 -- append v, little-endian. */
void
pbuf_put_u32(struct pbuf *b, uint32_t v)
{
	uint8_t t[4];

	for (size_t i = 0; i < sizeof(t); i++) {
		t[i] = (uint8_t)(v >> (8 * i));
	}
	pbuf_put_bytes(b, t, sizeof(t));
}

/* pbuf_put_u64 -- append v, little-endian. */
void
pbuf_put_u64(struct pbuf *b, uint64_t v)
{
	uint8_t t[8];

	for (size_t i = 0; i < sizeof(t); i++) {
		t[i] = (uint8_t)(v >> (8 * i));
	}
	pbuf_put_bytes(b, t, sizeof(t));
}

/* ---- preader: bounded input cursor ---- */

/* preader_init -- a reader over buf[0..len); buf may be NULL if len == 0. */
void
preader_init(struct preader *r, const void *buf, size_t len)
{
	r->p = buf;
	r->left = len;
	r->err = 0;
	r->version = PROTO_VERSION;
}

/* preader_bytes -- *p = the next n bytes (pointing into the frame). */
bool
preader_bytes(struct preader *r, size_t n, const uint8_t **p)
{
	if (r->err != 0) {
		return false;
	}
	if (n > r->left) {
		r->err = cxlp_fail(CXLP_E_PROTO,
		    "frame truncated: need %zu bytes, %zu left", n, r->left);
		return false;
	}
	*p = r->p;
	if (n != 0) { /* r->p may be NULL for an empty frame */
		r->p += n;
		r->left -= n;
	}
	return true;
}

/* preader_u16 -- read a little-endian u16. */
bool
preader_u16(struct preader *r, uint16_t *v)
{
	const uint8_t *p;

	if (!preader_bytes(r, 2, &p)) {
		return false;
	}
	*v = (uint16_t)(p[0] | (uint16_t)p[1] << 8);
	return true;
}

/* preader_u32 -- read a little-endian u32. */
bool
preader_u32(struct preader *r, uint32_t *v)
{
	const uint8_t *p;
	uint32_t x = 0;

	if (!preader_bytes(r, 4, &p)) {
		return false;
	}
	for (int i = 3; i >= 0; i--) {
		x = x << 8 | p[i];
	}
	*v = x;
	return true;
}

/* preader_u64 -- read a little-endian u64. */
bool
preader_u64(struct preader *r, uint64_t *v)
{
	const uint8_t *p;
	uint64_t x = 0;

	if (!preader_bytes(r, 8, &p)) {
		return false;
	}
	for (int i = 7; i >= 0; i--) {
		x = x << 8 | p[i];
	}
	*v = x;
	return true;
}

/* skip_tail -- version 3: what is left of the body is a newer minor's */
static void
skip_tail(struct preader *r)
{
	if (preader_v3(r) && r->err == 0) {
		r->p += r->left;
		r->left = 0;
	}
}

/* preader_end -- 0 if the frame was consumed exactly (version 3: what is
 * left skipped) and without error. */
int
preader_end(struct preader *r)
{
	if (r->err != 0) {
		return CXLP_E_PROTO;
	}
	skip_tail(r);
	if (r->left != 0) {
		r->err = cxlp_fail(CXLP_E_PROTO,
		    "%zu trailing bytes after the body", r->left);
		return r->err;
	}
	return 0;
}
/* ---- decoding helpers: name the field that failed ---- */

/* reject -- fail the reader with code (already explained by cxlp_fail). */
int
pr_reject(struct preader *r, int code)
{
	r->err = code;
	return code;
}

bool
pr_get_u16(struct preader *r, uint16_t *v, const char *field)
{
	if (preader_u16(r, v)) {
		return true;
	}
	cxlp_fail(CXLP_E_PROTO, "%s: frame ends inside this field", field);
	return false;
}

bool
pr_get_u32(struct preader *r, uint32_t *v, const char *field)
{
	if (preader_u32(r, v)) {
		return true;
	}
	cxlp_fail(CXLP_E_PROTO, "%s: frame ends inside this field", field);
	return false;
}

bool
pr_get_u64(struct preader *r, uint64_t *v, const char *field)
{
	if (preader_u64(r, v)) {
		return true;
	}
	cxlp_fail(CXLP_E_PROTO, "%s: frame ends inside this field", field);
	return false;
}

/* body_end -- the body must be consumed exactly (version 2), or what
 * this codec does not know of it is skipped (version 3). */
int
pr_body_end(struct preader *r, const char *what)
{
	if (r->err != 0) {
		return r->err;
	}
	skip_tail(r);
	if (r->left != 0) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "%s: %zu trailing bytes after the body", what, r->left));
	}
	return 0;
}

/* check_flags -- flag words may only carry the bits this op knows. */
int
pr_check_flags(struct preader *r, uint32_t flags, uint32_t known,
    const char *field)
{
	if ((flags & ~known) == 0) {
		return 0;
	}
	return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
	    "%s: reserved bits 0x%x set", field, flags & ~known));
}

/* check_batch -- n in 1..CXLP_BATCH_MAX and n entries can fit at all. */
int
pr_check_batch(struct preader *r, uint32_t n, size_t entry_min,
    const char *field)
{
	if (n == 0 || n > CXLP_BATCH_MAX) {
		return pr_reject(r, cxlp_fail(CXLP_E_BATCH,
		    "%s: %u entries, not in 1..%d", field, n, CXLP_BATCH_MAX));
	}
	if (n > r->left / entry_min) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "%s: %u entries cannot fit in the %zu bytes left", field,
		    n, r->left));
	}
	return 0;
}

/* get_string -- u16 len (<= max) then len bytes, pointing into the frame. */
int
pr_get_string(struct preader *r, const char **s, uint16_t *len, size_t max,
    const char *field)
{
	const uint8_t *p;

	if (!pr_get_u16(r, len, field)) {
		return r->err;
	}
	if (*len > max) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "%s: length %u exceeds %zu", field, *len, max));
	}
	if (!preader_bytes(r, *len, &p)) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "%s: length %u but only %zu bytes left", field, *len,
		    r->left));
	}
	*s = (const char *)p;
	return 0;
}

/* get_key -- key i of a batch: u16 len in 1..CXLP_KEY_MAX, then bytes. */
int
pr_get_key(struct preader *r, struct proto_key *k, uint32_t i)
{
	if (!preader_u16(r, &k->len)) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "key %u: frame ends inside its length", i));
	}
	if (k->len == 0 || k->len > CXLP_KEY_MAX) {
		return pr_reject(r, cxlp_fail(CXLP_E_KEYLEN,
		    "key %u: length %u not in 1..%d", i, k->len,
		    CXLP_KEY_MAX));
	}
	if (r->left < k->len) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "key %u: length %u but only %zu bytes left", i, k->len,
		    r->left));
	}
	preader_bytes(r, k->len, &k->data);
	return 0;
}

/* ---- versions: extensible bodies and records (proto.h "Versions") ---- */

bool
pbuf_v3(const struct pbuf *b)
{
	return b->version == 0 || b->version >= 3;
}

bool
preader_v3(const struct preader *r)
{
	return r->version >= 3;
}

/* pbuf_put_rec -- see proto_int.h */
void
pbuf_put_rec(struct pbuf *b, size_t rec)
{
	if (pbuf_v3(b)) {
		pbuf_put_u16(b, (uint16_t)rec);
	}
}

/* pr_get_rec -- see proto_int.h */
int
pr_get_rec(struct preader *r, size_t known, size_t *rec, const char *field)
{
	uint16_t v;

	*rec = known;
	if (!preader_v3(r)) {
		return r->err;
	}
	if (!pr_get_u16(r, &v, field)) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (v < known) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO, "%s: records of "
		    "%u bytes, at least %zu expected", field, v, known));
	}
	*rec = v;
	return 0;
}

/* pr_rec_begin -- see proto_int.h */
int
pr_rec_begin(struct preader *r, size_t rec, struct preader *sub,
    const char *field)
{
	const uint8_t *p = NULL;

	preader_init(sub, NULL, 0);
	sub->version = r->version;
	if (r->err != 0) {
		sub->err = r->err;
		return r->err;
	}
	if (rec > r->left) {
		sub->err = pr_reject(r, cxlp_fail(CXLP_E_PROTO, "%s: record "
		    "of %zu bytes, %zu left", field, rec, r->left));
		return sub->err;
	}
	preader_bytes(r, rec, &p);
	sub->p = p;
	sub->left = rec;
	return 0;
}

/* pr_rec_end -- see proto_int.h */
int
pr_rec_end(struct preader *r, struct preader *sub)
{
	if (sub->err != 0) {
		return pr_reject(r, sub->err);
	}
	skip_tail(sub);
	return 0;
}

/* pbuf_put_len16 -- see proto_int.h */
void
pbuf_put_len16(struct pbuf *b, size_t *at)
{
	*at = b->len;
	pbuf_put_u16(b, 0);
}

/* pbuf_fix_len16 -- see proto_int.h */
void
pbuf_fix_len16(struct pbuf *b, size_t at)
{
	size_t n = b->len - at - 2;

	if (b->err != 0) {
		return;
	}
	if (n > UINT16_MAX) {
		b->err = CXLP_E_PROTO;
		return;
	}
	b->data[at] = (uint8_t)n;
	b->data[at + 1] = (uint8_t)(n >> 8);
}

/* ---- headers ---- */

/* proto_version_ok -- see proto.h */
bool
proto_version_ok(unsigned v)
{
	return v >= PROTO_VERSION_MIN && v <= PROTO_VERSION;
}

/* put_v3_tail -- version 3: the header's own length and the minor */
static void
put_v3_tail(struct pbuf *b, size_t hdr_len)
{
	pbuf_put_u16(b, (uint16_t)hdr_len);
	pbuf_put_u16(b, PROTO_MINOR);
}

/* get_v3_tail -- version 3: hdr_len (>= what 3.0 wrote, within the
 * frame) and the minor, then the unknown end of the header skipped */
static int
get_v3_tail(struct preader *r, size_t known, uint16_t *minor,
    const char *what)
{
	const uint8_t *p;
	uint16_t hdr_len = 0;

	*minor = 0;
	if (!preader_v3(r)) {
		return 0;
	}
	if (!pr_get_u16(r, &hdr_len, "header.hdr_len") ||
	    !pr_get_u16(r, minor, "header.minor")) {
		return CXLP_E_PROTO;
	}
	if (hdr_len < known || hdr_len - known > r->left) {
		return cxlp_fail(CXLP_E_PROTO, "%s.hdr_len: %u, not in "
		    "%zu..%zu", what, hdr_len, known, known + r->left);
	}
	preader_bytes(r, hdr_len - known, &p);
	return 0;
}

/* proto_put_req_hdr -- append a request header of h->version (0 means
 * PROTO_VERSION, so a zeroed struct encodes a current frame), which the
 * body appended after it follows (b->version). A version the codec does
 * not speak is written as given (tests build such frames), with the
 * layout of the nearest one. */
void
proto_put_req_hdr(struct pbuf *b, const struct proto_req_hdr *h)
{
	uint16_t v = h->version != 0 ? h->version : PROTO_VERSION;

	b->version = v;
	pbuf_put_u32(b, PROTO_MAGIC);
	pbuf_put_u16(b, v);
	pbuf_put_u16(b, h->op);
	pbuf_put_u64(b, h->req_id);
	pbuf_put_u64(b, h->session);
	pbuf_put_u64(b, h->token);
	if (v >= 3) {
		put_v3_tail(b, PROTO_REQ_HDR_LEN_V3);
	}
}

/* proto_put_rep_hdr -- append a reply header; sets PROTO_REPLY on the op.
 * A zero h->version means PROTO_VERSION; b->version becomes it, as
 * proto_put_req_hdr's. The term is written in version 3 only. */
void
proto_put_rep_hdr(struct pbuf *b, const struct proto_rep_hdr *h)
{
	uint16_t v = h->version != 0 ? h->version : PROTO_VERSION;
	bool msg = h->status != 0 && h->msg_len != 0 && h->msg != NULL;
	uint16_t mlen = h->msg_len < PROTO_ERRMSG_MAX ? h->msg_len :
	    PROTO_ERRMSG_MAX;

	b->version = v;
	pbuf_put_u32(b, PROTO_MAGIC);
	pbuf_put_u16(b, v);
	pbuf_put_u16(b, (uint16_t)(h->op | PROTO_REPLY));
	pbuf_put_u64(b, h->req_id);
	pbuf_put_u32(b, (uint32_t)h->status);
	pbuf_put_u32(b, msg ? PROTO_REP_F_MSG :
	    h->status == 0 && h->ask ? PROTO_REP_F_ASK : 0);
	if (v >= 3) {
		pbuf_put_u64(b, h->term);
		put_v3_tail(b, PROTO_REP_HDR_LEN_V3);
	}
	if (msg) {
		pbuf_put_u16(b, mlen);
		pbuf_put_bytes(b, h->msg, mlen);
	}
}

/* check_frame -- frame size, magic and version of either header. */
static int
check_frame(size_t len, uint32_t magic, uint16_t version, const char *what)
{
	if (len > PROTO_FRAME_MAX) {
		return cxlp_fail(CXLP_E_PROTO, "%s: frame of %zu bytes exceeds "
		    "%zu", what, len, (size_t)PROTO_FRAME_MAX);
	}
	if (magic != PROTO_MAGIC) {
		return cxlp_fail(CXLP_E_PROTO, "%s.magic: 0x%08x, not \"CXLP\"",
		    what, magic);
	}
	if (!proto_version_ok(version)) {
		return cxlp_fail(CXLP_E_VERSION, "%s.version: %u, this side "
		    "speaks %u..%u", what, version, PROTO_VERSION_MIN,
		    PROTO_VERSION);
	}
	return 0;
}

/* check_op -- the reply bit must be as expected and the op known. */
static int
check_op(uint16_t op, bool reply, const char *what)
{
	unsigned base = op & ~PROTO_REPLY;

	if (((op & PROTO_REPLY) != 0) != reply) {
		return cxlp_fail(CXLP_E_PROTO, "%s.op: 0x%x %s the reply bit",
		    what, op, reply ? "lacks" : "has");
	}
	if (base == 0 || base > PROTO_OP_MAX) {
		return cxlp_fail(CXLP_E_BADOP, "%s.op: unknown operation %u",
		    what, base);
	}
	return 0;
}

/* proto_get_req_hdr -- decode a request header. h is filled from whatever
 * the frame holds even on failure (so a server can echo req_id in its error
 * reply); on failure *body is a failed reader. */
int
proto_get_req_hdr(const void *frame, size_t len, struct proto_req_hdr *h,
    struct preader *body)
{
	uint32_t magic = 0;
	int rc;

	memset(h, 0, sizeof(*h));
	preader_init(body, frame, len);
	if (!pr_get_u32(body, &magic, "request.magic") ||
	    !pr_get_u16(body, &h->version, "request.version") ||
	    !pr_get_u16(body, &h->op, "request.op") ||
	    !pr_get_u64(body, &h->req_id, "request.req_id") ||
	    !pr_get_u64(body, &h->session, "request.session") ||
	    !pr_get_u64(body, &h->token, "request.token")) {
		return pr_reject(body, CXLP_E_PROTO);
	}
	rc = check_frame(len, magic, h->version, "request");
	body->version = h->version;
	if (rc == 0) {
		rc = get_v3_tail(body, PROTO_REQ_HDR_LEN_V3, &h->minor,
		    "request");
	}
	if (rc == 0) {
		rc = check_op(h->op, false, "request");
	}
	return rc != 0 ? pr_reject(body, rc) : 0;
}

/* The reason text of an error reply (PROTO_REP_F_MSG): u16 len in
 * 1..PROTO_ERRMSG_MAX and the text, which must end the frame. */
static int
get_reason(struct preader *body, struct proto_rep_hdr *h)
{
	int rc = pr_get_string(body, &h->msg, &h->msg_len, PROTO_ERRMSG_MAX,
	    "reply.reason");

	if (rc == 0 && h->msg_len == 0) {
		rc = cxlp_fail(CXLP_E_PROTO, "reply.reason: empty");
	}
	return rc != 0 ? rc : pr_body_end(body, "reply.reason");
}

/* check_status -- a reply's status is 0 or negative; only 0 has a body,
 * but an error reply with PROTO_REP_F_MSG carries its reason. */
static int
check_status(struct preader *body, struct proto_rep_hdr *h, uint32_t flags)
{
	int32_t status = h->status;

	if ((flags & ~(PROTO_REP_F_MSG | PROTO_REP_F_ASK)) != 0 ||
	    ((flags & PROTO_REP_F_MSG) && status == 0) ||
	    ((flags & PROTO_REP_F_ASK) && status != 0)) {
		return cxlp_fail(CXLP_E_PROTO, "reply.flags: 0x%x with status "
		    "%d", flags, status);
	}
	h->ask = (flags & PROTO_REP_F_ASK) != 0;
	if (status > 0) {
		return cxlp_fail(CXLP_E_PROTO, "reply.status: %d is positive",
		    status);
	}
	if (flags & PROTO_REP_F_MSG) {
		return get_reason(body, h);
	}
	if (status != 0) {
		skip_tail(body); /* version 3: a newer minor's */
	}
	if (status != 0 && body->left != 0) {
		return cxlp_fail(CXLP_E_PROTO, "reply.status: %d but %zu body "
		    "bytes follow", status, body->left);
	}
	return 0;
}

/* proto_get_rep_hdr -- decode a reply header (h->op without PROTO_REPLY).
 * A reply with a non-zero status must have an empty body, or only its
 * reason (h->msg, into the frame; the body is then consumed). On failure
 * *body is a failed reader. */
int
proto_get_rep_hdr(const void *frame, size_t len, struct proto_rep_hdr *h,
    struct preader *body)
{
	uint32_t magic = 0, status = 0, flags = 0;
	uint16_t op = 0;
	int rc;

	memset(h, 0, sizeof(*h));
	preader_init(body, frame, len);
	if (!pr_get_u32(body, &magic, "reply.magic") ||
	    !pr_get_u16(body, &h->version, "reply.version") ||
	    !pr_get_u16(body, &op, "reply.op") ||
	    !pr_get_u64(body, &h->req_id, "reply.req_id") ||
	    !pr_get_u32(body, &status, "reply.status") ||
	    !pr_get_u32(body, &flags, "reply.flags")) {
		return pr_reject(body, CXLP_E_PROTO);
	}
	h->op = (uint16_t)(op & ~PROTO_REPLY);
	h->status = (int32_t)status;
	rc = check_frame(len, magic, h->version, "reply");
	body->version = h->version;
	if (rc == 0 && preader_v3(body) &&
	    !pr_get_u64(body, &h->term, "reply.term")) {
		rc = CXLP_E_PROTO;
	}
	if (rc == 0) {
		rc = get_v3_tail(body, PROTO_REP_HDR_LEN_V3, &h->minor,
		    "reply");
	}
	if (rc == 0) {
		rc = check_op(op, true, "reply");
	}
	if (rc == 0) {
		rc = check_status(body, h, flags);
	}
	return rc != 0 ? pr_reject(body, rc) : 0;
}

/* proto_op_name -- a static name for op, "UNKNOWN" if there is none. */
const char *
proto_op_name(unsigned op)
{
	static const char *const names[] = {
		[PROTO_OP_HELLO] = "HELLO",
		[PROTO_OP_REGION_ALLOC] = "REGION_ALLOC",
		[PROTO_OP_REGION_FREE] = "REGION_FREE",
		[PROTO_OP_REGISTER] = "REGISTER",
		[PROTO_OP_LOOKUP] = "LOOKUP",
		[PROTO_OP_EXISTS] = "EXISTS",
		[PROTO_OP_PIN] = "PIN",
		[PROTO_OP_UNPIN] = "UNPIN",
		[PROTO_OP_DELETE] = "DELETE",
		[PROTO_OP_STATS] = "STATS",
		[PROTO_OP_HEARTBEAT] = "HEARTBEAT",
		[PROTO_OP_BYE] = "BYE",
		[PROTO_OP_SESSIONS] = "SESSIONS",
		[PROTO_OP_RECLAIM] = "RECLAIM",
		[PROTO_OP_LEASE] = "LEASE",
		[PROTO_OP_GROUP] = "GROUP",
		[PROTO_OP_GROUP_REGISTER] = "GROUP_REGISTER",
		[PROTO_OP_GROUP_LOOKUP] = "GROUP_LOOKUP",
	};

	if (op >= sizeof(names) / sizeof(names[0]) || names[op] == NULL) {
		return "UNKNOWN";
	}
	return names[op];
}

/* proto_op_version -- see proto.h: the ops of version 1 but for those
 * version 2 added (request groups came within 2: a version-2 server
 * without them answers CXLP_E_BADOP, which the handler names). */
unsigned
proto_op_version(unsigned op)
{
	if (op == 0 || op > PROTO_OP_MAX) {
		return 0;
	}
	return op >= PROTO_OP_RECLAIM ? 2 : 1;
}

/* proto_op_check -- see proto.h */
int
proto_op_check(unsigned op, uint16_t version)
{
	unsigned since = proto_op_version(op);

	if (since == 0) {
		return cxlp_fail(CXLP_E_BADOP, "op %u: no protocol version has "
		    "it", op);
	}
	if (version < since) {
		return cxlp_fail(CXLP_E_VERSION, "%s needs protocol version "
		    "%u; the session speaks %u (the metaserver is older): not "
		    "sent", proto_op_name(op), since, version);
	}
	return 0;
}
