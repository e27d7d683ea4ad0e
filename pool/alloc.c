/*
 * alloc.c -- the region allocator: free extents of the data area, counted
 * in align units, kept in DRAM as one sorted array.
 *
 * Why this shape: a pool holds at most size/align regions (512 in a 1 GiB
 * pool), regions are allocated rarely (a handler asks for one at a time
 * and keeps it), and the truth lives in the region table on media. So the
 * allocator is a plain sorted array with first fit, rebuilt at every open,
 * and it does no I/O at all: regtab.c persists the table and calls in here.
 *
 * DESIGN NOTES
 *
 * 1. Units. Unit u is the bytes [data_off + u * align, + align) of the
 *    pool. The allocator never sees bytes; regtab.c converts.
 *
 * 2. Invariants (alloc_check): ext[0..next) is sorted by start; every
 *    extent has len > 0 and lies in [0, nunits); consecutive extents
 *    neither overlap nor touch (a touching pair would have been merged);
 *    free_units is the sum of the lengths; next <= cap.
 *
 * 3. Capacity. Free extents alternate with used ones, so there are at
 *    most nunits / 2 + 1 of them; alloc_init allocates that many once, and
 *    no later call allocates. alloc_release therefore cannot fail, which
 *    lets regtab.c free a region after its media record is already FREE.
 *
 * 4. Transitions of a unit:
 *    FREE -> USED [alloc_reserve: first fit, the lowest extent that is
 *                  long enough; its head is taken]
 *    FREE -> USED [alloc_take: open rebuilds from the region table; a
 *                  unit that is already used means two regions overlap,
 *                  reported as CXLP_E_CORRUPT, not asserted, since media
 *                  is outside input]
 *    USED -> FREE [alloc_release: merges with the extent before and/or
 *                  after when they touch; releasing a free unit aborts]
 *
 * 5. Every mutator ends with assert(alloc_check(a, NULL, 0) == 0); the
 *    check is O(extents), cheap at this size.
 *
 * 6. Order against the media (regtab.c). Allocate: alloc_reserve (DRAM)
 *    -> region record body written and persisted while its word reads
 *    FREE -> word (OWNED | gen << 32) stored and persisted
 *    [pool_region_alloc]. Free: word (FREE) stored and persisted ->
 *    alloc_release [regtab_free]. So a crash never leaves media claiming
 *    less than DRAM gave out, and open rebuilds the extents from the
 *    published words alone [regtab_rebuild -> alloc_take].
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"

/* alloc_init -- see alloc.h */
int
alloc_init(struct alloc *a, uint64_t nunits)
{
	memset(a, 0, sizeof(*a));
	a->cap = (size_t)(nunits / 2 + 1);
	a->ext = calloc(a->cap, sizeof(*a->ext));
	if (a->ext == NULL) {
		return cxlp_fail(-ENOMEM, "alloc: no memory for %zu extents",
		    a->cap);
	}
	a->nunits = nunits;
	if (nunits > 0) {
		a->ext[0] = (struct alloc_ext){ 0, nunits };
		a->next = 1;
	}
	a->free_units = nunits;
	return 0;
}

/* alloc_fini -- see alloc.h */
void
alloc_fini(struct alloc *a)
{
	free(a->ext);
	memset(a, 0, sizeof(*a));
}

static void
ext_remove(struct alloc *a, size_t i)
{
	memmove(&a->ext[i], &a->ext[i + 1],
	    (a->next - i - 1) * sizeof(a->ext[0]));
	a->next--;
}

static void
ext_insert(struct alloc *a, size_t i, uint64_t start, uint64_t len)
{
	cxlp_assert(a->next < a->cap);
	memmove(&a->ext[i + 1], &a->ext[i], (a->next - i) * sizeof(a->ext[0]));
	a->ext[i] = (struct alloc_ext){ start, len };
	a->next++;
}

/* index of the first extent whose start is > unit */
static size_t
ext_after(const struct alloc *a, uint64_t unit)
{
	size_t lo = 0, hi = a->next;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->ext[mid].start <= unit) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo;
}

