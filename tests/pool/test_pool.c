/*
 * test_pool.c -- pool/pool.c, regtab.c, sesstab.c, kv.c on real files:
 * create/open round trips, every pool_kv_insert refusal, ORPHAN regions,
 * damaged files, stale volatile pools, and failed opens leaving NULL.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cxlpool.h"
#include "pool_int.h"
#include "pool_test.h"

static char path[256];
static struct pool *p;
static const struct pool_params params = { .size = TEST_POOL_SIZE };

static void
setup(void)
{
	test_pool_path(path, sizeof(path), "/dev/shm");
}

static void
teardown(void)
{
	pool_close(&p);
	unlink(path);
}

TestSuite(pool, .init = setup, .fini = teardown);

static void
create(void)
{
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &params), 0, "%s",
	    cxlp_errormsg());
}

static void
reopen(unsigned flags)
{
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, flags, NULL), 0, "%s",
	    cxlp_errormsg());
}

static struct pool_region
region(uint64_t owner, uint64_t page)
{
	struct pool_region r;

	cr_assert_eq(pool_region_alloc(p, owner, 2u << 20, page, &r), 0, "%s",
	    cxlp_errormsg());
	return r;
}

static int
insert(uint64_t owner, const char *key, const struct pool_region *r,
    uint64_t page, uint64_t len, bool *ins)
{
	struct pool_kv kv;

	return pool_kv_insert(p, owner, key, strlen(key), r->id,
	    r->off + page * r->page_size, len, &kv, ins);
}

Test(pool, create_makes_a_sparse_pool_of_the_asked_size)
{
	struct pool_stats st;

	create();
	pool_stats(p, &st);
	cr_assert_eq(pool_size(p), TEST_POOL_SIZE);
	cr_assert_eq(pool_align(p), POOL_ALIGN_DEFAULT);
	cr_assert_str_eq(pool_path(p), path);
	cr_assert_eq(st.meta_bytes + st.data_bytes, TEST_POOL_SIZE);
	cr_assert_eq(st.free_bytes, st.data_bytes);
	cr_assert_eq(st.keys + st.regions + st.sessions, 0);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(pool, regions_keys_and_sessions_survive_close_and_reopen)
{
	struct pool_session s = { .token = 77, .pid = 42, .instance = 9 }, got;
	struct pool_region r, r2;
	struct pool_kv kv;
	bool ins;

	create();
	strcpy(s.host, "hostA");
	cr_assert_eq(pool_session_add(p, &s), 0);
	r = region(s.id, 4096);
	cr_assert_eq(insert(s.id, "alpha", &r, 3, 100, &ins), 0);
	cr_assert(ins);
	reopen(0);
	cr_assert_eq(pool_session_get(p, s.id, &got), 0);
	cr_assert_eq(got.token, 77);
	cr_assert_eq(got.pid, 42);
	cr_assert_str_eq(got.host, "hostA");
	cr_assert_eq(pool_region_get(p, r.id, &r2), 0);
	cr_assert_eq(r2.off, r.off);
	cr_assert_eq(r2.gen, r.gen);
	cr_assert_eq(r2.owner, s.id);
	cr_assert_eq(r2.nkeys, 1, "key count rebuilt from the index");
	cr_assert_eq(pool_kv_lookup(p, "alpha", 5, &kv), 0);
	cr_assert_eq(kv.off, r.off + 3 * 4096);
	cr_assert_eq(kv.len, 100);
	cr_assert_eq(insert(s.id, "beta", &r, 3, 1, &ins), CXLP_E_BUSY,
	    "the page bitmap was rebuilt too");
	reopen(POOL_RDONLY);
	cr_assert_eq(pool_kv_lookup(p, "alpha", 5, &kv), 0);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

/* Each open by a writer leaves a new open nonce in the superblock (what
 * a handler checks its mappings against, handler/session/poolid.c); a reader's
 * open changes nothing. The session record's flags come back as stored. */
