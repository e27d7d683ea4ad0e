/*
 * kvindex.c -- the KV index: key -> (region, gen, page, len), as an
 * open-addressing, linear-probing hash table of 32-byte slots in the
 * pool's metadata area, keys stored in the key heap (keyheap.c).
 *
 * Why this shape: the index must survive kill -9 of its only writer (the
 * metaserver) and be readable, later, by handlers straight from shared
 * memory with no lock and no round trip. Fixed-size slots whose first word
 * is both the publish word and a sequence counter give both: one aligned
 * 8-byte store changes what a slot means, and a reader can detect that a
 * slot changed under it. The module is pure: it writes through pointers
 * it is given and makes things durable only through the persist callback,
 * so tests run it over a malloc'ed buffer. This file changes the index a
 * key at a time; kvcheck.c reads it whole, for recovery at open (note 6)
 * and the check of every invariant (note 9).
 *
 * DESIGN NOTES
 *
 * 1. Slot word (layout.h): bits 0-23 seq, 24-31 state (EMPTY, LIVE, TOMB),
 *    32-63 a checksum of the slot body seeded with the slot index
 *    (layout_slot_checksum). seq is odd exactly while the writer is
 *    changing the body. A LIVE slot is valid (kvindex_slot_valid) iff its
 *    word is even, its checksum matches, its key record reads back in
 *    bounds, and XXH3_64bits(key) == tag << 32 | record.hlo.
 *
 * 2. Probing: home = hash & (nslots - 1), then +1 (wrapping). A probe
 *    stops at an EMPTY slot or after nslots steps. Invariant: a LIVE key
 *    is reachable, i.e. no EMPTY slot lies between its home and its slot.
 *
 * 3. Slot transitions, each by one aligned 8-byte store of the word:
 *    EMPTY|TOMB -> (odd) -> LIVE  [kvindex_put]
 *    LIVE -> TOMB                 [kvindex_drop]
 *    TOMB -> EMPTY                [sweep, from kvindex_drop over the
 *                                  deleted slot's cluster (the run of
 *                                  non-EMPTY slots around it), and over
 *                                  the table at open when tombstones are
 *                                  many: a tombstone no LIVE key after
 *                                  it in the cluster has its home at or
 *                                  before, so no probe chain of a LIVE
 *                                  key ever crosses an EMPTY; see 2.
 *                                  Without it (only a tombstone just
 *                                  before an EMPTY was emptied) a
 *                                  table under delete+insert churn at
 *                                  half load lost every EMPTY slot, and
 *                                  each miss walked all of it]
 *    (odd) -> EMPTY|TOMB          [kvindex_recover, repair]
 *    LIVE, invalid -> TOMB        [kvindex_recover, repair]
 *    A slot is never rewritten while LIVE.
 *
 * 4. Insert ordering [kvindex_put], crash-consistent at every point:
 *    a. keyheap_alloc: a record's granules (DRAM only);
 *    b. keyheap_write the record, then persist it;
 *    c. store the word with seq + 1 (odd), state unchanged;
 *    d. write the body (tag, key, region, gen, page, len), persist slot;
 *    e. store the word (seq + 2, LIVE, checksum) with release order;
 *    f. persist the word. Only now does kvindex_put return.
 *    Release fences before b and after c keep the store order a
 *    lock-free reader relies on (kvread.c note 2).
 *    A crash before e leaves the old state (even) or an odd word: both
 *    read as not LIVE, and recovery restores the old state. The record
 *    from a is unreferenced, so the rebuild leaves it free.
 *
 * 5. Delete ordering [kvindex_drop]: store (seq + 2, TOMB) and persist:
 *    one store; then the sweep (3), one persisted store per tombstone it
 *    empties (a crash between leaves tombstones, which are always safe);
 *    then keyheap_free (DRAM). The record's
 *    bytes stay until reused, so a lock-free reader that loaded the slot
 *    before the delete reads a stale but whole key and then sees seq move.
 *
 * 6. Recovery [kvindex_recover]: every slot with an odd word gets its old
 *    state back (even seq + 1); LIVE slots not valid (1), or whose
 *    record overlaps an earlier one (keyheap_mark), become TOMB; live and
 *    tombs are recounted; the heap's free lists come from the marks
 *    (keyheap_sweep). Read-only opens skip these slots instead; lookups
 *    ignore invalid slots (1), so they are never served.
 *    Torn or damaged [slot_damage, kvindex_recover_report]: the only
 *    slots a crash leaves are the ones 4 leaves, an odd word whose state
 *    is the old EMPTY or TOMB and whose checksum bits are 0 (4c); every
 *    other slot recovery drops (an odd LIVE word, a state no path
 *    writes, a published LIVE slot invalid by 1 or whose record
 *    overlaps another) was whole when published, so it is damage, and
 *    the acknowledged key in it is lost: the caller is told (pool.c
 *    refuses it under POOL_NODROP).
 *
 * 7. Capacity: inserts beyond max_live = 3/4 of nslots get
 *    CXLP_E_NOSPACE (as does a full key heap). Tombstones are reused by
 *    inserts (the first TOMB on the probe path) and swept by deletes (3).
 *
 * 8. Space per key (achieved): a 32-byte slot at the 3/4 load limit costs
 *    42.7 bytes per key, plus a record of roundup(8 + klen, 16) <= klen +
 *    23 bytes: klen + 66 bytes in all at full load, <= 2 * (klen + 32)
 *    for every klen >= 2 and 58.7 bytes for a 1-byte key. The default key
 *    heap is 64 bytes per slot, 85 bytes per key at full load (keys up to
 *    ~77 bytes on average before the heap, not the index, runs out).
 *
 * 9. Checks: kvindex_scan verifies 1, 2, the counters, and that the
 *    records of live slots are exactly the heap's live granules (no
 *    overlap, no leak), then keyheap_check. It is O(nslots), so mutators
 *    assert only the O(chain) kvindex_slot_reachable on the slot they
 *    changed.
 *
 * 10. The other records follow the same rule -- body persisted first,
 *    then one aligned 8-byte publish store, persisted:
 *    region record  [pool_region_alloc; disown/free: word only,
 *                    pool_region_disown, regtab_free]
 *    session record [pool_session_add: next_session_id stored and
 *                    persisted first, then body, then id; remove: id = 0,
 *                    pool_session_remove]
 *    superblock     [pool_format: magic cleared, tables zeroed, body,
 *                    magic last]. next_session_id is the one superblock
 *                    field that changes after format; a checksum over it
 *                    could tear, so the checksum reads it as 0 and
 *                    sesstab_rebuild raises it above every live id.
 *    key removal vs region free [pool_kv_remove: kvindex_drop persisted
 *                    before regtab_unlink frees an ORPHAN; an ORPHAN left
 *                    with no keys by a crash is freed by regtab_reap].
 *    pin record     [pool_pin_change: body while session == 0, then
 *                    session; count by one store of word; free: session
 *                    = 0; pintab.c notes 2-4]
 *    session end    [metaserver sess_end_locked: session record removed
 *                    first (the commit point), then its pins, then its
 *                    regions disowned; after a crash in between, open
 *                    drops the pins (pintab_rebuild) and ms_recover
 *                    disowns the regions].
 *    Every persist above is a crash point in test builds (crashpt.h):
 *    tests/crash/test_crashpoints.c kills the metaserver at each one of a
 *    workload, in "kill" and "tear" modes, and checks recovery. A range
 *    persisted by these paths holds only bytes written since the last
 *    persist, so the tear mode may garble its tail.
 *
 * 11. PEND slots: the keys of a request group's commit (pool/kv.c note 2)
 *    go in as KV_PEND [kvindex_put_pend: note 4 with PEND for LIVE in e],
 *    valid as a LIVE slot is (1) but absent to every reader (lookups,
 *    kvindex_get/_next, lock-free readers: state != LIVE). The writer's
 *    probe meets them as taken (a key named twice in a group finds its
 *    first slot; inserts do not reuse them), sweeps keep their chains
 *    (3). Then each goes, by one persisted store of its word:
 *    PEND -> LIVE  [kvindex_publish, after the commit point]
 *    PEND -> TOMB  [kvindex_drop: a commit that fails or is rolled back]
 *    kv->pend says what a PEND slot counts as: KEEP while a commit runs
 *    and at the recovery of a decided one (recover_slot publishes it),
 *    DROP at the recovery of an undecided one (recover_slot drops it;
 *    read-only, it counts as a tombstone and its record as free), NONE
 *    otherwise: a PEND slot then is damage (no path leaves one).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "err.h"
#include "kvindex.h"
#include "pool_int.h" /* kvindex_hash, kvindex_prefetch* */

