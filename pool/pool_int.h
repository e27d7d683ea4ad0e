/*
 * pool_int.h -- the pool's private structs and the calls between its
 * modules (pool.c opens and formats, regtab.c keeps the region table,
 * sesstab.c the session table, kv.c ties the index to regions, check.c
 * verifies all of it). Tests include it to damage a pool on purpose.
 */
#ifndef CXLP_POOL_INT_H
#define CXLP_POOL_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"
#include "coh.h"
#include "damage.h"
#include "keyheap.h"
#include "kvindex.h"
#include "layout.h"
#include "map.h"
#include "pool.h"

/* DRAM state of one region table slot, rebuilt at open. */
struct region_dram {
	bool live;       /* OWNED or ORPHAN, validated, space taken */
	uint64_t nkeys;  /* keys pointing into it */
	uint64_t npages; /* len / page_size */
	uint64_t *pages; /* bitmap: page holds a key */
	bool damaged;    /* its record was damaged at open (damage.c) */
};

#define PIN_NONE UINT32_MAX /* no record: an empty bucket, a chain's end */

/* The chains of the pin table's DRAM index (pinidx.c), one per way a
 * record is looked up. */
enum pin_by {
	PIN_BY_PAIR,    /* (session, slot): the one record of a pair */
	PIN_BY_SLOT,    /* slot: every session's record on one key */
	PIN_BY_SESSION, /* session: every record of one session */
	PIN_BY_COUNT
};

/* One chained hash over the pin records (pinidx.c). */
struct pin_chain {
	uint32_t *head; /* per bucket: its first record, or PIN_NONE */
	uint32_t *next; /* per record: the next in its bucket, or PIN_NONE */
	uint32_t *prev; /* per record: the one before, or PIN_NONE */
	uint32_t mask;  /* buckets - 1 */
};

/* DRAM index of the pin table (pintab.c, pinidx.c), rebuilt at open. */
struct pin_dram {
	struct pin_chain by[PIN_BY_COUNT];
	uint32_t *free;   /* stack of free record numbers */
	uint32_t nfree;
	uint8_t *live;    /* per record: validated and on every chain */
	uint64_t records; /* live records, retired ones included */
	uint64_t pins;    /* sum of their counts */
	uint64_t retired; /* live records of count 0 (pintab.c note 2) */
};

/* DRAM state of eviction (evict.c), rebuilt at open. */
#define EV_NIL UINT32_MAX /* the end of a region's key list (evlist.c) */
#define EV_FRESH_SLOTS 4096u /* slots whose slice lines the hand drops at
                              * once (evict.c note 8) */

struct evict_dram {
	uint8_t *access;   /* one byte per index slot: the access area in
	                    * the mapping, or DRAM (note 5; and in sw and
	                    * sim, where it is the server's own lookups'
	                    * alone: note 8) */
	bool access_dram;  /* access is malloc'd */
	/* sw and sim (sb.access_hosts > 0): the readers' counters, one
	 * slice per host, which this process only reads (note 8) */
	const uint8_t *slices; /* slice 0 in the mapping; NULL: none */
	uint64_t stride;   /* bytes from one slice to the next */
	uint32_t nhosts;   /* slices (sb.access_hosts) */
	uint32_t self;     /* this host's slice (no drop needed), or
	                    * UINT32_MAX */
	uint8_t *seen[POOL_HOSTS_MAX]; /* per slice: its counters as the
	                    * hand last read them; NULL while the host
	                    * table has no host for the slice */
	uint64_t fresh;    /* the chunk of slots whose slice lines the hand
	                    * dropped last (EV_FRESH_SLOTS), or UINT64_MAX */
	bool ignore_access; /* pool_evict_set_order(false): sweep order */
	uint64_t nslots;   /* index slots (a power of two) */
	uint32_t *next;    /* per slot: next key of its region, or nil */
	uint32_t *prev;    /* per slot: previous key of its region */
	uint32_t *head;    /* per region: its first key's slot, or nil */
	uint64_t hand;     /* CLOCK: the next slot to look at */
	struct pool_evict_stats st;
};

/* A lease (lease.c): DRAM only. */
struct lease_ent {
	uint64_t session;
	uint64_t slot;
	uint64_t until_ms; /* caller's monotonic clock */
	uint32_t next;     /* bucket chain, or free list */
};

