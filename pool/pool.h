/*
 * pool.h -- the pool on media: the API the metaserver and pool-inspect use.
 *
 * A pool is one file or device: a metadata area (superblock, region table,
 * session table, KV index, key heap, pin table), then a data area cut into
 * regions of whole `align` units (2 MiB on files). The metaserver is the
 * only writer of the metadata area. This module knows nothing of sockets
 * or sessions' liveness: it keeps the records and their invariants, pins
 * included (kept on media since layout 2); policy (who may do what, when a
 * pin is taken) is the metaserver's. Requests that change the pool can be
 * stamped with their request id, so that one replayed after a metaserver
 * restart finds what its first run already did instead of doing it again
 * (pool_region_alloc_req, pool_pin_change).
 *
 * Threading: a pool is not locked internally. Calls that change it need
 * exclusive access; const calls may run concurrently with each other.
 */
#ifndef CXLP_POOL_H
#define CXLP_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coh.h"

#define POOL_ALIGN_DEFAULT (2u << 20) /* region alignment, bytes */
#define POOL_SIZE_DEFAULT (1ull << 30)
#define POOL_PATH_DEFAULT "/dev/shm/cxlpool.pool"

struct pool;

struct pool_params {
	uint64_t size;        /* whole pool, bytes (a device: its size) */
	uint64_t align;       /* region alignment, bytes; 0 = default */
	uint64_t index_slots; /* KV index capacity; 0 = derived from size */
	uint32_t max_sessions; /* 0 = default (1024) */
	enum pool_coh coherence; /* coh.h; 0 = host. POOL_COH_AUTO: sw on a
	                          * devdax device, host elsewhere */
};

/* pool_open flags */
#define POOL_CREATE 0x1u    /* create and format if the file is missing;
                             * format an existing file or device whose
                             * first 4 KiB are all zero (blank) */
#define POOL_RDONLY 0x2u    /* map read-only (pool-inspect); no recovery */
#define POOL_REFORMAT 0x4u  /* format even if a valid pool is there.
                             * An existing target keeps its own size
                             * (rounded down to align); align is raised
                             * to the media's (devdax) alignment */
#define POOL_NODROP 0x8u    /* refuse (CXLP_E_CORRUPT, nothing written) a
                             * pool whose recovery would drop damaged
                             * records; damage.h: pool_open_report */

/* pool_open -- open (and with POOL_CREATE, create and format) the pool at
 * path. params is used only when formatting (NULL: defaults). Returns 0 and
 * *out, or a negative error (CXLP_E_BADMAGIC, _VERSION, _CHECKSUM, _STALE,
 * -errno) with *out == NULL and cxlp_errormsg() saying why. On open the
 * DRAM state (free extents, key heap free lists, per-region key counts) is
 * rebuilt from the media. */
int pool_open(struct pool **out, const char *path, unsigned flags,
    const struct pool_params *params);
/* pool_close -- unmap and free; NULL-safe; sets *p = NULL. */
void pool_close(struct pool **p);

const char *pool_path(const struct pool *p);
/* pool_open_nonce -- the superblock's open_nonce: the one this open wrote
 * (a writer's), or the last writer's (read-only; 0 before layout 2.4). */
uint64_t pool_open_nonce(const struct pool *p);
/* pool_file_id -- which file or device p mapped at open (st_dev and
 * st_ino; a device's st_rdev and 0): the path may name another by now. */
void pool_file_id(const struct pool *p, uint64_t *dev, uint64_t *ino);
/* pool_path_changed -- the path p was opened by names another file or
 * device now, or none (*what: "no file" or "another file"). */
bool pool_path_changed(const struct pool *p, const char **what);
uint64_t pool_size(const struct pool *p);
uint64_t pool_align(const struct pool *p);
/* pool_uuid_hex -- the pool's uuid (set at format) as 32 hex digits and
 * a NUL, the default election key's tail (/cxlpool/<uuid>). */
void pool_uuid_hex(const struct pool *p, char out[33]);

