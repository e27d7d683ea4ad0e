/*
 * proto.c -- the one codec of the cxlpool wire protocol (layouts: proto.h).
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
 * Every public body decoder reads one whole body and rejects trailing
 * bytes: a frame has exactly one valid reading, which is what lets the fuzz
 * target check that re-encoding a decoded frame gives back the same bytes.
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

#define PBUF_MIN_CAP 256
/* Smallest encodings of one batch entry, to bound n by the bytes left. The
 * key bytes are not counted, so that an empty key is still reported as
 * CXLP_E_KEYLEN rather than as a short frame. */
#define KEY_ENTRY_MIN 2                    /* u16 len */
#define REG_ENTRY_MIN (KEY_ENTRY_MIN + 20) /* + u32 region, u64 off, len */
#define STAT_LEN 8
/* id, pid, flags, start_time, instance, regions, pins, u16 host len */
#define SESSION_ENTRY_MIN 42

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

/* pbuf_reset -- forget the contents and the error, keep the memory. */
void
pbuf_reset(struct pbuf *b)
{
	b->len = 0;
	b->err = 0;
}

/* pbuf_reserve -- room for n more bytes, or false with b->err set. */
static bool
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

/* preader_end -- 0 if the frame was consumed exactly and without error. */
int
preader_end(struct preader *r)
{
	if (r->err != 0) {
		return CXLP_E_PROTO;
	}
	if (r->left != 0) {
		r->err = cxlp_fail(CXLP_E_PROTO,
		    "%zu trailing bytes after the body", r->left);
		return r->err;
	}
	return 0;
}

/* ---- decoding helpers: name the field that failed ---- */

/* reject -- fail the reader with code (already explained by cxlp_fail). */
static int
reject(struct preader *r, int code)
{
	r->err = code;
	return code;
}

static bool
get_u16(struct preader *r, uint16_t *v, const char *field)
{
	if (preader_u16(r, v)) {
		return true;
	}
	cxlp_fail(CXLP_E_PROTO, "%s: frame ends inside this field", field);
	return false;
}

static bool
get_u32(struct preader *r, uint32_t *v, const char *field)
{
	if (preader_u32(r, v)) {
		return true;
	}
	cxlp_fail(CXLP_E_PROTO, "%s: frame ends inside this field", field);
	return false;
}

static bool
get_u64(struct preader *r, uint64_t *v, const char *field)
{
	if (preader_u64(r, v)) {
		return true;
	}
	cxlp_fail(CXLP_E_PROTO, "%s: frame ends inside this field", field);
	return false;
}

/* body_end -- the body must be consumed exactly. */
static int
body_end(struct preader *r, const char *what)
{
	if (r->err != 0) {
		return r->err;
	}
	if (r->left != 0) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "%s: %zu trailing bytes after the body", what, r->left));
	}
	return 0;
}

/* check_flags -- flag words may only carry the bits this op knows. */
static int
check_flags(struct preader *r, uint32_t flags, uint32_t known,
    const char *field)
{
	if ((flags & ~known) == 0) {
		return 0;
	}
	return reject(r, cxlp_fail(CXLP_E_PROTO,
	    "%s: reserved bits 0x%x set", field, flags & ~known));
}

/* check_batch -- n in 1..CXLP_BATCH_MAX and n entries can fit at all. */
static int
check_batch(struct preader *r, uint32_t n, size_t entry_min,
    const char *field)
{
	if (n == 0 || n > CXLP_BATCH_MAX) {
		return reject(r, cxlp_fail(CXLP_E_BATCH,
		    "%s: %u entries, not in 1..%d", field, n, CXLP_BATCH_MAX));
	}
	if (n > r->left / entry_min) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "%s: %u entries cannot fit in the %zu bytes left", field,
		    n, r->left));
	}
	return 0;
}

