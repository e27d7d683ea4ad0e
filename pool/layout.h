/*
 * layout.h -- the pool's on-media format: the superblock (with its owner
 * record), the region and session records, the KV index slot and the key
 * record. Every field is fixed-width and little-endian (this code runs on
 * little-endian hosts only; see the #error below), every struct's size is
 * asserted, and every record larger than one 8-byte store carries a
 * checksum.
 *
 * layout.c holds the pure functions over these structs (plan a geometry,
 * encode, validate, checksum); nothing here does I/O.
 *
 * Writing hosts (DESIGN.md contract 11). On a pool of several hosts
 * without hardware coherence (coherence sw or sim, pool/coh.h) every
 * cache line has one writing host, named at each struct below as
 * "Written by": the metaserver's host for the superblock, the region,
 * session, pin tables, the index and the key heap (each persist writes
 * its lines back; pool/persist.c); a handler's host for the pages of the
 * regions it owns; the access area and the owner record have their own
 * rules, at their definitions. Every other host only reads, and drops
 * the lines first (pmap_fresh, pool_fresh).
 */
#ifndef CXLP_POOL_LAYOUT_H
#define CXLP_POOL_LAYOUT_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "cxlpool's on-media format is little-endian; port the accessors"
#endif

#define POOL_MAGIC "CXLPOOL" /* 8 bytes with its NUL */
#define POOL_MAJOR 2u        /* bump on incompatible layout changes; 2:
                              * pin table area, region request stamp */
#define POOL_MINOR 5u        /* 1: owner record in the superblock
                              * (struct pool_orec); a 2.0 pool reads as
                              * one without an owner (its bytes are 0).
                              * 2: the access area (POOL_COMPAT_ACCESS)
                              * 3: commit_seq (a 2.2 reader refuses a
                              * pool whose commit_seq is not 0)
                              * 4: commit_done and KV_PEND slots (a 2.3
                              * reader refuses a pool whose commit_done
                              * is not 0, drops a PEND slot as damage);
                              * evict_keys, evict_bytes (eviction totals
                              * since format; a 2.3 reader refuses a pool
                              * that has evicted); session record flags
                              * (was reserved; POOL_SESS_*); open_nonce
                              * (a 2.3 reader refuses a pool a 2.4
                              * writer opened)
                              * 5: coherence and coh_host (a pool of any
                              * mode but host also sets
                              * POOL_INCOMPAT_COHERENCE); access_hosts
                              * and the host table hosts[] (sw and sim:
                              * one access slice per host); term (the
                              * highest election epoch a leader served
                              * under) and the owner record's term;
                              * the last takeover (takeover_ns, _ms,
                              * _from, _term: from reserved bytes, still
                              * 2.5, which no release had).
                              * A writer's open upgrades an older 2.x
                              * pool to 2.5 in place (pool/upgrade.c:
                              * the version word, then the checksum);
                              * a 2.4 reader opens a 2.5 host pool
                              * whose term is 0 (and no takeover) */
#define POOL_INCOMPAT_RMIRROR 0x1ull /* the region area holds the table
                                     * twice: count records, then their
                                     * copies (rmirror.c) */
#define POOL_INCOMPAT_COHERENCE 0x2ull /* sb.coherence is not host
                                       * (coh.h): a library that does not
                                       * know the modes must not attach */
#define POOL_INCOMPAT_KNOWN (POOL_INCOMPAT_RMIRROR | POOL_INCOMPAT_COHERENCE)
                        /* incompat bits this code understands */
#define POOL_COMPAT_ACCESS 0x1ull /* sb.access: one advisory byte per
                                   * index slot that readers set on a hit
                                   * (evict.c). Code before 2.2 refuses
                                   * such a pool (its reserved bytes are
                                   * not zero); this code reads 2.1 pools,
                                   * which have none */
#define POOL_SB_VOLATILE 0x1ull  /* sb.flags: media does not survive boot */
#define POOL_SB_SIZE 4096u
#define POOL_PAGE_MIN 64u        /* smallest page size of a region */
#define POOL_AREA_ALIGN 4096u    /* every metadata area starts on a page */
#define POOL_BOOT_ID_LEN 40      /* text of a boot id (36) + NUL padding */
#define POOL_HOSTS_MAX 16u       /* host table entries: the hosts of an sw
                                  * or sim pool whose readers each get an
                                  * access slice of their own */

