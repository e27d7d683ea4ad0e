/*
 * test_map_hugepage.c -- pool/map.c's pmap_advise_huge: on a tmpfs whose
 * huge= setting honours the advice, the advised range (trimmed inward to
 * 2 MiB) is mapped with 2 MiB pages and nothing else is; where the
 * setting is never, or on a disk file, the call changes nothing; a pool
 * advises its metadata at open, and still formats, recovers and answers
 * lookups as before. Page sizes are read back from /proc/self/smaps
 * (ShmemPmdMapped).
 *
 * The machine's settings are never changed: the positive cases mount a
 * private tmpfs (huge=advise) in a mount namespace of the test's own
 * process, and skip where the test may not mount (not root); the case on
 * /dev/shm skips when its setting is never (the default).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "cxlpool.h"
#include "map.h"
#include "pool.h"
#include "pool_int.h"
#include "pool_test.h"

#define MIB (1ull << 20)
#define NKEYS 1000

static char dir[64]; /* private tmpfs mount point, "" if none */
static char path[256];
static struct pmap *m;
static struct pool *p;

static void
teardown(void)
{
	pmap_close(&m);
	pool_close(&p);
	if (path[0] != '\0') {
		unlink(path);
	}
	if (dir[0] != '\0') {
		umount(dir);
		rmdir(dir);
	}
}

TestSuite(map_hugepage, .fini = teardown);

/* mount a tmpfs with huge=opt on a fresh directory, in a mount namespace
 * of this process alone; false where that is not permitted */
static bool
private_tmpfs(const char *opt)
{
	char data[64];

	snprintf(dir, sizeof(dir), "/tmp/cxlp-huge-XXXXXX");
	if (mkdtemp(dir) == NULL) {
		dir[0] = '\0';
		return false;
	}
	snprintf(data, sizeof(data), "size=256m,huge=%s", opt);
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("tmpfs", dir, "tmpfs", 0, data) != 0) {
		rmdir(dir);
		dir[0] = '\0';
		return false;
	}
	test_pool_path(path, sizeof(path), dir);
	return true;
}

static void
need_private_tmpfs(const char *opt)
{
	if (!private_tmpfs(opt)) {
		cr_skip_test("cannot mount a private tmpfs here (%s); needs "
		    "root", strerror(errno));
	}
}

/* ShmemPmdMapped, kB, of this process's mappings overlapping [a, a+len) */
static unsigned long long
pmd_kb(const void *a, uint64_t len)
{
	uintptr_t lo = (uintptr_t)a, hi = lo + len, s, e;
	unsigned long long sum = 0, v;
	FILE *f = fopen("/proc/self/smaps", "re");
	bool in = false;
	char line[256];

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			in = s < hi && e > lo;
		} else if (in && sscanf(line, "ShmemPmdMapped: %llu",
		    &v) == 1) {
			sum += v;
		}
	}
	fclose(f);
	return sum;
}

/* write one byte into every 4 KiB page of the mapping */
static void
touch(struct pmap *map)
{
	volatile char *a = pmap_addr(map);

	for (uint64_t off = 0; off < pmap_len(map); off += 4096) {
		a[off] = 1;
	}
}

/* read every 4 KiB page of the mapping; the sum of the bytes */
static unsigned
read_all(const struct pmap *map)
{
	const volatile char *a = pmap_addr(map);
	unsigned sum = 0;

	for (uint64_t off = 0; off < pmap_len(map); off += 4096) {
		sum += (unsigned char)a[off];
	}
	return sum;
}

static void
map_file(uint64_t size)
{
	cr_assert_eq(pmap_file_create(path, size), 0, "%s", cxlp_errormsg());
	cr_assert_eq(pmap_open(&m, path, 0, 0, true), 0, "%s",
	    cxlp_errormsg());
}

Test(map_hugepage, an_advised_range_is_mapped_with_2mib_pages_and_no_more)
{
	need_private_tmpfs("advise");
	map_file(8 * MIB);
	cr_assert_eq(pmap_huge(m), PMAP_HUGE_NONE);
	/* [1, 7) MiB: the whole 2 MiB pages inside it are [2, 6) MiB */
	cr_assert_eq(pmap_advise_huge(m, 1 * MIB, 6 * MIB),
	    PMAP_HUGE_ADVISED, "%s", pmap_huge_setting(m));
	cr_assert_eq(pmap_huge(m), PMAP_HUGE_ADVISED);
	cr_assert_str_eq(pmap_huge_setting(m), "tmpfs huge=advise");
	touch(m);
	cr_assert_eq(pmd_kb(pmap_addr(m), pmap_len(m)), 4 * MIB / 1024);
}

Test(map_hugepage, a_readonly_mapping_of_advised_pages_maps_them_huge_too)
{
	struct pmap *ro = NULL;
	unsigned long long kb;

	need_private_tmpfs("advise");
	map_file(4 * MIB);
	cr_assert_eq(pmap_advise_huge(m, 0, 4 * MIB), PMAP_HUGE_ADVISED);
	touch(m);
	/* a handler's direct-read mapping: no advice of its own */
	cr_assert_eq(pmap_open(&ro, path, 0, 0, false), 0);
	cr_assert_eq(read_all(ro), 4 * MIB / 4096);
	kb = pmd_kb(pmap_addr(ro), pmap_len(ro));
	pmap_close(&ro);
	cr_assert_eq(kb, 4 * MIB / 1024);
}