Test(pool, each_writer_open_leaves_a_new_open_nonce_and_session_flags_stay)
{
	struct pool_session s = { .pid = 1,
		.flags = POOL_SESS_PEERCRED | POOL_SESS_RELAYED }, got;
	uint64_t n1, n2, dev, ino;
	struct stat st;

	create();
	cr_assert_eq(pool_session_add(p, &s), 0);
	n1 = pool_open_nonce(p);
	cr_assert_neq(n1, 0);
	reopen(0);
	n2 = pool_open_nonce(p);
	cr_assert(n2 != 0 && n2 != n1, "%llx after %llx",
	    (unsigned long long)n2, (unsigned long long)n1);
	reopen(POOL_RDONLY);
	cr_assert_eq(pool_open_nonce(p), n2);
	cr_assert_eq(pool_session_get(p, s.id, &got), 0);
	cr_assert_eq(got.flags, POOL_SESS_PEERCRED | POOL_SESS_RELAYED);
	pool_file_id(p, &dev, &ino);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert(dev == (uint64_t)st.st_dev && ino == (uint64_t)st.st_ino);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(pool, session_ids_are_unique_and_never_reused_after_reopen)
{
	struct pool_session a = { 0 }, b = { 0 }, c = { 0 };
	uint64_t cursor = 0;
	int n = 0;

	create();
	cr_assert_eq(pool_session_add(p, &a), 0);
	cr_assert_eq(pool_session_add(p, &b), 0);
	cr_assert_neq(a.id, 0);
	cr_assert_neq(a.id, b.id);
	cr_assert_eq(pool_session_remove(p, b.id), 0);
	cr_assert_eq(pool_session_remove(p, b.id), CXLP_E_NOTFOUND);
	reopen(0);
	cr_assert_eq(pool_session_add(p, &c), 0);
	cr_assert_gt(c.id, b.id);
	while (pool_session_next(p, &cursor, &a) == 1) {
		n++;
	}
	cr_assert_eq(n, 2);
}

Test(pool, session_table_full_is_nospace)
{
	struct pool_params pp = { .size = TEST_POOL_SIZE, .max_sessions = 2 };
	struct pool_session s = { 0 };

	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0);
	cr_assert_eq(pool_session_add(p, &s), 0);
	cr_assert_eq(pool_session_add(p, &s), 0);
	cr_assert_eq(pool_session_add(p, &s), CXLP_E_NOSPACE);
}