/* kvindex_init -- see kvindex.h */
void
kvindex_init(struct kvindex *kv, struct kv_slot *slots, uint64_t nslots,
    struct keyheap *heap, kv_persist_fn persist, void *ctx)
{
	cxlp_assert(nslots >= 4 && (nslots & (nslots - 1)) == 0);
	memset(kv, 0, sizeof(*kv));
	kv->slots = slots;
	kv->nslots = nslots;
	kv->max_live = nslots - nslots / 4;
	kv->heap = heap;
	kv->persist = persist;
	kv->ctx = ctx;
}

/* kvindex_format -- see kvindex.h */
void
kvindex_format(struct kvindex *kv)
{
	memset(kv->slots, 0, kv->nslots * sizeof(*kv->slots));
	kv->persist(kv->ctx, kv->slots, kv->nslots * sizeof(*kv->slots));
	keyheap_reset(kv->heap);
	kv->live = kv->tombs = 0;
}

/* slot i is valid (note 1) in state st */
static bool
slot_valid_as(const struct kvindex *kv, uint64_t i, uint32_t st,
    const void **key, size_t *klen)
{
	const struct kv_slot *s = &kv->slots[i];
	uint64_t w = kvindex_load_word(s);
	uint32_t hlo;

	if ((kv_seq(w) & 1u) || kv_state(w) != st ||
	    kv_sum(w) != layout_slot_checksum(s, i) ||
	    keyheap_read(kv->heap, s->key, key, klen, &hlo) != 0) {
		return false;
	}
	return XXH3_64bits(*key, *klen) == ((uint64_t)s->tag << 32 | hlo);
}

