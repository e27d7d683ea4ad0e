/*
 * pintab.c -- the pin table: who holds how many pins on which key, on
 * media, so that a restarted metaserver keeps every acknowledged pin
 * (DESIGN contract 5 across kill -9).
 *
 * Why this shape: pins are per (session, key) counts that change on hot
 * paths (retrieve-pinned, unpin), so a change must be one 8-byte store;
 * keys are named by their index slot, which is stable while the key
 * lives, and a pinned key cannot be deleted, so a live record always
 * names a live key. Records are fixed 32-byte cells, found through a DRAM
 * index rebuilt at open, like every other DRAM cache of the pool: three
 * chained hashes, by (session, slot), by slot and by session (pinidx.c),
 * which answer held, per-key and per-session totals without a scan. The
 * media holds the only copy of the counts; the metaserver asks the pool.
 *
 * DESIGN NOTES
 *
 * 1. Record (layout.h struct pool_pinrec): session is the publish word
 *    (0 = free); slot and checksum never change while the record is live;
 *    word packs count (20 bits), hits (4) and stamp (40).
 *
 * 2. Transitions, each ending in one aligned 8-byte store, persisted:
 *    FREE -> LIVE     [pool_pin_change +1, no record: slot, word and
 *                      checksum written and persisted while session
 *                      reads 0, then session stored]
 *    count +-1        [pool_pin_change: word stored; -1 of the last pin
 *                      leaves the record live with count 0, "retired",
 *                      so that its stamp still answers a replay (3)]
 *    LIVE -> FREE     [pool_pin_release_session, over the session's
 *                      chain; retired records when free ones run
 *                      short, pool_pin_reserve: session = 0]
 *    A crash before the publish leaves a free record whose body nobody
 *    reads; after it, the change is whole. So every pin acknowledged
 *    (its request answered after the store was persisted) survives, and
 *    none is half made.
 *
 * 3. Replays. A request whose reply was lost to a server crash is sent
 *    again with the same id. The stamp is the low 40 bits of the id of
 *    the last request that changed the record and hits how many times it
 *    did (a batch may name a key twice); the nth change a request asks
 *    for on a record is skipped if the record already shows that request
 *    with hits >= n [pool_pin_change]. The release of a session's last
 *    pin on a key keeps its record (retired), so the replay of that
 *    unpin after a restart is recognized too, not refused as
 *    CXLP_E_NOTPINNED. This is exact unless another request of the same
 *    session changed the same record between the first run and the
 *    replay, or the record was freed in between (its session ended, or
 *    free records ran short and retired ones were reclaimed): then the
 *    replay's answer may change, but nothing is applied twice.
 *
 * 4. Recovery [pintab_rebuild]: a live record is kept iff its checksum
 *    holds, its session has a live record (the end of a session removes
 *    the session record first, then its pins: a crash in between leaves
 *    pins this step drops), it is retired or its slot holds a live key
 *    (a pinned key cannot be deleted; a retired record's key may have
 *    been), and no earlier record names the same (session, slot). Others
 *    are freed (repair) or skipped (read-only; pool_check reports them).
 *
 * 5. Invariant (checked by pool_check): live records are valid as in 4,
 *    each is on its three chains and no other record is (pinidx.c note
 *    1), and the DRAM counters and the per-key and per-session totals
 *    equal the sums of the media's counts (pinidx.c notes 2, 3).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "persist.h"
#include "pool_int.h"

/* the key at slot is live and links to a live region */
static bool
slot_is_key(const struct pool *p, uint64_t slot)
{
	struct kv_val v;

	return kvindex_get(&p->kv, slot, &v, NULL, NULL) == 0 &&
	    v.region < p->nregions && p->reg[v.region].live;
}

/* pintab_rec_problem -- see pool_int.h */
const char *
pintab_rec_problem(const struct pool *p, const struct pool_pinrec *r)
{
	struct pool_session s;

	if (layout_pinrec_checksum(r->session, r->slot) != r->checksum) {
		return "checksum mismatch";
	}
	if (pool_session_get(p, r->session, &s) != 0) {
		return "its session has no record";
	}
	if (pin_count(r->word) > 0 && !slot_is_key(p, r->slot)) {
		return "it pins a slot that holds no live key";
	}
	return NULL;
}