/* get_string -- u16 len (<= max) then len bytes, pointing into the frame. */
static int
get_string(struct preader *r, const char **s, uint16_t *len, size_t max,
    const char *field)
{
	const uint8_t *p;

	if (!get_u16(r, len, field)) {
		return r->err;
	}
	if (*len > max) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "%s: length %u exceeds %zu", field, *len, max));
	}
	if (!preader_bytes(r, *len, &p)) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "%s: length %u but only %zu bytes left", field, *len,
		    r->left));
	}
	*s = (const char *)p;
	return 0;
}

/* get_key -- key i of a batch: u16 len in 1..CXLP_KEY_MAX, then bytes. */
static int
get_key(struct preader *r, struct proto_key *k, uint32_t i)
{
	if (!preader_u16(r, &k->len)) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "key %u: frame ends inside its length", i));
	}
	if (k->len == 0 || k->len > CXLP_KEY_MAX) {
		return reject(r, cxlp_fail(CXLP_E_KEYLEN,
		    "key %u: length %u not in 1..%d", i, k->len,
		    CXLP_KEY_MAX));
	}
	if (r->left < k->len) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "key %u: length %u but only %zu bytes left", i, k->len,
		    r->left));
	}
	preader_bytes(r, k->len, &k->data);
	return 0;
}

/* ---- headers ---- */

/* proto_put_req_hdr -- append a request header. A zero h->version means
 * PROTO_VERSION (so a zeroed struct encodes a current frame). */
void
proto_put_req_hdr(struct pbuf *b, const struct proto_req_hdr *h)
{
	pbuf_put_u32(b, PROTO_MAGIC);
	pbuf_put_u16(b, h->version != 0 ? h->version : PROTO_VERSION);
	pbuf_put_u16(b, h->op);
	pbuf_put_u64(b, h->req_id);
	pbuf_put_u64(b, h->session);
	pbuf_put_u64(b, h->token);
}

/* proto_put_rep_hdr -- append a reply header; sets PROTO_REPLY on the op.
 * A zero h->version means PROTO_VERSION. */
