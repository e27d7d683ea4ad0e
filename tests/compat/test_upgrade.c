/*
 * test_upgrade.c -- the previous release's pool under this release: a
 * pool the old metaserver formatted and filled is served by the new one
 * after a restart and upgraded in place (layout 2.4 -> 2.5) while old
 * handlers stay connected (their sessions, pins and keys survive); the
 * new metaserver killed at each point of the upgrade (pool/crashpt.h),
 * after which each release opens the pool and every acknowledged key
 * reads back with its bytes; both pool-inspects on the pool before,
 * during and after; and a pool of a newer layout than either knows,
 * refused by both naming both versions.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compat.h"
#include "crashpt.h"
#include "cxlpool.h"
#include "layout.h"

#define POOL_BYTES (64ull << 20)

static struct test_server srv;
static char saved[160]; /* a copy of the filled 2.4 pool */
static char out[160];   /* pool-inspect's output */

static void
setup(void)
{
	snprintf(out, sizeof(out), "/tmp/cxlp-compat-%d.out", (int)getpid());
}

static void
teardown(void)
{
	if (srv.pid > 0 || srv.pool[0] != '\0') {
		test_server_stop(&srv);
	}
	if (saved[0] != '\0') {
		unlink(saved);
	}
	unlink(out);
}

TestSuite(upgrade, .init = setup, .fini = teardown);

static void
copy_file(const char *from, const char *to)
{
	char buf[1 << 16];
	int in = open(from, O_RDONLY), o = open(to, O_WRONLY | O_CREAT |
	    O_TRUNC, 0600);
	ssize_t n;

	cr_assert(in >= 0 && o >= 0, "copy %s to %s", from, to);
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		cr_assert_eq(write(o, buf, (size_t)n), n);
	}
	close(in);
	close(o);
}

static void
start(struct compat_client *cl, enum compat_rel rel)
{
	cr_assert_eq(compat_client_start(cl, rel, srv.url), 0,
	    "%s handler connects (server log %s)",
	    rel == COMPAT_OLD ? "old" : "new", srv.log);
}

static void
serve(enum compat_rel rel)
{
	cr_assert_eq(compat_server_restart(&srv, rel, NULL), 0,
	    "the %s metaserver serves the pool (log %s)",
	    rel == COMPAT_OLD ? "old" : "new", srv.log);
}