/* What the pool lives on, as the mapping found it. */
struct pool_media {
	bool devdax;             /* a device DAX character device */
	bool is_volatile;        /* contents do not survive a reboot */
	uint64_t align;          /* media mapping alignment, bytes */
	const char *granularity; /* store granularity: "byte", "cache-line"
	                          * or "page" (static string) */
};

/* pool_layout -- the layout version p's superblock says, and in
 * *cut_from the older minor whose upgrade to it a crash cut short
 * (pool/upgrade.c note 2: a writer's open finishes it), else -1. */
void pool_layout(const struct pool *p, uint32_t *major, uint32_t *minor,
    int *cut_from);
/* pool_coherence -- the coherence mode p was formatted for (coh.h). */
enum pool_coh pool_coherence(const struct pool *p);
/* pool_writeback_gate -- from now on every write-back of p's lines in
 * sw and sim asks may_write(arg) first and, if false, writes nothing
 * back (an elected server's term: coh.c note 6). Before p is shared
 * between threads. */
void pool_writeback_gate(struct pool *p, bool (*may_write)(void *arg),
    void *arg);
/* pool_writebacks_refused -- write-backs of p's lines that the gate
 * refused. */
uint64_t pool_writebacks_refused(const struct pool *p);
/* pool_fresh -- drop this host's cached copy of [addr, addr + len) of
 * p's mapping before reading bytes another host writes (sw, sim; else
 * nothing). */
void pool_fresh(const struct pool *p, const void *addr, size_t len);
/* pool_writeback -- send this host's stores to [addr, addr + len) to the
 * device without persisting them (sw, sim; else nothing). */
void pool_writeback(const struct pool *p, const void *addr, size_t len);

/* pool_media -- fill *m for p's mapping. */
void pool_media(const struct pool *p, struct pool_media *m);

/* ---- regions ------------------------------------------------------------ */

enum pool_region_state {
	POOL_REGION_FREE = 0,   /* table slot unused */
	POOL_REGION_OWNED = 1,  /* owned by a live session */
	POOL_REGION_ORPHAN = 2, /* owner gone; lives while keys point in */
};

struct pool_region {
	uint32_t id;        /* index in the region table */
	uint32_t gen;       /* bumped each time the slot is reused */
	uint32_t state;     /* enum pool_region_state */
	uint64_t owner;     /* session id; 0 when orphaned */
	uint64_t off;       /* bytes from pool start, align-aligned */
	uint64_t len;       /* bytes, multiple of align */
	uint64_t page_size; /* bytes */
	uint64_t nkeys;     /* keys pointing into it (DRAM, rebuilt on open) */
};

/* pool_region_alloc -- first-fit a region of at least len bytes (rounded
 * up to align) for owner with the given page size (<= len). Returns 0 and
 * *out, -EINVAL, or CXLP_E_NOSPACE. */
int pool_region_alloc(struct pool *p, uint64_t owner, uint64_t len,
    uint64_t page_size, struct pool_region *out);
/* pool_region_alloc_req -- pool_region_alloc stamped with the request id
 * req (0: no stamp). If owner already owns a region stamped req (the
 * request's first run got that far before a restart), returns that one
 * and sets *found; else allocates as pool_region_alloc. */
int pool_region_alloc_req(struct pool *p, uint64_t owner, uint64_t req,
    uint64_t len, uint64_t page_size, struct pool_region *out,
    bool *found);
/* pool_region_find_req -- the region owner owns stamped req (req != 0):
 * 0 and *out, or CXLP_E_NOTFOUND. */
int pool_region_find_req(const struct pool *p, uint64_t owner, uint64_t req,
    struct pool_region *out);
/* pool_region_get -- the region with this id; CXLP_E_NOTFOUND if free or
 * out of range. */
int pool_region_get(const struct pool *p, uint32_t id,
    struct pool_region *out);
/* pool_region_disown -- the owner is gone (closed, returned, died): the
 * region is freed now if no key points into it, else becomes ORPHAN and is
 * freed with its last key. */
int pool_region_disown(struct pool *p, uint32_t id);
/* pool_region_max -- size of the region table (ids are < this). */
uint32_t pool_region_max(const struct pool *p);

/* ---- KV index ----------------------------------------------------------- */

