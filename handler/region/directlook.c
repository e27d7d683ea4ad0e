/*
 * directlook.c -- direct reads' lookups (direct.c maps the index they
 * read): a batch in passes of chunks, each chunk's answers kept only if
 * the pool kept its magic around them and no request group's commit ran
 * during the pass, and on pools that hosts share without hardware
 * coherence the drops that make every read fresh.
 *
 * DESIGN NOTES
 * 1. Drops cost a fence each. On sw and sim every line read must be
 *    dropped first, and each drop is a fence that waits for its lines
 *    to leave the caches, then a miss (about 0.3 us here, a link round
 *    trip on CXL). So drops that one step needs share one fence
 *    (pmap_fresh_many): the superblock's head, [magic, commit_seq] (its
 *    magic, uuid and commit_seq words, 5 lines) with the words of the
 *    step's hits or versions [head_and_words_fresh], and one drop serves
 *    every load of them up to the next that must come later.
 * 2. Cached first [lookup_cached]. Most of a lookup's drops are of lines
 *    that have not changed since this host last loaded them (a hot key's
 *    slot, key record and region record), and each costs a fenced drop and
 *    a miss (about 0.3 us here, a link round trip on CXL). So on sw and sim
 *    a chunk is first looked up in this host's cache as it is, with no
 *    drop; then each hit's slot word alone is dropped and read again, and
 *    the hit stands only if it is the word the cached lookup saw. That
 *    word's 24-bit seq moves with every change of the slot, and the slot's
 *    key record and region record (checked against the slot's gen) do not
 *    change while it holds that word, so an unchanged word proves the
 *    whole cached answer current at the moment of the fresh read. Any
 *    other answer (a miss, which a stale slot can fake; an odd or changed
 *    word; KVREAD_ASK) is looked up again with every drop. Assumed: no
 *    slot changes 2^24 times while a stale copy of it stays cached.
 * 3. The values ride on the proof's fence [values_drop_lines]. Before
 *    that fence, the lines of each cached hit's value (in a region this
 *    handler maps) are dropped too, so the copy the caller makes next
 *    needs no fence of its own (RES_F_DROPPED; rmap_resolve_ptr drops
 *    the rest). The drop comes before the hit is proven, and that is
 *    enough: a proven word was already the slot's when this host loaded
 *    its cached copy, and the writer wrote its value back before its
 *    REGISTER (contract 11), so the device held the value before the
 *    drop, and every load after the fence reads it. A hit that fails its
 *    proof wasted its drop (harmless; the new lookup's value is dropped
 *    when resolved). A value freed and reused after the proof is what
 *    the version check after the copy catches, as on every pool. The
 *    access count of a hit (access_touch) is written back without a
 *    fence for the same reason of cost (pool/hostslice.h).
 */
#include <stddef.h>
#include <string.h>

#include "direct_int.h"
#include "region.h"
#include "kvread.h"
#include "layout.h"
#include "map.h"

#define COMMIT_PASSES 4 /* batch passes that may meet a group's commit */

/* Drop the superblock's head, [magic, commit_seq]: the magic, uuid and
 * commit_seq words a lookup or a validate checks (5 lines), in one
 * cline_drop, so one fence for the three. Each load of them that
 * follows reads what the device held after this drop, so one drop
 * serves every such load up to the next read that must come later
 * than something (cost: each drop is a fence that waits for the
 * lines, then a miss; separate drops of the three words cost three). */
static void
sb_head_fresh(const struct direct *d)
{
	const struct pool_sb *sb = pmap_addr(d->map);

	kvread_fresh(&d->kr, sb, offsetof(struct pool_sb, commit_seq) +
	    sizeof(sb->commit_seq));
}

/* the pool is still the one formatted when we mapped it (a pool being
 * reformatted in place clears its magic first); the caller dropped the
 * line (sb_head_fresh) */
static bool
magic_intact(const struct direct *d)
{
	const uint64_t *magic = pmap_addr(d->map);

	return __atomic_load_n(magic, __ATOMIC_ACQUIRE) == d->magic;
}

/* the superblock's head (sb_head_fresh) and the words of slots
 * slot[0..n), n <= KVREAD_BATCH, dropped with one fence */