/* the superblock's checksum is the one its bytes call for */
static bool
sealed(const char *pool)
{
	struct pool_sb sb;
	uint64_t have;
	int fd = open(pool, O_RDONLY);

	cr_assert_eq(pread(fd, &sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	close(fd);
	have = sb.checksum;
	layout_seal(&sb);
	return have == sb.checksum;
}

/* every key the fill acknowledged, read back by a handler of rel */
static void
read_back(enum compat_rel rel)
{
	struct compat_client c;

	start(&c, rel);
	compat_expect(&c, "ok 300", "check k 0 300");
	compat_expect(&c, "ok 20", "check kp 0 20");
	cr_assert_eq(compat_client_stop(&c), 0);
}

/* SIGTERM the metaserver, keeping the pool (test_server_stop removes it) */
/* the metaserver's crash points are built in (meson option test_hooks,
 * as this test's pool library is) */
static void
need_crash_points(void)
{
	if (!crashpt_set_recorder(NULL, NULL)) {
		cr_skip_test("built without test_hooks: no crash points");
	}
}

static void
stop_server(void)
{
	test_server_kill(&srv, SIGTERM);
}

/* a pool the old metaserver formats, an old handler fills (300 keys,
 * 20 more stored pinned, released at its close), the old metaserver
 * stops; left at srv.pool, with a copy at saved */
static void
old_filled_pool(void)
{
	struct compat_client c;

	cr_assert_eq(compat_server_start(&srv, COMPAT_OLD, POOL_BYTES, NULL),
	    0);
	start(&c, COMPAT_OLD);
	compat_expect(&c, "ok 300", "store k 0 300");
	compat_expect(&c, "ok 20", "store kp 0 20 pin");
	cr_assert_eq(compat_client_stop(&c), 0);
	stop_server();
	cr_assert_eq(compat_sb_minor(srv.pool), 4, "the old release "
	    "formats layout 2.4");
	snprintf(saved, sizeof(saved), "%s.saved", srv.pool);
	copy_file(srv.pool, saved);
}


/* Two old handlers fill the old metaserver's pool and hold pins; the
 * old metaserver stops and the new one upgrades the pool (with
 * crash_at, first killed there by its crash point, then started again
 * to finish), the handlers connected all along: they reattach, and
 * their sessions, pins and keys are what they were. */
static void
connected_across(const char *crash_at)
{
	struct compat_client a, b, n;
	char w[64];

	cr_assert_eq(compat_server_start(&srv, COMPAT_OLD, POOL_BYTES, NULL),
	    0);
	start(&a, COMPAT_OLD);
	start(&b, COMPAT_OLD);
	compat_expect(&a, "ok 200", "store a 0 200");
	compat_expect(&a, "ok 10", "store ap 0 10 pin");
	compat_expect(&b, "ok 100", "store b 0 100");
	compat_expect(&b, "ok", "pin a 0 5");
	cr_assert_eq(compat_sb_minor(srv.pool), 4);

	test_server_kill(&srv, SIGTERM);
	if (crash_at != NULL) {
		setenv("CXLP_CRASH_AT", crash_at, 1);
		cr_assert_eq(compat_server_run(&srv, COMPAT_NEW),
		    128 + SIGKILL);
		unsetenv("CXLP_CRASH_AT");
		cr_assert(!sealed(srv.pool), "cut between its stores");
	}
	serve(COMPAT_NEW);
	cr_assert(test_server_log_has(&srv, crash_at != NULL ? "was cut "
	    "short; finishing it" : "layout 2.4; upgrading it to 2.5 in "
	    "place"), "log %s", srv.log);
	cr_assert_eq(compat_sb_minor(srv.pool), 5);
	cr_assert(sealed(srv.pool));

	compat_expect(&a, "rc 0", "health");
	compat_expect(&b, "rc 0", "health");
	compat_expect(&a, "ok 200", "check a 0 200");
	compat_expect(&b, "ok 10", "check ap 0 10");
	/* a's pins and b's are still theirs, and still counted */
	snprintf(w, sizeof(w), "rc 0 %d", CXLP_E_PINNED);
	compat_expect(&a, w, "del ap 0 1");
	compat_expect(&a, w, "del a 0 1");
	snprintf(w, sizeof(w), "err 0 %d", CXLP_E_NOTPINNED);
	compat_expect(&b, w, "unpin ap 0 1");
	compat_expect(&a, "ok", "unpin ap 0 10");
	compat_expect(&b, "ok", "unpin a 0 5");
	compat_expect(&a, "ok", "del a 0 1");
	/* and they go on storing, next to a new handler */
	compat_expect(&a, "ok 50", "store a2 0 50");
	start(&n, COMPAT_NEW);
	compat_expect(&n, "ok 50", "check a2 0 50");
	compat_expect(&n, "ok 100", "check b 0 100");
	compat_expect(&n, "ok 199", "check a 1 199");
	compat_expect(&n, "keys 359 pins 0 sessions 3", "stats");
	cr_assert_eq(compat_client_stop(&a), 0);
	cr_assert_eq(compat_client_stop(&b), 0);
	cr_assert_eq(compat_client_stop(&n), 0);
}

Test(upgrade, old_handlers_stay_connected_across_the_upgrade)
{
	compat_need_previous();
	connected_across(NULL);
}

Test(upgrade, old_handlers_stay_connected_across_a_kill_in_the_upgrade)
{
	compat_need_previous();
	need_crash_points();
	connected_across("1");
}

/* The new metaserver killed at each of the upgrade's two points (the
 * version store, the checksum store), as kill -9 leaves the file (the
 * point's store made) and as a power cut would (not made): the pool is
 * left 2.4, cut between the stores, or 2.5. After each: the old release
 * opens the pool unless it is cut, which it refuses as a checksum
 * mismatch (pool/upgrade.c note 2); the new one opens it, upgrading or
 * finishing it as need be; then the old one opens the upgraded pool (a
 * rollback). Every acknowledged key reads back, by old and new
 * handlers, at each step. */
Test(upgrade, a_kill_during_the_upgrade_leaves_a_pool_each_release_opens)
{
	static const struct {
		const char *at, *mode;
	} pt[] = { { "1", "kill" }, { "2", "kill" }, { "1", "tear" },
		{ "2", "tear" } };

	compat_need_previous();
	need_crash_points();
	old_filled_pool();
	for (size_t i = 0; i < sizeof(pt) / sizeof(pt[0]); i++) {
		int minor;
		bool cut;

		copy_file(saved, srv.pool);
		setenv("CXLP_CRASH_AT", pt[i].at, 1);
		setenv("CXLP_CRASH_MODE", pt[i].mode, 1);
		cr_assert_eq(compat_server_run(&srv, COMPAT_NEW), 128 + SIGKILL,
		    "point %s (%s): killed there", pt[i].at, pt[i].mode);
		unsetenv("CXLP_CRASH_AT");
		unsetenv("CXLP_CRASH_MODE");
		minor = compat_sb_minor(srv.pool);
		cut = minor == 5 && !sealed(srv.pool);
		/* kill: point 1's store (the version) is made; tear: not */
		cr_assert_eq(minor, strcmp(pt[i].mode, "tear") == 0 &&
		    pt[i].at[0] == '1' ? 4 : 5, "point %s (%s)", pt[i].at,
		    pt[i].mode);
		cr_assert_eq(cut, (pt[i].at[0] == '1') ==
		    (strcmp(pt[i].mode, "kill") == 0), "point %s (%s)",
		    pt[i].at, pt[i].mode);
		if (cut) {
			cr_assert_neq(compat_server_restart(&srv, COMPAT_OLD,
			    NULL), 0, "the old release refuses a cut upgrade");
			cr_assert(test_server_log_has(&srv, "checksum"),
			    "log %s", srv.log);
		} else {
			serve(COMPAT_OLD);
			read_back(COMPAT_OLD);
			stop_server();
		}
		serve(COMPAT_NEW);
		cr_assert(test_server_log_has(&srv, "finishing it") == cut,
		    "point %s (%s): log %s", pt[i].at, pt[i].mode, srv.log);
		cr_assert(test_server_log_has(&srv, "upgrading it to 2.5") ==
		    (minor == 4), "point %s (%s): log %s", pt[i].at,
		    pt[i].mode, srv.log);
		read_back(COMPAT_OLD);
		read_back(COMPAT_NEW);
		stop_server();
		cr_assert_eq(compat_sb_minor(srv.pool), 5);
		cr_assert(sealed(srv.pool));
		serve(COMPAT_OLD);
		read_back(COMPAT_OLD);
		stop_server();
	}
}

static int
inspect(enum compat_rel rel, const char *cmd, const char *pool)
{
	const char *args[] = { cmd, pool, NULL };

	return compat_inspect(rel, args, out);
}

static int
inspect_json(enum compat_rel rel, const char *cmd, const char *pool)
{
	const char *args[] = { cmd, pool, "--json", NULL };

	return compat_inspect(rel, args, out);
}

/* Both pool-inspects on the 2.4 pool, on one whose upgrade was cut
 * between its stores, and on the upgraded pool; neither writes. */
Test(upgrade, both_pool_inspects_on_the_pool_before_during_and_after)
{
	compat_need_previous();
	need_crash_points();
	old_filled_pool();
	cr_assert_eq(inspect(COMPAT_NEW, "check", srv.pool), 0);
	cr_assert_eq(inspect(COMPAT_NEW, "summary", srv.pool), 0);
	cr_assert(test_file_has(out, "layout         2.4 (a metaserver of "
	    "this release upgrades it to 2.5"), "%s", out);
	cr_assert(test_file_has(out, "keys           320"), "%s", out);
	cr_assert_eq(compat_sb_minor(srv.pool), 4, "pool-inspect writes "
	    "nothing");

	setenv("CXLP_CRASH_AT", "1", 1);
	cr_assert_eq(compat_server_run(&srv, COMPAT_NEW), 128 + SIGKILL);
	unsetenv("CXLP_CRASH_AT");
	cr_assert_eq(inspect(COMPAT_NEW, "check", srv.pool), 0, "%s", out);
	cr_assert_eq(inspect(COMPAT_NEW, "summary", srv.pool), 0);
	cr_assert(test_file_has(out, "2.5 (its upgrade from 2.4 was cut "
	    "short"), "%s", out);
	cr_assert_eq(inspect_json(COMPAT_NEW, "summary", srv.pool), 0);
	cr_assert(test_file_has(out, "\"layout\": \"2.5\", "
	    "\"layout_upgrade_cut_from\": \"2.4\""), "%s", out);
	/* what the previous release says of it: it cannot know */
	cr_assert_neq(inspect(COMPAT_OLD, "check", srv.pool), 0);
	cr_assert(test_file_has(out, "superblock checksum mismatch"), "%s",
	    out);

	serve(COMPAT_NEW);
	stop_server();
	cr_assert_eq(inspect(COMPAT_NEW, "summary", srv.pool), 0);
	cr_assert(test_file_has(out, "layout         2.5\n"), "%s", out);
	cr_assert_eq(inspect(COMPAT_OLD, "check", srv.pool), 0, "%s", out);
	cr_assert(test_file_has(out, "0 problems"), "%s", out);
	cr_assert_eq(inspect(COMPAT_OLD, "summary", srv.pool), 0);
	cr_assert(test_file_has(out, "keys           320"), "%s", out);
	cr_assert(test_file_has(out, "layout 2.5)"), "%s", out);
}

static void
edit_sb(const char *pool, uint32_t major, uint32_t minor, uint64_t incompat)
{
	int fd = open(pool, O_RDWR);
	struct pool_sb *sb = mmap(NULL, sizeof(*sb), PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0);

	cr_assert_neq(sb, MAP_FAILED);
	sb->major = major;
	sb->minor = minor;
	sb->incompat |= incompat;
	layout_seal(sb);
	munmap(sb, sizeof(*sb));
	close(fd);
}

/* the metaserver of rel refuses the pool, its log naming want */
static void
refused(enum compat_rel rel, const char *want)
{
	cr_assert_neq(compat_server_restart(&srv, rel, NULL), 0,
	    "%s metaserver refuses", rel == COMPAT_OLD ? "old" : "new");
	cr_assert(test_server_log_has(&srv, want), "%s metaserver names "
	    "\"%s\": log %s", rel == COMPAT_OLD ? "old" : "new", want,
	    srv.log);
}

Test(upgrade, a_newer_layout_is_refused_by_both_naming_both_versions)
{
	compat_need_previous();
	old_filled_pool();
	edit_sb(srv.pool, 3, 0, 0);
	refused(COMPAT_OLD, "layout 3.0 (incompat 0x1), this build reads 2.x "
	    "(incompat 0x1)");
	refused(COMPAT_NEW, "layout 3.0 (incompat 0x1), this build reads 2.x "
	    "(incompat 0x3)");
	cr_assert_neq(inspect(COMPAT_NEW, "summary", srv.pool), 0);
	cr_assert(test_file_has(out, "layout 3.0"), "%s", out);
	copy_file(saved, srv.pool);
	edit_sb(srv.pool, 2, 6, 1ull << 40);
	refused(COMPAT_OLD, "layout 2.6 (incompat 0x10000000001), this build "
	    "reads 2.x (incompat 0x1)");
	refused(COMPAT_NEW, "layout 2.6 (incompat 0x10000000001), this build "
	    "reads 2.x (incompat 0x3)");
	cr_assert_eq(compat_sb_minor(srv.pool), 6, "a refused pool is not "
	    "written");
}
