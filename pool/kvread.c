/*
 * kvread.c -- the read side of the KV index for readers that are not its
 * writer: a handler looks keys up in the metaserver's index through a
 * read-only mapping of the metadata area, with no lock and no round trip.
 *
 * Why this shape: kvindex.c's slots already carry a sequence word (their
 * first 8 bytes) and the region table publishes by one 8-byte store, so a
 * seqlock reader needs nothing from the writer but the ordering it keeps
 * anyway. Everything here reads memory another process changes at any
 * time, and might be garbage (a torn or corrupt pool), so every value is
 * bounds-checked before it is used as an offset, and an answer is trusted
 * only when the words around it did not move. When in doubt the lookup
 * says KVREAD_ASK and the caller asks the metaserver: a direct read may
 * give up, but never crashes and never returns a value the key never had.
 * The module is pure (no I/O, no allocation): tests run it over a buffer;
 * the one hook out is the drop of cached lines its owner may give it
 * (note 9).
 *
 * DESIGN NOTES
 *
 * 1. Slot read protocol [read_slot], per slot on the probe path:
 *      w1 = load(word, acquire)
 *      seq(w1) odd -> the writer is inside; reload (KVREAD_SPINS times,
 *                     then KVREAD_ASK)
 *      EMPTY -> the probe ends: not found (the word alone decides)
 *      TOMB or unknown state -> next slot
 *      LIVE -> copy the body (relaxed loads); if tag matches, read the key
 *              record (klen, hlo, bytes) and compare with the wanted key
 *      fence(acquire); w2 = load(word, relaxed)
 *      w1 != w2 -> the slot changed under us: read it again
 *    A comparison or a body read between w1 and w2 is only trusted when
 *    w1 == w2; until then its result is discarded, whatever it was.
 *
 * 2. What the writer guarantees (kvindex.c, notes 3-5), and why it is
 *    enough: (a) a slot is never rewritten while LIVE: its body changes
 *    only after its word went odd [kvindex_put], with a release fence
 *    between the odd store and the body stores, and the even LIVE word is
 *    a release store after them; so equal even words around the reads
 *    mean the body is the one published with that word. (b) A key record
 *    is freed only after the slot that referenced it left LIVE
 *    [kvindex_drop: TOMB store, then keyheap_free], and a freed record is
 *    rewritten only by a later kvindex_put, which issues a release fence
 *    before keyheap_write; so a reader that sees any byte of a reused
 *    record sees the old slot's TOMB word at w2 and retries. The two
 *    fences were added to kvindex_put for this module; on x86 (TSO) they
 *    cost nothing but keep the compiler from moving stores across.
 *
 * 3. Probe path and the answers: the same walk as kvindex_probe (home =
 *    hash & mask, +1 wrapping, stop at EMPTY or after nslots steps), and
 *    the same validity rule (state LIVE, checksum of the body seeded by
 *    the slot index, record in bounds, tag and hlo equal to the key's
 *    hash, same bytes). A key LIVE during the whole lookup is found: its
 *    probe chain holds no EMPTY slot at any instant (kvindex note 2 holds
 *    after every single store, trim included), and other slots changing
 *    only make us skip or retry them. A key inserted or removed during the
 *    lookup may be found or not: both are answers it had at some moment.
 *
 * 4. Region read [read_region], the same way with the region record's
 *    word (state | gen << 32): live state (OWNED or ORPHAN) and the slot's
 *    gen at w1, a copy of the record, fence, w2 == w1. The body is
 *    written while the word reads FREE and every reuse bumps the gen, so
 *    equal words mean the body belongs to that gen. A region that is not
 *    live, or of another gen, means the key went and its region was freed
 *    between the two reads: the whole lookup restarts (KVREAD_RESTARTS,
 *    then KVREAD_ASK).
 *
 * 5. Distrust: a stable slot whose record lies outside the heap, or
 *    whose checksum fails, is skipped as kvindex does (an invalid slot is
 *    never served). A stable region record that fails its checksum or
 *    bounds (extent inside the data area, page inside the region, value
 *    within the page) gives KVREAD_ASK: the metaserver decides.
 *
 * 6. Only the metaserver writes; nothing here stores to shared memory, so
 *    the mapping can be (and in the handler is) read-only.
 *
 * 7. Batches [kvread_lookup_batch]: a hit in a big index is two dependent
 *    cache (and TLB) misses, home slot then key record. A batch first
 *    hashes its keys and prefetches every home slot, then reads each home
 *    slot's word, tag and record reference as a hint and prefetches that
 *    record, then does the lookups above; the misses of a batch overlap.
 *    The hints are plain loads bounds-checked on the heap and never
 *    trusted: a torn or stale hint only wastes a prefetch.
 *
 * 8. Versions [kvread_loc.word, kvread_word]: a hit also returns the
 *    key's slot and the even LIVE word w read around its body (note 1).
 *    The slot is not rewritten while LIVE and every write of it adds 2
 *    to its 24-bit seq (kvindex.c notes 3-5), so a later kvread_word
 *    equal to w means the slot held this key at this location all along
 *    (unless 2^23 writes of the slot wrapped seq round to w). The page
 *    of a value is written again only after its key's removal changed
 *    w, so a reader that copied the value and then loads w again, after
 *    an acquire fence, copied that value whole (handler/kv/version.c).
 *
 * 9. Hosts that do not share caches coherently (DESIGN.md contract 11;
 *    sw and sim coherence): the metaserver, on any host, writes every
 *    slot, key record and region record (and writes each back before the
 *    store that publishes it); a reader on another host would see its own
 *    cached copy, however old, until it drops it. So every read here is
 *    of lines dropped first, through r->fresh: the slot before w1 (at
 *    each spin), the key record before it is compared, the slot's word
 *    again before w2, and likewise the region record and its word; the
 *    version word of kvread_word too. With lines dropped before each
 *    load, each load returns what the device held at some moment after
 *    the drop, so notes 1-4 hold as they do on one host. The batch
 *    [kvread_lookup_batch] drops each home slot, and the key record its
 *    hint names, before prefetching them; its lookup then skips those
 *    two drops once, which is sound because the lines were dropped inside
 *    the same call: the home slot's w1 is what the device held after its
 *    drop, and the record is trusted undropped only when the hint read
 *    (after the slot's drop, before the record's drop) saw w1 itself and
 *    the same record: the slot then held w1 from before the record's drop
 *    until w2 (seq only grows), so the record read is the one w1
 *    published. Otherwise the record is dropped again. In host and hw
 *    coherence fresh is NULL: one test per read.
 */
