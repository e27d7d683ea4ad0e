/*
 * proto_msg.c -- encoders and decoders of the cxlpool request and reply
 * bodies (layouts: proto.h), one pair per message, built on the buffers and
 * field readers of proto.c (proto_int.h). Each decoder reads one whole body
 * and rejects trailing bytes, and checks every count against its protocol
 * bound and the bytes left before it allocates.
 *
 * This file holds the bodies of a session and of the pool's bookkeeping:
 * HELLO and WELCOME, REGION_ALLOC and REGION_FREE, STATS and SESSIONS.
 * The bodies of the key operations (locations, key batches, REGISTER,
 * result lists) are proto_batch.c's, those of a full pool
 * proto_reclaim.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "proto.h"
#include "proto_int.h"

/* Smallest encodings of one list entry, to bound n by the bytes left. */
#define STAT_LEN 8
/* id, pid, flags, start_time, instance, regions, pins, u16 host len */
#define SESSION_ENTRY_MIN 42

/* ---- HELLO ---- */

/* proto_put_hello -- append a HELLO request body (version 3: the range
 * first, PROTO_VERSION_MIN..PROTO_VERSION where m leaves it 0). */
void
proto_put_hello(struct pbuf *b, const struct proto_hello *m)
{
	if (pbuf_v3(b)) {
		pbuf_put_u16(b, m->ver_min != 0 ? m->ver_min :
		    PROTO_VERSION_MIN);
		pbuf_put_u16(b, m->ver_max != 0 ? m->ver_max : PROTO_VERSION);
	}
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
	if (m->flags & PROTO_HELLO_HOSTID) {
		pbuf_put_u64(b, m->host_hash);
	}
}

/* The versions a HELLO's sender speaks: version 3 says, and its frame's
 * version must be one of them; a version-2 HELLO speaks 2 only. */
static int
get_hello_range(struct preader *r, struct proto_hello *m)
{
	m->ver_min = m->ver_max = r->version;
	if (!preader_v3(r)) {
		return 0;
	}
	if (!pr_get_u16(r, &m->ver_min, "hello.ver_min") ||
	    !pr_get_u16(r, &m->ver_max, "hello.ver_max")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (m->ver_min == 0 || m->ver_min > m->ver_max ||
	    r->version < m->ver_min || r->version > m->ver_max) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO, "hello: versions "
		    "%u..%u in a frame of version %u", m->ver_min, m->ver_max,
		    r->version));
	}
	return 0;
}

/* proto_get_hello -- decode a HELLO request body; m->host points into the
 * frame. Returns 0 or CXLP_E_PROTO. */
int
proto_get_hello(struct preader *r, struct proto_hello *m)
{
	const char *secret = NULL;
	int rc;

	memset(m, 0, sizeof(*m));
	if (get_hello_range(r, m) != 0 ||
	    !pr_get_u32(r, &m->pid, "hello.pid") ||
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
	if (rc == 0 && (m->flags & PROTO_HELLO_HOSTID) &&
	    (!pr_get_u64(r, &m->host_hash, "hello.host") ||
	    m->host_hash == 0)) {
		rc = pr_reject(r, m->host_hash == 0 && r->err == 0 ?
		    cxlp_fail(CXLP_E_PROTO, "hello.host: 0 with "
		    "PROTO_HELLO_HOSTID") : CXLP_E_PROTO);
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
	if (m->has_id) {
		pbuf_put_u64(b, m->id.nonce);
		pbuf_put_u64(b, m->id.boot);
		pbuf_put_u64(b, m->id.dev);
		pbuf_put_u64(b, m->id.ino);
	}
}

/* Decode a HELLO reply body, with the pool identity after the path when
 * with_id. */
static int
get_welcome(struct preader *r, struct proto_welcome *m, bool with_id)
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
	if (rc == 0 && with_id) {
		m->has_id = true;
		if (!pr_get_u64(r, &m->id.nonce, "welcome.nonce") ||
		    !pr_get_u64(r, &m->id.boot, "welcome.boot") ||
		    !pr_get_u64(r, &m->id.dev, "welcome.dev") ||
		    !pr_get_u64(r, &m->id.ino, "welcome.ino")) {
			return pr_reject(r, CXLP_E_PROTO);
		}
	}
	return rc != 0 ? rc : pr_body_end(r, "welcome");
}

/* proto_get_welcome -- decode a HELLO reply body (to a HELLO without
 * PROTO_HELLO_POOLID); m->path points into the frame. Returns 0 or
 * CXLP_E_PROTO. */
int
proto_get_welcome(struct preader *r, struct proto_welcome *m)
{
	return get_welcome(r, m, false);
}

/* proto_get_welcome_id -- the same, to a HELLO with PROTO_HELLO_POOLID:
 * the pool identity follows the path. */
int
proto_get_welcome_id(struct preader *r, struct proto_welcome *m)
{
	return get_welcome(r, m, true);
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
		size_t at = 0;

		if (pbuf_v3(b)) {
			pbuf_put_len16(b, &at);
		}
		pbuf_put_u64(b, v[i].id);
		pbuf_put_u32(b, v[i].pid);
		pbuf_put_u32(b, v[i].flags);
		pbuf_put_u64(b, v[i].start_time);
		pbuf_put_u64(b, v[i].instance);
		pbuf_put_u32(b, v[i].regions);
		pbuf_put_u32(b, v[i].pins);
		pbuf_put_u16(b, v[i].host_len);
		pbuf_put_bytes(b, v[i].host, v[i].host_len);
		if (pbuf_v3(b)) {
			pbuf_fix_len16(b, at);
		}
	}
}

static int
get_session_fields(struct preader *r, struct proto_session_info *s)
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

/* One SESSIONS entry; in version 3 within its own length, whose unknown
 * end is skipped. */
static int
get_session(struct preader *r, struct proto_session_info *s)
{
	struct preader sub;
	uint16_t len;

	if (!preader_v3(r)) {
		return get_session_fields(r, s);
	}
	if (!pr_get_u16(r, &len, "session.len") ||
	    pr_rec_begin(r, len, &sub, "session") != 0) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	(void)get_session_fields(&sub, s);
	return pr_rec_end(r, &sub);
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