void
proto_put_rep_hdr(struct pbuf *b, const struct proto_rep_hdr *h)
{
	pbuf_put_u32(b, PROTO_MAGIC);
	pbuf_put_u16(b, h->version != 0 ? h->version : PROTO_VERSION);
	pbuf_put_u16(b, (uint16_t)(h->op | PROTO_REPLY));
	pbuf_put_u64(b, h->req_id);
	pbuf_put_u32(b, (uint32_t)h->status);
	pbuf_put_u32(b, 0);
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
	if (version != PROTO_VERSION) {
		return cxlp_fail(CXLP_E_VERSION, "%s.version: %u, expected %u",
		    what, version, PROTO_VERSION);
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
	if (!get_u32(body, &magic, "request.magic") ||
	    !get_u16(body, &h->version, "request.version") ||
	    !get_u16(body, &h->op, "request.op") ||
	    !get_u64(body, &h->req_id, "request.req_id") ||
	    !get_u64(body, &h->session, "request.session") ||
	    !get_u64(body, &h->token, "request.token")) {
		return reject(body, CXLP_E_PROTO);
	}
	rc = check_frame(len, magic, h->version, "request");
	if (rc == 0) {
		rc = check_op(h->op, false, "request");
	}
	return rc != 0 ? reject(body, rc) : 0;
}

/* check_status -- a reply's status is 0 or negative; only 0 has a body. */
static int
check_status(struct preader *body, int32_t status, uint32_t reserved)
{
	if (reserved != 0) {
		return cxlp_fail(CXLP_E_PROTO, "reply.reserved: 0x%x, not 0",
		    reserved);
	}
	if (status > 0) {
		return cxlp_fail(CXLP_E_PROTO, "reply.status: %d is positive",
		    status);
	}
	if (status != 0 && body->left != 0) {
		return cxlp_fail(CXLP_E_PROTO, "reply.status: %d but %zu body "
		    "bytes follow", status, body->left);
	}
	return 0;
}

/* proto_get_rep_hdr -- decode a reply header (h->op without PROTO_REPLY).
 * A reply with a non-zero status must have an empty body. On failure
 * *body is a failed reader. */
int
proto_get_rep_hdr(const void *frame, size_t len, struct proto_rep_hdr *h,
    struct preader *body)
{
	uint32_t magic = 0, status = 0, reserved = 0;
	uint16_t op = 0;
	int rc;

	memset(h, 0, sizeof(*h));
	preader_init(body, frame, len);
	if (!get_u32(body, &magic, "reply.magic") ||
	    !get_u16(body, &h->version, "reply.version") ||
	    !get_u16(body, &op, "reply.op") ||
	    !get_u64(body, &h->req_id, "reply.req_id") ||
	    !get_u32(body, &status, "reply.status") ||
	    !get_u32(body, &reserved, "reply.reserved")) {
		return reject(body, CXLP_E_PROTO);
	}
	h->op = (uint16_t)(op & ~PROTO_REPLY);
	h->status = (int32_t)status;
	rc = check_frame(len, magic, h->version, "reply");
	if (rc == 0) {
		rc = check_op(op, true, "reply");
	}
	if (rc == 0) {
		rc = check_status(body, h->status, reserved);
	}
	return rc != 0 ? reject(body, rc) : 0;
}

/* ---- HELLO ---- */

/* proto_put_hello -- append a HELLO request body. */
void
proto_put_hello(struct pbuf *b, const struct proto_hello *m)
{
	pbuf_put_u32(b, m->pid);
	pbuf_put_u32(b, m->flags);
	pbuf_put_u64(b, m->start_time);
	pbuf_put_u64(b, m->instance_id);
	pbuf_put_u16(b, m->host_len);
	pbuf_put_bytes(b, m->host, m->host_len);
	pbuf_put_u16(b, m->secret_len);
	pbuf_put_bytes(b, m->secret, m->secret_len);
}

/* proto_get_hello -- decode a HELLO request body; m->host points into the
 * frame. Returns 0 or CXLP_E_PROTO. */
int
proto_get_hello(struct preader *r, struct proto_hello *m)
{
	const char *secret = NULL;
	int rc;

	memset(m, 0, sizeof(*m));
	if (!get_u32(r, &m->pid, "hello.pid") ||
	    !get_u32(r, &m->flags, "hello.flags") ||
	    !get_u64(r, &m->start_time, "hello.start_time") ||
	    !get_u64(r, &m->instance_id, "hello.instance_id")) {
		return reject(r, CXLP_E_PROTO);
	}
	rc = check_flags(r, m->flags, PROTO_HELLO_REATTACH, "hello.flags");
	if (rc == 0) {
		rc = get_string(r, &m->host, &m->host_len, PROTO_HOST_MAX,
		    "hello.hostname");
	}
	if (rc == 0) {
		rc = get_string(r, &secret, &m->secret_len, PROTO_SECRET_MAX,
		    "hello.secret");
		m->secret = m->secret_len > 0 ? (const uint8_t *)secret : NULL;
	}
	return rc != 0 ? rc : body_end(r, "hello");
}

/* proto_put_welcome -- append a HELLO reply body. */
void
proto_put_welcome(struct pbuf *b, const struct proto_welcome *m)
{
	pbuf_put_u64(b, m->session);
	pbuf_put_u64(b, m->token);
	pbuf_put_u64(b, m->pool_size);
	pbuf_put_u64(b, m->align);
	pbuf_put_u16(b, m->path_len);
	pbuf_put_bytes(b, m->path, m->path_len);
}

/* proto_get_welcome -- decode a HELLO reply body; m->path points into the
 * frame. Returns 0 or CXLP_E_PROTO. */
int
proto_get_welcome(struct preader *r, struct proto_welcome *m)
{
	int rc;

	memset(m, 0, sizeof(*m));
	if (!get_u64(r, &m->session, "welcome.session") ||
	    !get_u64(r, &m->token, "welcome.token") ||
	    !get_u64(r, &m->pool_size, "welcome.pool_size") ||
	    !get_u64(r, &m->align, "welcome.align")) {
		return reject(r, CXLP_E_PROTO);
	}
	rc = get_string(r, &m->path, &m->path_len, PROTO_PATH_MAX,
	    "welcome.path");
	return rc != 0 ? rc : body_end(r, "welcome");
}

/* ---- REGION_ALLOC / REGION_FREE ---- */

/* proto_put_region_req -- append a REGION_ALLOC request body. */
void
proto_put_region_req(struct pbuf *b, uint64_t len, uint64_t page_size)
{
	pbuf_put_u64(b, len);
	pbuf_put_u64(b, page_size);
}

/* proto_get_region_req -- decode a REGION_ALLOC request body. */
int
proto_get_region_req(struct preader *r, uint64_t *len, uint64_t *page_size)
{
	*len = 0;
	*page_size = 0;
	if (!get_u64(r, len, "region_alloc.len") ||
	    !get_u64(r, page_size, "region_alloc.page_size")) {
		return reject(r, CXLP_E_PROTO);
	}
	return body_end(r, "region_alloc");
}

/* proto_put_region_free -- append a REGION_FREE request body. */
void
proto_put_region_free(struct pbuf *b, uint32_t region, uint32_t gen)
{
	pbuf_put_u32(b, region);
	pbuf_put_u32(b, gen);
}

/* proto_get_region_free -- decode a REGION_FREE request body. */
int
proto_get_region_free(struct preader *r, uint32_t *region, uint32_t *gen)
{
	*region = 0;
	*gen = 0;
	if (!get_u32(r, region, "region_free.region") ||
	    !get_u32(r, gen, "region_free.gen")) {
		return reject(r, CXLP_E_PROTO);
	}
	return body_end(r, "region_free");
}

static void
put_loc(struct pbuf *b, const struct proto_loc *loc)
{
	pbuf_put_u32(b, loc->region);
	pbuf_put_u32(b, loc->gen);
	pbuf_put_u64(b, loc->region_off);
	pbuf_put_u64(b, loc->region_len);
	pbuf_put_u64(b, loc->off);
	pbuf_put_u64(b, loc->len);
}

static bool
get_loc(struct preader *r, struct proto_loc *loc)
{
	return get_u32(r, &loc->region, "loc.region") &&
	    get_u32(r, &loc->gen, "loc.gen") &&
	    get_u64(r, &loc->region_off, "loc.region_off") &&
	    get_u64(r, &loc->region_len, "loc.region_len") &&
	    get_u64(r, &loc->off, "loc.off") &&
	    get_u64(r, &loc->len, "loc.len");
}

/* proto_put_loc -- append a location (the REGION_ALLOC reply body). */
void
proto_put_loc(struct pbuf *b, const struct proto_loc *loc)
{
	put_loc(b, loc);
}

/* proto_get_loc -- decode a location that is the whole body. */
int
proto_get_loc(struct preader *r, struct proto_loc *loc)
{
	memset(loc, 0, sizeof(*loc));
	if (!get_loc(r, loc)) {
		return reject(r, CXLP_E_PROTO);
	}
	return body_end(r, "loc");
}

/* ---- key batches ---- */

/* proto_put_keys -- append flags, n and the keys. Writes any key it can
 * represent (so tests can build bad frames); n > UINT32_MAX or a length
 * > UINT16_MAX cannot be encoded and sets b->err to CXLP_E_BATCH or
 * CXLP_E_KEYLEN. */
void
proto_put_keys(struct pbuf *b, uint32_t flags, size_t n,
    const void *const keys[], const size_t key_lens[])
{
	if (n > UINT32_MAX && b->err == 0) {
		b->err = CXLP_E_BATCH;
	}
	pbuf_put_u32(b, flags);
	pbuf_put_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n && b->err == 0; i++) {
		if (key_lens[i] > UINT16_MAX) {
			b->err = CXLP_E_KEYLEN;
			return;
		}
		pbuf_put_u16(b, (uint16_t)key_lens[i]);
		pbuf_put_bytes(b, keys[i], key_lens[i]);
	}
}

