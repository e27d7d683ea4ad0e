/*
 * replycache.c -- per-session memory of recent replies, so that a request
 * retried after a lost reply is answered with the original result and never
 * applied twice (contract 4; nng REQ also resends on its own timer).
 *
 * The cache is a fixed array of RCACHE_ENTRIES cells, searched linearly (64
 * compares cost less than a hash here), bounded both in count and in bytes
 * (RCACHE_BYTES_MAX): the oldest finished replies go first. A cell is PENDING
 * between rcache_begin and rcache_finish, so a duplicate arriving while the
 * original is still being applied waits (RCACHE_WAIT) instead of applying it a
 * second time; PENDING cells are never evicted. The caller locks.
 *
 * An evicted reply's request id is remembered a while longer (RCACHE_GONE
 * ids): a retry of it, which a busy handler can send after more than
 * RCACHE_ENTRIES other requests of its session, is answered CXLP_E_UNKNOWN
 * ("applied once, reply gone") instead of being applied a second time
 * (which took a pin twice or reported a done delete as NOTFOUND).
 *
 * DESIGN NOTES
 *  1. At most one cell per req_id. [rcache_begin]
 *  2. EMPTY -> PENDING [rcache_begin] -> DONE [rcache_finish] -> EMPTY [evict]
 *     PENDING -> EMPTY [rcache_abort]
 *  3. bytes == sum of len over DONE cells; after rcache_finish,
 *     bytes <= RCACHE_BYTES_MAX unless the newest reply alone is larger.
 *  4. An id in gone[] was applied and its reply evicted; ids 0 (never
 *     cached) fill the unused part of the ring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "ms_int.h"

static struct rcache_ent *
find(struct rcache *c, uint64_t req_id)
{
	for (size_t i = 0; i < RCACHE_ENTRIES; i++) {
		struct rcache_ent *e = &c->ent[i];

		if (e->state != RCACHE_EMPTY && e->req_id == req_id) {
			return e;
		}
	}
	return NULL;
}

static void
clear(struct rcache *c, struct rcache_ent *e)
{
	if (e->state == RCACHE_DONE) {
		c->bytes -= e->len;
	}
	free(e->data);
	memset(e, 0, sizeof(*e));
}

/* Evict the DONE cell e, remembering its request id (note 4). */
static void
evict(struct rcache *c, struct rcache_ent *e)
{
	c->gone[c->gone_next++ % RCACHE_GONE] = e->req_id;
	clear(c, e);
}

/* req_id was applied and its reply evicted (note 4). */
static bool
gone(const struct rcache *c, uint64_t req_id)
{
	for (size_t i = 0; i < RCACHE_GONE; i++) {
		if (c->gone[i] == req_id) {
			return true;
		}
	}
	return false;
}

/* The oldest DONE cell other than keep, or NULL. */
static struct rcache_ent *
oldest_done(struct rcache *c, const struct rcache_ent *keep)
{
	struct rcache_ent *old = NULL;

	for (size_t i = 0; i < RCACHE_ENTRIES; i++) {
		struct rcache_ent *e = &c->ent[i];

		if (e->state == RCACHE_DONE && e != keep &&
		    (old == NULL || e->seq < old->seq)) {
			old = e;
		}
	}
	return old;
}

/* A cell to reuse: an empty one, else the oldest DONE one. */
static struct rcache_ent *
take_cell(struct rcache *c)
{
	struct rcache_ent *e;

	for (size_t i = 0; i < RCACHE_ENTRIES; i++) {
		if (c->ent[i].state == RCACHE_EMPTY) {
			return &c->ent[i];
		}
	}
	e = oldest_done(c, NULL);
	if (e != NULL) {
		evict(c, e);
	}
	return e;
}

/* rcache_init -- an empty cache. */
void
rcache_init(struct rcache *c)
{
	memset(c, 0, sizeof(*c));
}

/* rcache_fini -- free every cached reply. */
void
rcache_fini(struct rcache *c)
{
	for (size_t i = 0; i < RCACHE_ENTRIES; i++) {
		clear(c, &c->ent[i]);
	}
	c->seq = 0;
}

/* rcache_begin -- look req_id up. RCACHE_HIT: the cached reply replaced
 * reply's contents. RCACHE_WAIT: another thread is applying it.
 * RCACHE_NEW: a PENDING cell now holds req_id; the caller applies the
 * request and calls rcache_finish or rcache_abort. With gone_unknown,
 * CXLP_E_UNKNOWN for an applied request whose reply was evicted (note 4);
 * without, such a request is RCACHE_NEW (for an op that finds its own
 * earlier run). CXLP_E_BUSY when every cell is PENDING. */
int
rcache_begin(struct rcache *c, uint64_t req_id, bool gone_unknown,
    struct pbuf *reply)
{
	struct rcache_ent *e = find(c, req_id);

	if (e != NULL && e->state == RCACHE_PENDING) {
		return RCACHE_WAIT;
	}
	if (e != NULL) {
		pbuf_reset(reply);
		pbuf_put_bytes(reply, e->data, e->len);
		return RCACHE_HIT;
	}
	if (gone_unknown && gone(c, req_id)) {
		return cxlp_fail(CXLP_E_UNKNOWN, "request %llu was applied "
		    "and its reply is no longer kept: its outcome is unknown "
		    "here", (unsigned long long)req_id);
	}
	e = take_cell(c);
	if (e == NULL) {
		return cxlp_fail(CXLP_E_BUSY, "reply cache: %d requests in "
		    "flight", RCACHE_ENTRIES);
	}
	e->state = RCACHE_PENDING;
	e->req_id = req_id;
	e->seq = ++c->seq;
	return RCACHE_NEW;
}

/* rcache_finish -- store the reply of the PENDING req_id (copied). On
 * allocation failure the cell is dropped, as by rcache_abort. */
void
rcache_finish(struct rcache *c, uint64_t req_id, const void *data, size_t len)
{
	struct rcache_ent *e = find(c, req_id);
	struct rcache_ent *old;

	if (e == NULL || e->state != RCACHE_PENDING) {
		return;
	}
	e->data = malloc(len > 0 ? len : 1);
	if (e->data == NULL) {
		clear(c, e);
		return;
	}
	memcpy(e->data, data, len);
	e->len = len;
	e->state = RCACHE_DONE;
	c->bytes += len;
	while (c->bytes > RCACHE_BYTES_MAX &&
	    (old = oldest_done(c, e)) != NULL) {
		evict(c, old);
	}
}

/* rcache_abort -- forget the PENDING req_id (its reply could not be built). */
void
rcache_abort(struct rcache *c, uint64_t req_id)
{
	struct rcache_ent *e = find(c, req_id);

	if (e != NULL && e->state == RCACHE_PENDING) {
		clear(c, e);
	}
}

/* rcache_count -- cells in use (PENDING or DONE). */
size_t
rcache_count(const struct rcache *c)
{
	size_t n = 0;

	for (size_t i = 0; i < RCACHE_ENTRIES; i++) {
		n += c->ent[i].state != RCACHE_EMPTY;
	}
	return n;
}
