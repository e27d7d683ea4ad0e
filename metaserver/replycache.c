/*
 * replycache.c -- per-session memory of recent replies, so that a request
 * retried after a lost reply is answered with the original result and never
 * applied twice (contract 4; nng REQ also resends on its own timer).
 *
 * The cache is a fixed array of RC_ENTRIES cells, searched linearly (64
 * compares cost less than a hash here), bounded both in count and in bytes
 * (RC_BYTES_MAX): the oldest finished replies go first. A cell is PENDING
 * between rc_begin and rc_finish, so a duplicate arriving while the
 * original is still being applied waits (RC_WAIT) instead of applying it a
 * second time; PENDING cells are never evicted. The caller locks.
 *
 * An evicted reply's request id is remembered a while longer (RC_GONE
 * ids): a retry of it, which a busy handler can send after more than
 * RC_ENTRIES other requests of its session, is answered CXLP_E_UNKNOWN
 * ("applied once, reply gone") instead of being applied a second time
 * (which took a pin twice or reported a done delete as NOTFOUND).
 *
 * DESIGN NOTES
 *  1. At most one cell per req_id. [rc_begin]
 *  2. EMPTY -> PENDING [rc_begin] -> DONE [rc_finish] -> EMPTY [evict]
 *     PENDING -> EMPTY [rc_abort]
 *  3. bytes == sum of len over DONE cells; after rc_finish,
 *     bytes <= RC_BYTES_MAX unless the newest reply alone is larger.
 *  4. An id in gone[] was applied and its reply evicted; ids 0 (never
 *     cached) fill the unused part of the ring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "ms_int.h"

static struct rc_ent *
find(struct rcache *rc, uint64_t req_id)
{
	for (size_t i = 0; i < RC_ENTRIES; i++) {
		struct rc_ent *e = &rc->ent[i];

		if (e->state != RC_EMPTY && e->req_id == req_id) {
			return e;
		}
	}
	return NULL;
}

static void
clear(struct rcache *rc, struct rc_ent *e)
{
	if (e->state == RC_DONE) {
		rc->bytes -= e->len;
	}
	free(e->data);
	memset(e, 0, sizeof(*e));
}

/* Evict the DONE cell e, remembering its request id (note 4). */
static void
evict(struct rcache *rc, struct rc_ent *e)
{
	rc->gone[rc->gone_next++ % RC_GONE] = e->req_id;
	clear(rc, e);
}

/* req_id was applied and its reply evicted (note 4). */
static bool
gone(const struct rcache *rc, uint64_t req_id)
{
	for (size_t i = 0; i < RC_GONE; i++) {
		if (rc->gone[i] == req_id) {
			return true;
		}
	}
	return false;
}

/* The oldest DONE cell other than keep, or NULL. */
static struct rc_ent *
oldest_done(struct rcache *rc, const struct rc_ent *keep)
{
	struct rc_ent *old = NULL;

	for (size_t i = 0; i < RC_ENTRIES; i++) {
		struct rc_ent *e = &rc->ent[i];

		if (e->state == RC_DONE && e != keep &&
		    (old == NULL || e->seq < old->seq)) {
			old = e;
		}
	}
	return old;
}

/* A cell to reuse: an empty one, else the oldest DONE one. */
static struct rc_ent *
take_cell(struct rcache *rc)
{
	struct rc_ent *e;

	for (size_t i = 0; i < RC_ENTRIES; i++) {
		if (rc->ent[i].state == RC_EMPTY) {
			return &rc->ent[i];
		}
	}
	e = oldest_done(rc, NULL);
	if (e != NULL) {
		evict(rc, e);
	}
	return e;
}

/* rc_init -- an empty cache. */
void
rc_init(struct rcache *rc)
{
	memset(rc, 0, sizeof(*rc));
}

/* rc_fini -- free every cached reply. */
void
rc_fini(struct rcache *rc)
{
	for (size_t i = 0; i < RC_ENTRIES; i++) {
		clear(rc, &rc->ent[i]);
	}
	rc->seq = 0;
}

/* rc_begin -- look req_id up. RC_HIT: the cached reply replaced reply's
 * contents. RC_WAIT: another thread is applying it. RC_NEW: a PENDING cell
 * now holds req_id; the caller applies the request and calls rc_finish or
 * rc_abort. With gone_unknown, CXLP_E_UNKNOWN for an applied request
 * whose reply was evicted (note 4); without, such a request is RC_NEW
 * (for an op that finds its own earlier run). CXLP_E_BUSY when every cell
 * is PENDING. */
int
rc_begin(struct rcache *rc, uint64_t req_id, bool gone_unknown,
    struct pbuf *reply)
{
	struct rc_ent *e = find(rc, req_id);

	if (e != NULL && e->state == RC_PENDING) {
		return RC_WAIT;
	}
	if (e != NULL) {
		pbuf_reset(reply);
		pbuf_put_bytes(reply, e->data, e->len);
		return RC_HIT;
	}
	if (gone_unknown && gone(rc, req_id)) {
		return cxlp_fail(CXLP_E_UNKNOWN, "request %llu was applied "
		    "and its reply is no longer kept: its outcome is unknown "
		    "here", (unsigned long long)req_id);
	}
	e = take_cell(rc);
	if (e == NULL) {
		return cxlp_fail(CXLP_E_BUSY, "reply cache: %d requests in "
		    "flight", RC_ENTRIES);
	}
	e->state = RC_PENDING;
	e->req_id = req_id;
	e->seq = ++rc->seq;
	return RC_NEW;
}

/* rc_finish -- store the reply of the PENDING req_id (copied). On
 * allocation failure the cell is dropped, as by rc_abort. */
void
rc_finish(struct rcache *rc, uint64_t req_id, const void *data, size_t len)
{
	struct rc_ent *e = find(rc, req_id);
	struct rc_ent *old;

	if (e == NULL || e->state != RC_PENDING) {
		return;
	}
	e->data = malloc(len > 0 ? len : 1);
	if (e->data == NULL) {
		clear(rc, e);
		return;
	}
	memcpy(e->data, data, len);
	e->len = len;
	e->state = RC_DONE;
	rc->bytes += len;
	while (rc->bytes > RC_BYTES_MAX && (old = oldest_done(rc, e)) != NULL) {
		evict(rc, old);
	}
}

/* rc_abort -- forget the PENDING req_id (its reply could not be built). */
void
rc_abort(struct rcache *rc, uint64_t req_id)
{
	struct rc_ent *e = find(rc, req_id);

	if (e != NULL && e->state == RC_PENDING) {
		clear(rc, e);
	}
}

/* rc_count -- cells in use (PENDING or DONE). */
size_t
rc_count(const struct rcache *rc)
{
	size_t n = 0;

	for (size_t i = 0; i < RC_ENTRIES; i++) {
		n += rc->ent[i].state != RC_EMPTY;
	}
	return n;
}