#include <errno.h>
#include <string.h>
#include <xxhash.h>

#include "cxlpool.h"
#include "keyheap.h"
#include "kvread.h"
#include "pool.h"

enum slot_rc {
	SLOT_STOP,  /* EMPTY: the key is not in the index */
	SLOT_NEXT,  /* not this key (or an invalid slot): go on */
	SLOT_HIT,   /* this key, body in *v */
	SLOT_BUSY,  /* stayed odd or kept changing: ask the server */
};

static bool
area_ok(const struct pool_sb *sb, enum pool_area_id id, uint64_t meta_len,
    uint64_t need)
{
	const struct pool_area *a = &sb->area[id];

	return a->off % POOL_AREA_ALIGN == 0 && a->len >= need &&
	    a->off <= meta_len && a->len <= meta_len - a->off;
}

/* kvread_init -- see kvread.h */
int
kvread_init(struct kvread *r, const struct pool_sb *sb, const void *meta,
    uint64_t meta_len, char *why, size_t n)
{
	const struct pool_area *a = sb->area;
	const uint8_t *base = meta;
	uint64_t ns = a[POOL_AREA_INDEX].count;

	memset(r, 0, sizeof(*r));
	if (ns < 4 || (ns & (ns - 1)) != 0 || ns > POOL_SLOTS_MAX ||
	    a[POOL_AREA_HEAP].count >= UINT32_MAX ||
	    a[POOL_AREA_REGION].count > UINT32_MAX ||
	    !area_ok(sb, POOL_AREA_INDEX, meta_len, ns * sizeof(*r->slots)) ||
	    !area_ok(sb, POOL_AREA_HEAP, meta_len,
	    a[POOL_AREA_HEAP].count * KV_GRANULE) ||
	    !area_ok(sb, POOL_AREA_REGION, meta_len,
	    a[POOL_AREA_REGION].count * sizeof(*r->rtab)) ||
	    a[POOL_AREA_DATA].off > sb->size ||
	    a[POOL_AREA_DATA].len > sb->size - a[POOL_AREA_DATA].off) {
		if (why != NULL && n > 0) {
			strncpy(why, "index, key heap or region table outside "
			    "the metadata mapping", n - 1);
			why[n - 1] = '\0';
		}
		return CXLP_E_CORRUPT;
	}
	r->slots = (const void *)(base + a[POOL_AREA_INDEX].off);
	r->nslots = ns;
	r->heap = base + a[POOL_AREA_HEAP].off;
	r->ngran = a[POOL_AREA_HEAP].count;
	r->rtab = (const void *)(base + a[POOL_AREA_REGION].off);
	r->nregions = (uint32_t)a[POOL_AREA_REGION].count;
	r->data_off = a[POOL_AREA_DATA].off;
	r->data_len = a[POOL_AREA_DATA].len;
	return 0;
}

static uint32_t
ld32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static uint64_t
ld64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* What the batch dropped before its lookup (note 9): the home slot, and
 * the key record its hint named while the slot read word. */