static void
head_and_words_fresh(const struct direct *d, const uint64_t slot[],
    size_t n)
{
	const struct pool_sb *sb = pmap_addr(d->map);
	const void *addr[KVREAD_BATCH + 1];
	size_t len[KVREAD_BATCH + 1];

	addr[0] = sb;
	len[0] = offsetof(struct pool_sb, commit_seq) + sizeof(sb->commit_seq);
	for (size_t i = 0; i < n; i++) {
		addr[i + 1] = &d->kr.slots[slot[i]].word;
		len[i + 1] = sizeof(uint64_t);
	}
	pmap_fresh_many(d->map, n + 1, addr, len);
}

static struct proto_loc
loc_of(const struct kvread_loc *l)
{
	return (struct proto_loc){ .region = l->region, .gen = l->gen,
	    .region_off = l->region_off, .region_len = l->region_len,
	    .off = l->off, .len = l->len };
}

/* The lines of the values of the hits among l[0..n) dropped, unfenced
 * (note 3): dropped[i] for each whose region this handler maps. The
 * caller holds map_lock (shared) until its fence. */
static void
values_drop_lines(struct cxlp_handler *h, size_t n,
    const struct kvread_loc l[], const int rc[], bool dropped[])
{
	for (size_t i = 0; i < n; i++) {
		struct proto_loc loc = loc_of(&l[i]);

		dropped[i] = rc[i] == 0 && rmap_drop_value_lines(h, &loc);
	}
}

/* kvread_lookup_batch of keys[0..n) on a mapping that needs drops:
 * from this host's cache first, each hit then proven by a fresh read of
 * its slot word, the rest looked up again with drops (note 2). The
 * hits' words are dropped with the superblock's head and their values'
 * lines (note 3, dropped[i]), after every cached lookup: true if nothing
 * was looked up after that drop, which then serves the chunk's check
 * after (direct_chunk) */
static bool
lookup_cached(struct cxlp_handler *h, const struct direct *d, size_t n,
    const void *const keys[], const size_t key_lens[],
    struct kvread_loc l[], int rc[], bool dropped[])
{
	uint64_t slot[KVREAD_BATCH];
	size_t hits = 0;
	bool again = false;

	kvread_lookup_batch(&d->kr_nodrop, n, keys, key_lens, l, rc);
	for (size_t i = 0; i < n; i++) {
		if (rc[i] == 0) {
			slot[hits++] = l[i].slot;
		}
	}
	pthread_rwlock_rdlock(&h->regions.map_lock);
	values_drop_lines(h, n, l, rc, dropped);
	head_and_words_fresh(d, slot, hits);
	pthread_rwlock_unlock(&h->regions.map_lock);
	for (size_t i = 0; i < n; i++) {
		if (rc[i] == 0 &&
		    kvread_word(&d->kr_nodrop, l[i].slot) == l[i].word) {
			continue;
		}
		rc[i] = kvread_lookup(&d->kr, keys[i], key_lens[i], &l[i]);
		dropped[i] = false;
		again = true;
	}
	return !again;
}

/* res and ask (and vers, unless NULL) of keys[0..n), n <= KVREAD_BATCH,
 * from the index: answers are kept only if the magic held before and
 * after the lookups. *intact is the check before (the previous chunk's
 * check after, or the pass's first), and is set to the check after:
 * nothing is read between one chunk's check after and the next's
 * before, so one load serves both. The drop before the check after
 * also covers commit_seq (sb_head_fresh), which direct_pass reads next
 * if this was its last chunk. */
static void
direct_chunk(struct cxlp_handler *h, struct direct *d, size_t n,
    const void *const keys[], const size_t key_lens[],
    struct proto_result res[], bool ask[], cxlp_version_t vers[],
    bool *intact_io)
{
	struct kvread_loc l[KVREAD_BATCH];
	int rc[KVREAD_BATCH];
	bool value_dropped[KVREAD_BATCH] = { false };
	bool intact = *intact_io;
	bool dropped = false;

	if (intact && d->kr.fresh != NULL) {
		dropped = lookup_cached(h, d, n, keys, key_lens, l, rc,
		    value_dropped);
	} else if (intact) {
		kvread_lookup_batch(&d->kr, n, keys, key_lens, l, rc);
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE); /* the lookups first */
	if (!dropped) {
		sb_head_fresh(d);
	}
	intact = intact && magic_intact(d);
	*intact_io = intact;
	for (size_t i = 0; i < n; i++) {
		ask[i] = !intact || rc[i] == KVREAD_ASK;
		if (ask[i]) {
			continue;
		}
		memset(&res[i], 0, sizeof(res[i]));
		res[i].status = rc[i];
		if (rc[i] == 0) {
			access_touch(d, l[i].slot);
			res[i].loc = loc_of(&l[i]);
			res[i].flags = value_dropped[i] ? RES_F_DROPPED : 0;
			if (vers != NULL) { /* version_hits makes it a token */
				vers[i].opaque[0] = l[i].word;
				vers[i].opaque[1] = l[i].slot;
			}
		}
	}
}