/* proto_get_keys -- decode a key batch. Returns 0 with *keys a malloc'd
 * array of *n keys pointing into the frame (caller frees the array), or
 * CXLP_E_PROTO, CXLP_E_BATCH, CXLP_E_KEYLEN, -ENOMEM with *keys NULL. */
int
proto_get_keys(struct preader *r, uint32_t *flags, struct proto_key **keys,
    uint32_t *n)
{
	struct proto_key *k;
	uint32_t count = 0;
	int rc;

	*keys = NULL;
	*n = 0;
	*flags = 0;
	if (!get_u32(r, flags, "keys.flags") ||
	    !get_u32(r, &count, "keys.n")) {
		return reject(r, CXLP_E_PROTO);
	}
	rc = check_flags(r, *flags, PROTO_F_PIN, "keys.flags");
	if (rc == 0) {
		rc = check_batch(r, count, KEY_ENTRY_MIN, "keys.n");
	}
	if (rc != 0) {
		return rc;
	}
	k = calloc(count, sizeof(*k));
	if (k == NULL) {
		return reject(r, cxlp_fail(-ENOMEM, "keys: no memory for %u "
		    "keys", count));
	}
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		rc = get_key(r, &k[i], i);
	}
	if (rc == 0) {
		rc = body_end(r, "keys");
	}
	if (rc != 0) {
		free(k);
		return rc;
	}
	*keys = k;
	*n = count;
	return 0;
}