/* kvindex_slot_valid -- see pool_int.h */
bool
kvindex_slot_valid(const struct kvindex *kv, uint64_t i, const void **key,
    size_t *klen)
{
	return slot_valid_as(kv, i, KV_LIVE, key, klen);
}

/* kvindex_slot_held -- see pool_int.h */
bool
kvindex_slot_held(const struct kvindex *kv, uint64_t i, const void **key,
    size_t *klen)
{
	return slot_valid_as(kv, i, KV_LIVE, key, klen) ||
	    slot_valid_as(kv, i, KV_PEND, key, klen);
}

static void
slot_val(const struct kv_slot *s, struct kv_val *v)
{
	if (v != NULL) {
		*v = (struct kv_val){ s->region, s->gen, s->page, s->len };
	}
}

/* kvindex_probe -- see kvindex.h */
int
kvindex_probe(const struct kvindex *kv, const void *key, size_t klen,
    struct kv_probe *pr)
{
	uint64_t mask = kv->nslots - 1, i;

	pr->hash = XXH3_64bits(key, klen);
	pr->slot = pr->free = KV_NONE;
	pr->pend = false;
	i = pr->hash & mask;
	for (uint64_t step = 0; step < kv->nslots; step++, i = (i + 1) & mask) {
		const struct kv_slot *s = &kv->slots[i];
		uint64_t w = kvindex_load_word(s);
		const void *k;
		size_t kl;

		if (kv_state(w) == KV_EMPTY && !(kv_seq(w) & 1u)) {
			if (pr->free == KV_NONE) {
				pr->free = i;
			}
			return 0;
		}
		if (kv_state(w) == KV_TOMB && !(kv_seq(w) & 1u) &&
		    pr->free == KV_NONE) {
			pr->free = i;
		}
		if ((kv_state(w) == KV_LIVE || kv_state(w) == KV_PEND) &&
		    s->tag == pr->hash >> 32 &&
		    kvindex_slot_held(kv, i, &k, &kl) && kl == klen &&
		    memcmp(k, key, klen) == 0) {
			pr->slot = i;
			pr->pend = kv_state(w) == KV_PEND;
			return 1;
		}
	}
	return 0;
}