#define POOL_SESSIONS_DEFAULT 1024u
#define POOL_BYTES_PER_SLOT 4096u  /* default: one index slot per 4 KiB */
#define POOL_HEAP_PER_SLOT 64u     /* key heap bytes per index slot */
#define POOL_SLOTS_MIN 64u
#define POOL_SLOTS_MAX (1ull << 29) /* its key heap: < 2^32 granules */
#define POOL_PINS_MIN 1024u        /* pin records, at least */
#define POOL_SLOTS_PER_PIN 8u      /* default: one pin record per 8 slots */

enum pool_area_id {
	POOL_AREA_REGION = 0,  /* region table, count = records */
	POOL_AREA_SESSION = 1, /* session table, count = records */
	POOL_AREA_INDEX = 2,   /* KV index, count = slots (power of two) */
	POOL_AREA_HEAP = 3,    /* key heap, count = 16-byte granules */
	POOL_AREA_PIN = 4,     /* pin table, count = records */
	POOL_AREA_DATA = 5,    /* data area, count = align units */
	POOL_AREA_N = 6,       /* areas lie in this order on media */
};

struct pool_area {
	uint64_t off;   /* bytes from pool start */
	uint64_t len;   /* bytes */
	uint64_t count; /* records, slots, granules or units; see above */
};

/* Owner record: the metaserver that serves the pool (owner.c and
 * owner_hold.c have its rules). word is the publish word and the claim:
 * 0 = no owner, else a random token. In host and hw it changes only by
 * compare-and-swap, so two servers that race to claim a stale record
 * cannot both win; in sw and sim, where no atomic reaches another host,
 * by a claim of plain writes, a wait and a re-read (owner_sw.c). The
 * body (start_ns to reserved) is written with or after the claim;
 * checksum covers word and body, so a reader that finds it wrong knows a
 * claim was cut short or is under way. beat and beat_ns are each one
 * 8-byte store, outside the checksum. Not part of the superblock's
 * checksum or its must-be-zero reserved bytes. Its 8 lines (64-aligned)
 * are written by the owner's host (the beat thread: line 0; the claim
 * and the release: all) and, during a takeover only, by a claimant of
 * any host; every host reads them, after dropping them (owner.c note 2). */
#define POOL_OREC_HOST_LEN 64
#define POOL_OREC_LISTEN_LEN 256
struct pool_orec {
	uint64_t word;     /* claim token; 0 = none */
	uint64_t beat;     /* heartbeats so far */
	uint64_t beat_ns;  /* CLOCK_REALTIME of the last beat, ns */
	uint64_t start_ns; /* CLOCK_REALTIME of the claim, ns */
	uint32_t pid;      /* in the owner's pid namespace */
	uint32_t reserved0; /* zero */
	char host[POOL_OREC_HOST_LEN];     /* gethostname, NUL-terminated */
	char boot_id[POOL_BOOT_ID_LEN];    /* owner host's boot, NUL padded */
	char listen[POOL_OREC_LISTEN_LEN]; /* its endpoints, comma-separated,
	                                    * NUL-terminated, truncated */
	uint64_t term;         /* the owner's election term (epoch, etcd
	                        * create revision); 0: not elected
	                        * (no --elect) or before layout 2.5 */
	uint8_t reserved[88];  /* zero */
	uint64_t checksum;     /* XXH64 of word, start_ns..reserved */
};
static_assert(sizeof(struct pool_orec) == 504, "owner record size");

/* The superblock. Written by: the metaserver (the format, then its
 * 8-byte counters), except the owner record (its own rules, above). */
