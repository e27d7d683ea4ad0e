/*
 * test_prefault.c -- tests of the region prefault in regions.c: an own
 * region is in the handler's page table when cxlp_connect returns, a
 * region added by auto-expand and a foreign region mapped by a retrieve
 * get there in the background, and the bytes stay intact while the
 * background walk runs over pages being written. The metadata mapping of
 * direct reads gets exactly the pages the pool file backs into the page
 * table, in the background, and allocates none of its holes; close stops
 * that walk before it unmaps.
 *
 * "In the page table" is read from /proc/self/pagemap (bit 63, present),
 * one entry per 4 KiB page of the range: exact per page, unlike smaps,
 * whose entry may cover two adjacent regions. A pool file starts sparse,
 * so without a prefault the pages of a fresh region are not present.
 * Background prefaults are waited for with a generous bound (a liveness
 * check, not a timing one).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cxlpool.h"
#include "handler.h"
#include "handler_fixture.h"


#define PAGE (64u << 10)
#define REGION (4u << 20)
#define NPAGES (REGION / PAGE)
#define SYS_PAGE 4096u
#define WAIT_S 60


static void
setup(void)
{
	hfx_start(PAGE, REGION);
}

TestSuite(prefault, .init = setup, .fini = hfx_stop, .timeout = 120);

/* How many 4 KiB pages of [addr, addr + len) are present in this
 * process's page table; -1 if pagemap cannot be read. */
static long
present_pages(const void *addr, size_t len)
{
	uint64_t first = (uintptr_t)addr / SYS_PAGE, n = len / SYS_PAGE;
	uint64_t *ent = calloc(n, sizeof(*ent));
	int fd = open("/proc/self/pagemap", O_RDONLY);
	long present = -1;

	if (ent != NULL && fd >= 0 &&
	    pread(fd, ent, n * sizeof(*ent), (off_t)(first * sizeof(*ent))) ==
	    (ssize_t)(n * sizeof(*ent))) {
		present = 0;
		for (uint64_t i = 0; i < n; i++) {
			present += (long)(ent[i] >> 63);
		}
	}
	if (fd >= 0) {
		close(fd);
	}
	free(ent);
	return present;
}

/* Wait until the whole range is present (background prefault); returns
 * the last count. */
static long
wait_present(const void *addr, size_t len)
{
	long want = (long)(len / SYS_PAGE), got = present_pages(addr, len);
	struct timespec ts = {0, 20 * 1000000L};

	for (int i = 0; i < WAIT_S * 50 && got != want && got >= 0; i++) {
		nanosleep(&ts, NULL);
		got = present_pages(addr, len);
	}
	return got;
}

/* Pages of the file at path within [from, from + len) that the file
 * backs (tmpfs: allocated), from SEEK_DATA/SEEK_HOLE. */
static long
backed_pages(const char *path, size_t from, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t off = (off_t)from, end = (off_t)(from + len), data, hole;
	long n = 0;

	cr_assert_geq(fd, 0, "open %s", path);
	while (off < end && (data = lseek(fd, off, SEEK_DATA)) >= 0 &&
	    data < end) {
		hole = lseek(fd, data, SEEK_HOLE);
		cr_assert_gt(hole, data);
		hole = hole > end ? end : hole;
		n += (long)((hole - data) / SYS_PAGE);
		off = hole;
	}
	close(fd);
	return n;
}

/* The read-only mapping of path from offset 0 in this process (direct
 * reads' metadata mapping; foreign regions map at other offsets): its
 * address and *len, or NULL. */
static const void *
meta_mapping(const char *path, size_t *len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512], perms[8], file[256];
	unsigned long lo, hi, off;
	const void *found = NULL;

	cr_assert_not_null(f);
	while (found == NULL && fgets(line, sizeof(line), f) != NULL) {
		file[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &lo, &hi,
		    perms, &off, file) == 5 && strcmp(perms, "r--s") == 0 &&
		    off == 0 && strcmp(file, path) == 0) {
			found = (const void *)lo;
			*len = hi - lo;
		}
	}
	fclose(f);
	return found;
}

/* The file offset and length of this process's mapping that holds
 * addr; asserts there is one. */
static void
mapping_of(const void *addr, size_t *off, size_t *len)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long lo, hi, o;
	bool found = false;

	cr_assert_not_null(f);
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		found = sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &o) == 3 &&
		    (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
	}
	fclose(f);
	cr_assert(found, "no mapping holds %p", addr);
	*off = o;
	*len = hi - lo;
}

