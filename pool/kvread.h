/*
 * kvread.h -- lock-free, read-only lookups in a KV index someone else
 * writes: a handler reads the metaserver's index straight from its
 * read-only mapping of the metadata area, with no round trip. See the
 * DESIGN NOTES at the top of kvread.c.
 */
#ifndef CXLP_POOL_KVREAD_H
#define CXLP_POOL_KVREAD_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

/* kvread_lookup's "no stable answer" return: ask the metaserver. */
#define KVREAD_ASK 1
/* reads of one odd (mid-write) word before giving up with KVREAD_ASK */
#define KVREAD_SPINS 64u
/* whole lookups repeated after a slot/region mismatch, then KVREAD_ASK */
#define KVREAD_RESTARTS 4u
/* keys whose cache misses kvread_lookup_batch overlaps at a time */
#define KVREAD_BATCH 64u

/* kvread_fresh_fn -- the next loads of [addr, addr + len) read what the
 * device holds now, not this host's cached copy (kvread.c note 9). */
typedef void (*kvread_fresh_fn)(const void *ctx, const void *addr,
    size_t len);

/* The metadata area as a reader sees it: const pointers into a mapping of
 * [0, meta_len) of the pool, and the geometry to bound every read by. */
struct kvread {
	const struct kv_slot *slots;  /* nslots slots */
	uint64_t nslots;              /* power of two */
	const uint8_t *heap;          /* key heap area */
	uint64_t ngran;               /* 16-byte granules in the heap */
	const struct pool_rrec *rtab; /* nregions region records */
	uint32_t nregions;
	uint64_t data_off, data_len;  /* data area, bytes from pool start */
	/* Called with fresh_ctx before every read of a slot, key record or
	 * region record, on memory another host writes (note 9): pmap_fresh
	 * of the mapping in sw and sim coherence (handler/region/direct.c
	 * sets it after kvread_init). NULL (kvread_init's): the mapping is
	 * coherent (host, hw) and reads cost one NULL test more. */
	kvread_fresh_fn fresh;
	const void *fresh_ctx;
};

/* kvread_fresh -- r->fresh of [addr, addr + len) if set: for the callers
 * that read other records of r's mapping (the superblock, a region record
 * by id) by themselves. */
static inline void
kvread_fresh(const struct kvread *r, const void *addr, size_t len)
{
	if (r->fresh != NULL) {
		r->fresh(r->fresh_ctx, addr, len);
	}
}

/* Where a key's value is, as LOOKUP would answer it. */
struct kvread_loc {
	uint32_t region, gen;   /* region id and its gen */
	uint64_t region_off;    /* region start, bytes from pool start */
	uint64_t region_len;    /* region bytes */
	uint64_t off;           /* value start, bytes from pool start */
	uint64_t len;           /* value bytes (<= the region's page size) */
	uint64_t slot;          /* index slot the key was found in */
	uint64_t word;          /* that slot's word (even, LIVE) around the
	                         * read: the value's version (note 8) */
};

/* kvread_init -- attach to a mapping of the pool's first meta_len bytes
 * at meta (page aligned), described by sb: a private copy of the
 * superblock that already passed layout_validate; r->fresh is NULL.
 * Returns 0, or CXLP_E_CORRUPT with why filled when an area the reader
 * needs does not lie inside the mapping. Never writes through meta. */
int kvread_init(struct kvread *r, const struct pool_sb *sb, const void *meta,
    uint64_t meta_len, char *why, size_t n);

/* kvread_lookup -- look key (1..KH_KEY_MAX bytes; the caller checks) up
 * while the metaserver may be changing the index. Returns 0 and *out
 * (a value the key had at some moment during the call), CXLP_E_NOTFOUND
 * (the key was absent at some moment during the call), or KVREAD_ASK when
 * no stable or trustworthy answer came within the retry bounds (a long
 * write, or values that fail their bounds or checksums): ask the
 * metaserver. Sets no error message (hot path). Thread-safe. */
int kvread_lookup(const struct kvread *r, const void *key, size_t klen,
    struct kvread_loc *out);

/* kvread_lookup_batch -- kvread_lookup of keys[i] (key_lens[i] bytes,
 * checked by the caller) for i < n: rc[i], and out[i] where rc[i] is 0.
 * Per KVREAD_BATCH keys it hashes them and prefetches their home slots,
 * then the key records those slots name (each dropped first, note 9),
 * then looks them up, so the
 * batch's cache misses overlap instead of following one another (two
 * dependent misses per hit in a big index). Thread-safe; sets no error
 * message. */
void kvread_lookup_batch(const struct kvread *r, size_t n,
    const void *const keys[], const size_t key_lens[],
    struct kvread_loc out[], int rc[]);

/* kvread_word -- the word of index slot i (< r->nslots) now, loaded
 * after an acquire fence (every load the calling thread made before the
 * call, its copy of a value, comes before it) from a line dropped first
 * (r->fresh). A word equal to the one a lookup returned in
 * kvread_loc.word says the slot did not change in between (note 8).
 * Thread-safe. */
uint64_t kvread_word(const struct kvread *r, uint64_t i);

#endif /* CXLP_POOL_KVREAD_H */
