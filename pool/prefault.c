/*
 * prefault.c -- put a mapping's pages into this process's page table
 * before they are used hard (pmap_prefault_walk in map.h).
 *
 * Two steps. The kernel's populate (MADV_POPULATE_WRITE/_READ) fills the
 * page table. Then one load per system page from user space: under a
 * hypervisor that shadows guest page tables (this project's test VM),
 * populate leaves the shadow empty and the first user access to each
 * page still exits to the hypervisor, ~5-10 us per 4 KiB page; a load
 * installs the shadow entry (writable, for a write-populated dirty PTE).
 * On bare metal the loads cost a few ms per GiB.
 *
 * The walk runs from the top of the mapping down, 64 pages at a time (a
 * populate, then the loads): a handler hands out the pages of a region
 * from the bottom up, so a writer that starts at once meets the walk half
 * way instead of racing it page by page, and a stop request is seen
 * within one chunk: a close does not wait for the populate of a whole
 * region of many GiB.
 *
 * backed_only is for mappings of a file that another process grows into
 * (the pool's metadata, written by the metaserver alone): a tmpfs read
 * fault on a hole allocates the page, so touching every page would turn
 * a sparse key heap into allocated memory. mincore reports which pages
 * the file backs (its page cache), mapped here or not; only those are
 * populated and loaded, in runs, 64 pages at a time.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "map.h"

#define CHUNK 64 /* pages per mincore call and per stop poll */

static size_t
sys_page(void)
{
	long sys = sysconf(_SC_PAGESIZE);

	return sys > 0 ? (size_t)sys : 4096;
}

static bool
stopped(const int *stop)
{
	return stop != NULL && __atomic_load_n(stop, __ATOMIC_RELAXED);
}

/* One load per page of pages [first, first + n) of m, top page first.
 * The values are unused, and the application may be storing into the
 * same pages of an own region meanwhile: harmless for the bytes, a race
 * by the letter, so this is kept out of ThreadSanitizer's view. */
__attribute__((no_sanitize("thread"))) static void
load_pages(const struct pmap *m, size_t first, size_t n, size_t step)
{
	const volatile uint8_t *p = pmap_addr(m);
	uint8_t sink = 0;

	for (size_t i = n; i > 0; i--) {
		sink ^= p[(first + i - 1) * step];
	}
	(void)sink;
}

/* Populate and load the backed pages of [first, first + n), n <= CHUNK,
 * in runs. */
static void
walk_backed(const struct pmap *m, size_t first, size_t n, size_t step)
{
	unsigned char vec[CHUNK];
	size_t i = 0;

	if (mincore((uint8_t *)pmap_addr(m) + first * step, n * step,
	    vec) != 0) {
		return;
	}
	while (i < n) {
		size_t run = 0;

		while (i + run < n && (vec[i + run] & 1)) {
			run++;
		}
		if (run > 0) {
			(void)pmap_populate(m, (first + i) * step,
			    run * step);
			load_pages(m, first + i, run, step);
		}
		i += run + 1;
	}
}

/* pmap_prefault_walk -- see map.h */
void
pmap_prefault_walk(const struct pmap *m, bool backed_only, const int *stop)
{
	size_t step = sys_page();

	backed_only = backed_only && !pmap_is_devdax(m);
	for (size_t top = pmap_len(m) / step; top > 0 && !stopped(stop);) {
		size_t k = top < CHUNK ? top : CHUNK;

		top -= k;
		if (backed_only) {
			walk_backed(m, top, k, step);
		} else {
			/* best effort: the loads fault in what it leaves */
			(void)pmap_populate(m, top * step, k * step);
			load_pages(m, top, k, step);
		}
	}
}