/* Wait until want pages of [addr, addr + len) are present; returns the
 * last count. */
static long
wait_present_n(const void *addr, size_t len, long want)
{
	struct timespec ts = {0, 20 * 1000000L};
	long got = present_pages(addr, len);

	for (int i = 0; i < WAIT_S * 50 && got < want && got >= 0; i++) {
		nanosleep(&ts, NULL);
		got = present_pages(addr, len);
	}
	return got;
}

static uint8_t
pattern(size_t page, size_t i)
{
	return (uint8_t)(page * 131 + i * 7 + (i >> 12));
}

static void
fill(void *buf, size_t page)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < PAGE; i++) {
		p[i] = pattern(page, i);
	}
}

static bool
intact(const void *buf, size_t page)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < PAGE; i++) {
		if (p[i] != pattern(page, i)) {
			return false;
		}
	}
	return true;
}

/* Allocate and fill n pages, store them as key<i>; returns the first
 * page's buffer (the region base for a fresh region). */
static void *
store_pages(struct cxlp_handler *h, size_t n)
{
	char keys[2 * NPAGES][16];
	const void *kp[2 * NPAGES];
	size_t kl[2 * NPAGES], lens[2 * NPAGES];
	cxlp_page_t pg[2 * NPAGES];
	bool stored[2 * NPAGES];
	void *first = NULL, *buf;

	cr_assert_leq(n, 2 * NPAGES);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(cxlp_alloc(h, &pg[i], &buf), 0, "alloc %zu: %s",
		    i, cxlp_errormsg());
		first = first != NULL ? first : buf;
		fill(buf, i);
		kl[i] = (size_t)snprintf(keys[i], sizeof(keys[i]), "key%zu", i);
		kp[i] = keys[i];
		lens[i] = PAGE;
	}
	cr_assert_eq(cxlp_batch_store(h, n, kp, kl, pg, lens, 0, stored), 0,
	    "batch_store: %s", cxlp_errormsg());
	for (size_t i = 0; i < n; i++) {
		cr_assert(stored[i], "key%zu not stored", i);
	}
	return first;
}

/* Retrieve key0..key<n-1> through h; every page must read back intact.
 * Returns the address of key0's bytes. */
static const void *
check_pages(struct cxlp_handler *h, size_t n)
{
	const void *first = NULL;

	for (size_t i = 0; i < n; i++) {
		char key[16];
		size_t kl = (size_t)snprintf(key, sizeof(key), "key%zu", i);
		const void *data;
		size_t len;
		int rc = cxlp_retrieve(h, key, kl, 0, &data, &len);

		cr_assert_eq(rc, 0, "retrieve key%zu: %s", i, cxlp_errormsg());
		cr_assert_eq(len, PAGE);
		cr_assert(intact(data, i), "key%zu: bytes differ", i);
		first = first != NULL ? first : data;
	}
	return first;
}

Test(prefault, first_region_is_resident_when_connect_returns)
{
	struct cxlp_handler *h = hfx_connect();
	cxlp_page_t pg;
	void *base;

	cr_assert_eq(cxlp_alloc(h, &pg, &base), 0);
	cr_assert_eq(page_idx(pg), 0, "a fresh region hands out page 0 first");
	cr_assert_eq(present_pages(base, REGION), (long)(REGION / SYS_PAGE),
	    "region not in the page table after connect");
	cr_assert_eq(cxlp_free(h, pg), 0);
	cxlp_close(&h);
}

Test(prefault, added_region_is_prefaulted_in_the_background)
{
	struct cxlp_handler *h = hfx_connect();
	cxlp_page_t pg[NPAGES + 1];
	void *buf;

	for (size_t i = 0; i <= NPAGES; i++) {
		cr_assert_eq(cxlp_alloc(h, &pg[i], &buf), 0, "alloc %zu", i);
	}
	cr_assert_eq(page_set(pg[NPAGES]), 1, "the last alloc added a region");
	cr_assert_eq(page_idx(pg[NPAGES]), 0);
	cr_assert_eq(wait_present(buf, REGION), (long)(REGION / SYS_PAGE),
	    "added region not prefaulted within %d s", WAIT_S);
	for (size_t i = 0; i <= NPAGES; i++) {
		cr_assert_eq(cxlp_free(h, pg[i]), 0);
	}
	cxlp_close(&h);
}

