/*
 * alloc.h -- free extents of the data area, in align units (DRAM only).
 * See the DESIGN NOTES at the top of alloc.c.
 */
#ifndef CXLP_POOL_ALLOC_H
#define CXLP_POOL_ALLOC_H

#include <stddef.h>
#include <stdint.h>

struct alloc_ext {
	uint64_t start; /* first unit */
	uint64_t len;   /* units, > 0 */
};

struct alloc {
	uint64_t nunits;       /* units managed: [0, nunits) */
	uint64_t free_units;   /* sum of ext[].len */
	size_t next;           /* extents in use */
	size_t cap;            /* capacity of ext: nunits / 2 + 1 */
	struct alloc_ext *ext; /* sorted by start, disjoint, not adjacent */
};

/* alloc_init -- manage nunits units, all free. Returns 0 or -ENOMEM. */
int alloc_init(struct alloc *a, uint64_t nunits);
/* alloc_fini -- free the extent array; a may be zeroed or initialised. */
void alloc_fini(struct alloc *a);
/* alloc_reserve -- first fit n units; 0 and *start, or CXLP_E_NOSPACE. */
int alloc_reserve(struct alloc *a, uint64_t n, uint64_t *start);
/* alloc_take -- mark [start, start + n) used (rebuilding from the region
 * table). 0, or CXLP_E_CORRUPT if any unit is outside or not free. */
int alloc_take(struct alloc *a, uint64_t start, uint64_t n);
/* alloc_release -- return [start, start + n); coalesces with neighbours.
 * Releasing a unit that is free or out of range is a bug: aborts. */
void alloc_release(struct alloc *a, uint64_t start, uint64_t n);
/* alloc_largest -- length of the largest free extent, units. */
uint64_t alloc_largest(const struct alloc *a);
/* alloc_check -- 0, or CXLP_E_CORRUPT with the first broken invariant
 * written to why (may be NULL). */
int alloc_check(const struct alloc *a, char *why, size_t n);

#endif /* CXLP_POOL_ALLOC_H */