Test(pool, insert_refuses_bad_keys_owners_bounds_sizes_and_busy_pages)
{
	struct pool_region r, other;
	struct pool_kv kv;
	char big[CXLP_KEY_MAX + 1];
	bool ins;

	create();
	r = region(1, 4096);
	other = region(2, 4096);
	memset(big, 'k', sizeof(big));
	cr_assert_eq(pool_kv_insert(p, 1, "", 0, r.id, r.off, 1, &kv, &ins),
	    CXLP_E_KEYLEN);
	cr_assert_eq(pool_kv_insert(p, 1, big, sizeof(big), r.id, r.off, 1,
	    &kv, &ins), CXLP_E_KEYLEN);
	cr_assert_eq(insert(1, "k", &other, 0, 1, &ins), CXLP_E_PERM,
	    "another session's region");
	cr_assert_eq(pool_kv_insert(p, 1, "k", 1, 999, r.off, 1, &kv, &ins),
	    CXLP_E_PERM, "no such region");
	cr_assert_eq(pool_kv_insert(p, 1, "k", 1, r.id, r.off + 100, 1, &kv,
	    &ins), CXLP_E_BOUNDS, "not a page boundary");
	cr_assert_eq(pool_kv_insert(p, 1, "k", 1, r.id, r.off + r.len, 1, &kv,
	    &ins), CXLP_E_BOUNDS, "past the region");
	cr_assert_eq(pool_kv_insert(p, 1, "k", 1, r.id, r.off - 4096, 1, &kv,
	    &ins), CXLP_E_BOUNDS, "before the region");
	cr_assert_eq(insert(1, "k", &r, 0, 4097, &ins), CXLP_E_TOOBIG);
	cr_assert_eq(insert(1, "k", &r, 0, 4096, &ins), 0);
	cr_assert(ins);
	cr_assert_eq(insert(1, "k2", &r, 0, 10, &ins), CXLP_E_BUSY);
	cr_assert_eq(insert(1, "k", &r, 5, 10, &ins), 0, "existing key wins");
	cr_assert_not(ins);
	cr_assert_eq(pool_kv_lookup(p, "k", 1, &kv), 0);
	cr_assert_eq(kv.off, r.off, "the first registration, not page 5");
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(pool, region_alloc_rejects_bad_arguments_and_runs_out)
{
	struct pool_region r;
	struct pool_stats st;
	int n = 0;

	create();
	cr_assert_eq(pool_region_alloc(p, 0, 4096, 4096, &r), -EINVAL);
	cr_assert_eq(pool_region_alloc(p, 1, 0, 4096, &r), -EINVAL);
	cr_assert_eq(pool_region_alloc(p, 1, 4096, 8u << 20, &r), -EINVAL);
	cr_assert_eq(pool_region_alloc(p, 1, 4096, 0, &r), -EINVAL);
	while (pool_region_alloc(p, 1, 1, 4096, &r) == 0) {
		cr_assert_eq(r.len, POOL_ALIGN_DEFAULT, "rounded up to align");
		n++;
	}
	pool_stats(p, &st);
	cr_assert_eq((uint64_t)n * POOL_ALIGN_DEFAULT, st.data_bytes);
	cr_assert_eq(pool_region_alloc(p, 1, 1, 4096, &r), CXLP_E_NOSPACE);
}

Test(pool, orphan_region_is_freed_exactly_with_its_last_key)
{
	struct pool_region r, got, again;
	struct pool_stats st;
	bool ins;

	create();
	r = region(5, 4096);
	cr_assert_eq(insert(5, "a", &r, 0, 1, &ins), 0);
	cr_assert_eq(insert(5, "b", &r, 1, 1, &ins), 0);
	cr_assert_eq(pool_region_disown(p, r.id), 0);
	cr_assert_eq(pool_region_get(p, r.id, &got), 0);
	cr_assert_eq(got.state, POOL_REGION_ORPHAN);
	cr_assert_eq(got.owner, 0);
	cr_assert_eq(insert(5, "c", &r, 2, 1, &ins), CXLP_E_PERM,
	    "no new keys into an orphan");
	reopen(0);
	cr_assert_eq(pool_region_get(p, r.id, &got), 0);
	cr_assert_eq(got.state, POOL_REGION_ORPHAN, "orphan state persisted");
	cr_assert_eq(pool_kv_remove(p, "a", 1, NULL), 0);
	cr_assert_eq(pool_region_get(p, r.id, &got), 0, "one key left");
	cr_assert_eq(pool_kv_remove(p, "b", 1, NULL), 0);
	cr_assert_eq(pool_region_get(p, r.id, &got), CXLP_E_NOTFOUND);
	pool_stats(p, &st);
	cr_assert_eq(st.free_bytes, st.data_bytes);
	again = region(6, 8192);
	cr_assert_eq(again.off, r.off, "its space is reused");
	cr_assert_neq(again.gen, r.gen);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(pool, disown_without_keys_frees_the_region_at_once)
{
	struct pool_region r, got;

	create();
	r = region(5, 4096);
	cr_assert_eq(pool_region_disown(p, r.id), 0);
	cr_assert_eq(pool_region_get(p, r.id, &got), CXLP_E_NOTFOUND);
	cr_assert_eq(pool_region_disown(p, r.id), CXLP_E_NOTFOUND);
}

Test(pool, remove_and_iterate_keys)
{
	struct pool_region r;
	struct pool_kv kv;
	uint64_t cursor = 0;
	const void *key;
	size_t klen;
	bool ins;
	int n = 0;

	create();
	r = region(1, 4096);
	insert(1, "x", &r, 0, 5, &ins);
	insert(1, "yy", &r, 1, 6, &ins);
	cr_assert_eq(pool_kv_remove(p, "x", 1, &kv), 0);
	cr_assert_eq(kv.off, r.off);
	cr_assert_eq(pool_kv_remove(p, "x", 1, &kv), CXLP_E_NOTFOUND);
	while (pool_kv_next(p, &cursor, &kv, &key, &klen) == 1) {
		cr_assert_eq(klen, 2);
		cr_assert_eq(memcmp(key, "yy", 2), 0);
		n++;
	}
	cr_assert_eq(n, 1);
	cr_assert_eq(insert(1, "z", &r, 0, 5, &ins), 0, "page 0 free again");
}

Test(pool, readonly_open_refuses_changes)
{
	struct pool_region r;
	struct pool_session s = { 0 };
	bool ins;

	create();
	r = region(1, 4096);
	reopen(POOL_RDONLY);
	cr_assert_eq(pool_region_alloc(p, 1, 4096, 4096, &r), -EROFS);
	cr_assert_eq(insert(1, "k", &r, 0, 1, &ins), -EROFS);
	cr_assert_eq(pool_session_add(p, &s), -EROFS);
	cr_assert_eq(pool_region_disown(p, r.id), -EROFS);
}

Test(pool, missing_file_without_create_fails_with_null)
{
	p = (void *)1;
	cr_assert_eq(pool_open(&p, path, 0, NULL), -ENOENT);
	cr_assert_null(p);
}

static void
expect_open_fails(int want, const char *what)
{
	p = (void *)1;
	cr_assert_eq(pool_open(&p, path, 0, NULL), want, "%s: %s", what,
	    cxlp_errormsg());
	cr_assert_null(p);
	cr_assert(strstr(cxlp_errormsg(), path) != NULL,
	    "message names the path: %s", cxlp_errormsg());
}

Test(pool, truncated_file_is_corrupt)
{
	create();
	pool_close(&p);
	cr_assert_eq(truncate(path, TEST_POOL_SIZE / 2), 0);
	expect_open_fails(CXLP_E_CORRUPT, "truncated");
}

Test(pool, tiny_or_foreign_files_are_badmagic)
{
	FILE *f = fopen(path, "w");

	fputs("not a pool\n", f);
	fclose(f);
	expect_open_fails(CXLP_E_BADMAGIC, "tiny");
	cr_assert_eq(truncate(path, 1 << 20), 0);
	expect_open_fails(CXLP_E_BADMAGIC, "zeros");
	p = NULL;
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &params), CXLP_E_BADMAGIC,
	    "POOL_CREATE never clobbers an existing file");
}