struct pool_kv {
	uint32_t region;
	uint32_t gen;   /* region's gen */
	uint64_t off;   /* bytes from pool start */
	uint64_t len;   /* bytes */
	uint64_t slot;  /* index slot (stable while the key exists) */
};

/* pool_kv_insert -- register key -> (region, off, len) for owner, unless
 * the key exists. Checks, in order: key length (CXLP_E_KEYLEN); region
 * exists and is OWNED by owner (CXLP_E_PERM); off is a page boundary inside
 * the region and len fits the page (CXLP_E_BOUNDS, len > page:
 * CXLP_E_TOOBIG); key already present -> returns 0 with *inserted = false
 * and *out = the existing entry; page already holds a key (CXLP_E_BUSY);
 * index or key heap full (CXLP_E_NOSPACE). On success *inserted = true,
 * *out = the new entry, and the entry is durable before return. */
int pool_kv_insert(struct pool *p, uint64_t owner, const void *key,
    size_t klen, uint32_t region, uint64_t off, uint64_t len,
    struct pool_kv *out, bool *inserted);
/* pool_kv_check -- would pool_kv_insert accept (owner, key, region, off,
 * len) for a key not yet present? Its checks in its order, then that the
 * page holds no key (CXLP_E_BUSY). Changes nothing. */
int pool_kv_check(const struct pool *p, uint64_t owner, const void *key,
    size_t klen, uint32_t region, uint64_t off, uint64_t len);
/* A request group's commit (kv.c note 2), all under exclusive access:
 *   pool_commit_begin; pool_kv_stage of each key; then either
 *   pool_commit_publish (the commit point, then each key visible) or
 *   pool_commit_rollback (each key out again); pool_commit_end.
 * After a crash anywhere in it, open completes the commit if it passed
 * its commit point and rolls it back if not, so no reader ever sees
 * part of it; a reader of many keys from shared memory that finds the
 * superblock's commit_seq even and unchanged around its reads read
 * across none (it is odd from begin to end). */
/* pool_commit_begin -- commit_seq odd, persisted. */
void pool_commit_begin(struct pool *p);
/* pool_kv_stage -- pool_kv_insert for a commit: a new key goes in durable
 * but absent to every reader (a KV_PEND slot) until pool_commit_publish;
 * a key already in the index, or staged before in this commit, is
 * answered as pool_kv_insert answers a present one (*inserted false). */
int pool_kv_stage(struct pool *p, uint64_t owner, const void *key,
    size_t klen, uint32_t region, uint64_t off, uint64_t len,
    struct pool_kv *out, bool *inserted);
/* pool_commit_publish -- the commit point (one persisted store of
 * commit_done), then the keys that pool_kv_stage put in at slots[0..n)
 * become visible (a slot named twice, or not staged, is skipped). */
void pool_commit_publish(struct pool *p, const uint64_t *slots, size_t n);
/* pool_commit_rollback -- the staged keys at slots[0..n) out again. */
void pool_commit_rollback(struct pool *p, const uint64_t *slots, size_t n);
/* pool_commit_end -- commit_seq even again, persisted. */
void pool_commit_end(struct pool *p);
/* pool_commit_step -- between two inserts of a commit: nothing, or the
 * test hook's pause (crashpt.h, CXLP_COMMIT_PAUSE_US). */
void pool_commit_step(struct pool *p);
/* pool_commit_pending -- a commit cut short, not yet settled (a pool
 * opened read-only after a crash): true, with *keys its staged keys and
 * *complete whether recovery completes it (else it rolls it back). */
bool pool_commit_pending(const struct pool *p, uint64_t *keys,
    bool *complete);
/* pool_kv_hash -- the index hash of key, for pool_kv_prefetch. */
uint64_t pool_kv_hash(const void *key, size_t klen);
/* pool_kv_prefetch -- warm the index for a batch of n keys whose hashes
 * are h[0..n) before working through it: every home slot, then the key
 * record of every live home slot with a matching tag, so that the cache
 * misses overlap instead of coming one per key. write: the keys are about
 * to be inserted. A hint: changes nothing; call under the lock the
 * following operations take. */
