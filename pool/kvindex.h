/*
 * kvindex.h -- the KV index: an open-addressing hash table of fixed-size
 * slots (layout.h: struct kv_slot) over key records in the key heap.
 * See the DESIGN NOTES at the top of kvindex.c.
 */
#ifndef CXLP_POOL_KVINDEX_H
#define CXLP_POOL_KVINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keyheap.h"
#include "layout.h"

/* What a key maps to; the pool layer turns (region, page) into bytes. */
struct kv_val {
	uint32_t region; /* region id */
	uint32_t gen;    /* region gen */
	uint32_t page;   /* page index in the region */
	uint32_t len;    /* value bytes */
};

/* persist(ctx, addr, len): make [addr, addr + len) durable and visible */
typedef void (*kv_persist_fn)(void *ctx, const void *addr, size_t len);

/* What KV_PEND slots mean now (kvindex.c note 11), set by the pool. */
enum kv_pend {
	KV_PEND_NONE = 0, /* no commit under way: a PEND slot is damage */
	KV_PEND_KEEP = 1, /* a commit under way, or one to complete at
	                   * recovery: PEND slots count as keys */
	KV_PEND_DROP = 2, /* a commit to roll back at recovery: PEND slots
	                   * count as tombstones */
};

struct kvindex {
	struct kv_slot *slots; /* nslots slots (in the mapping) */
	uint64_t nslots;       /* power of two */
	uint64_t max_live;     /* 3/4 of nslots: CXLP_E_NOSPACE beyond */
	uint64_t live;         /* valid LIVE slots (and PEND ones, KEEP) */
	uint64_t tombs;        /* TOMB slots */
	struct keyheap *heap;
	kv_persist_fn persist;
	void *ctx;
	enum kv_pend pend;     /* what PEND slots mean (note 11) */
};

#define KV_NONE UINT64_MAX

/* The outcome of looking a key up, for a following kvindex_put. */
struct kv_probe {
	uint64_t hash;  /* XXH3_64bits(key) */
	uint64_t slot;  /* where the key is (LIVE or PEND), or KV_NONE */
	bool pend;      /* it is in a PEND slot: not visible yet */
	uint64_t free;  /* first slot it may go into, or KV_NONE */
};

/* kvindex_init -- attach to nslots slots at slots and to heap. No I/O;
 * follow with kvindex_format (new pool) or kvindex_recover. */
void kvindex_init(struct kvindex *kv, struct kv_slot *slots, uint64_t nslots,
    struct keyheap *heap, kv_persist_fn persist, void *ctx);
/* kvindex_format -- make every slot EMPTY (persisted) and the heap free. */
void kvindex_format(struct kvindex *kv);
/* kvindex_recover -- rebuild DRAM state from the slots. With repair,
 * slots caught mid-write and LIVE slots that fail validation become
 * EMPTY/TOMB on media (counted in *dropped); without (read-only), they
 * are only skipped. Returns 0. */
int kvindex_recover(struct kvindex *kv, bool repair, uint64_t *dropped);

/* What kvindex_recover_report found (kvindex.c design note 6). */
struct kv_recovery {
	uint64_t torn;    /* slots a crash caught mid-write: restored */
	uint64_t pend;    /* PEND slots settled (KEEP: LIVE, DROP: TOMB) */
	uint64_t damaged; /* slots no write path leaves: dropped or skipped */
	bool sweep;       /* repair swept (or would sweep) the tombstones */
	/* called once per damaged slot, with why it is damage; may be NULL */
	void (*damage)(void *arg, uint64_t slot, const char *why);
	void *arg;
};

/* kvindex_recover_report -- kvindex_recover that tells a slot torn by a
 * crash (the odd word of an EMPTY or TOMB slot that kvindex_put leaves,
 * counted in rec->torn) from a damaged one (anything else recovery
 * drops: counted in rec->damaged and passed to rec->damage). Without
 * repair it writes nothing, and rec says what repair would do. */
int kvindex_recover_report(struct kvindex *kv, bool repair,
    struct kv_recovery *rec);
/* kvindex_probe -- find key (1..KH_KEY_MAX bytes) in a LIVE or PEND slot
 * (pr->pend says which); fills *pr. Returns 1 if found (pr->slot), 0 if
 * not. */
int kvindex_probe(const struct kvindex *kv, const void *key, size_t klen,
    struct kv_probe *pr);
/* kvindex_put -- insert key (absent, per pr from kvindex_probe with no
 * change since) -> v durably. 0 and *slot, or CXLP_E_NOSPACE. */
int kvindex_put(struct kvindex *kv, const struct kv_probe *pr,
    const void *key, size_t klen, const struct kv_val *v, uint64_t *slot);
/* kvindex_put_pend -- kvindex_put into a PEND slot (note 11): durable,
 * not visible to readers until kvindex_publish. kv->pend is KEEP. */
int kvindex_put_pend(struct kvindex *kv, const struct kv_probe *pr,
    const void *key, size_t klen, const struct kv_val *v, uint64_t *slot);
/* kvindex_publish -- the valid PEND slot i becomes LIVE: one persisted
 * store of its word. */
void kvindex_publish(struct kvindex *kv, uint64_t i);
/* kvindex_insert -- probe + put: 0 with *inserted false and *slot, *existing of
 * the existing entry, or 0 with *inserted true, or CXLP_E_NOSPACE. */
int kvindex_insert(struct kvindex *kv, const void *key, size_t klen,
    const struct kv_val *v, uint64_t *slot, bool *inserted,
    struct kv_val *existing);
/* kvindex_lookup -- 0 and *v, *slot (either may be NULL), or
 * CXLP_E_NOTFOUND (a PEND key too). */
int kvindex_lookup(const struct kvindex *kv, const void *key, size_t klen,
    struct kv_val *v, uint64_t *slot);
/* kvindex_remove -- durably remove key; 0 and *v (may be NULL), or
 * CXLP_E_NOTFOUND. */
int kvindex_remove(struct kvindex *kv, const void *key, size_t klen,
    struct kv_val *v);
/* kvindex_drop -- durably remove the valid LIVE (or PEND) slot i. */
void kvindex_drop(struct kvindex *kv, uint64_t i);
/* kvindex_get -- slot i if it is a valid LIVE slot: 0, *v and the key
 * (pointing into the heap), else CXLP_E_NOTFOUND. */
int kvindex_get(const struct kvindex *kv, uint64_t i, struct kv_val *v,
    const void **key, size_t *klen);
/* kvindex_get_held -- kvindex_get for a valid LIVE or PEND slot i (a key
 * staged earlier in the same commit): 0 and *v, else CXLP_E_NOTFOUND. */
int kvindex_get_held(const struct kvindex *kv, uint64_t i, struct kv_val *v);
/* kvindex_next -- the next valid LIVE slot at or after *cursor: 1 and
 * *slot (cursor advanced past it), or 0 at the end. */
int kvindex_next(const struct kvindex *kv, uint64_t *cursor,
    uint64_t *slot);
/* kvindex_scan -- every invariant, report(arg, problem) per problem
 * (report may be NULL). Returns the number of problems. */
int kvindex_scan(const struct kvindex *kv,
    void (*report)(void *arg, const char *problem), void *arg);
/* kvindex_check -- kvindex_scan as a checker: 0, or CXLP_E_CORRUPT with
 * the first problem in why. */
int kvindex_check(const struct kvindex *kv, char *why, size_t n);

#endif /* CXLP_POOL_KVINDEX_H */