static void
flip_byte(struct pool_sb *sb)
{
	((uint8_t *)sb)[60] ^= 0x01;
}

static void
bump_major(struct pool_sb *sb)
{
	sb->major++;
	layout_seal(sb);
}

static void
break_magic(struct pool_sb *sb)
{
	sb->magic[3] = 'X';
}

Test(pool, damaged_superblocks_fail_with_the_right_error)
{
	create();
	pool_close(&p);
	test_pool_edit_sb(path, flip_byte);
	expect_open_fails(CXLP_E_CHECKSUM, "flipped byte");
	test_pool_edit_sb(path, flip_byte);
	test_pool_edit_sb(path, bump_major);
	expect_open_fails(CXLP_E_VERSION, "major");
	test_pool_edit_sb(path, break_magic);
	expect_open_fails(CXLP_E_BADMAGIC, "magic");
}

static void
other_boot(struct pool_sb *sb)
{
	cr_assert(sb->flags & POOL_SB_VOLATILE, "tmpfs pools are volatile");
	memcpy(sb->boot_id, "00000000-0000-0000-0000-000000000000", 36);
	layout_seal(sb);
}

Test(pool, volatile_pool_from_another_boot_is_stale_until_reformatted)
{
	struct pool_region r;

	create();
	r = region(1, 4096);
	pool_close(&p);
	test_pool_edit_sb(path, other_boot);
	expect_open_fails(CXLP_E_STALE, "stale");
	cr_assert(strstr(cxlp_errormsg(), "boot") != NULL);
	cr_assert_eq(pool_open(&p, path, POOL_REFORMAT, &params), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_region_get(p, r.id, &r), CXLP_E_NOTFOUND,
	    "reformat starts empty");
	reopen(0);
}

Test(pool, disk_pool_is_not_volatile)
{
	test_pool_path(path, sizeof(path), "/tmp");
	create();
	cr_assert_not(p->sb->flags & POOL_SB_VOLATILE);
}

Test(pool, reformat_wipes_a_valid_pool)
{
	struct pool_session s = { 0 };
	struct pool_stats st;

	create();
	pool_session_add(p, &s);
	region(s.id, 4096);
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, POOL_REFORMAT, NULL), 0);
	pool_stats(p, &st);
	cr_assert_eq(st.sessions + st.regions + st.keys, 0);
	cr_assert_eq(st.size, TEST_POOL_SIZE);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(pool, bad_flags_and_params_fail_cleanly)
{
	struct pool_params bad = { .size = 3u << 20 };

	p = (void *)1;
	cr_assert_eq(pool_open(&p, path, POOL_RDONLY | POOL_CREATE, NULL),
	    -EINVAL);
	cr_assert_null(p);
	p = (void *)1;
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &bad), -EINVAL);
	cr_assert_null(p);
	cr_assert_neq(access(path, F_OK), 0, "no file left behind");
}