void pool_kv_prefetch(const struct pool *p, const uint64_t *h, size_t n,
    bool write);
/* pool_kv_lookup -- 0 and *out, or CXLP_E_NOTFOUND. */
int pool_kv_lookup(const struct pool *p, const void *key, size_t klen,
    struct pool_kv *out);
/* pool_kv_remove -- remove key (durably); *out gets where it was. Frees an
 * ORPHAN region whose last key this was. CXLP_E_NOTFOUND if absent. */
int pool_kv_remove(struct pool *p, const void *key, size_t klen,
    struct pool_kv *out);
/* pool_kv_next -- iterate live keys: start with *cursor = 0; returns 1 and
 * the entry (key points into the mapping), 0 at the end. */
int pool_kv_next(const struct pool *p, uint64_t *cursor, struct pool_kv *kv,
    const void **key, size_t *klen);

/* ---- sessions ----------------------------------------------------------- */

struct pool_session {
	uint64_t id;         /* unique over the pool's life, never 0 */
	uint64_t token;      /* secret the client proves itself with */
	uint32_t pid;
	uint64_t start_time; /* clock ticks since boot of the client process */
	uint64_t instance;   /* client-chosen instance id */
	uint32_t keepalive_ms; /* heartbeat period its HELLO promised; 0 none */
	char host[64];       /* NUL-terminated, truncated */
	uint64_t flags;      /* POOL_SESS_* */
};

/* Session flags: how the server knows the process behind a session. */
#define POOL_SESS_PEERCRED 0x1ull /* pid and start_time are the server's
                                   * own reading of its ipc peer (peer
                                   * credentials, /proc), not the HELLO's */
#define POOL_SESS_RELAYED 0x2ull  /* that peer is not the handler (a relay
                                   * on the ipc socket): its life says
                                   * nothing of the handler's */

/* pool_session_add -- record a new session; assigns s->id. Returns 0 or
 * CXLP_E_NOSPACE when the session table is full. */
int pool_session_add(struct pool *p, struct pool_session *s);
/* pool_session_get -- 0 and *out, or CXLP_E_NOTFOUND. */
int pool_session_get(const struct pool *p, uint64_t id,
    struct pool_session *out);
/* pool_session_remove -- drop the record (regions are disowned by the
 * caller first). CXLP_E_NOTFOUND if absent. */
int pool_session_remove(struct pool *p, uint64_t id);
/* pool_session_next -- iterate: *cursor = 0 first; 1 per session, 0 at end */
int pool_session_next(const struct pool *p, uint64_t *cursor,
    struct pool_session *out);

/* ---- pins --------------------------------------------------------------- */

struct pool_pin {
	uint64_t session; /* who holds them */
	uint64_t slot;    /* index slot of the key (pool_kv.slot) */
	uint32_t count;   /* pins held, > 0 */
};

/* pool_pin_reserve -- at least n pin records are free, so that n later
 * pool_pin_change(+1) calls cannot fail for want of a record; if too few
 * are, the retired ones (records of released pins, kept to recognize
 * replays: pintab.c note 2) are freed first. Returns 0, or
 * CXLP_E_NOSPACE. Changes no pin. */
int pool_pin_reserve(struct pool *p, size_t n);
/* pool_pin_change -- session takes (delta +1) or releases (delta -1) one
 * pin on slot, durably, on behalf of request req; nth counts this slot's
 * occurrences in the request so far (1 for the first). If the record
 * shows req already made its nth change (a replay after a restart), it
 * changes nothing: 0 with *applied false. req 0 is never a replay.
 * Returns 0 with *applied true, CXLP_E_NOTPINNED (release without a pin),
 * CXLP_E_NOSPACE (no free record, or PIN_COUNT_MAX pins), or -EINVAL
 * (session 0, delta not +-1, slot not a live key). */
int pool_pin_change(struct pool *p, uint64_t session, uint64_t slot,
    int delta, uint64_t req, unsigned nth, bool *applied);
/* pool_pin_held -- pins session holds on slot. */
uint32_t pool_pin_held(const struct pool *p, uint64_t session,
    uint64_t slot);