struct lease_dram {
	struct lease_ent *ent; /* cap entries */
	uint32_t *head;        /* cap buckets by slot */
	uint32_t cap;          /* a power of two, or 0 */
	uint32_t free;         /* free list head */
	uint32_t n;            /* live entries */
	uint64_t expired;      /* dropped by pool_lease_expire, in all */
};

struct pool {
	char *path;
	struct pmap *map;
	uint8_t *base;            /* start of the mapping */
	bool rdonly;              /* POOL_RDONLY: never written */
	struct pool_sb *sb;       /* in the mapping */
	struct pool_rrec *rtab;   /* region table read: rprim, or rcopy */
	struct pool_rrec *rprim;  /* region table, in the mapping */
	struct pool_rrec *rmir;   /* its copy after it, or NULL (rmirror.c) */
	struct pool_rrec *rcopy;  /* DRAM table of a rebuild that may not
	                           * write, damaged primaries restored */
	uint32_t nregions;        /* its records */
	struct region_dram *reg;  /* nregions, DRAM */
	uint64_t regions;         /* live regions */
	uint64_t orphans;         /* of which ORPHAN */
	struct pool_srec *stab;   /* session table, in the mapping */
	uint32_t nsess;           /* its records */
	uint64_t sessions;        /* live session records */
	uint64_t data_off;        /* bytes */
	uint64_t align;           /* bytes */
	struct alloc alloc;       /* data area free extents, align units */
	struct keyheap heap;
	struct kvindex kv;
	uint64_t keys;            /* keys linked to a live region */
	uint64_t key_bytes;       /* sum of their key lengths */
	uint64_t value_bytes;     /* sum of their value lengths */
	struct pool_pinrec *ptab; /* pin table, in the mapping */
	uint32_t npins;           /* its records */
	struct pin_dram pin;
	struct evict_dram ev;
	struct lease_dram lease;
	struct owner *own;        /* pool_open_owned: lock, claim (owner.c) */
	struct coh *coh;          /* how map publishes and reads (coh.h) */
	struct pool_damage *damage; /* open only: what recovery finds */
};

/* poolcoh.c (see its design notes) */
/* poolcoh_map -- map len bytes of p->path (0: all) for the mode its
 * device records: p->coh, p->map, p->base, p->sb (note 1). */
int poolcoh_map(struct pool *p, uint64_t len);
/* poolcoh_want -- the mode a format of path with pp records (AUTO
 * resolved; pp NULL: host). */
enum pool_coh poolcoh_want(const char *path, const struct pool_params *pp);
/* poolcoh_format -- map p for a format in mode m: again if it is mapped
 * for another (note 2), or for the first time (len bytes). */
int poolcoh_format(struct pool *p, uint64_t len, enum pool_coh m);
/* poolcoh_seal -- record m in a planned superblock. */
void poolcoh_seal(struct pool_sb *sb, enum pool_coh m);
/* poolcoh_attach -- after validation: drop the metadata area, refuse a
 * writer of another host on a host pool (note 3). */
int poolcoh_attach(struct pool *p);

/* owner.c, owner_hold.c (see their design notes) */
struct pool_own;
/* pool_boot_id -- this boot's id (/proc/sys/kernel/random/boot_id), NUL
 * padded; all zero if it cannot be read. */
void pool_boot_id(char out[POOL_BOOT_ID_LEN]);
/* pool_upgrade -- a writer's open of a validated pool of an older 2.x
 * layout: bring it to POOL_MINOR in place, or finish an upgrade a crash
 * cut short (upgrade.c). 0 for a pool of this layout or a newer minor,
 * which it leaves alone. */
int pool_upgrade(struct pool *p);
/* owner_enter -- lock the mapped target and decide, from its owner record,
 * whether this server may take it (owner.c note 1): 0, or -EBUSY naming
 * the server that has it. Before anything is written; may wait. */
int owner_enter(struct pool *p, const struct pool_own *own);
/* owner_claim -- claim the record (owner_hold.c note 1; fresh: the target
 * was just formatted, its record is 0) and start the heartbeat. Enters
 * first if owner_enter was not called (a file just created). 0 or -EBUSY. */
int owner_claim(struct pool *p, const struct pool_own *own, bool fresh);
/* owner_release -- stop the heartbeat, clear the record if it is ours,
 * drop the lock (owner_hold.c note 3). NULL-safe on p->own. */