/* ---- REGISTER ---- */

/* proto_put_regs -- append a REGISTER body (same encoding limits as
 * proto_put_keys). */
void
proto_put_regs(struct pbuf *b, uint32_t flags, size_t n,
    const struct proto_reg *regs)
{
	if (n > UINT32_MAX && b->err == 0) {
		b->err = CXLP_E_BATCH;
	}
	pbuf_put_u32(b, flags);
	pbuf_put_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n && b->err == 0; i++) {
		pbuf_put_u16(b, regs[i].key.len);
		pbuf_put_bytes(b, regs[i].key.data, regs[i].key.len);
		pbuf_put_u32(b, regs[i].region);
		pbuf_put_u64(b, regs[i].off);
		pbuf_put_u64(b, regs[i].len);
	}
}

static int
get_reg(struct preader *r, struct proto_reg *g, uint32_t i)
{
	int rc = get_key(r, &g->key, i);

	if (rc != 0) {
		return rc;
	}
	if (!get_u32(r, &g->region, "register.region") ||
	    !get_u64(r, &g->off, "register.off") ||
	    !get_u64(r, &g->len, "register.len")) {
		return reject(r, CXLP_E_PROTO);
	}
	return 0;
}

/* proto_get_regs -- decode a REGISTER body. Returns 0 with *regs a
 * malloc'd array of *n entries whose keys point into the frame (caller
 * frees the array), or an error as proto_get_keys with *regs NULL. */
int
proto_get_regs(struct preader *r, uint32_t *flags, struct proto_reg **regs,
    uint32_t *n)
{
	struct proto_reg *g;
	uint32_t count = 0;
	int rc;

	*regs = NULL;
	*n = 0;
	*flags = 0;
	if (!get_u32(r, flags, "register.flags") ||
	    !get_u32(r, &count, "register.n")) {
		return reject(r, CXLP_E_PROTO);
	}
	rc = check_flags(r, *flags, PROTO_F_PIN, "register.flags");
	if (rc == 0) {
		rc = check_batch(r, count, REG_ENTRY_MIN, "register.n");
	}
	if (rc != 0) {
		return rc;
	}
	g = calloc(count, sizeof(*g));
	if (g == NULL) {
		return reject(r, cxlp_fail(-ENOMEM, "register: no memory for "
		    "%u entries", count));
	}
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		rc = get_reg(r, &g[i], i);
	}
	if (rc == 0) {
		rc = body_end(r, "register");
	}
	if (rc != 0) {
		free(g);
		return rc;
	}
	*regs = g;
	*n = count;
	return 0;
}