/* kvindex_hash -- the hash kvindex_probe computes for key; see pool_int.h */
uint64_t
kvindex_hash(const void *key, size_t klen)
{
	return XXH3_64bits(key, klen);
}

/* kvindex_prefetch -- see pool_int.h */
void
kvindex_prefetch(const struct kvindex *kv, uint64_t hash, bool write)
{
	const struct kv_slot *s = &kv->slots[hash & (kv->nslots - 1)];

	if (write) {
		__builtin_prefetch(s, 1, 3);
	} else {
		__builtin_prefetch(s, 0, 3);
	}
}

/* kvindex_prefetch_key -- see pool_int.h */
void
kvindex_prefetch_key(const struct kvindex *kv, uint64_t hash)
{
	const struct kv_slot *s = &kv->slots[hash & (kv->nslots - 1)];
	uint64_t w = kvindex_load_word(s);

	/* only a hint: a word read torn or stale costs a wasted prefetch */
	if (kv_state(w) == KV_LIVE && s->tag == hash >> 32 &&
	    s->key < kv->heap->ngran) {
		__builtin_prefetch(kv->heap->base +
		    (uint64_t)s->key * KV_GRANULE, 0, 3);
	}
}

/* kvindex_slot_reachable -- see pool_int.h */
bool
kvindex_slot_reachable(const struct kvindex *kv, uint64_t i)
{
	struct kv_probe pr;
	const void *key;
	size_t klen;

	return kvindex_slot_held(kv, i, &key, &klen) &&
	    kvindex_probe(kv, key, klen, &pr) == 1 && pr.slot == i;
}

/* note 4, ending in state st (LIVE, or PEND: note 11) */
static int
put_as(struct kvindex *kv, const struct kv_probe *pr, const void *key,
    size_t klen, const struct kv_val *v, uint64_t *slot, uint32_t st)
{
	struct kv_slot *s;
	uint32_t ref, seq, old;
	size_t bytes;
	void *rec;
	int rc;

	if (kv->live >= kv->max_live || pr->free == KV_NONE) {
		return cxlp_fail(CXLP_E_NOSPACE, "index full: %llu of %llu "
		    "keys", (unsigned long long)kv->live,
		    (unsigned long long)kv->max_live);
	}
	if ((rc = keyheap_alloc(kv->heap, klen, &ref)) != 0) {
		return rc;
	}
	/* a reused record's old slot left LIVE before its bytes change
	 * (lock-free readers, kvread.c note 2) */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	rec = keyheap_write(kv->heap, ref, key, klen, (uint32_t)pr->hash,
	    &bytes);
	kv->persist(kv->ctx, rec, bytes);
	s = &kv->slots[pr->free];
	seq = kv_seq(s->word);
	old = kv_state(s->word);
	kvindex_store_word(kv, s, kv_word(seq + 1, old, 0), false);
	__atomic_thread_fence(__ATOMIC_RELEASE); /* odd before the body */
	s->tag = (uint32_t)(pr->hash >> 32);
	s->key = ref;
	s->region = v->region;
	s->gen = v->gen;
	s->page = v->page;
	s->len = v->len;
	kv->persist(kv->ctx, s, sizeof(*s));
	kvindex_store_word(kv, s, kv_word(seq + 2, st,
	    layout_slot_checksum(s, pr->free)), true);
	kv->tombs -= old == KV_TOMB;
	kv->live++;
	*slot = pr->free;
	cxlp_expensive_assert(kvindex_slot_reachable(kv, *slot));
	return 0;
}

/* kvindex_put -- see kvindex.h */
int
kvindex_put(struct kvindex *kv, const struct kv_probe *pr, const void *key,
    size_t klen, const struct kv_val *v, uint64_t *slot)
{
	return put_as(kv, pr, key, klen, v, slot, KV_LIVE);
}

