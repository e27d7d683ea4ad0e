/*
 * keyheap.h -- the key heap: variable-length key records in the pool's
 * key heap area, addressed by 16-byte granule. Allocation state is DRAM,
 * rebuilt at open from the records the index still points at.
 */
#ifndef CXLP_POOL_KEYHEAP_H
#define CXLP_POOL_KEYHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

#define KH_KEY_MAX 1024u /* == CXLP_KEY_MAX */
/* size classes: a record of g granules (1..KH_NCLASS) */
#define KH_NCLASS ((8u + KH_KEY_MAX + KV_GRANULE - 1) / KV_GRANULE)
#define KH_NIL UINT32_MAX

struct keyheap {
	uint8_t *base;       /* heap area (in the mapping or any buffer) */
	uint64_t ngran;      /* granules in the area */
	uint64_t top;        /* granules [top, ngran) never handed out */
	uint64_t used;       /* granules in live records */
	uint64_t free;       /* granules on free lists */
	uint32_t head[KH_NCLASS + 1]; /* free list per class, KH_NIL = empty */
	uint32_t *next;      /* DRAM link per granule (free chunk heads) */
	uint64_t *bits;      /* DRAM: granule is in a live record */
};

/* keyheap_init -- manage bytes at base (a multiple of 16, < 2^36); all of
 * it free. DRAM state only; base is not written. 0 or -ENOMEM. */
int keyheap_init(struct keyheap *h, void *base, uint64_t bytes);
/* keyheap_fini -- free the DRAM state. */
void keyheap_fini(struct keyheap *h);
/* keyheap_reset -- forget every record: all granules free. */
void keyheap_reset(struct keyheap *h);
/* keyheap_rec_gran -- granules a record of klen key bytes takes. */
uint32_t keyheap_rec_gran(size_t klen);
/* keyheap_alloc -- room for a key of klen bytes (1..KH_KEY_MAX): exact
 * class, else the untouched top, else split a larger chunk, else coalesce
 * all free space and try once more. 0 and *ref, or CXLP_E_NOSPACE. */
int keyheap_alloc(struct keyheap *h, size_t klen, uint32_t *ref);
/* keyheap_free -- give back the record at ref holding klen key bytes.
 * Freeing what is not allocated aborts. */
void keyheap_free(struct keyheap *h, uint32_t ref, size_t klen);
/* keyheap_write -- store the record (header and key) at ref; returns its
 * address and sets *bytes to its size, for the caller to persist. */
void *keyheap_write(struct keyheap *h, uint32_t ref, const void *key,
    size_t klen, uint32_t hlo, size_t *bytes);
/* keyheap_read -- the key of the record at ref: 0, or CXLP_E_CORRUPT if
 * the header or the record's extent is out of range. */
int keyheap_read(const struct keyheap *h, uint32_t ref, const void **key,
    size_t *klen, uint32_t *hlo);
/* keyheap_mark -- rebuild step: the record at ref (klen bytes) is live.
 * 0, or CXLP_E_CORRUPT if it is out of range or overlaps a live one. */
int keyheap_mark(struct keyheap *h, uint32_t ref, size_t klen);
/* keyheap_sweep -- rebuild step after every mark: free lists from the
 * gaps between live records; top after the last one. */
void keyheap_sweep(struct keyheap *h);
/* keyheap_is_live -- granule ref starts or lies in a live record. */
bool keyheap_is_live(const struct keyheap *h, uint32_t ref);
/* keyheap_check -- 0, or CXLP_E_CORRUPT and why: free chunks inside
 * [0, top), not live, not overlapping; used + free == top. */
int keyheap_check(const struct keyheap *h, char *why, size_t n);

#endif /* CXLP_POOL_KEYHEAP_H */