/* ---- results ---- */

/* proto_put_results -- append n results. An entry whose status is not 0
 * is written with a zero loc, as the protocol requires. */
void
proto_put_results(struct pbuf *b, size_t n, const struct proto_result *res)
{
	static const struct proto_loc zero;

	if (n > UINT32_MAX && b->err == 0) {
		b->err = CXLP_E_BATCH;
	}
	pbuf_put_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n && b->err == 0; i++) {
		pbuf_put_u32(b, (uint32_t)res[i].status);
		pbuf_put_u32(b, res[i].flags);
		put_loc(b, res[i].status == 0 ? &res[i].loc : &zero);
	}
}

static int
get_result(struct preader *r, struct proto_result *res, uint32_t i)
{
	static const struct proto_loc zero;
	uint32_t status;

	if (!get_u32(r, &status, "result.status") ||
	    !get_u32(r, &res->flags, "result.flags") ||
	    !get_loc(r, &res->loc)) {
		return reject(r, CXLP_E_PROTO);
	}
	res->status = (int32_t)status;
	if (res->status > 0) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "result %u: status %d is positive", i, res->status));
	}
	if (check_flags(r, res->flags, PROTO_R_NEW, "result.flags") != 0) {
		return r->err;
	}
	if (res->status != 0 && memcmp(&res->loc, &zero, sizeof(zero)) != 0) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "result %u: status %d with a non-zero loc", i,
		    res->status));
	}
	return 0;
}

/* proto_get_results -- decode a result list into res[0..max). Returns 0
 * and *n, or CXLP_E_PROTO (n > max, truncated, bad entry) with *n = 0. */
int
proto_get_results(struct preader *r, struct proto_result *res, uint32_t max,
    uint32_t *n)
{
	uint32_t count = 0;
	int rc = 0;

	*n = 0;
	if (!get_u32(r, &count, "results.n")) {
		return reject(r, CXLP_E_PROTO);
	}
	if (count > max) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "results.n: %u, at most %u expected", count, max));
	}
	if (count > r->left / PROTO_RESULT_LEN) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "results.n: %u results cannot fit in %zu bytes", count,
		    r->left));
	}
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		rc = get_result(r, &res[i], i);
	}
	if (rc == 0) {
		rc = body_end(r, "results");
	}
	if (rc == 0) {
		*n = count;
	}
	return rc;
}

/* ---- STATS ---- */

/* proto_put_stats -- append n statistics (n <= PROTO_STATS_MAX expected;
 * larger n is written as given, for tests of the bound). */
void
proto_put_stats(struct pbuf *b, size_t n, const uint64_t *values)
{
	if (n > UINT32_MAX && b->err == 0) {
		b->err = CXLP_E_PROTO;
	}
	pbuf_put_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n && b->err == 0; i++) {
		pbuf_put_u64(b, values[i]);
	}
}

/* proto_get_stats -- decode a STATS reply body. Stores the first max
 * values and skips the rest; *n is the number stored (min(sent, max)).
 * Returns 0 or CXLP_E_PROTO (more than PROTO_STATS_MAX, truncated). */
