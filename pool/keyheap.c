/*
 * keyheap.c -- storage for keys: records of a 8-byte header (length, low
 * hash half) and the key bytes, 16-byte aligned, in the pool's key heap.
 *
 * Why this shape: keys are 1..1024 bytes, so a slot cannot hold them, and
 * a general allocator on media would need its own crash consistency. Here
 * the media holds only records; which granules are taken is derived from
 * the index (a record is live iff a LIVE slot points at it), so all the
 * allocator state is DRAM and rebuilt at open (keyheap_mark per live
 * slot, then keyheap_sweep). A record allocated but not yet published
 * when the server dies is simply free again after restart.
 *
 * Allocator: segregated exact-size free lists, one per record size in
 * granules (1..65), linked through a DRAM array indexed by granule, so
 * freeing never allocates; a bump pointer (top) over never-used space;
 * splitting a larger chunk when both are empty; and, when that fails
 * while enough space is free, a coalescing sweep of the live bitmap
 * before giving up with CXLP_E_NOSPACE. No I/O: the caller persists the
 * record keyheap_write returns.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "keyheap.h"

static bool
bit_get(const uint64_t *b, uint64_t i)
{
	return (b[i / 64] >> (i % 64)) & 1u;
}

static void
bit_put(uint64_t *b, uint64_t i, bool v)
{
	if (v) {
		b[i / 64] |= 1ull << (i % 64);
	} else {
		b[i / 64] &= ~(1ull << (i % 64));
	}
}

/* keyheap_init -- see keyheap.h */
int
keyheap_init(struct keyheap *h, void *base, uint64_t bytes)
{
	memset(h, 0, sizeof(*h));
	h->ngran = bytes / KV_GRANULE;
	cxlp_assert(h->ngran < KH_NIL);
	h->base = base;
	h->next = calloc(h->ngran ? h->ngran : 1, sizeof(*h->next));
	h->bits = calloc(h->ngran / 64 + 1, sizeof(*h->bits));
	if (h->next == NULL || h->bits == NULL) {
		keyheap_fini(h);
		return cxlp_fail(-ENOMEM, "keyheap: no memory for %llu "
		    "granules", (unsigned long long)(bytes / KV_GRANULE));
	}
	keyheap_reset(h);
	return 0;
}

/* keyheap_fini -- see keyheap.h */
void
keyheap_fini(struct keyheap *h)
{
	free(h->next);
	free(h->bits);
	memset(h, 0, sizeof(*h));
}

/* keyheap_reset -- see keyheap.h */
void
keyheap_reset(struct keyheap *h)
{
	memset(h->bits, 0, (h->ngran / 64 + 1) * sizeof(*h->bits));
	for (unsigned c = 0; c <= KH_NCLASS; c++) {
		h->head[c] = KH_NIL;
	}
	h->top = h->used = h->free = 0;
}

/* keyheap_rec_gran -- see keyheap.h */
uint32_t
keyheap_rec_gran(size_t klen)
{
	return (uint32_t)((sizeof(struct kv_keyrec) + klen + KV_GRANULE - 1) /
	    KV_GRANULE);
}

static void
push(struct keyheap *h, uint32_t r, uint32_t g)
{
	h->next[r] = h->head[g];
	h->head[g] = r;
	h->free += g;
}

static uint32_t
pop(struct keyheap *h, uint32_t g)
{
	uint32_t r = h->head[g];

	h->head[g] = h->next[r];
	h->free -= g;
	return r;
}

/* push the gap [s, e) as chunks of at most KH_NCLASS granules */
static void
push_gap(struct keyheap *h, uint64_t s, uint64_t e)
{
	while (s < e) {
		uint64_t g = e - s < KH_NCLASS ? e - s : KH_NCLASS;

		push(h, (uint32_t)s, (uint32_t)g);
		s += g;
	}
}

/* keyheap_sweep -- see keyheap.h */
void
keyheap_sweep(struct keyheap *h)
{
	uint64_t gap = 0;

	for (unsigned c = 0; c <= KH_NCLASS; c++) {
		h->head[c] = KH_NIL;
	}
	h->free = 0;
	h->top = 0;
	for (uint64_t i = 0; i < h->ngran; i++) {
		if (!bit_get(h->bits, i)) {
			continue;
		}
		push_gap(h, gap, i);
		gap = i + 1;
	}
	h->top = gap;
}

static bool
take(struct keyheap *h, uint32_t g, uint32_t *ref)
{
	if (h->head[g] != KH_NIL) {
		*ref = pop(h, g);
		return true;
	}
	if (h->top + g <= h->ngran) {
		*ref = (uint32_t)h->top;
		h->top += g;
		return true;
	}
	for (uint32_t c = g + 1; c <= KH_NCLASS; c++) {
		if (h->head[c] != KH_NIL) {
			*ref = pop(h, c);
			push(h, *ref + g, c - g);
			return true;
		}
	}
	return false;
}