Test(pool, recovery_frees_an_orphan_left_without_keys)
{
	struct pool_region r, got;
	bool ins;

	create();
	r = region(1, 4096);
	insert(1, "a", &r, 0, 1, &ins);
	pool_region_disown(p, r.id);
	/* crash after the key's delete, before the region's free */
	cr_assert_eq(kvindex_remove(&p->kv, "a", 1, NULL), 0);
	reopen(0);
	cr_assert_eq(pool_region_get(p, r.id, &got), CXLP_E_NOTFOUND);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

/* a plain file stands in for a fresh device: blank (zero) first 4 KiB */
static void
make_file(uint64_t size, const char *head, size_t hlen)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(head, 1, hlen, f), hlen);
	fclose(f);
	cr_assert_eq(truncate(path, (off_t)size), 0);
}

Test(pool, create_formats_a_blank_target_to_its_own_size)
{
	struct pool_params big = { .size = 1ull << 30 };
	struct pool_stats st;

	make_file(TEST_POOL_SIZE + (1u << 20), "", 0);
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &big), 0, "%s",
	    cxlp_errormsg());
	pool_stats(p, &st);
	cr_assert_eq(st.size, TEST_POOL_SIZE, "the target's size, rounded "
	    "down to align, not params.size");
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	reopen(POOL_CREATE);
	cr_assert_eq(pool_size(p), TEST_POOL_SIZE, "a formatted pool is "
	    "opened, not formatted again");
}

Test(pool, create_never_formats_a_target_that_holds_anything)
{
	/* a format torn after clearing the magic looks like this */
	make_file(TEST_POOL_SIZE, "\0\0\0\0\0\0\0\0x", 9);
	expect_open_fails(CXLP_E_BADMAGIC, "nonblank");
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &params),
	    CXLP_E_BADMAGIC);
	cr_assert_null(p);
	cr_assert_eq(pool_open(&p, path, POOL_REFORMAT, &params), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

static void
clear_magic(struct pool_sb *sb)
{
	memset(sb->magic, 0, sizeof(sb->magic));
}

static void
clear_magic_and_damage(struct pool_sb *sb)
{
	clear_magic(sb);
	sb->size ^= 4096;
}

/* A format cut short by a crash leaves all of a superblock but its magic
 * (stored last): POOL_CREATE formats it again. The metaserver used to
 * refuse it as "not a pool" on every start after such a crash. */
Test(pool, create_formats_again_a_target_whose_format_was_cut_short)
{
	struct pool_region r;
	struct pool_kv kv;
	bool ins;

	create();
	r = region(1, 4096);
	cr_assert_eq(insert(1, "k", &r, 0, 10, &ins), 0);
	pool_close(&p);
	test_pool_edit_sb(path, clear_magic);
	cr_assert_eq(pool_open(&p, path, 0, NULL), CXLP_E_BADMAGIC);
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &params), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	cr_assert_eq(pool_kv_lookup(p, "k", 1, &kv), CXLP_E_NOTFOUND);
	reopen(0);
}

/* ... but only a superblock of ours: anything else stays untouched. */
Test(pool, create_never_formats_a_damaged_superblock_without_magic)
{
	create();
	pool_close(&p);
	test_pool_edit_sb(path, clear_magic_and_damage);
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &params),
	    CXLP_E_BADMAGIC);
	cr_assert_null(p);
}

Test(pool, create_does_not_format_a_blank_target_opened_read_only)
{
	make_file(TEST_POOL_SIZE, "", 0);
	cr_assert_eq(pool_open(&p, path, POOL_RDONLY, NULL), CXLP_E_BADMAGIC);
	cr_assert_eq(pool_open(&p, path, 0, NULL), CXLP_E_BADMAGIC,
	    "without POOL_CREATE a blank target is not a pool");
}

Test(pool, a_blank_target_too_small_for_one_region_is_refused)
{
	make_file(3u << 20, "", 0);
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, NULL), -EINVAL);
	cr_assert_null(p);
	cr_assert(strstr(cxlp_errormsg(), "cannot format") != NULL, "%s",
	    cxlp_errormsg());
}

Test(pool, media_reports_the_mapping)
{
	struct pool_media m;

	create();
	pool_media(p, &m);
	cr_assert_not(m.devdax);
	cr_assert(m.is_volatile, "/dev/shm is tmpfs");
	cr_assert_eq(m.align, 4096);
	cr_assert_str_eq(m.granularity, "page");
}