struct pool_sb {
	char magic[8];            /* "CXLPOOL\0" */
	uint32_t major;           /* POOL_MAJOR */
	uint32_t minor;           /* POOL_MINOR; newer minors are readable */
	uint64_t incompat;        /* feature bits; unknown ones: refuse */
	uint64_t compat;          /* feature bits; unknown ones: ignore */
	uint64_t flags;           /* POOL_SB_VOLATILE */
	uint64_t size;            /* whole pool, bytes */
	uint64_t align;           /* region alignment, bytes (power of 2) */
	struct pool_area area[POOL_AREA_N]; /* 6 x 24 bytes */
	uint8_t uuid[16];         /* random, set at format */
	char boot_id[POOL_BOOT_ID_LEN]; /* boot formatted in, NUL padded */
	uint64_t next_session_id; /* next id to hand out; never 0. Changes
	                           * after format (as lease_until_ns does):
	                           * one 8-byte store, not covered by
	                           * checksum */
	struct pool_area access;  /* POOL_COMPAT_ACCESS: count = index slots,
	                           * off and len multiples of align, between
	                           * the pin table and the data area, so a
	                           * handler maps it alone, writable; zero
	                           * (reserved) in pools before 2.2. With
	                           * access_hosts 0 it is one byte per slot,
	                           * set by the readers of every host (host
	                           * and hw pools: the lines are coherent);
	                           * else access_hosts slices of count bytes,
	                           * slice i at off + i * layout_access_stride
	                           * (page aligned), whose lines only the
	                           * readers of host hosts[i] write: one
	                           * counter per slot that they increment
	                           * (evict.c note 8) */
	uint64_t lease_until_ns;  /* CLOCK_REALTIME ns before which a lease a
	                           * server of this pool granted may still
	                           * run (lease.c; layout 2.2). One 8-byte
	                           * store, not covered by checksum */
	uint64_t commit_seq;      /* odd while a request group's keys are
	                           * going into the index, then even again
	                           * (pool_commit_begin): a reader of many
	                           * keys that sees it unchanged and even
	                           * around its reads saw none or all of a
	                           * group (layout 2.3; 0 before). One
	                           * 8-byte store, not covered by checksum */
	uint64_t commit_done;     /* the commit point of a request group
	                           * (pool_commit_publish): the odd commit_seq
	                           * of the commit whose keys are all in the
	                           * index as KV_PEND slots. While commit_seq
	                           * is odd, recovery completes the commit
	                           * (PEND -> LIVE) if commit_done equals it
	                           * and rolls it back (PEND -> TOMB) if not
	                           * (kv.c note 2; layout 2.4; 0 before). One
	                           * 8-byte store, not covered by checksum */
	uint64_t evict_keys[3];   /* keys evicted since format, by cause
	                           * (enum pool_evict_cause: pressure,
	                           * watermark, orphan), added at the end of
	                           * each eviction pass (evict.c note 7;
	                           * layout 2.4, 0 before). 8-byte stores, not
	                           * covered by checksum */
	uint64_t evict_bytes[3];  /* their value bytes, likewise */
	uint64_t open_nonce;      /* random, nonzero, written by each opening
	                           * writer (the metaserver, at every start):
	                           * which open of which file a handler maps
	                           * (WELCOME carries it; handler/session/poolid.c).
	                           * 0 in pools before 2.4. One 8-byte store,
	                           * not covered by checksum */
	uint32_t coherence;       /* enum pool_coh (coh.h) the pool was
	                           * formatted for; 0 (host) before 2.5.
	                           * Written by the format only */
	uint32_t coh_reserved;    /* zero */
	uint64_t coh_host;        /* coherence host: coh_host_hash() of the
	                           * host that formatted it, the one host
	                           * allowed; else 0 */
	uint32_t access_hosts;    /* slices of the access area: 0 = one for
	                           * all hosts (host, hw); POOL_HOSTS_MAX in
	                           * sw and sim (layout_plan_hosts). Written
	                           * by the format only */
	uint32_t access_reserved; /* zero */
	uint64_t hosts[POOL_HOSTS_MAX]; /* the host table: coh_host_hash() of
	                           * the host whose readers write access
	                           * slice i; 0 = free; entries from
	                           * access_hosts on stay 0. Its lines are
	                           * written only by the metaserver serving
	                           * the pool (at a HELLO naming a host not
	                           * in it yet: pool_host_slice), one 8-byte
	                           * store per entry, cleared only by a
	                           * format, so a host keeps its slice across
	                           * restarts. Not covered by checksum */
	uint64_t term;            /* the highest election term (epoch) a
	                           * leader served this pool under; 0: none
	                           * (no --elect). Written by an elected
	                           * leader before it serves (owner.c note
	                           * 3), and by a format (0). One 8-byte
	                           * store, not covered by checksum */
	uint64_t takeover_ns;     /* the last takeover (pool_takeover_set):
	                           * CLOCK_REALTIME ns when the elected leader
	                           * began to serve; 0: none. Written last */
	uint64_t takeover_ms;     /* how long it took: from the vacancy that
	                           * leader saw at etcd to serving, ms */
	uint64_t takeover_from;   /* the pool's term before it (0: none) */
	uint64_t takeover_term;   /* the term that took over. These four:
	                           * written by the elected leader once it
	                           * serves, 8-byte stores not covered by
	                           * checksum (layout 2.5: reserved bytes
	                           * before) */
	uint8_t reserved[3024];   /* zero */
	struct pool_orec owner;   /* who serves the pool; its own rules,
	                           * above (layout 2.1; zero in 2.0) */
	uint64_t checksum;        /* XXH64 of bytes above, next_session_id,
	                           * lease_until_ns, commit_seq, commit_done,
	                           * the eviction totals, open_nonce, hosts,
	                           * term, the takeover fields and owner read
	                           * as 0 */
};
static_assert(sizeof(struct pool_sb) == POOL_SB_SIZE, "superblock size");
static_assert(offsetof(struct pool_sb, owner) % 64 == 0,
    "owner record words are aligned 8-byte stores");