/* keyheap_alloc -- see keyheap.h */
int
keyheap_alloc(struct keyheap *h, size_t klen, uint32_t *ref)
{
	uint32_t g = keyheap_rec_gran(klen);

	cxlp_assert(klen >= 1 && klen <= KH_KEY_MAX);
	if (!take(h, g, ref)) {
		if (h->free < g) {
			goto nospace;
		}
		keyheap_sweep(h);
		if (!take(h, g, ref)) {
			goto nospace;
		}
	}
	for (uint32_t i = 0; i < g; i++) {
		assert(!bit_get(h->bits, *ref + i));
		bit_put(h->bits, *ref + i, true);
	}
	h->used += g;
	return 0;
nospace:
	return cxlp_fail(CXLP_E_NOSPACE, "key heap full: %llu of %llu "
	    "granules live, no room for %u", (unsigned long long)h->used,
	    (unsigned long long)h->ngran, g);
}

/* keyheap_free -- see keyheap.h */
void
keyheap_free(struct keyheap *h, uint32_t ref, size_t klen)
{
	uint32_t g = keyheap_rec_gran(klen);

	cxlp_assert((uint64_t)ref + g <= h->top);
	for (uint32_t i = 0; i < g; i++) {
		cxlp_assert(bit_get(h->bits, ref + i));
		bit_put(h->bits, ref + i, false);
	}
	h->used -= g;
	push(h, ref, g);
}

/* keyheap_write -- see keyheap.h */
void *
keyheap_write(struct keyheap *h, uint32_t ref, const void *key, size_t klen,
    uint32_t hlo, size_t *bytes)
{
	struct kv_keyrec *r = (void *)(h->base + (uint64_t)ref * KV_GRANULE);

	r->klen = (uint32_t)klen;
	r->hlo = hlo;
	memcpy(r->key, key, klen);
	*bytes = sizeof(*r) + klen;
	return r;
}

/* keyheap_read -- see keyheap.h */
int
keyheap_read(const struct keyheap *h, uint32_t ref, const void **key,
    size_t *klen, uint32_t *hlo)
{
	const struct kv_keyrec *r;

	if (ref >= h->ngran) {
		return CXLP_E_CORRUPT;
	}
	r = (const void *)(h->base + (uint64_t)ref * KV_GRANULE);
	if (r->klen == 0 || r->klen > KH_KEY_MAX ||
	    (uint64_t)ref + keyheap_rec_gran(r->klen) > h->ngran) {
		return CXLP_E_CORRUPT;
	}
	*key = r->key;
	*klen = r->klen;
	*hlo = r->hlo;
	return 0;
}

/* keyheap_mark -- see keyheap.h */
int
keyheap_mark(struct keyheap *h, uint32_t ref, size_t klen)
{
	uint32_t g = keyheap_rec_gran(klen);

	if ((uint64_t)ref + g > h->ngran) {
		return CXLP_E_CORRUPT;
	}
	for (uint32_t i = 0; i < g; i++) {
		if (bit_get(h->bits, ref + i)) {
			/* undo the granules this call already set */
			while (i-- > 0) {
				bit_put(h->bits, ref + i, false);
			}
			return CXLP_E_CORRUPT;
		}
		bit_put(h->bits, ref + i, true);
	}
	h->used += g;
	return 0;
}

/* keyheap_is_live -- see keyheap.h */
bool
keyheap_is_live(const struct keyheap *h, uint32_t ref)
{
	return ref < h->ngran && bit_get(h->bits, ref);
}

#define WHY(...)                                                           \
	do {                                                               \
		if (why != NULL) {                                         \
			snprintf(why, n, __VA_ARGS__);                     \
		}                                                          \
		rc = CXLP_E_CORRUPT;                                       \
		goto out;                                                  \
	} while (0)

/* keyheap_check -- see keyheap.h */
int
keyheap_check(const struct keyheap *h, char *why, size_t n)
{
	uint64_t *seen = calloc(h->ngran / 64 + 1, sizeof(*seen));
	uint64_t live = 0, nfree = 0, steps = 0;
	int rc = 0;

	if (seen == NULL) {
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < h->ngran; i++) {
		if (bit_get(h->bits, i) && i >= h->top) {
			WHY("live granule %llu above top %llu",
			    (unsigned long long)i, (unsigned long long)h->top);
		}
		live += bit_get(h->bits, i);
	}
	for (uint32_t c = 1; c <= KH_NCLASS; c++) {
		for (uint32_t r = h->head[c]; r != KH_NIL; r = h->next[r]) {
			if (++steps > h->ngran || (uint64_t)r + c > h->top) {
				WHY("free chunk %u (class %u) beyond top or "
				    "list loops", r, c);
			}
			for (uint32_t i = 0; i < c; i++) {
				if (bit_get(h->bits, r + i) ||
				    bit_get(seen, r + i)) {
					WHY("free chunk %u (class %u) overlaps "
					    "a record or another chunk", r, c);
				}
				bit_put(seen, r + i, true);
			}
			nfree += c;
		}
	}
	if (live != h->used || nfree != h->free || live + nfree != h->top) {
		WHY("accounting: %llu live (used %llu), %llu free (free "
		    "%llu), top %llu", (unsigned long long)live,
		    (unsigned long long)h->used, (unsigned long long)nfree,
		    (unsigned long long)h->free, (unsigned long long)h->top);
	}
out:
	free(seen);
	return rc;
}