static int
pintab_alloc(struct pool *p)
{
	int rc = pinidx_init(p);

	p->pin.free = malloc((p->npins + 1) * sizeof(*p->pin.free));
	if (rc == 0 && p->pin.free == NULL) {
		rc = cxlp_fail(-ENOMEM, "no memory for %u pin records",
		    p->npins);
	}
	p->pin.nfree = 0;
	return rc;
}

/* a whole record whose session has no record: what a crash in a
 * session's end leaves (note 4) */
static bool
pin_of_ended_session(const struct pool *p, const struct pool_pinrec *r)
{
	struct pool_session s;

	return layout_pinrec_checksum(r->session, r->slot) == r->checksum &&
	    pool_session_get(p, r->session, &s) != 0;
}

/* pintab_rebuild -- see pool_int.h (design note 4) */
int
pintab_rebuild(struct pool *p, bool repair)
{
	int rc = pintab_alloc(p);

	if (rc != 0) {
		return rc;
	}
	for (uint32_t i = p->npins; i-- > 0;) {
		struct pool_pinrec *r = &p->ptab[i];
		const char *why;

		if (r->session == 0) {
			p->pin.free[p->pin.nfree++] = i;
			continue;
		}
		why = pintab_rec_problem(p, r);
		if (why == NULL && pinidx_find(p, r->session, r->slot) !=
		    PIN_NONE) {
			why = "a second record for its session and slot";
		}
		if (why == NULL) {
			pinidx_link(p, i);
			continue;
		}
		/* an ended session's pins outlive its record only after a
		 * crash (note 4); anything else was published whole */
		if (pin_of_ended_session(p, r)) {
			p->damage->torn++;
		} else {
			damage_pin(p, i, why);
		}
		if (repair) {
			pool_store8(p, &r->session, 0);
			p->pin.free[p->pin.nfree++] = i;
		}
	}
	return 0;
}

/* pintab_fini -- see pool_int.h */
void
pintab_fini(struct pool *p)
{
	pinidx_fini(p);
	free(p->pin.free);
	memset(&p->pin, 0, sizeof(p->pin));
}

/* record i stops being live: media first, then DRAM */
static void
pin_free(struct pool *p, uint32_t i)
{
	pinidx_unlink(p, i);
	pool_store8(p, &p->ptab[i].session, 0);
	p->pin.free[p->pin.nfree++] = i;
}

/* Free every retired record (note 2): their replay stamps are given up
 * for room. */
static void
pin_reclaim(struct pool *p)
{
	for (uint32_t i = 0; i < p->npins && p->pin.retired > 0; i++) {
		if (p->pin.live[i] && pin_count(p->ptab[i].word) == 0) {
			pin_free(p, i);
		}
	}
}

/* pool_pin_reserve -- see pool.h */
int
pool_pin_reserve(struct pool *p, size_t n)
{
	if (n > p->pin.nfree && p->pin.retired > 0 && !p->rdonly) {
		pin_reclaim(p);
	}
	if (n > p->pin.nfree) {
		return cxlp_fail(CXLP_E_NOSPACE, "pin table full: %u of %u "
		    "records free, %zu asked for", p->pin.nfree, p->npins, n);
	}
	return 0;
}

/* a new live record for (session, slot) holding one pin (note 2) */
static int
pin_new(struct pool *p, uint64_t session, uint64_t slot, uint64_t req)
{
	struct pool_pinrec *r;
	uint32_t i;
	int rc;

	if (!slot_is_key(p, slot)) {
		return cxlp_fail(-EINVAL, "pin: slot %llu holds no live key",
		    (unsigned long long)slot);
	}
	if (p->pin.nfree == 0 && (rc = pool_pin_reserve(p, 1)) != 0) {
		return rc;
	}
	i = p->pin.free[--p->pin.nfree];
	r = &p->ptab[i];
	r->slot = slot;
	r->word = pin_word(1, 1, req);
	r->checksum = layout_pinrec_checksum(session, slot);
	pool_persist_cb(p, &r->slot, sizeof(*r) - sizeof(r->session));
	pool_store8(p, &r->session, session);
	pinidx_link(p, i);
	return 0;
}

