/*
 * proto_msg.c -- encoders and decoders of the cxlpool request and reply
 * bodies (layouts: proto.h), one pair per message, built on the buffers and
 * field readers of proto.c (proto_int.h). Each decoder reads one whole body
 * and rejects trailing bytes, and checks every count against its protocol
 * bound and the bytes left before it allocates.
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
#define STAT_LEN 8
/* id, pid, flags, start_time, instance, regions, pins, u16 host len */
#define SESSION_ENTRY_MIN 42

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
	if (m->flags & PROTO_HELLO_KEEPALIVE) {
		pbuf_put_u32(b, m->keepalive_ms);
	}
	if (m->flags & PROTO_HELLO_LEASE) {
		pbuf_put_u32(b, m->lease_ms);
	}
}

/* proto_get_hello -- decode a HELLO request body; m->host points into the
 * frame. Returns 0 or CXLP_E_PROTO. */
int
proto_get_hello(struct preader *r, struct proto_hello *m)
{
	const char *secret = NULL;
	int rc;

	memset(m, 0, sizeof(*m));
	if (!pr_get_u32(r, &m->pid, "hello.pid") ||
	    !pr_get_u32(r, &m->flags, "hello.flags") ||
	    !pr_get_u64(r, &m->start_time, "hello.start_time") ||
	    !pr_get_u64(r, &m->instance_id, "hello.instance_id")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	rc = pr_check_flags(r, m->flags, PROTO_HELLO_FLAGS, "hello.flags");
	if (rc == 0) {
		rc = pr_get_string(r, &m->host, &m->host_len, PROTO_HOST_MAX,
		    "hello.hostname");
	}
	if (rc == 0) {
		rc = pr_get_string(r, &secret, &m->secret_len, PROTO_SECRET_MAX,
		    "hello.secret");
		m->secret = m->secret_len > 0 ? (const uint8_t *)secret : NULL;
	}
	if (rc == 0 && (m->flags & PROTO_HELLO_KEEPALIVE) &&
	    !pr_get_u32(r, &m->keepalive_ms, "hello.keepalive_ms")) {
		rc = pr_reject(r, CXLP_E_PROTO);
	}
	if (rc == 0 && (m->flags & PROTO_HELLO_KEEPALIVE) &&
	    m->keepalive_ms == 0) {
		rc = pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "hello.keepalive_ms: 0 with PROTO_HELLO_KEEPALIVE"));
	}
	if (rc == 0 && (m->flags & PROTO_HELLO_LEASE) &&
	    (!pr_get_u32(r, &m->lease_ms, "hello.lease_ms") ||
	    m->lease_ms == 0)) {
		rc = pr_reject(r, m->lease_ms == 0 && r->err == 0 ?
		    cxlp_fail(CXLP_E_PROTO, "hello.lease_ms: 0 with "
		    "PROTO_HELLO_LEASE") : CXLP_E_PROTO);
	}
	return rc != 0 ? rc : pr_body_end(r, "hello");
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
	if (!pr_get_u64(r, &m->session, "welcome.session") ||
	    !pr_get_u64(r, &m->token, "welcome.token") ||
	    !pr_get_u64(r, &m->pool_size, "welcome.pool_size") ||
	    !pr_get_u64(r, &m->align, "welcome.align")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	rc = pr_get_string(r, &m->path, &m->path_len, PROTO_PATH_MAX,
	    "welcome.path");
	return rc != 0 ? rc : pr_body_end(r, "welcome");
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
	if (!pr_get_u64(r, len, "region_alloc.len") ||
	    !pr_get_u64(r, page_size, "region_alloc.page_size")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	return pr_body_end(r, "region_alloc");
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
	if (!pr_get_u32(r, region, "region_free.region") ||
	    !pr_get_u32(r, gen, "region_free.gen")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	return pr_body_end(r, "region_free");
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
	int rc = 0;

	*n = 0;
	if (!pr_get_u32(r, &count, "results.n")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (count > max) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "results.n: %u, at most %u expected", count, max));
	}
	if (count > r->left / PROTO_RESULT_LEN) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "results.n: %u results cannot fit in %zu bytes", count,
		    r->left));
	}
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		rc = get_result(r, &res[i], i);
	}
	if (rc == 0) {
		rc = pr_body_end(r, "results");
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
	if (!pr_get_u32(r, &count, "stats.n")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (count > PROTO_STATS_MAX) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "stats.n: %u exceeds %d", count, PROTO_STATS_MAX));
	}
	if (count > r->left / STAT_LEN) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "stats.n: %u values cannot fit in %zu bytes", count,
		    r->left));
	}
	for (uint32_t i = 0; i < count; i++) {
		preader_u64(r, &v);
		if (i < max) {
			values[i] = v;
		}
	}
	if (pr_body_end(r, "stats") != 0) {
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
	if (!pr_get_u64(r, &s->id, "session.id") ||
	    !pr_get_u32(r, &s->pid, "session.pid") ||
	    !pr_get_u32(r, &s->flags, "session.flags") ||
	    !pr_get_u64(r, &s->start_time, "session.start_time") ||
	    !pr_get_u64(r, &s->instance, "session.instance") ||
	    !pr_get_u32(r, &s->regions, "session.regions") ||
	    !pr_get_u32(r, &s->pins, "session.pins")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (pr_check_flags(r, s->flags, PROTO_SESS_ATTACHED |
	    PROTO_SESS_DETACHED | PROTO_SESS_FENCED, "session.flags") != 0) {
		return r->err;
	}
	return pr_get_string(r, &s->host, &s->host_len, PROTO_HOST_MAX,
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
	if (!pr_get_u32(r, &count, "sessions.n")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (count > PROTO_SESSIONS_MAX) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "sessions.n: %u exceeds %d", count, PROTO_SESSIONS_MAX));
	}
	if (count > r->left / SESSION_ENTRY_MIN) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO,
		    "sessions.n: %u sessions cannot fit in %zu bytes", count,
		    r->left));
	}
	if (count > 0 && (s = calloc(count, sizeof(*s))) == NULL) {
		return pr_reject(r, cxlp_fail(-ENOMEM, "sessions: no memory for "
		    "%u entries", count));
	}
	for (uint32_t i = 0; i < count && rc == 0; i++) {
		rc = get_session(r, &s[i]);
	}
	if (rc == 0) {
		rc = pr_body_end(r, "sessions");
	}
	if (rc != 0) {
		free(s);
		return rc;
	}
	*v = s;
	*n = count;
	return 0;
}
