/*
 * evict.c -- taking keys out of a full pool: which keys go (a CLOCK over
 * the KV index, fed by readers' reference bytes), and the two ways they
 * go (a victim at a time, or every key of one region).
 *
 * Why this shape: most reads never reach the metaserver (handlers read the
 * index in shared memory, direct.c), so a policy that counted only the
 * server's lookups would evict the hottest keys of the pool. Instead the
 * pool keeps an access area, one byte per index slot, that every reader
 * sets on a hit (handlers map it writable; the server sets it for the
 * lookups it answers), and the CLOCK hand, moving over index slots, gives
 * a key whose byte is set one more round (clearing it) and takes one whose
 * byte is clear. That is CLOCK (second chance), an approximation of LRU
 * whose hit path is one byte store, skipped when the byte is set already
 * (readers on many hosts do not bounce a line that says the same thing).
 *
 * DESIGN NOTES
 *
 * 1. Trust. The access area is advisory: a handler can set or clear any
 *    byte, which changes only the order in which keys are evicted, never
 *    which keys exist, where they point or whether a held key may go.
 *    Everything that decides what may be evicted (pins, region state,
 *    the index) is the metaserver's and lives elsewhere.
 *
 * 2. Who may go. A victim is a live key of a live region that no session
 *    pins (pool_pin_total) or leases past ops->now_ms (pool_leased; with
 *    no ops, every lease holds) and that the caller's filter accepts (the
 *    metaserver's rules: whose regions, leases). A key whose register is
 *    in flight is not in the index yet, so it is never met. The filter is
 *    asked before the reference byte is looked at, so keys the caller may
 *    not take keep their second chance for a caller that may.
 *
 * 3. Durability. A victim goes as a delete does (kv.c kv_drop_slot): its
 *    slot is tombstoned durably, then its region's page is cleared, and an
 *    ORPHAN region whose last key it was is freed on media. Only then is
 *    the caller told (the gone callback), so a page is handed out again
 *    only after the key's removal is durable (DESIGN contract 9).
 *
 * 4. Region lists. Each region's keys are linked through two arrays of
 *    index slot numbers (next, prev), so the keys of one region can be
 *    evicted without a scan of the index [pool_evict_region]. They are
 *    DRAM, rebuilt at open with the key counts (kv.c), and checked by
 *    pool_check: every list holds exactly its region's nkeys keys. The
 *    lists and the access bytes are evlist.c's, which kv.c keeps up to
 *    date and this file reads, so that the two call down into it and not
 *    into each other.
 *
 * 5. Pools formatted before layout 2.2 have no access area: the bytes
 *    live in DRAM then, and only the server's own lookups set them.
 *
 * 6. The budget (note 1 made good). Any handler can set every byte as
 *    fast as the hand clears them (issue 25: one process doing so made a
 *    full pool refuse 8,953 stores in 5 s while 960 keys were
 *    evictable). So the hand honours reference bytes for two sweeps (the
 *    first clears them, the second takes what stayed clear), and in a
 *    third takes the evictable keys it meets whatever their byte says
 *    (counted in forced) [pool_evict_clock]. The order can be bent by a
 *    writer of the access area; whether a store finds room cannot. A
 *    call that finds nothing evictable costs three sweeps, not two.
 *
 * 7. Totals since format. The counters of st start at zero at each open;
 *    the superblock keeps the keys and bytes evicted since format, by
 *    cause (evict_keys, evict_bytes). They are added once per pass (a
 *    pool_evict_clock or pool_evict_region call that took a key: one
 *    RECLAIM, one region emptied), after the pass's removals are
 *    durable, by two aligned 8-byte stores, each persisted
 *    [totals_add]: a pass of k keys pays 2 persists more than its k
 *    tombstones, not 2k. A crash inside a pass loses that pass's counts
 *    (or its bytes only, between the two stores): the totals never count
 *    a key that is still there, and lag by at most one pass.
 *
 * 8. Hosts without hardware coherence (sw and sim pools, contract 11).
 *    A byte that readers of many hosts set and the hand clears is a
 *    cross-host read-modify-write of shared lines: a line moves whole,
 *    so two hosts setting different bytes of one line lose one's write,
 *    and the hand's clear clobbers both. So there the access area holds
 *    one slice per host (layout_plan_hosts: page-aligned, no line shared
 *    by two slices), the host table in the superblock says whose
 *    (sb.hosts; the metaserver writes it, at the HELLO of a host it has
 *    not seen: pool_host_slice; a full table leaves that host's direct
 *    reads uncounted), and a slot's byte in a slice is a counter that
 *    only readers of that host write: a hit increments it and writes the
 *    line back (pool/access.c access_count; processes of one host may
 *    race and lose an increment, which is harmless). The server never
 *    writes a slice: it keeps in DRAM what it last saw of each counter
 *    (seen), drops the slice lines of a chunk of slots as the hand enters
 *    it [slices_fresh] (not its own host's: those lines are coherent with
 *    its host's readers), and takes a key as referenced when any counter
 *    moved since its last look [referenced]; its own lookups set a DRAM
 *    byte as in note 5. A counter that moved by a multiple of 256
 *    between two looks reads as unmoved: that key may lose its second
 *    chance, which bends the order and nothing else (note 1). A host's
 *    counters read at open, or when it joins, are what the hand saw
 *    last: counts from before do not count.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "persist.h"
#include "pool_int.h"


static_assert(sizeof(((struct pool_sb *)0)->evict_keys) ==
    POOL_EVICT_CAUSES * sizeof(uint64_t), "a total per eviction cause");

/* A pass of cause took keys whose values were bytes: they join the
 * totals since format (note 7). */