/* count +- 1 on live record i for req (note 2, 3); the last pin's
 * release retires the record */
static int
pin_step(struct pool *p, uint32_t i, int delta, uint64_t req)
{
	uint64_t w = p->ptab[i].word;
	uint32_t count = pin_count(w), hits = 1;

	if (delta > 0 && count == PIN_COUNT_MAX) {
		return cxlp_fail(CXLP_E_NOSPACE, "pin: %u pins on one key",
		    count);
	}
	if (delta < 0 && count == 0) {
		return cxlp_fail(CXLP_E_NOTPINNED, "session %llu holds no pin "
		    "on slot %llu", (unsigned long long)p->ptab[i].session,
		    (unsigned long long)p->ptab[i].slot);
	}
	if (delta > 0 && count == 0 && !slot_is_key(p, p->ptab[i].slot)) {
		return cxlp_fail(-EINVAL, "pin: slot %llu holds no live key",
		    (unsigned long long)p->ptab[i].slot);
	}
	if (req != 0 && pin_stamp(w) == (req & PIN_STAMP_MASK)) {
		hits = pin_hits(w) < PIN_HITS_MAX ? pin_hits(w) + 1 :
		    PIN_HITS_MAX;
	}
	p->pin.pins -= count;
	p->pin.retired -= count == 0;
	count = delta > 0 ? count + 1 : count - 1;
	pool_store8(p, &p->ptab[i].word, pin_word(count, hits, req));
	p->pin.pins += count;
	p->pin.retired += count == 0;
	return 0;
}

/* pool_pin_change -- see pool.h */
int
pool_pin_change(struct pool *p, uint64_t session, uint64_t slot, int delta,
    uint64_t req, unsigned nth, bool *applied)
{
	uint32_t i;
	int rc;

	*applied = false;
	if (p->rdonly) {
		return cxlp_fail(-EROFS, "%s: opened read-only", p->path);
	}
	if (session == 0 || (delta != 1 && delta != -1)) {
		return cxlp_fail(-EINVAL, "pin: session %llu, delta %d",
		    (unsigned long long)session, delta);
	}
	i = pinidx_find(p, session, slot);
	if (i != PIN_NONE && req != 0 && nth > 0 &&
	    pin_stamp(p->ptab[i].word) == (req & PIN_STAMP_MASK) &&
	    pin_hits(p->ptab[i].word) >= nth) {
		return 0; /* a replay: this change is made already */
	}
	if (i == PIN_NONE && delta < 0) {
		return cxlp_fail(CXLP_E_NOTPINNED, "session %llu holds no pin "
		    "on slot %llu", (unsigned long long)session,
		    (unsigned long long)slot);
	}
	rc = i == PIN_NONE ? pin_new(p, session, slot, req) :
	    pin_step(p, i, delta, req);
	*applied = rc == 0;
	return rc;
}

/* pool_pin_release_session -- see pool.h. Walks the session's chain
 * (pinidx.c), not the table. */
uint64_t
pool_pin_release_session(struct pool *p, uint64_t session)
{
	uint32_t i = pinidx_of_session(p, session, PIN_NONE);
	uint64_t n = 0;

	while (i != PIN_NONE) {
		uint32_t after = pinidx_of_session(p, session, i);

		n += pin_count(p->ptab[i].word);
		pin_free(p, i);
		i = after;
	}
	return n;
}

/* pool_pin_next -- see pool.h */
int
pool_pin_next(const struct pool *p, uint64_t *cursor, struct pool_pin *out)
{
	for (uint64_t i = *cursor; i < p->npins; i++) {
		if (p->pin.live[i] && pin_count(p->ptab[i].word) > 0) {
			out->session = p->ptab[i].session;
			out->slot = p->ptab[i].slot;
			out->count = pin_count(p->ptab[i].word);
			*cursor = i + 1;
			return 1;
		}
	}
	*cursor = p->npins;
	return 0;
}

/* pool_pin_max -- see pool.h */
uint32_t
pool_pin_max(const struct pool *p)
{
	return p->npins;
}