static_assert(offsetof(struct pool_sb, lease_until_ns) % 8 == 0,
    "lease_until_ns is published by an aligned 8-byte store");
static_assert(offsetof(struct pool_sb, commit_seq) % 8 == 0,
    "commit_seq is published by an aligned 8-byte store");
static_assert(offsetof(struct pool_sb, commit_done) % 8 == 0,
    "commit_done is published by an aligned 8-byte store");
static_assert(offsetof(struct pool_sb, evict_keys) % 8 == 0 &&
    offsetof(struct pool_sb, evict_bytes) % 8 == 0,
    "eviction totals are published by aligned 8-byte stores");
static_assert(offsetof(struct pool_sb, open_nonce) % 8 == 0,
    "open_nonce is published by an aligned 8-byte store");
static_assert(offsetof(struct pool_sb, hosts) % 8 == 0,
    "host table entries are published by aligned 8-byte stores");
static_assert(offsetof(struct pool_sb, term) % 8 == 0,
    "term is published by an aligned 8-byte store");
static_assert(offsetof(struct pool_sb, takeover_ns) % 8 == 0,
    "takeover fields are published by aligned 8-byte stores");
static_assert(offsetof(struct pool_sb, next_session_id) % 8 == 0,
    "next_session_id is published by an aligned 8-byte store");

/* Region record. Written by: the metaserver. word is the publish word:
 * one 8-byte store changes the state; the body (gen, owner, off, len,
 * page_size) is written and persisted while the slot still reads FREE,
 * and never changes while the region is live. */
struct pool_rrec {
	uint64_t word;      /* bits 0-31 state (enum pool_region_state),
	                     * bits 32-63 gen */
	uint64_t owner;     /* session id that allocated it */
	uint64_t off;       /* bytes from pool start */
	uint64_t len;       /* bytes, multiple of align */
	uint64_t page_size; /* bytes, 1..UINT32_MAX */
	uint64_t req;       /* request id of the REGION_ALLOC that made it
	                     * (0: none), so a retried request after a
	                     * restart finds it instead of allocating again */
	uint64_t reserved;  /* zero */
	uint64_t checksum;  /* XXH64 of bytes 0..55 with state bits read 0 */
};
static_assert(sizeof(struct pool_rrec) == 64, "region record size");

static inline uint32_t
rrec_state(uint64_t word)
{
	return (uint32_t)word;
}

static inline uint32_t
rrec_gen(uint64_t word)
{
	return (uint32_t)(word >> 32);
}

static inline uint64_t
rrec_word(uint32_t state, uint32_t gen)
{
	return (uint64_t)gen << 32 | state;
}

/* Session record; id is the publish word (0 = free). Written by: the
 * metaserver. */
struct pool_srec {
	uint64_t id;          /* session id, never 0 when live */
	uint64_t token;       /* secret */
	uint64_t start_time;  /* clock ticks since boot of the client */
	uint64_t instance;    /* client-chosen id */
	uint32_t pid;
	uint32_t keepalive_ms; /* the handler's heartbeat period, ms; 0 =
	                        * none promised (and in records of old
	                        * pools, where this word was reserved) */
	char host[64];        /* NUL-terminated */
	uint64_t flags;       /* POOL_SESS_* (layout 2.4; zero before) */
	uint64_t reserved;    /* zero */
	uint64_t checksum;    /* XXH64 of bytes 0..119 (id included) */
};
static_assert(sizeof(struct pool_srec) == 128, "session record size");