/* kvindex_put_pend -- see kvindex.h */
int
kvindex_put_pend(struct kvindex *kv, const struct kv_probe *pr,
    const void *key, size_t klen, const struct kv_val *v, uint64_t *slot)
{
	cxlp_assert(kv->pend == KV_PEND_KEEP);
	return put_as(kv, pr, key, klen, v, slot, KV_PEND);
}

/* kvindex_publish -- see kvindex.h; the checksum covers the body only,
 * so it stays */
void
kvindex_publish(struct kvindex *kv, uint64_t i)
{
	struct kv_slot *s = &kv->slots[i];
	uint64_t w = kvindex_load_word(s);
	const void *key;
	size_t klen;

	cxlp_assert(slot_valid_as(kv, i, KV_PEND, &key, &klen));
	kvindex_store_word(kv, s, kv_word(kv_seq(w) + 2, KV_LIVE, kv_sum(w)),
	    true);
}

/* kvindex_insert -- see kvindex.h */
int
kvindex_insert(struct kvindex *kv, const void *key, size_t klen,
    const struct kv_val *v, uint64_t *slot, bool *inserted,
    struct kv_val *existing)
{
	struct kv_probe pr;
	int rc;

	*inserted = false;
	if (kvindex_probe(kv, key, klen, &pr) == 1) {
		*slot = pr.slot;
		slot_val(&kv->slots[pr.slot], existing);
		return 0;
	}
	if ((rc = kvindex_put(kv, &pr, key, klen, v, slot)) != 0) {
		return rc;
	}
	*inserted = true;
	return 0;
}

/* kvindex_lookup -- see kvindex.h */
int
kvindex_lookup(const struct kvindex *kv, const void *key, size_t klen,
    struct kv_val *v, uint64_t *slot)
{
	struct kv_probe pr;

	if (kvindex_probe(kv, key, klen, &pr) != 1 || pr.pend) {
		return CXLP_E_NOTFOUND;
	}
	slot_val(&kv->slots[pr.slot], v);
	if (slot != NULL) {
		*slot = pr.slot;
	}
	return 0;
}

/* slot x is EMPTY (even) */
static bool
slot_empty(const struct kvindex *kv, uint64_t x)
{
	uint64_t w = kvindex_load_word(&kv->slots[x]);

	return kv_state(w) == KV_EMPTY && !(kv_seq(w) & 1u);
}

/* How far back from slot x its key's probe starts: (x - home) mod nslots,
 * home from the hash bits in its record (nslots <= 2^32: the low word).
 * A slot mid-write or whose record does not read back may need any slot
 * before it: nslots - 1. */
static uint64_t
probe_reach(const struct kvindex *kv, uint64_t x, uint64_t w)
{
	uint64_t mask = kv->nslots - 1;
	const void *key;
	size_t klen;
	uint32_t hlo;

	if ((kv_seq(w) & 1u) || keyheap_read(kv->heap, kv->slots[x].key, &key,
	    &klen, &hlo) != 0) {
		return mask;
	}
	return (x - ((uint64_t)hlo & mask)) & mask;
}

/* TOMB -> EMPTY, persisted */
static void
untomb(struct kvindex *kv, uint64_t x, uint64_t w)
{
	kvindex_store_word(kv, &kv->slots[x],
	    kv_word(kv_seq(w) + 2, KV_EMPTY, 0), true);
	kv->tombs--;
}

/* Walk n slots back from slot `last` (unrolled positions u = n - 1 .. 0,
 * slot (last - (n - 1 - u)) mod nslots) and empty every tombstone at a
 * position below `decide` that no probe needs: no LIVE key after it on the
 * walk starts its probe at or before it (note 3). `start` tracks the
 * earliest probe start of the LIVE slots passed. */
static void
sweep(struct kvindex *kv, uint64_t last, uint64_t n, uint64_t decide)
{
	uint64_t mask = kv->nslots - 1, start = UINT64_MAX;

	for (uint64_t u = n; u-- > 0;) {
		uint64_t x = (last - (n - 1 - u)) & mask;
		uint64_t w = kvindex_load_word(&kv->slots[x]);
		uint64_t reach;

		if (kv_state(w) == KV_LIVE || kv_state(w) == KV_PEND ||
		    (kv_seq(w) & 1u)) {
			reach = probe_reach(kv, x, w);
			start = reach > u ? 0 : start < u - reach ? start :
			    u - reach;
		} else if (kv_state(w) == KV_TOMB && u < decide &&
		    start > u) {
			untomb(kv, x, w);
		}
	}
}