void owner_release(struct pool *p);

/* regtab.c */
/* regtab_rebuild -- DRAM state and alloc from the region table. With
 * repair, live records that fail validation are freed on media. */
int regtab_rebuild(struct pool *p, bool repair);
/* regtab_fini -- free DRAM region state. */
void regtab_fini(struct pool *p);
/* regtab_link -- a key at (v) is being counted: 0, or CXLP_E_CORRUPT if
 * its region is not live, its gen differs, its page is outside the region
 * or already taken, or len exceeds the page. */
int regtab_link(struct pool *p, const struct kv_val *v);
/* regtab_unlink -- the key at v is gone: clear its page, count it, free
 * an ORPHAN region whose last key it was (on media unless rdonly). */
void regtab_unlink(struct pool *p, const struct kv_val *v);
/* regtab_reap -- free every ORPHAN region that no key points into (only
 * count them unless repair); returns how many. */
uint64_t regtab_reap(struct pool *p, bool repair);
/* regtab_key_off -- bytes from pool start of v's page. */
uint64_t regtab_key_off(const struct pool *p, const struct kv_val *v);

/* rmirror.c: the region table's copy */
/* rmirror_prepare -- before regtab_rebuild: count damaged primaries the
 * copy restores and copies that differ; with repair, restore them on
 * media, else read the table from rcopy with them restored. */
int rmirror_prepare(struct pool *p, bool repair);
/* rmirror_sync -- the copy of record i := the primary (persisted). */
void rmirror_sync(struct pool *p, uint32_t i);
/* rmirror_sync_all -- rmirror_sync of every record that differs. */
void rmirror_sync_all(struct pool *p);
/* rrec_set_word -- store record i's word, primary then copy. */
void rrec_set_word(struct pool *p, uint32_t i, uint64_t w);
/* rmirror_fini -- drop rcopy; read the media table again. */
void rmirror_fini(struct pool *p);

/* sesstab.c */
/* sesstab_rebuild -- count sessions; with repair, clear records that fail
 * their checksum and raise next_session_id above every live id. */
int sesstab_rebuild(struct pool *p, bool repair);

/* problem.c */
/* problem_vreport -- count a problem in *problems and, with a reporter,
 * say it (formatted, at most 255 bytes): the checks of every module. */
void problem_vreport(void (*report)(void *arg, const char *problem),
    void *arg, int *problems, const char *fmt, va_list ap);

/* evlist.c */
/* evlist_init -- the access bytes and empty region lists (before
 * kv_rebuild links the keys). 0 or -ENOMEM. */
int evlist_init(struct pool *p);
/* evlist_fini -- free them; NULL-safe on a pool whose init failed. */
void evlist_fini(struct pool *p);
/* evlist_link -- the key at slot now points into region. */
void evlist_link(struct pool *p, uint64_t slot, uint32_t region);
/* evlist_unlink -- the key at slot, in region, is going. */
void evlist_unlink(struct pool *p, uint64_t slot, uint32_t region);
/* evlist_check -- bad(arg, region, listed) per region whose key list
 * does not hold exactly its nkeys keys (evict.c note 4). */
void evlist_check(const struct pool *p, void (*bad)(void *arg,
    uint32_t region, uint64_t listed), void *arg);

/* lease.c */
/* lease_fini -- free the lease table (empty at open). */
void lease_fini(struct pool *p);

/* kv.c */
/* kv_drop_slot -- remove the live key at slot durably, as pool_kv_remove
 * does (*out: where it was), freeing an ORPHAN region it was the last
 * key of. */
void kv_drop_slot(struct pool *p, uint64_t slot, struct pool_kv *out);
/* kv_commit_mode -- before recovery: what PEND slots mean (kv.c note 2;
 * kv->pend from the superblock); true if a commit was cut short. */
bool kv_commit_mode(struct pool *p);
/* kv_commit_settle -- after recovery wrote the PEND slots back: the
 * commit is over (commit_seq even, persisted). Repair only. */
void kv_commit_settle(struct pool *p);
/* kv_rebuild -- link every live index entry to its region (page bitmap,
 * nkeys, sums); with repair, entries that do not link are removed. */
int kv_rebuild(struct pool *p, bool repair);

/* kvindex.c: batch helpers. A probe's cost is a cache and TLB miss on
 * the key's home slot (and, for a live slot, one on its key record); a
 * batch warms them all first so the misses overlap. Hints only: they
 * change nothing and may be skipped. */