/* Pin record (written by: the metaserver): session holds count pins on
 * the key in index slot `slot`. session is the publish word (0 = free);
 * the body (slot, word, checksum) is written and persisted while session
 * reads 0; later the count changes by one 8-byte store of word. A record never has count 0 while live:
 * the last unpin frees it. */
struct pool_pinrec {
	uint64_t session;  /* owner session id; 0 = free */
	uint64_t slot;     /* index slot of the pinned key */
	uint64_t word;     /* bits 0-19 count, 20-23 hits, 24-63 stamp */
	uint64_t checksum; /* XXH64 of session and slot */
};
static_assert(sizeof(struct pool_pinrec) == 32, "pin record size");

/* The stamp is the low 40 bits of the id of the last request that changed
 * the record, hits how many times that request changed it (saturating):
 * a request replayed after a restart skips the changes it already made. */
#define PIN_COUNT_MAX 0xfffffu
#define PIN_HITS_MAX 0xfu
#define PIN_STAMP_MASK 0xffffffffffull

static inline uint32_t
pin_count(uint64_t word)
{
	return (uint32_t)(word & PIN_COUNT_MAX);
}

static inline uint32_t
pin_hits(uint64_t word)
{
	return (uint32_t)(word >> 20) & PIN_HITS_MAX;
}

static inline uint64_t
pin_stamp(uint64_t word)
{
	return word >> 24;
}

static inline uint64_t
pin_word(uint32_t count, uint32_t hits, uint64_t req)
{
	return (req & PIN_STAMP_MASK) << 24 |
	    (uint64_t)(hits & PIN_HITS_MAX) << 20 | (count & PIN_COUNT_MAX);
}

/* KV index slot (written by: the metaserver; read in place by handlers
 * of every host, who drop its line first in sw and sim). word is the
 * publish word and the reader's sequence:
 * a reader loads word, reads the body, loads word again, and trusts the
 * body only if both loads are equal and even. */
struct kv_slot {
	uint64_t word;   /* bits 0-23 seq (odd: being written), 24-31 state
	                  * (enum kv_state), 32-63 body checksum (LIVE) */
	uint32_t tag;    /* XXH3_64bits(key) >> 32 */
	uint32_t key;    /* key record: 16-byte granules from heap start */
	uint32_t region; /* region id */
	uint32_t gen;    /* region gen at insert */
	uint32_t page;   /* page index in the region */
	uint32_t len;    /* value bytes (<= page_size <= UINT32_MAX) */
};
static_assert(sizeof(struct kv_slot) == 32, "index slot size");

enum kv_state {
	KV_EMPTY = 0, /* never used since the chain ended here */
	KV_LIVE = 1,
	KV_TOMB = 2,  /* removed; probe chains continue past it */
	KV_PEND = 3,  /* a request group's key, in the index but not yet
	               * visible: readers treat it as absent, the writer's
	               * probe as taken; LIVE or TOMB by one store when its
	               * commit ends or recovery settles it (kv.c note 2;
	               * layout 2.4). Its checksum as a LIVE slot's */
};

#define KV_SEQ_MASK 0xffffffull

static inline uint32_t
kv_seq(uint64_t word)
{
	return (uint32_t)(word & KV_SEQ_MASK);
}

static inline uint32_t
kv_state(uint64_t word)
{
	return (uint32_t)(word >> 24) & 0xffu;
}

static inline uint32_t
kv_sum(uint64_t word)
{
	return (uint32_t)(word >> 32);
}

static inline uint64_t
kv_word(uint32_t seq, uint32_t state, uint32_t sum)
{
	return (uint64_t)sum << 32 | (uint64_t)(state & 0xffu) << 24 |
	    (seq & KV_SEQ_MASK);
}

/* Key record in the key heap, 16-byte aligned, rounded up to 16 bytes.
 * Written by: the metaserver, before the slot that names it. */
struct kv_keyrec {
	uint32_t klen;  /* key bytes, 1..CXLP_KEY_MAX */
	uint32_t hlo;   /* XXH3_64bits(key) & 0xffffffff */
	uint8_t key[];  /* klen bytes */
};
static_assert(sizeof(struct kv_keyrec) == 8, "key record header size");
#define KV_GRANULE 16u