struct predrop {
	uint64_t slot;  /* UINT64_MAX: none (a single lookup, or used) */
	uint64_t word;  /* the slot's word at the hint read */
	uint32_t ref;   /* the record dropped; UINT32_MAX: none */
};

/* the record at ref holds key (note 1: only trusted if the word holds) */
static bool
key_matches(const struct kvread *r, uint32_t ref, const void *key,
    size_t klen, uint64_t hash, bool dropped)
{
	const struct kv_keyrec *rec;
	uint32_t ng = keyheap_rec_gran(klen);

	if (ref >= r->ngran || (uint64_t)ref + ng > r->ngran) {
		return false;
	}
	rec = (const void *)(r->heap + (uint64_t)ref * KV_GRANULE);
	if (!dropped) {
		kvread_fresh(r, rec, (size_t)ng * KV_GRANULE);
	}
	return ld32(&rec->klen) == klen && ld32(&rec->hlo) == (uint32_t)hash &&
	    memcmp(rec->key, key, klen) == 0;
}

/* one consistent read of slot i (note 1); the body goes to *body. pre
 * (NULL: none) names lines the batch dropped already (note 9). */
static enum slot_rc
read_slot(const struct kvread *r, uint64_t i, const void *key, size_t klen,
    uint64_t hash, struct kv_slot *body, struct predrop *pre)
{
	const struct kv_slot *s = &r->slots[i];
	bool home = pre != NULL && pre->slot == i;

	if (home) {
		pre->slot = UINT64_MAX; /* its drops serve one read only */
	}
	for (unsigned spin = 0; spin < KVREAD_SPINS; spin++) {
		uint64_t w1;
		bool hit;

		if (!home || spin > 0) {
			kvread_fresh(r, s, sizeof(*s));
		}
		w1 = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
		if (kv_seq(w1) & 1u) {
			cpu_relax();
			continue;
		}
		if (kv_state(w1) == KV_EMPTY) {
			return SLOT_STOP;
		}
		if (kv_state(w1) != KV_LIVE) {
			return SLOT_NEXT;
		}
		body->word = w1;
		body->tag = ld32(&s->tag);
		body->key = ld32(&s->key);
		body->region = ld32(&s->region);
		body->gen = ld32(&s->gen);
		body->page = ld32(&s->page);
		body->len = ld32(&s->len);
		hit = body->tag == (uint32_t)(hash >> 32) &&
		    key_matches(r, body->key, key, klen, hash, home &&
		    spin == 0 && pre->ref == body->key && pre->word == w1);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		kvread_fresh(r, &s->word, sizeof(s->word));
		if (ld64(&s->word) != w1) {
			continue;
		}
		return hit && kv_sum(w1) == layout_slot_checksum(body, i) ?
		    SLOT_HIT : SLOT_NEXT;
	}
	return SLOT_BUSY;
}

/* the probe walk (note 3): 0 and *body, CXLP_E_NOTFOUND or KVREAD_ASK */
static int
probe(const struct kvread *r, const void *key, size_t klen, uint64_t hash,
    struct kv_slot *body, uint64_t *slot, struct predrop *pre)
{
	uint64_t mask = r->nslots - 1, i = hash & mask;

	for (uint64_t step = 0; step < r->nslots; step++, i = (i + 1) & mask) {
		switch (read_slot(r, i, key, klen, hash, body, pre)) {
		case SLOT_STOP:
			return CXLP_E_NOTFOUND;
		case SLOT_HIT:
			*slot = i;
			return 0;
		case SLOT_BUSY:
			return KVREAD_ASK;
		case SLOT_NEXT:
			break;
		}
	}
	return CXLP_E_NOTFOUND;
}

/* a stable region record's values make sense for the slot (note 5) */
static bool
region_sane(const struct kvread *r, const struct pool_rrec *rec,
    const struct kv_slot *body)
{
	uint64_t rel = rec->off - r->data_off;

	return layout_rrec_checksum(rec) == rec->checksum &&
	    rec->off >= r->data_off && rel <= r->data_len && rec->len > 0 &&
	    rec->len <= r->data_len - rel && rec->page_size > 0 &&
	    rec->page_size <= rec->len &&
	    body->page < rec->len / rec->page_size &&
	    body->len <= rec->page_size;
}

/* note 4: 0 and *out, -EAGAIN (restart the lookup) or KVREAD_ASK */
static int
read_region(const struct kvread *r, const struct kv_slot *body,
    struct kvread_loc *out)
{
	const struct pool_rrec *src;
	struct pool_rrec rec;