/* kvindex_hash -- the hash kvindex_probe uses for key (XXH3_64bits). */
uint64_t kvindex_hash(const void *key, size_t klen);
/* kvindex_prefetch -- prefetch the home slot of hash (write: for an
 * insert that will store into it). */
void kvindex_prefetch(const struct kvindex *kv, uint64_t hash, bool write);
/* kvindex_prefetch_key -- if the home slot of hash is LIVE with hash's
 * tag, prefetch the key record it points at. Reads the slot: call after
 * kvindex_prefetch of the whole batch. Lock-free safe (a hint). */
void kvindex_prefetch_key(const struct kvindex *kv, uint64_t hash);

/* kvindex.c: what recovery and the scan (kvcheck.c) judge slots by. */
/* kvindex_load_word -- slot s's word, with acquire order. */
static inline uint64_t
kvindex_load_word(const struct kv_slot *s)
{
	return __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
}

/* kvindex_store_word -- store w as slot s's word, with release order;
 * with persist, make it durable. */
static inline void
kvindex_store_word(struct kvindex *kv, struct kv_slot *s, uint64_t w,
    bool persist)
{
	__atomic_store_n(&s->word, w, __ATOMIC_RELEASE);
	if (persist) {
		kv->persist(kv->ctx, &s->word, sizeof(s->word));
	}
}

/* kvindex_slot_valid -- slot i is LIVE and valid as in kvindex.c design
 * note 1: true and its key (*key, *klen point into the key heap). */
bool kvindex_slot_valid(const struct kvindex *kv, uint64_t i,
    const void **key, size_t *klen);
/* kvindex_slot_held -- slot i is LIVE or PEND (design note 11) and
 * valid: true and its key. */
bool kvindex_slot_held(const struct kvindex *kv, uint64_t i,
    const void **key, size_t *klen);
/* kvindex_slot_reachable -- the key in slot i is found by a probe
 * (design note 2). */
bool kvindex_slot_reachable(const struct kvindex *kv, uint64_t i);
/* kvindex_sweep_table -- empty every tombstone no probe needs, over the
 * whole table (design note 3). */
void kvindex_sweep_table(struct kvindex *kv);

/* pintab.c */
/* pintab_rebuild -- index the valid live pin records; with repair, free
 * the others on media (pintab.c design note 4). After kv_rebuild. */
int pintab_rebuild(struct pool *p, bool repair);
/* pintab_fini -- free the DRAM index. */
void pintab_fini(struct pool *p);
/* pintab_rec_problem -- why a live pin record is invalid (checksum,
 * session, and for a record holding pins its slot) or NULL; pure. */
const char *pintab_rec_problem(const struct pool *p,
    const struct pool_pinrec *r);

/* pinidx.c (see its design notes) */
/* pinidx_init -- empty chains and no live record, for npins records and
 * nsess sessions. 0 or -ENOMEM. */
int pinidx_init(struct pool *p);
/* pinidx_fini -- free the chains and live flags. */
void pinidx_fini(struct pool *p);
/* pinidx_link -- record i (its session and slot set) goes live: on every
 * chain, in the counters. */
void pinidx_link(struct pool *p, uint32_t i);
/* pinidx_unlink -- live record i leaves every chain and the counters. */
void pinidx_unlink(struct pool *p, uint32_t i);
/* pinidx_find -- the live record of (session, slot), or PIN_NONE. */
uint32_t pinidx_find(const struct pool *p, uint64_t session, uint64_t slot);
/* pinidx_of_session -- the live record of session after record i on its
 * chain (i PIN_NONE: the first), or PIN_NONE. Unlinking a record leaves
 * the one after it where it was, so a walk may free as it goes. */
uint32_t pinidx_of_session(const struct pool *p, uint64_t session,
    uint32_t i);
/* pinidx_check -- every live record on each chain once, in its bucket,
 * linked both ways, and no other record on one (pinidx.c note 1); calls
 * report(arg, problem) per problem. Returns how many; *walkable is false
 * if a chain links out of the table or in a cycle, where a walk of it
 * (a total) would not end. */
int pinidx_check(const struct pool *p,
    void (*report)(void *arg, const char *problem), void *arg,
    bool *walkable);

#endif /* CXLP_POOL_INT_H */