static void
totals_add(struct pool *p, enum pool_evict_cause cause, uint64_t keys,
    uint64_t bytes)
{
	struct pool_sb *sb = p->sb;

	if (keys == 0) {
		return;
	}
	pool_store8(p, &sb->evict_keys[cause], sb->evict_keys[cause] + keys);
	pool_store8(p, &sb->evict_bytes[cause],
	    sb->evict_bytes[cause] + bytes);
}

/* The victim at slot goes (note 3), counted under cause. */
static void
evict_slot(struct pool *p, uint64_t slot, enum pool_evict_cause cause,
    const struct evict_ops *ops)
{
	struct pool_kv kv;

	kv_drop_slot(p, slot, &kv);
	p->ev.st.keys[cause]++;
	p->ev.st.bytes[cause] += kv.len;
	if (ops != NULL && ops->gone != NULL) {
		ops->gone(ops->arg, &kv);
	}
}

/* slot holds a key that may go now (note 2), filled into *kv */
static bool
evictable(const struct pool *p, uint64_t slot, const struct evict_ops *ops,
    struct pool_kv *kv)
{
	struct kv_val v;

	if (kvindex_get(&p->kv, slot, &v, NULL, NULL) != 0 ||
	    v.region >= p->nregions || !p->reg[v.region].live) {
		return false;
	}
	kv->region = v.region;
	kv->gen = v.gen;
	kv->off = regtab_key_off(p, &v);
	kv->len = v.len;
	kv->slot = slot;
	if (ops != NULL && ops->may != NULL && !ops->may(ops->arg, kv)) {
		return false;
	}
	return pool_pin_total(p, slot) == 0 &&
	    !pool_leased(p, slot, ops != NULL ? ops->now_ms : 0);
}

/* The lines of the slot chunk holding slot in every watched slice but
 * this host's (whose lines this host's readers write into its own
 * cache), dropped once per chunk the hand enters (note 8). */
static void
slices_fresh(struct pool *p, uint64_t slot)
{
	struct evict_dram *e = &p->ev;
	uint64_t chunk = slot / EV_FRESH_SLOTS, first = chunk * EV_FRESH_SLOTS;
	uint64_t len = e->nslots - first < EV_FRESH_SLOTS ? e->nslots - first :
	    EV_FRESH_SLOTS;

	if (chunk == e->fresh) {
		return;
	}
	e->fresh = chunk;
	for (uint32_t i = 0; i < e->nhosts; i++) {
		if (e->seen[i] != NULL && i != e->self) {
			pool_fresh(p, e->slices + i * e->stride + first, len);
		}
	}
}