/* the pool's commit_seq (pool_commit_begin), acquire: even between the
 * commits of request groups; the caller dropped the line
 * (sb_head_fresh) */
static uint64_t
commit_seq(const struct direct *d)
{
	const struct pool_sb *sb = pmap_addr(d->map);

	return __atomic_load_n(&sb->commit_seq, __ATOMIC_ACQUIRE);
}

/* One pass over keys[0..n); true if no request group's commit ran
 * during it (commit_seq even and unchanged around it), so that the
 * answers hold none or all of each group's keys: a commit's keys turn
 * visible one by one after its commit point (pool/kv.c note 2), and a
 * pass that met that would hold part of them. */
static bool
direct_pass(struct cxlp_handler *h, struct direct *d, size_t n,
    const void *const keys[], const size_t key_lens[],
    struct proto_result res[], bool ask[], cxlp_version_t vers[])
{
	uint64_t seq;
	bool intact;

	/* no drop: a stale copy of commit_seq and magic, from before the
	 * pass, proves as much as a fresh one once the check after the
	 * lookups (dropped) finds them unchanged: no commit and no format
	 * ran from the stale copy's time to then; a changed one fails the
	 * pass, which is tried again from the line that drop loaded */
	seq = commit_seq(d);
	intact = magic_intact(d);
	for (size_t i = 0; i < n; i += KVREAD_BATCH) {
		size_t k = n - i < KVREAD_BATCH ? n - i : KVREAD_BATCH;

		direct_chunk(h, d, k, keys + i, key_lens + i, res + i,
		    ask + i, vers == NULL ? NULL : vers + i, &intact);
	}
	/* no drop: the last chunk's drop came after all its lookups
	 * (direct_chunk) and covered commit_seq, and nothing read since
	 * needs to come before this load */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return (seq & 1u) == 0 && commit_seq(d) == seq;
}

/* direct_lookup_batch -- see region.h. A batch that keeps meeting
 * commits, or that the index could not answer whole, is asked of the
 * metaserver whole: its LOOKUP runs under the lock that commits take,
 * and a mix of both answers could hold half a group. */
size_t
direct_lookup_batch(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    struct proto_result res[], bool ask[], cxlp_version_t vers[])
{
	struct direct *d = h->direct;
	size_t nask = 0;
	bool whole = false;

	for (unsigned pass = 0; d != NULL && direct_usable(h, d) && !whole &&
	    pass < COMMIT_PASSES; pass++) {
		whole = direct_pass(h, d, n, keys, key_lens, res, ask, vers);
	}
	for (size_t i = 0; whole && i < n; i++) {
		nask += ask[i];
	}
	if (!whole || (nask > 0 && n > 1)) {
		for (size_t i = 0; i < n; i++) {
			ask[i] = true;
		}
		return n;
	}
	return nask;
}

/* direct_intact -- see region.h */
bool
direct_intact(struct cxlp_handler *h, bool drop)
{
	const struct direct *d = h->direct;
	const struct pool_sb *sb;

	if (d == NULL) {
		return false;
	}
	if (drop) {
		sb_head_fresh(d); /* magic and uuid: one drop, one fence */
	}
	if (!magic_intact(d)) {
		return false;
	}
	sb = pmap_addr(d->map);
	return __atomic_load_n((const uint64_t *)(const void *)sb->uuid,
	    __ATOMIC_RELAXED) == d->uuid[0] &&
	    __atomic_load_n((const uint64_t *)(const void *)sb->uuid + 1,
	    __ATOMIC_RELAXED) == d->uuid[1];
}

/* direct_fresh_words -- see region.h */
const struct kvread *
direct_fresh_words(struct cxlp_handler *h, const uint64_t slot[], size_t n)
{
	const struct direct *d = h->direct;

	if (d == NULL || d->kr.fresh == NULL) {
		return NULL;
	}
	head_and_words_fresh(d, slot, n);
	return &d->kr_nodrop;
}
