/*
 * test_upgrade.c -- pool/upgrade.c: a writer's open upgrades a pool of
 * an older 2.x layout to this one in place, a read-only open leaves it,
 * a superblock an upgrade left between its two stores is read and
 * finished, and a kill at each of the upgrade's crash points leaves a
 * pool that opens with its keys. The previous release's own binaries on
 * such pools: tests/compat.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashpt.h"
#include "cxlpool.h"
#include "pool_int.h"
#include "pool_test.h"

static char path[256];
static struct pool *p;

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

TestSuite(upgrade, .init = setup, .fini = teardown);

static struct pool_sb
read_sb(void)
{
	struct pool_sb sb;
	int fd = open(path, O_RDONLY);

	cr_assert_eq(pread(fd, &sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	close(fd);
	return sb;
}

/* a pool as the previous release formats it: a host pool's 2.5 fields
 * are zero (its reserved bytes), and its minor is 4 */
static void
as_2_4(struct pool_sb *sb)
{
	sb->minor = 4;
	layout_seal(sb);
}

/* an upgrade from 2.4 killed after its version store (note 2b) */
static void
cut_after_version(struct pool_sb *sb)
{
	as_2_4(sb);
	sb->minor = POOL_MINOR;
}

static void
flip_byte(struct pool_sb *sb)
{
	((uint8_t *)sb)[60] ^= 0x01;
}

static void
minor_6(struct pool_sb *sb)
{
	sb->minor = POOL_MINOR + 1;
	layout_seal(sb);
}

/* its checksum is the one its bytes call for */
static bool
sealed(struct pool_sb sb)
{
	uint64_t have = sb.checksum;

	layout_seal(&sb);
	return have == sb.checksum;
}

/* a pool of one key, "k", made and closed in a child (so that this
 * process passes no crash point before a child sets CXLP_CRASH_AT) */
static int
make_pool(void)
{
	struct pool_params pp = { .size = TEST_POOL_SIZE };
	struct pool_session s = { .token = 7, .pid = 1 };
	struct pool_region r;
	struct pool_kv kv;
	bool ins;

	if (pool_open(&p, path, POOL_CREATE, &pp) != 0 ||
	    pool_session_add(p, &s) != 0 ||
	    pool_region_alloc(p, s.id, 2u << 20, 4096, &r) != 0 ||
	    pool_kv_insert(p, s.id, "k", 1, r.id, r.off, 100, &kv,
	    &ins) != 0 || !ins) {
		return 1;
	}
	pool_close(&p);
	return 0;
}

static int
in_child(int (*fn)(void), const char *crash_at, const char *mode)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (crash_at != NULL) {
			setenv("CXLP_CRASH_AT", crash_at, 1);
			setenv("CXLP_CRASH_MODE", mode, 1);
		}
		_exit(fn());
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	    128 + WTERMSIG(status);
}

static int
open_rw(void)
{
	int rc = pool_open(&p, path, 0, NULL);

	pool_close(&p);
	return rc == 0 ? 0 : 1;
}

static void
expect_key(unsigned flags)
{
	struct pool_kv kv;

	cr_assert_eq(pool_open(&p, path, flags, NULL), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_kv_lookup(p, "k", 1, &kv), 0);
	cr_assert_eq(kv.len, 100);
	pool_close(&p);
}

Test(upgrade, a_writers_open_brings_a_2_4_pool_to_this_layout)
{
	struct pool_sb sb;

	cr_assert_eq(in_child(make_pool, NULL, NULL), 0);
	test_pool_edit_sb(path, as_2_4);
	expect_key(0);
	sb = read_sb();
	cr_assert_eq(read_sb().minor, POOL_MINOR);
	cr_assert(sealed(read_sb()));
	cr_assert_eq(layout_upgrade_torn(&sb), -1);
}