/* The key at slot was read since the hand last looked at it, which this
 * look now records: its byte was set (and is cleared), or in sw and sim
 * a host's counter moved since (note 8). */
static bool
referenced(struct pool *p, uint64_t slot)
{
	struct evict_dram *e = &p->ev;
	bool ref = __atomic_load_n(&e->access[slot], __ATOMIC_RELAXED) != 0;

	if (ref) {
		__atomic_store_n(&e->access[slot], 0, __ATOMIC_RELAXED);
	}
	if (e->slices == NULL) {
		return ref;
	}
	slices_fresh(p, slot);
	for (uint32_t i = 0; i < e->nhosts; i++) {
		uint8_t now;

		if (e->seen[i] == NULL) {
			continue;
		}
		now = __atomic_load_n(&e->slices[i * e->stride + slot],
		    __ATOMIC_RELAXED);
		if (now != e->seen[i][slot]) {
			e->seen[i][slot] = now;
			ref = true;
		}
	}
	return ref;
}

/* pool_evict_clock -- see pool.h */
size_t
pool_evict_clock(struct pool *p, size_t max, enum pool_evict_cause cause,
    const struct evict_ops *ops)
{
	struct evict_dram *e = &p->ev;
	uint64_t honour = 2 * e->nslots; /* two sweeps: one clears */
	uint64_t budget = honour + e->nslots + 1; /* then one that takes */
	size_t n = 0;
	uint64_t bytes0 = e->st.bytes[cause];

	if (p->rdonly || e->nslots == 0) {
		return 0;
	}
	e->fresh = UINT64_MAX; /* readers wrote since the last call */
	for (uint64_t step = 0; n < max && step < budget; step++) {
		uint64_t slot = e->hand;
		struct pool_kv kv;

		e->hand = (slot + 1) & (e->nslots - 1);
		e->st.sweeps += e->hand == 0;
		if (!evictable(p, slot, ops, &kv)) {
			continue;
		}
		if (!e->ignore_access && referenced(p, slot)) {
			if (step < honour) {
				e->st.spared++;
				continue;
			}
			e->st.forced++; /* note 6 */
		}
		evict_slot(p, slot, cause, ops);
		n++;
	}
	totals_add(p, cause, n, e->st.bytes[cause] - bytes0);
	return n;
}

/* pool_evict_region -- see pool.h */
size_t
pool_evict_region(struct pool *p, uint32_t id, enum pool_evict_cause cause,
    const struct evict_ops *ops)
{
	struct evict_dram *e = &p->ev;
	uint64_t bytes0 = e->st.bytes[cause];
	size_t n = 0;

	if (p->rdonly || id >= p->nregions || !p->reg[id].live) {
		return 0;
	}
	for (uint32_t s = e->head[id], next; s != EV_NIL; s = next) {
		struct pool_kv kv;

		next = e->next[s]; /* s leaves the list when it goes */
		if (evictable(p, s, ops, &kv)) {
			evict_slot(p, s, cause, ops);
			n++;
		}
	}
	totals_add(p, cause, n, e->st.bytes[cause] - bytes0);
	return n;
}

/* pool_evict_stats -- see pool.h */
void
pool_evict_stats(const struct pool *p, struct pool_evict_stats *st)
{
	*st = p->ev.st;
	st->hand = p->ev.hand;
	for (int c = 0; c < POOL_EVICT_CAUSES; c++) {
		/* written by this server only (note 7), and a
		 * reader of another host dropped them at open: no drop */
		st->total_keys[c] = pool_load8_here(&p->sb->evict_keys[c]);
		st->total_bytes[c] = pool_load8_here(&p->sb->evict_bytes[c]);
	}
	st->access_shared = !p->ev.access_dram;
}