/* alloc_reserve -- see alloc.h */
int
alloc_reserve(struct alloc *a, uint64_t n, uint64_t *start)
{
	for (size_t i = 0; n > 0 && i < a->next; i++) {
		struct alloc_ext *e = &a->ext[i];

		if (e->len < n) {
			continue;
		}
		*start = e->start;
		e->start += n;
		e->len -= n;
		if (e->len == 0) {
			ext_remove(a, i);
		}
		a->free_units -= n;
		assert(alloc_check(a, NULL, 0) == 0);
		return 0;
	}
	return cxlp_fail(CXLP_E_NOSPACE, "no free extent of %llu units "
	    "(%llu free, largest %llu)", (unsigned long long)n,
	    (unsigned long long)a->free_units,
	    (unsigned long long)alloc_largest(a));
}

/* alloc_take -- see alloc.h */
int
alloc_take(struct alloc *a, uint64_t start, uint64_t n)
{
	size_t i = ext_after(a, start);
	struct alloc_ext *e;
	uint64_t end = start + n;

	if (n == 0 || end < start || i == 0 ||
	    a->ext[i - 1].start + a->ext[i - 1].len < end) {
		return cxlp_fail(CXLP_E_CORRUPT, "units %llu+%llu are not "
		    "free", (unsigned long long)start, (unsigned long long)n);
	}
	e = &a->ext[i - 1];
	if (e->start + e->len > end) {
		/* tail survives: insert it after e */
		ext_insert(a, i, end, e->start + e->len - end);
		e = &a->ext[i - 1];
	}
	e->len = start - e->start;
	if (e->len == 0) {
		ext_remove(a, i - 1);
	}
	a->free_units -= n;
	assert(alloc_check(a, NULL, 0) == 0);
	return 0;
}

/* alloc_release -- see alloc.h */
void
alloc_release(struct alloc *a, uint64_t start, uint64_t n)
{
	size_t i = ext_after(a, start);
	uint64_t end = start + n;
	bool merge_prev, merge_next;

	cxlp_assert(n > 0 && end > start && end <= a->nunits);
	/* neither the previous nor the next free extent may overlap */
	cxlp_assert(i == 0 || a->ext[i - 1].start + a->ext[i - 1].len <= start);
	cxlp_assert(i == a->next || a->ext[i].start >= end);
	merge_prev = i > 0 && a->ext[i - 1].start + a->ext[i - 1].len == start;
	merge_next = i < a->next && a->ext[i].start == end;
	if (merge_prev && merge_next) {
		a->ext[i - 1].len += n + a->ext[i].len;
		ext_remove(a, i);
	} else if (merge_prev) {
		a->ext[i - 1].len += n;
	} else if (merge_next) {
		a->ext[i].start = start;
		a->ext[i].len += n;
	} else {
		ext_insert(a, i, start, n);
	}
	a->free_units += n;
	assert(alloc_check(a, NULL, 0) == 0);
}

/* alloc_largest -- see alloc.h */
uint64_t
alloc_largest(const struct alloc *a)
{
	uint64_t best = 0;

	for (size_t i = 0; i < a->next; i++) {
		if (a->ext[i].len > best) {
			best = a->ext[i].len;
		}
	}
	return best;
}

#define WHY(...)                                                           \
	do {                                                               \
		if (why != NULL) {                                         \
			snprintf(why, n, __VA_ARGS__);                     \
		}                                                          \
		return CXLP_E_CORRUPT;                                     \
	} while (0)

/* alloc_check -- see alloc.h */
int
alloc_check(const struct alloc *a, char *why, size_t n)
{
	uint64_t sum = 0, prev_end = 0;

	if (a->next > a->cap) {
		WHY("%zu extents exceed capacity %zu", a->next, a->cap);
	}
	for (size_t i = 0; i < a->next; i++) {
		const struct alloc_ext *e = &a->ext[i];

		if (e->len == 0 || e->start + e->len > a->nunits ||
		    e->start + e->len < e->start) {
			WHY("extent %zu (%llu+%llu) is empty or out of range",
			    i, (unsigned long long)e->start,
			    (unsigned long long)e->len);
		}
		if (i > 0 && e->start <= prev_end) {
			WHY("extent %zu (%llu) overlaps or touches the one "
			    "before (ends %llu)", i,
			    (unsigned long long)e->start,
			    (unsigned long long)prev_end);
		}
		prev_end = e->start + e->len;
		sum += e->len;
	}
	if (sum != a->free_units) {
		WHY("free_units %llu but extents hold %llu",
		    (unsigned long long)a->free_units,
		    (unsigned long long)sum);
	}
	return 0;
}