	if (body->region >= r->nregions) {
		return KVREAD_ASK;
	}
	src = &r->rtab[body->region];
	for (unsigned spin = 0; spin < KVREAD_SPINS; spin++) {
		const uint64_t *from = &src->word;
		uint64_t *to = &rec.word;
		uint64_t w1;
		uint32_t st;

		kvread_fresh(r, src, sizeof(*src));
		w1 = __atomic_load_n(&src->word, __ATOMIC_ACQUIRE);
		st = rrec_state(w1);
		if ((st != POOL_REGION_OWNED && st != POOL_REGION_ORPHAN) ||
		    rrec_gen(w1) != body->gen) {
			return -EAGAIN;
		}
		for (size_t k = 0; k < sizeof(rec) / 8; k++) {
			to[k] = ld64(&from[k]);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		kvread_fresh(r, &src->word, sizeof(src->word));
		if (ld64(&src->word) != w1) {
			continue;
		}
		rec.word = w1;
		if (!region_sane(r, &rec, body)) {
			return KVREAD_ASK;
		}
		*out = (struct kvread_loc){ .region = body->region,
		    .gen = body->gen, .region_off = rec.off,
		    .region_len = rec.len,
		    .off = rec.off + (uint64_t)body->page * rec.page_size,
		    .len = body->len };
		return 0;
	}
	return KVREAD_ASK;
}

/* the lookup of key whose hash is known; pre as read_slot's */
static int
lookup_hashed(const struct kvread *r, const void *key, size_t klen,
    uint64_t hash, struct kvread_loc *out, struct predrop *pre)
{
	uint64_t slot = 0;
	struct kv_slot body;

	for (unsigned t = 0; t < KVREAD_RESTARTS; t++) {
		int rc = probe(r, key, klen, hash, &body, &slot, pre);

		if (rc == 0) {
			rc = read_region(r, &body, out);
		}
		if (rc != -EAGAIN) {
			if (rc == 0) {
				out->slot = slot;
				out->word = body.word;
			}
			return rc;
		}
	}
	return KVREAD_ASK;
}

/* kvread_lookup -- see kvread.h */
int
kvread_lookup(const struct kvread *r, const void *key, size_t klen,
    struct kvread_loc *out)
{
	return lookup_hashed(r, key, klen, XXH3_64bits(key, klen), out, NULL);
}

/* Prefetch the key record the home slot of hash names, if it looks like
 * the key's (klen bytes): only a hint (a torn or stale read wastes one
 * prefetch), so plain relaxed loads and a bounds check suffice. The slot
 * was dropped by the caller; the record is dropped first, and *pre says
 * what was dropped (note 9). */
static void
prefetch_key(const struct kvread *r, uint64_t hash, size_t klen,
    struct predrop *pre)
{
	const struct kv_slot *s = &r->slots[hash & (r->nslots - 1)];
	uint64_t w = ld64(&s->word);
	uint32_t ref = ld32(&s->key), ng = keyheap_rec_gran(klen);
	const uint8_t *rec = r->heap + (uint64_t)ref * KV_GRANULE;

	*pre = (struct predrop){ .slot = hash & (r->nslots - 1), .word = w,
	    .ref = UINT32_MAX };
	if (kv_state(w) == KV_LIVE &&
	    ld32(&s->tag) == (uint32_t)(hash >> 32) && ref < r->ngran &&
	    (uint64_t)ref + ng <= r->ngran) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE); /* w before the drop */
		kvread_fresh(r, rec, (size_t)ng * KV_GRANULE);
		pre->ref = ref;
		__builtin_prefetch(rec, 0, 3);
	}
}

/* kvread_lookup_batch -- see kvread.h */
void
kvread_lookup_batch(const struct kvread *r, size_t n,
    const void *const keys[], const size_t key_lens[],
    struct kvread_loc out[], int rc[])
{
	uint64_t hash[KVREAD_BATCH];
	struct predrop pre[KVREAD_BATCH];

	for (size_t i = 0; i < n; i += KVREAD_BATCH) {
		size_t k = n - i < KVREAD_BATCH ? n - i : KVREAD_BATCH;

		for (size_t j = 0; j < k; j++) {
			const struct kv_slot *home;

			hash[j] = XXH3_64bits(keys[i + j], key_lens[i + j]);
			home = &r->slots[hash[j] & (r->nslots - 1)];
			kvread_fresh(r, home, sizeof(*home));
			__builtin_prefetch(home, 0, 3);
		}
		for (size_t j = 0; j < k; j++) {
			prefetch_key(r, hash[j], key_lens[i + j], &pre[j]);
		}
		for (size_t j = 0; j < k; j++) {
			rc[i + j] = lookup_hashed(r, keys[i + j],
			    key_lens[i + j], hash[j], &out[i + j], &pre[j]);
		}
	}
}

/* kvread_word -- see kvread.h */
uint64_t
kvread_word(const struct kvread *r, uint64_t i)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	kvread_fresh(r, &r->slots[i].word, sizeof(r->slots[i].word));
	return ld64(&r->slots[i].word);
}