/* kvindex_sweep_table -- see pool_int.h. One lap that ends at an EMPTY
 * slot (no probe crosses it), or with none, two laps, so that every probe
 * that wraps round is seen before the slots it passes. */
void
kvindex_sweep_table(struct kvindex *kv)
{
	uint64_t z = 0;

	while (z < kv->nslots && !slot_empty(kv, z)) {
		z++;
	}
	if (z == kv->nslots) {
		sweep(kv, 0, 2 * kv->nslots, kv->nslots);
	} else {
		sweep(kv, (z - 1) & (kv->nslots - 1), kv->nslots, kv->nslots);
	}
}

/* Empty the tombstones no probe needs, in slot i's cluster (the run of
 * non-EMPTY slots around it, between two EMPTY ones: no probe crosses an
 * EMPTY slot, so none reaches into the cluster from outside); with no
 * EMPTY slot anywhere, in the whole table. */
static void
sweep_cluster(struct kvindex *kv, uint64_t i)
{
	uint64_t mask = kv->nslots - 1, last = i, len = 1;

	while (len <= kv->nslots && !slot_empty(kv, (last + 1) & mask)) {
		last = (last + 1) & mask;
		len++;
	}
	if (len > kv->nslots) {
		kvindex_sweep_table(kv);
		return;
	}
	for (len = 1; !slot_empty(kv, (last - len) & mask); len++) {
	}
	sweep(kv, last, len, len);
}

/* kvindex_drop -- see kvindex.h */
void
kvindex_drop(struct kvindex *kv, uint64_t i)
{
	struct kv_slot *s = &kv->slots[i];
	const void *key;
	size_t klen;

	cxlp_assert(kvindex_slot_held(kv, i, &key, &klen));
	kvindex_store_word(kv, s, kv_word(kv_seq(s->word) + 2, KV_TOMB, 0),
	    true);
	kv->live--;
	kv->tombs++;
	sweep_cluster(kv, i);
	keyheap_free(kv->heap, s->key, klen);
}

/* kvindex_remove -- see kvindex.h */
int
kvindex_remove(struct kvindex *kv, const void *key, size_t klen,
    struct kv_val *v)
{
	struct kv_probe pr;

	if (kvindex_probe(kv, key, klen, &pr) != 1 || pr.pend) {
		return CXLP_E_NOTFOUND;
	}
	slot_val(&kv->slots[pr.slot], v);
	kvindex_drop(kv, pr.slot);
	return 0;
}

/* kvindex_get_held -- see kvindex.h */
int
kvindex_get_held(const struct kvindex *kv, uint64_t i, struct kv_val *v)
{
	const void *k;
	size_t kl;

	if (i >= kv->nslots || !kvindex_slot_held(kv, i, &k, &kl)) {
		return CXLP_E_NOTFOUND;
	}
	slot_val(&kv->slots[i], v);
	return 0;
}

/* kvindex_get -- see kvindex.h */
int
kvindex_get(const struct kvindex *kv, uint64_t i, struct kv_val *v,
    const void **key, size_t *klen)
{
	const void *k;
	size_t kl;

	if (i >= kv->nslots || !kvindex_slot_valid(kv, i, &k, &kl)) {
		return CXLP_E_NOTFOUND;
	}
	slot_val(&kv->slots[i], v);
	if (key != NULL) {
		*key = k;
	}
	if (klen != NULL) {
		*klen = kl;
	}
	return 0;
}

/* kvindex_next -- see kvindex.h */
int
kvindex_next(const struct kvindex *kv, uint64_t *cursor, uint64_t *slot)
{
	const void *k;
	size_t kl;

	for (uint64_t i = *cursor; i < kv->nslots; i++) {
		if (kvindex_slot_valid(kv, i, &k, &kl)) {
			*slot = i;
			*cursor = i + 1;
			return 1;
		}
	}
	*cursor = kv->nslots;
	return 0;
}