/* layout_plan -- compute a superblock's geometry for a pool of size bytes.
 * align 0, index_slots 0 and max_sessions 0 take defaults. Fills every
 * field but uuid, boot_id, flags and checksum. Returns 0, or -EINVAL with
 * why filled when the numbers cannot make a pool. */
int layout_plan(struct pool_sb *sb, uint64_t size, uint64_t align,
    uint64_t index_slots, uint32_t max_sessions, char *why, size_t n);
/* layout_plan_hosts -- lay a planned superblock's access area out as
 * hosts slices (1..POOL_HOSTS_MAX; sw and sim pools), each of
 * layout_access_stride bytes, and the data area after it. Returns 0, or
 * -EINVAL with why filled when no data area is left. */
int layout_plan_hosts(struct pool_sb *sb, uint32_t hosts, char *why,
    size_t n);
/* layout_access_stride -- bytes from one access slice to the next: the
 * slots rounded up to a page, so no two slices share a cache line. */
uint64_t layout_access_stride(const struct pool_sb *sb);
/* layout_seal -- compute and store sb->checksum. */
void layout_seal(struct pool_sb *sb);
/* layout_upgrade_torn -- the older minor whose upgrade to POOL_MINOR was
 * cut between its version store and its checksum store: sb says
 * POOL_MINOR and its checksum is that of the same bytes with minor m <
 * POOL_MINOR (pool/upgrade.c note 2). Returns m, or -1 (any other
 * superblock, a sound one included). */
int layout_upgrade_torn(const struct pool_sb *sb);
/* layout_validate -- check a superblock read from a file of file_size
 * bytes. Returns 0, CXLP_E_BADMAGIC, CXLP_E_VERSION, CXLP_E_CHECKSUM or
 * CXLP_E_CORRUPT (truncated file, bad geometry, nonzero reserved), with
 * why filled. A superblock an upgrade left between its two stores
 * (layout_upgrade_torn) passes: the next writer finishes the upgrade. */
int layout_validate(const struct pool_sb *sb, uint64_t file_size,
    char *why, size_t n);

/* layout_fit -- the size and align of a pool formatted on an existing
 * file or device of target_size bytes whose mappings must be media_align
 * aligned (pmap_alignment), asked for want_align (0 = the 2 MiB default):
 * align is the larger of the two (both powers of two, so a multiple of
 * each), size is target_size rounded down to it. Returns 0, or -EINVAL
 * with why filled when either align is not a power of two >= 4096 or the
 * target holds less than two align units (metadata plus one of data). */
int layout_fit(uint64_t target_size, uint64_t want_align,
    uint64_t media_align, uint64_t *size, uint64_t *align, char *why,
    size_t n);
/* layout_media_check -- can the pool sb describes live on media whose
 * mappings must be media_align aligned (its align a multiple of it)?
 * Returns 0, or CXLP_E_CORRUPT with why filled. */
int layout_media_check(const struct pool_sb *sb, uint64_t media_align,
    char *why, size_t n);

/* layout_orec_checksum -- the checksum an owner record should carry. */
uint64_t layout_orec_checksum(const struct pool_orec *o);
/* layout_rrec_checksum -- the checksum a region record should carry. */
uint64_t layout_rrec_checksum(const struct pool_rrec *r);
/* layout_rrec_problem -- why the live region record r of a pool with
 * superblock sb and region alignment align (bytes) is invalid (state,
 * checksum, extent outside the data area or unaligned, page size, owner
 * or reserved field), or NULL if it is fine. */
const char *layout_rrec_problem(const struct pool_sb *sb, uint64_t align,
    const struct pool_rrec *r);
/* layout_srec_checksum -- the checksum a session record should carry. */
uint64_t layout_srec_checksum(const struct pool_srec *s);
/* layout_pinrec_checksum -- the checksum a pin record should carry. */
uint64_t layout_pinrec_checksum(uint64_t session, uint64_t slot);
/* layout_slot_checksum -- the body checksum a LIVE slot at index i
 * should carry in its word. */
uint32_t layout_slot_checksum(const struct kv_slot *s, uint64_t i);

#endif /* CXLP_POOL_LAYOUT_H */
