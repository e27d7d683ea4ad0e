/*
 * proto_batch.c -- encoders and decoders of the bodies of the key
 * operations (layouts: proto.h): a location (the REGION_ALLOC reply and
 * each result), a batch of keys (the LOOKUP, EXISTS, PIN, UNPIN and
 * DELETE requests), a batch of registrations (REGISTER) and a result list
 * (their replies). Built on proto.c's buffers and field readers
 * (proto_int.h), with the same rules as proto_msg.c: each decoder reads
 * one whole body and rejects trailing bytes, and bounds every count by its
 * protocol limit and by the bytes left before it allocates.
 *
 * Apart from proto_msg.c: these bodies are lists of up to CXLP_BATCH_MAX
 * entries, one per key, and hold every key and location that crosses the
 * wire.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "proto.h"
#include "proto_int.h"

/* Smallest encodings of one batch entry, to bound n by the bytes left. The
 * key bytes are not counted, so that an empty key is still reported as
 * CXLP_E_KEYLEN rather than as a short frame. */
#define KEY_ENTRY_MIN 2                    /* u16 len */
#define REG_ENTRY_MIN (KEY_ENTRY_MIN + 20) /* + u32 region, u64 off, len */

/* ---- locations ---- */

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
	return pr_get_u32(r, &loc->region, "loc.region") &&
	    pr_get_u32(r, &loc->gen, "loc.gen") &&
	    pr_get_u64(r, &loc->region_off, "loc.region_off") &&
	    pr_get_u64(r, &loc->region_len, "loc.region_len") &&
	    pr_get_u64(r, &loc->off, "loc.off") &&
	    pr_get_u64(r, &loc->len, "loc.len");
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
		return pr_reject(r, CXLP_E_PROTO);
	}
	return pr_body_end(r, "loc");
}

/* ---- key batches ---- */

/* Encoded size of n keys (0 when they cannot be encoded: the put then
 * fails on its own with the precise error). */
static size_t
keys_size(size_t n, const size_t key_lens[])
{
	size_t sz = 0;

	if (n > UINT32_MAX) {
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (key_lens[i] > UINT16_MAX) {
			return 0;
		}
		sz += 2 + key_lens[i];
	}
	return sz;
}

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
	(void)pbuf_reserve(b, keys_size(n, key_lens));
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
	if (!pr_get_u32(r, flags, "keys.flags") ||
	    !pr_get_u32(r, &count, "keys.n")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	rc = pr_check_flags(r, *flags, PROTO_F_PIN | PROTO_F_LEASE,
	    "keys.flags");
	if (rc == 0) {
		rc = pr_check_batch(r, count, KEY_ENTRY_MIN, "keys.n");
	}
	if (rc != 0) {
		return rc;
	}
	k = calloc(count, sizeof(*k));
	if (k == NULL) {
		return pr_reject(r, cxlp_fail(-ENOMEM, "keys: no memory for %u "
		    "keys", count));
	}
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		rc = pr_get_key(r, &k[i], i);
	}
	if (rc == 0) {
		rc = pr_body_end(r, "keys");
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

/* Encoded size of a REGISTER's entries (0 when n cannot be encoded). */
static size_t
regs_size(size_t n, const struct proto_reg *regs)
{
	size_t sz = 0;

	if (n > UINT32_MAX) {
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		sz += 2 + (size_t)regs[i].key.len + 20;
	}
	return sz;
}

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
	(void)pbuf_reserve(b, regs_size(n, regs));
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
	int rc = pr_get_key(r, &g->key, i);

	if (rc != 0) {
		return rc;
	}
	if (!pr_get_u32(r, &g->region, "register.region") ||
	    !pr_get_u64(r, &g->off, "register.off") ||
	    !pr_get_u64(r, &g->len, "register.len")) {
		return pr_reject(r, CXLP_E_PROTO);
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
	if (!pr_get_u32(r, flags, "register.flags") ||
	    !pr_get_u32(r, &count, "register.n")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	rc = pr_check_flags(r, *flags, PROTO_F_PIN | PROTO_F_LEASE,
	    "register.flags");
	if (rc == 0) {
		rc = pr_check_batch(r, count, REG_ENTRY_MIN, "register.n");
	}
	if (rc != 0) {
		return rc;
	}
	g = calloc(count, sizeof(*g));
	if (g == NULL) {
		return pr_reject(r, cxlp_fail(-ENOMEM, "register: no memory for "
		    "%u entries", count));
	}
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		rc = get_reg(r, &g[i], i);
	}
	if (rc == 0) {
		rc = pr_body_end(r, "register");
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
	pbuf_put_rec(b, PROTO_RESULT_LEN);
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

	if (!pr_get_u32(r, &status, "result.status") ||
	    !pr_get_u32(r, &res->flags, "result.flags") ||
	    !get_loc(r, &res->loc)) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	res->status = (int32_t)status;
	if (res->status > 0) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "result %u: status %d is positive", i, res->status));
	}
	if (pr_check_flags(r, res->flags, PROTO_R_NEW, "result.flags") != 0) {
		return r->err;
	}
	if (res->status != 0 && memcmp(&res->loc, &zero, sizeof(zero)) != 0) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
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
	size_t rec = PROTO_RESULT_LEN;
	int rc = 0;

	*n = 0;
	if (!pr_get_u32(r, &count, "results.n")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (count > max) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "results.n: %u, at most %u expected", count, max));
	}
	if ((rc = pr_get_rec(r, PROTO_RESULT_LEN, &rec, "results.rec")) != 0) {
		return rc;
	}
	if (count > r->left / rec) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "results.n: %u results cannot fit in %zu bytes", count,
		    r->left));
	}
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		struct preader sub;

		(void)pr_rec_begin(r, rec, &sub, "result");
		(void)get_result(&sub, &res[i], i);
		rc = pr_rec_end(r, &sub);
	}
	if (rc == 0) {
		rc = pr_body_end(r, "results");
	}
	if (rc == 0) {
		*n = count;
	}
	return rc;
}