Test(prefault, bytes_written_during_the_prefault_read_back_intact)
{
	struct cxlp_handler *h = hfx_connect();
	/* the second region is written while its prefault may still run */
	void *base = store_pages(h, 2 * NPAGES);

	cr_assert_not_null(base);
	cr_assert_eq(check_pages(h, 2 * NPAGES), base,
	    "an own key resolves to the writable mapping it was written in");
	cxlp_close(&h);
}

Test(prefault, foreign_region_is_prefaulted_after_first_retrieve)
{
	struct cxlp_handler *w = hfx_connect(), *r = hfx_connect();
	struct cxlp_stats st;
	const void *data;
	size_t len;

	(void)store_pages(w, NPAGES);
	cr_assert_eq(cxlp_retrieve(r, "key0", 4, 0, &data, &len), 0,
	    "retrieve key0: %s", cxlp_errormsg());
	cr_assert_eq(cxlp_stats(r, &st), 0);
	cr_assert_eq(st.foreign_maps, 1);
	cr_assert_eq(wait_present(data, REGION), (long)(REGION / SYS_PAGE),
	    "foreign region not prefaulted within %d s", WAIT_S);
	cr_assert_eq(check_pages(r, NPAGES), data);
	cxlp_close(&r);
	cxlp_close(&w);
}

Test(prefault, close_ends_a_prefault_in_progress)
{
	struct cxlp_handler *h;
	cxlp_page_t pg[NPAGES + 1];
	void *buf;

	size_t off, len;

	cr_assert_eq(cxlp_config_set_region_size(cfg, 64u << 20), 0);
	h = hfx_connect();
	for (size_t i = 0; i <= (64u << 20) / PAGE; i++) {
		cr_assert_eq(cxlp_alloc(h, &pg[i > NPAGES ? NPAGES : i], &buf),
		    0, "alloc %zu", i);
	}
	mapping_of(buf, &off, &len); /* the region just added */
	cr_assert_eq(len, 64u << 20);
	/* close once the walk has begun (it allocates the file's pages
	 * from the top of the region down) */
	for (time_t end = time(NULL) + WAIT_S;
	    backed_pages(srv.pool, off, len) == 0 && time(NULL) < end;) {
	}
	cr_assert_gt(backed_pages(srv.pool, off, len), 0, "no walk began");
	cxlp_close(&h); /* must not wait for, or crash in, the walk */
	cr_assert_null(h);
	/* The walk populates 64 pages at a time and checks for a stop
	 * between them: the close must not have waited for the populate
	 * of the whole region (16k pages). */
	cr_assert_lt(backed_pages(srv.pool, off, len), (long)(len / SYS_PAGE),
	    "the close waited for the whole region to be populated");
}

Test(prefault, metadata_backed_pages_are_prefaulted_and_holes_stay_holes)
{
	struct cxlp_handler *w = hfx_connect(), *r;
	size_t len = 0, rlen = 0;
	const void *meta;
	long before, present;

	(void)store_pages(w, NPAGES);
	cr_assert_not_null(meta_mapping(srv.pool, &len), "direct reads are "
	    "on by default");
	cxlp_close(&w); /* the server writes no more metadata from here */
	cr_assert_null(meta_mapping(srv.pool, &rlen), "close unmaps it");
	before = backed_pages(srv.pool, 0, len);
	cr_assert_lt(before, (long)(len / SYS_PAGE),
	    "the key heap has holes, or this test proves nothing");
	r = hfx_connect();
	meta = meta_mapping(srv.pool, &rlen);
	cr_assert_not_null(meta);
	cr_assert_eq(rlen, len);
	present = wait_present_n(meta, len, before);
	cr_assert_eq(present, before, "metadata pages present %ld, the "
	    "file backs %ld", present, before);
	cr_assert_eq(backed_pages(srv.pool, 0, len), before,
	    "the prefault allocated holes of the pool file");
	(void)check_pages(r, NPAGES); /* direct reads find every key */
	cxlp_close(&r);
}

Test(prefault, close_ends_the_metadata_walk)
{
	/* a 2 GiB pool: ~5k backed metadata pages, a walk of tens of ms
	 * here, so each close below meets it running */
	test_server_stop(&srv);
	cr_assert_eq(test_server_start(&srv, 2ull << 30, NULL), 0);
	cr_assert_eq(cxlp_config_set_server(cfg, srv.url), 0);
	for (int i = 0; i < 10; i++) {
		struct cxlp_handler *h = hfx_connect();

		cxlp_close(&h); /* must stop the walk before unmapping */
		cr_assert_null(h);
	}
}