/* pool_pin_total -- pins all sessions hold on the key at slot (0: the key
 * may be deleted or evicted). From the DRAM index, O(1) expected: the
 * sessions that pin it, not the table (pinidx.c). */
uint64_t pool_pin_total(const struct pool *p, uint64_t slot);
/* pool_pin_session_total -- pins session holds, on all keys. O(records
 * of session) expected. */
uint64_t pool_pin_session_total(const struct pool *p, uint64_t session);
/* pool_pin_release_session -- drop every pin session holds, durably;
 * returns how many pins that was. O(records of session) expected. */
uint64_t pool_pin_release_session(struct pool *p, uint64_t session);
/* pool_pin_next -- iterate the records that hold pins (not the retired
 * ones): *cursor = 0 first; 1 per record, 0 at the end. */
int pool_pin_next(const struct pool *p, uint64_t *cursor,
    struct pool_pin *out);
/* pool_pin_max -- size of the pin table (records). */
uint32_t pool_pin_max(const struct pool *p);

/* ---- leases (lease.c): pins with a time limit, in DRAM ------------------ */

#define POOL_LEASES_PER_SLOT 2u /* leases a pool holds per index slot */
#define POOL_LEASES_MIN 1024u

/* pool_lease_set -- session takes, renews (until_ms: expiry on the
 * caller's monotonic ms clock; until_ns: the same on CLOCK_REALTIME) or
 * with until_ms 0 releases its lease on the key at slot. Before a lease
 * that would outlast the pool's lease horizon is granted, the horizon is
 * raised durably (pool_lease_horizon_ns). Returns 0, CXLP_E_NOTPINNED
 * (release without a lease), CXLP_E_NOSPACE (table full) or -ENOMEM. */
int pool_lease_set(struct pool *p, uint64_t session, uint64_t slot,
    uint64_t until_ms, uint64_t until_ns);
/* pool_leased -- some session holds a lease on slot that runs past
 * now_ms. */
bool pool_leased(const struct pool *p, uint64_t slot, uint64_t now_ms);
/* pool_lease_release_session -- drop session's leases; how many. */
uint64_t pool_lease_release_session(struct pool *p, uint64_t session);
/* pool_lease_expire -- drop leases that ran out by now_ms; how many. */
uint64_t pool_lease_expire(struct pool *p, uint64_t now_ms);
/* pool_lease_stats -- leases held, and expired since open. */
void pool_lease_stats(const struct pool *p, uint64_t *active,
    uint64_t *expired);
/* pool_lease_horizon_ns -- CLOCK_REALTIME ns before which a lease some
 * server of this pool granted may still run (0: none ever). */
uint64_t pool_lease_horizon_ns(const struct pool *p);

/* ---- eviction (evict.c) ------------------------------------------------- */

enum pool_evict_cause {
	POOL_EVICT_PRESSURE = 0,  /* a store found no room */
	POOL_EVICT_WATERMARK = 1, /* free space fell below the low mark */
	POOL_EVICT_ORPHAN = 2,    /* its region's owner is gone */
	POOL_EVICT_CAUSES = 3,
};

struct pool_evict_stats {
	uint64_t keys[POOL_EVICT_CAUSES];  /* keys evicted, by cause */
	uint64_t bytes[POOL_EVICT_CAUSES]; /* their value bytes */
	uint64_t sweeps;  /* times the CLOCK hand went round the index */
	uint64_t spared;  /* referenced keys given a second chance */
	uint64_t forced;  /* referenced keys taken after the hand's budget
	                   * of two sweeps (evict.c note 6) */
	uint64_t total_keys[POOL_EVICT_CAUSES];  /* since format (the
	                                          * superblock's; this
	                                          * run's keys included) */
	uint64_t total_bytes[POOL_EVICT_CAUSES]; /* their value bytes */
	uint64_t hand;    /* the slot the hand is at */
	bool access_shared; /* readers' hits reach the policy (the pool has
	                     * an access area; else only server lookups) */
};

/* What the caller of an eviction decides (both may be NULL): may(arg, kv)
 * -- may this key go (pins are checked besides); gone(arg, kv) -- it went
 * (its removal is durable). */