int
proto_get_stats(struct preader *r, uint64_t *values, uint32_t max,
    uint32_t *n)
{
	uint32_t count = 0;
	uint64_t v = 0;

	*n = 0;
	if (!get_u32(r, &count, "stats.n")) {
		return reject(r, CXLP_E_PROTO);
	}
	if (count > PROTO_STATS_MAX) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "stats.n: %u exceeds %d", count, PROTO_STATS_MAX));
	}
	if (count > r->left / STAT_LEN) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "stats.n: %u values cannot fit in %zu bytes", count,
		    r->left));
	}
	for (uint32_t i = 0; i < count; i++) {
		preader_u64(r, &v);
		if (i < max) {
			values[i] = v;
		}
	}
	if (body_end(r, "stats") != 0) {
		return r->err;
	}
	*n = count < max ? count : max;
	return 0;
}

/* ---- SESSIONS ---- */

/* proto_put_sessions -- append n session entries (n <= PROTO_SESSIONS_MAX
 * expected; larger n is written as given, for tests of the bound). */
void
proto_put_sessions(struct pbuf *b, size_t n,
    const struct proto_session_info *v)
{
	if (n > UINT32_MAX && b->err == 0) {
		b->err = CXLP_E_PROTO;
	}
	pbuf_put_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n && b->err == 0; i++) {
		pbuf_put_u64(b, v[i].id);
		pbuf_put_u32(b, v[i].pid);
		pbuf_put_u32(b, v[i].flags);
		pbuf_put_u64(b, v[i].start_time);
		pbuf_put_u64(b, v[i].instance);
		pbuf_put_u32(b, v[i].regions);
		pbuf_put_u32(b, v[i].pins);
		pbuf_put_u16(b, v[i].host_len);
		pbuf_put_bytes(b, v[i].host, v[i].host_len);
	}
}

static int
get_session(struct preader *r, struct proto_session_info *s)
{
	if (!get_u64(r, &s->id, "session.id") ||
	    !get_u32(r, &s->pid, "session.pid") ||
	    !get_u32(r, &s->flags, "session.flags") ||
	    !get_u64(r, &s->start_time, "session.start_time") ||
	    !get_u64(r, &s->instance, "session.instance") ||
	    !get_u32(r, &s->regions, "session.regions") ||
	    !get_u32(r, &s->pins, "session.pins")) {
		return reject(r, CXLP_E_PROTO);
	}
	if (check_flags(r, s->flags, PROTO_SESS_ATTACHED |
	    PROTO_SESS_DETACHED, "session.flags") != 0) {
		return r->err;
	}
	return get_string(r, &s->host, &s->host_len, PROTO_HOST_MAX,
	    "session.host");
}

/* proto_get_sessions -- decode a SESSIONS reply body. Returns 0 with *v a
 * malloc'd array of *n entries (NULL when none; caller frees) whose hosts
 * point into the frame, or CXLP_E_PROTO / -ENOMEM with *v NULL, *n 0. */
int
proto_get_sessions(struct preader *r, struct proto_session_info **v,
    uint32_t *n)
{
	struct proto_session_info *s = NULL;
	uint32_t count = 0;
	int rc = 0;

	*v = NULL;
	*n = 0;
	if (!get_u32(r, &count, "sessions.n")) {
		return reject(r, CXLP_E_PROTO);
	}
	if (count > PROTO_SESSIONS_MAX) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "sessions.n: %u exceeds %d", count, PROTO_SESSIONS_MAX));
	}
	if (count > r->left / SESSION_ENTRY_MIN) {
		return reject(r, cxlp_fail(CXLP_E_PROTO,
		    "sessions.n: %u sessions cannot fit in %zu bytes", count,
		    r->left));
	}
	if (count > 0 && (s = calloc(count, sizeof(*s))) == NULL) {
		return reject(r, cxlp_fail(-ENOMEM, "sessions: no memory for "
		    "%u entries", count));
	}
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		rc = get_session(r, &s[i]);
	}
	if (rc == 0) {
		rc = body_end(r, "sessions");
	}
	if (rc != 0) {
		free(s);
		return rc;
	}
	*v = s;
	*n = count;
	return 0;
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
	};

	if (op >= sizeof(names) / sizeof(names[0]) || names[op] == NULL) {
		return "UNKNOWN";
	}
	return names[op];
}
