/*
 * test_map.c -- pool/map.c: file creation, read-write and read-only
 * mappings (a store through a read-only one faults), sub-ranges, persist,
 * prefault, and the volatile flag.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "cxlpool.h"
#include "map.h"
#include "pool_test.h"

/* the read-only test expects SIGSEGV, not ASan's report of it */
const char *__asan_default_options(void);
const char *
__asan_default_options(void)
{
	return "handle_segv=0";
}

static char path[256];
static struct pmap *m;

static void
setup(void)
{
	test_pool_path(path, sizeof(path), "/dev/shm");
	cr_assert_eq(pmap_file_create(path, 1 << 20), 0);
}

static void
teardown(void)
{
	pmap_close(&m);
	unlink(path);
}

TestSuite(map, .init = setup, .fini = teardown);

Test(map, create_refuses_an_existing_file)
{
	cr_assert_eq(pmap_file_create(path, 4096), -EEXIST);
}

/* A mapping knows which file it is of (the descriptor's fstat), also
 * after the path names another; a device is known by its number, not by
 * the node naming it. */
Test(map, a_mapping_keeps_the_identity_of_the_file_it_was_made_from)
{
	uint64_t dev, ino, dev2, ino2;
	struct stat st;

	cr_assert_eq(pmap_open(&m, path, 0, 0, false), 0);
	cr_assert_eq(stat(path, &st), 0);
	pmap_file_id(m, &dev, &ino);
	cr_assert(dev == (uint64_t)st.st_dev && ino == (uint64_t)st.st_ino);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(pmap_file_create(path, 1 << 20), 0);
	cr_assert_eq(stat(path, &st), 0);
	pmap_stat_id(&st, &dev2, &ino2);
	cr_assert(dev2 != dev || ino2 != ino, "a new file, the same identity");
	cr_assert_eq(stat("/dev/null", &st), 0);
	pmap_stat_id(&st, &dev2, &ino2);
	cr_assert(dev2 == (uint64_t)st.st_rdev && ino2 == 0);
}

Test(map, writes_persist_and_are_seen_by_a_readonly_mapping)
{
	struct pmap *ro;
	char *a;

	cr_assert_eq(pmap_open(&m, path, 0, 0, true), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pmap_len(m), 1 << 20);
	cr_assert_eq(pmap_file_size(m), 1 << 20);
	cr_assert_not(pmap_is_devdax(m));
	a = pmap_addr(m);
	strcpy(a + 8192 + 5, "persisted");
	pmap_persist(m, a + 8192 + 5, 10);
	pmap_close(&m);
	cr_assert_null(m);
	cr_assert_eq(pmap_open(&ro, path, 8192, 4096, false), 0);
	cr_assert_eq(pmap_len(ro), 4096);
	cr_assert_str_eq((char *)pmap_addr(ro) + 5, "persisted");
	cr_assert_eq(pmap_prefault(ro), 0);
	pmap_close(&ro);
}

Test(map, a_store_through_a_readonly_mapping_faults, .signal = SIGSEGV)
{
	volatile char *a;

	if (pmap_open(&m, path, 0, 0, false) != 0) {
		return; /* no signal: the test fails */
	}
	unlink(path); /* the fault skips teardown; the mapping stays */
	a = pmap_addr(m);
	a[0] = 1;
}

Test(map, unaligned_or_out_of_range_requests_fail_with_null)
{
	m = (void *)1;
	cr_assert_eq(pmap_open(&m, path, 100, 4096, true), -EINVAL);
	cr_assert_null(m);
	cr_assert_eq(pmap_open(&m, path, 0, 2 << 20, true), -EINVAL);
	cr_assert_null(m);
	cr_assert_eq(pmap_open(&m, "/nonexistent/x", 0, 0, true), -ENOENT);
	cr_assert_null(m);
}

Test(map, prefault_populates_a_writable_mapping)
{
	cr_assert_eq(pmap_open(&m, path, 0, 0, true), 0);
	cr_assert_eq(pmap_prefault(m), 0);
}

Test(map, tmpfs_is_volatile_and_a_disk_file_is_not)
{
	char disk[256];
	struct statfs sfs;
	struct pmap *d;

	cr_assert_eq(pmap_open(&m, path, 0, 0, true), 0);
	cr_assert(pmap_is_volatile(m));
	test_pool_path(disk, sizeof(disk), "/tmp");
	cr_assert_eq(pmap_file_create(disk, 1 << 20), 0);
	cr_assert_eq(statfs(disk, &sfs), 0);
	cr_assert_eq(pmap_open(&d, disk, 0, 0, true), 0);
	cr_assert_eq(pmap_is_volatile(d), sfs.f_type == TMPFS_MAGIC);
	pmap_close(&d);
	unlink(disk);
}

Test(map, a_file_reports_page_alignment_and_page_granularity)
{
	cr_assert_eq(pmap_open(&m, path, 0, 0, true), 0);
	cr_assert_eq(pmap_alignment(m), (uint64_t)sysconf(_SC_PAGESIZE));
	cr_assert_eq(pmap_granularity(m), PMAP_GRAN_PAGE,
	    "a plain file offers only page granularity (msync)");
	cr_assert_str_eq(pmap_gran_name(pmap_granularity(m)), "page");
}

Test(map, granularities_have_names)
{
	cr_assert_str_eq(pmap_gran_name(PMAP_GRAN_BYTE), "byte");
	cr_assert_str_eq(pmap_gran_name(PMAP_GRAN_CACHE_LINE), "cache-line");
	cr_assert_str_eq(pmap_gran_name((enum pmap_gran)9), "unknown");
}

Test(map, a_range_off_the_alignment_is_refused_naming_it)
{
	cr_assert_eq(pmap_open(&m, path, 4096, 100, true), -EINVAL);
	cr_assert_null(m);
	cr_assert(strstr(cxlp_errormsg(), "alignment 4096") != NULL, "%s",
	    cxlp_errormsg());
}