struct evict_ops {
	bool (*may)(void *arg, const struct pool_kv *kv);
	void (*gone)(void *arg, const struct pool_kv *kv);
	void *arg;
	uint64_t now_ms; /* leases running past it hold their keys */
};

/* pool_evict_clock -- evict up to max keys in CLOCK order (evict.c note
 * 2): unpinned, unleased keys ops->may accepts whose reference byte is
 * clear; a set byte is cleared and the key passed over, for two sweeps of
 * the index; in a third sweep the evictable keys go whatever their byte
 * (note 6), then it stops. Returns how many keys went. */
size_t pool_evict_clock(struct pool *p, size_t max,
    enum pool_evict_cause cause, const struct evict_ops *ops);
/* pool_evict_region -- evict every unpinned key of region id that
 * ops->may accepts, whatever its reference byte; an ORPHAN region left
 * with no key is freed. Returns how many keys went. */
size_t pool_evict_region(struct pool *p, uint32_t id,
    enum pool_evict_cause cause, const struct evict_ops *ops);
/* pool_access_touch -- a reader hit the key at slot (sets its byte).
 * Lock-free: may run under a shared lock. */
void pool_access_touch(const struct pool *p, uint64_t slot);
/* pool_access_shared -- the access bytes are in the pool's access area
 * (layout 2.2), where handlers set them too (in sw and sim, each host's
 * in its own slice). */
bool pool_access_shared(const struct pool *p);
/* pool_host_slice -- the access slice of the host whose coh_host_hash()
 * is host: its entry in the host table (layout.h sb.hosts), made now if
 * it has none, persisted and written back before this returns, so a
 * reader of that host that drops the table's lines finds it (evict.c
 * note 8). A pool with one slice for all hosts (host, hw) answers 0 and
 * writes nothing. Exclusive access. Returns the slice (>= 0),
 * CXLP_E_NOSPACE when POOL_HOSTS_MAX other hosts have one, -EINVAL for
 * host 0 or a read-only pool, or -ENOMEM; cxlp_errormsg() says why. */
int pool_host_slice(struct pool *p, uint64_t host);
/* pool_evict_set_order -- use_access false: the hand ignores reference
 * bytes (index order; for comparisons), true: CLOCK (default). */
void pool_evict_set_order(struct pool *p, bool use_access);
/* pool_evict_stats -- the counters above: keys, bytes, sweeps, spared
 * and forced since this open, the totals since format. */
void pool_evict_stats(const struct pool *p, struct pool_evict_stats *st);

/* ---- stats and checks --------------------------------------------------- */

struct pool_stats {
	uint64_t size;           /* bytes */
	uint64_t align;          /* bytes */
	uint64_t meta_bytes;     /* metadata area, bytes */
	uint64_t data_bytes;     /* data area, bytes */
	uint64_t free_bytes;     /* data area in no region */
	uint64_t largest_free;   /* largest free extent, bytes */
	uint64_t regions;        /* owned + orphan */
	uint64_t orphan_regions;
	uint64_t region_slots;   /* region table capacity */
	uint64_t keys;
	uint64_t value_bytes;    /* sum of key value lengths */
	uint64_t key_bytes;      /* sum of key lengths */
	uint64_t index_slots;    /* index capacity */
	uint64_t key_heap_bytes; /* key heap capacity */
	uint64_t sessions;
	uint64_t pins;           /* pins held, all sessions */
	uint64_t index_tombs;    /* index slots that hold a tombstone */
};

void pool_stats(const struct pool *p, struct pool_stats *st);

/* pool_check -- verify every invariant of the layout (superblock and record
 * checksums, regions inside the data area and not overlapping, index
 * entries inside live regions on page boundaries, no page held by two keys,
 * key counts, free accounting, pin records and the pin index with its
 * per-key and per-session totals). Calls report(arg, problem) once per
 * problem found (report may be NULL). Returns the number of problems (0 =
 * clean). */
int pool_check(const struct pool *p,
    void (*report)(void *arg, const char *problem), void *arg);

#endif /* CXLP_POOL_H */