Test(upgrade, a_read_only_open_leaves_a_2_4_pool_as_it_is)
{
	struct pool_sb before, after;

	cr_assert_eq(in_child(make_pool, NULL, NULL), 0);
	test_pool_edit_sb(path, as_2_4);
	before = read_sb();
	expect_key(POOL_RDONLY);
	after = read_sb();
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0);
	cr_assert_eq(after.minor, 4);
}

Test(upgrade, a_superblock_cut_between_version_and_checksum_is_finished)
{
	char why[256];
	struct pool_sb sb;

	cr_assert_eq(in_child(make_pool, NULL, NULL), 0);
	test_pool_edit_sb(path, cut_after_version);
	sb = read_sb();
	cr_assert(!sealed(sb));
	cr_assert_eq(layout_upgrade_torn(&sb), 4);
	cr_assert_eq(layout_validate(&sb, sb.size, why, sizeof(why)), 0,
	    "%s", why);
	expect_key(POOL_RDONLY); /* readers read it as it is */
	cr_assert(!sealed(read_sb()));
	expect_key(0);           /* the next writer finishes it */
	cr_assert(sealed(read_sb()));
	cr_assert_eq(read_sb().minor, POOL_MINOR);
}

Test(upgrade, damage_to_a_cut_superblock_is_still_a_checksum_error)
{
	cr_assert_eq(in_child(make_pool, NULL, NULL), 0);
	test_pool_edit_sb(path, cut_after_version);
	test_pool_edit_sb(path, flip_byte);
	p = (void *)1;
	cr_assert_eq(pool_open(&p, path, 0, NULL), CXLP_E_CHECKSUM);
	cr_assert_null(p);
}

Test(upgrade, a_newer_minor_is_opened_and_left_alone)
{
	cr_assert_eq(in_child(make_pool, NULL, NULL), 0);
	test_pool_edit_sb(path, minor_6);
	expect_key(0);
	cr_assert_eq(read_sb().minor, POOL_MINOR + 1);
	cr_assert(sealed(read_sb()));
}

/* a kill at the upgrade's first point (the version store) and at its
 * second (the checksum store), as kill -9 leaves the media (the store
 * of the point made, crashpt.h) and as a power cut does (not made):
 * each leaves a pool that opens with its key, read-only as it is, and
 * the next writer's open finishes the upgrade */
Test(upgrade, a_kill_at_each_upgrade_point_leaves_a_pool_that_opens)
{
	static const struct {
		const char *at, *mode;
		uint32_t minor; /* after the kill */
		bool sealed;
	} pt[] = {
		{ "1", "kill", POOL_MINOR, false }, /* version, no checksum */
		{ "2", "kill", POOL_MINOR, true },  /* both */
		{ "1", "tear", 4, true },           /* nothing */
		{ "2", "tear", POOL_MINOR, false }, /* version, no checksum */
	};

	if (!crashpt_set_recorder(NULL, NULL)) {
		cr_skip_test("built without test_hooks: no crash points");
	}
	for (size_t i = 0; i < sizeof(pt) / sizeof(pt[0]); i++) {
		cr_assert_eq(in_child(make_pool, NULL, NULL), 0);
		test_pool_edit_sb(path, as_2_4);
		cr_assert_eq(in_child(open_rw, pt[i].at, pt[i].mode),
		    128 + SIGKILL, "point %s (%s)", pt[i].at, pt[i].mode);
		cr_assert_eq(read_sb().minor, pt[i].minor, "point %s (%s)",
		    pt[i].at, pt[i].mode);
		cr_assert_eq(sealed(read_sb()), pt[i].sealed, "point %s (%s)",
		    pt[i].at, pt[i].mode);
		expect_key(POOL_RDONLY);
		/* a writer in a child: this process passes no crash point,
		 * or the next child would inherit its reading of the
		 * environment (crashpt.c reads it once) */
		cr_assert_eq(in_child(open_rw, NULL, NULL), 0);
		expect_key(POOL_RDONLY);
		cr_assert_eq(read_sb().minor, POOL_MINOR);
		cr_assert(sealed(read_sb()));
		unlink(path);
	}
}