Test(map_hugepage, advice_is_a_silent_no_op_on_a_tmpfs_set_to_never)
{
	need_private_tmpfs("never");
	map_file(4 * MIB);
	cr_assert_eq(pmap_advise_huge(m, 0, 4 * MIB), PMAP_HUGE_NONE);
	cr_assert_str_eq(pmap_huge_setting(m), "tmpfs huge=never");
	touch(m);
	cr_assert_eq(pmd_kb(pmap_addr(m), pmap_len(m)), 0);
	cr_assert_str_eq(cxlp_errormsg(), "", "no error is reported");
}

Test(map_hugepage, a_range_without_a_whole_2mib_page_is_left_alone)
{
	need_private_tmpfs("advise");
	map_file(4 * MIB);
	cr_assert_eq(pmap_advise_huge(m, 1 * MIB, 2 * MIB), PMAP_HUGE_NONE);
	cr_assert_eq(pmap_advise_huge(m, 4 * MIB, 2 * MIB), PMAP_HUGE_NONE);
	touch(m);
	cr_assert_eq(pmd_kb(pmap_addr(m), pmap_len(m)), 0);
}

Test(map_hugepage, a_disk_file_keeps_base_pages)
{
	struct statfs sfs;

	cr_assert_eq(statfs("/tmp", &sfs), 0);
	if (sfs.f_type == TMPFS_MAGIC) {
		cr_skip_test("/tmp is tmpfs here");
	}
	test_pool_path(path, sizeof(path), "/tmp");
	map_file(4 * MIB);
	cr_assert_eq(pmap_advise_huge(m, 0, 4 * MIB), PMAP_HUGE_NONE);
	cr_assert_str_eq(pmap_huge_setting(m), "not tmpfs");
}

/* the huge= option of the /dev/shm mount; "never" when it has none */
static void
dev_shm_huge(char *out, size_t n)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char mnt[256], opts[512], *h;

	snprintf(out, n, "never");
	cr_assert_not_null(f);
	while (fscanf(f, "%*s %255s %*s %511s %*d %*d", mnt, opts) == 2) {
		if (strcmp(mnt, "/dev/shm") == 0 &&
		    (h = strstr(opts, "huge=")) != NULL) {
			snprintf(out, n, "%.*s", (int)strcspn(h + 5, ","),
			    h + 5);
		}
	}
	fclose(f);
}

/* shmem_enabled is deny or force: it overrides every tmpfs mount */
static bool
shmem_override(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled",
	    "re");
	char line[128] = "";

	if (f != NULL) {
		if (fgets(line, sizeof(line), f) == NULL) {
			line[0] = '\0';
		}
		fclose(f);
	}
	return strstr(line, "[deny]") != NULL ||
	    strstr(line, "[force]") != NULL;
}

Test(map_hugepage, dev_shm_follows_its_mount_setting)
{
	enum pmap_huge h;
	char huge[32];

	if (shmem_override()) {
		cr_skip_test("shmem_enabled is deny or force");
	}
	dev_shm_huge(huge, sizeof(huge));
	test_pool_path(path, sizeof(path), "/dev/shm");
	map_file(4 * MIB);
	h = pmap_advise_huge(m, 0, 4 * MIB);
	if (strcmp(huge, "never") == 0) {
		cr_assert_eq(h, PMAP_HUGE_NONE);
		cr_assert_str_eq(pmap_huge_setting(m), "tmpfs huge=never");
		teardown(); /* Criterion runs no .fini after a skip */
		cr_skip_test("/dev/shm has huge=never: 4 KiB pages (mount -o "
		    "remount,huge=advise /dev/shm enables 2 MiB ones)");
	}
	cr_assert_eq(h, PMAP_HUGE_ADVISED, "%s", pmap_huge_setting(m));
	touch(m);
	cr_assert_eq(pmd_kb(pmap_addr(m), pmap_len(m)), 4 * MIB / 1024);
}

static void
insert_keys(struct pool *pool, uint64_t owner, const struct pool_region *r)
{
	struct pool_kv kv;
	char key[32];
	bool ins;

	for (unsigned i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof(key), "key-%u", i);
		cr_assert_eq(pool_kv_insert(pool, owner, key, strlen(key),
		    r->id, r->off + i * 64ull, 64, &kv, &ins), 0, "%s",
		    cxlp_errormsg());
		cr_assert(ins);
	}
}

static unsigned
keys_found(const struct pool *pool)
{
	struct pool_kv kv;
	unsigned found = 0;
	char key[32];

	for (unsigned i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof(key), "key-%u", i);
		found += pool_kv_lookup(pool, key, strlen(key), &kv) == 0 &&
		    kv.len == 64;
	}
	return found;
}

Test(map_hugepage, a_pool_maps_its_metadata_huge_and_recovers_as_before)
{
	/* 2^17 slots: a 4 MiB index and an 8 MiB key heap */
	struct pool_params pp = { .size = 64 * MIB, .index_slots = 1u << 17 };
	struct pool_session s = { .pid = (uint32_t)getpid() };
	struct pool_region r;

	need_private_tmpfs("advise");
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pmap_huge(p->map), PMAP_HUGE_ADVISED, "%s",
	    pmap_huge_setting(p->map));
	cr_assert_eq(pool_session_add(p, &s), 0);
	cr_assert_eq(pool_region_alloc(p, s.id, 2 * MIB, 64, &r), 0);
	insert_keys(p, s.id, &r);
	cr_assert_eq(keys_found(p), NKEYS);
	/* the index was written whole at format: its 2 MiB pages are */
	cr_assert_geq(pmd_kb(p->base, p->data_off), 4 * MIB / 1024);
	cr_assert_eq(pmd_kb(p->base + p->data_off, 2 * MIB), 0,
	    "the data area is not advised");
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0, "%s", cxlp_errormsg());
	cr_assert_eq(keys_found(p), NKEYS);
	cr_assert_geq(pmd_kb(p->base, p->data_off), 4 * MIB / 1024);
}
