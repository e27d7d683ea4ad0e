/*
 * test_pintab.c -- pool/pintab.c: pins kept in the pool's metadata area
 * survive a reopen, a replayed request does not pin twice, recovery drops
 * pins a crash left behind, and pool_check reports a damaged record.
 * Also the layout 2 rules pool.c applies at open: an old-layout pool is
 * refused, a disk pool keeps its keys across a boot. A "crash" here is a
 * pool closed between two steps, so these need no metaserver and no crash
 * points (those are in tests/crash).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "layout.h"
#include "pool.h"
#include "pool_int.h"
#include "pool_test.h"

static char path[128];
static struct pool *p;
static uint64_t sess;
static struct pool_region reg;

static void
open_pool(void)
{
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0, "%s", cxlp_errormsg());
}

static void
setup_in(const char *dir)
{
	struct pool_params pp = { .size = 32ull << 20 };
	struct pool_session s = { .token = 7, .pid = 1 };

	test_pool_path(path, sizeof(path), dir);
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_session_add(p, &s), 0);
	sess = s.id;
	cr_assert_eq(pool_region_alloc(p, sess, 2u << 20, 4096, &reg), 0);
}

static void
setup(void)
{
	setup_in("/dev/shm");
}

static void
teardown(void)
{
	pool_close(&p);
	unlink(path);
}

/* register key name at page i of reg; returns its slot */
static uint64_t
put(const char *name, uint32_t i)
{
	struct pool_kv kv;
	bool ins = false;

	cr_assert_eq(pool_kv_insert(p, sess, name, strlen(name), reg.id,
	    reg.off + i * 4096ull, 10, &kv, &ins), 0);
	cr_assert(ins);
	return kv.slot;
}

static void
change(uint64_t s, uint64_t slot, int delta, uint64_t req, unsigned nth,
    bool want_applied)
{
	bool applied = !want_applied;

	cr_assert_eq(pool_pin_change(p, s, slot, delta, req, nth, &applied),
	    0, "%s", cxlp_errormsg());
	cr_assert_eq(applied, want_applied);
}

TestSuite(pintab, .init = setup, .fini = teardown, .timeout = 30);

Test(pintab, pins_survive_a_reopen)
{
	uint64_t a = put("a", 0), b = put("b", 1);

	change(sess, a, +1, 1, 1, true);
	change(sess, a, +1, 2, 1, true);
	change(sess, b, +1, 3, 1, true);
	change(sess, b, -1, 4, 1, true);
	pool_close(&p);
	open_pool();
	cr_assert_eq(pool_pin_held(p, sess, a), 2);
	cr_assert_eq(pool_pin_held(p, sess, b), 0);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(pintab, a_replayed_request_changes_nothing_it_already_changed)
{
	uint64_t a = put("a", 0), b = put("b", 1);

	/* request 9 pins a twice and b once, then "the server crashes"
	 * after a's first pin: its replay must finish, not double */
	change(sess, a, +1, 9, 1, true);
	pool_close(&p);
	open_pool();
	change(sess, a, +1, 9, 1, false);
	change(sess, a, +1, 9, 2, true);
	change(sess, b, +1, 9, 1, true);
	cr_assert_eq(pool_pin_held(p, sess, a), 2);
	cr_assert_eq(pool_pin_held(p, sess, b), 1);
	/* another request is never taken for a replay */
	change(sess, a, -1, 10, 1, true);
	change(sess, a, -1, 10, 1, false);
	cr_assert_eq(pool_pin_held(p, sess, a), 1);
}

/* The server applies an unpin of the last pin, crashes before it
 * answers, and the handler sends the same request again to the restarted
 * server (whose reply cache is gone): the replay must be recognized from
 * the retired record, not refused as "no pin". */
Test(pintab, the_last_unpin_replayed_after_a_reopen_is_recognized)
{
	uint64_t a = put("a", 0);
	bool applied = true;

	change(sess, a, +1, 1, 1, true);
	change(sess, a, -1, 2, 1, true);
	cr_assert_eq(pool_pin_held(p, sess, a), 0);
	pool_close(&p);
	open_pool();
	change(sess, a, -1, 2, 1, false);
	cr_assert_eq(pool_pin_held(p, sess, a), 0);
	/* a new request finds no pin to release */
	cr_assert_eq(pool_pin_change(p, sess, a, -1, 3, 1, &applied),
	    CXLP_E_NOTPINNED);
	cr_assert_not(applied);
	/* the retired record takes a pin again, and lists only then */
	change(sess, a, +1, 4, 1, true);
	cr_assert_eq(pool_pin_held(p, sess, a), 1);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

/* Retired records hold cells, not pins: a reserve that needs their cells
 * frees them (their replays then lose their stamps), and the pin listing
 * never shows them. */
Test(pintab, retired_records_make_room_when_records_run_short)
{
	uint64_t a = put("a", 0), b = put("b", 1), cursor = 0;
	struct pool_pin pin;
	bool applied = true;

	change(sess, a, +1, 1, 1, true);
	change(sess, b, +1, 2, 1, true);
	change(sess, a, -1, 3, 1, true);
	cr_assert_eq(pool_pin_next(p, &cursor, &pin), 1);
	cr_assert_eq(pin.slot, b);
	cr_assert_eq(pool_pin_next(p, &cursor, &pin), 0);
	cr_assert_eq(pool_pin_reserve(p, pool_pin_max(p) - 1), 0);
	cr_assert_eq(pool_pin_reserve(p, pool_pin_max(p)), CXLP_E_NOSPACE);
	cr_assert_eq(pool_pin_change(p, sess, a, -1, 3, 1, &applied),
	    CXLP_E_NOTPINNED);
	cr_assert_eq(pool_pin_held(p, sess, b), 1);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

/* A key with only a retired record may be deleted; the record then names
 * a dead slot, which is not a problem for the check, nor at open. */
Test(pintab, a_retired_record_may_outlive_its_key)
{
	uint64_t a = put("a", 0);
	struct pool_kv kv;

	change(sess, a, +1, 1, 1, true);
	change(sess, a, -1, 2, 1, true);
	cr_assert_eq(pool_kv_remove(p, "a", 1, &kv), 0);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	pool_close(&p);
	open_pool();
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	change(sess, a, -1, 2, 1, false);
}

Test(pintab, unpin_without_a_pin_is_notpinned)
{
	uint64_t a = put("a", 0);
	bool applied = true;

	cr_assert_eq(pool_pin_change(p, sess, a, -1, 1, 1, &applied),
	    CXLP_E_NOTPINNED);
	cr_assert_not(applied);
}

Test(pintab, pins_of_a_session_without_record_are_dropped_at_open)
{
	uint64_t a = put("a", 0);

	change(sess, a, +1, 1, 1, true);
	/* a crash between the session record's removal and its pins' */
	cr_assert_eq(pool_session_remove(p, sess), 0);
	pool_close(&p);
	open_pool();
	cr_assert_eq(pool_pin_held(p, sess, a), 0);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(pintab, release_session_frees_every_record)
{
	uint64_t a = put("a", 0), b = put("b", 1);

	change(sess, a, +1, 1, 1, true);
	change(sess, b, +1, 1, 1, true);
	change(sess, b, +1, 2, 1, true);
	cr_assert_eq(pool_pin_release_session(p, sess), 3);
	cr_assert_eq(pool_pin_reserve(p, pool_pin_max(p)), 0);
	cr_assert_eq(pool_pin_reserve(p, pool_pin_max(p) + 1),
	    CXLP_E_NOSPACE);
}

Test(pintab, check_reports_a_damaged_record)
{
	uint64_t a = put("a", 0);
	struct pool *ro = NULL;

	change(sess, a, +1, 1, 1, true);
	p->ptab[0].checksum ^= 1; /* the first record is taken first */
	cr_assert_eq(pool_open(&ro, path, POOL_RDONLY, NULL), 0);
	cr_assert_gt(pool_check(ro, NULL, NULL), 0);
	pool_close(&ro);
	pool_close(&p);
	open_pool(); /* repair drops it */
	cr_assert_eq(pool_pin_held(p, sess, a), 0);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

static void
layout_1(struct pool_sb *sb)
{
	sb->major = 1;
	layout_seal(sb);
}

Test(pintab, a_layout_1_pool_is_refused_with_a_version_error)
{
	pool_close(&p);
	test_pool_edit_sb(path, layout_1);
	cr_assert_eq(pool_open(&p, path, 0, NULL), CXLP_E_VERSION);
	cr_assert_null(p);
	cr_assert(strstr(cxlp_errormsg(), "layout 1.") != NULL, "%s",
	    cxlp_errormsg());
}

static void
other_boot(struct pool_sb *sb)
{
	memcpy(sb->boot_id, "00000000-0000-0000-0000-000000000000", 36);
	layout_seal(sb);
}

Test(pintab, a_disk_pool_keeps_its_keys_and_pins_across_a_boot)
{
	struct pool_kv kv;
	uint64_t a;

	teardown(); /* the suite's pool is on tmpfs; this one is on disk */
	setup_in("/tmp");
	a = put("a", 0);
	change(sess, a, +1, 1, 1, true);
	pool_close(&p);
	test_pool_edit_sb(path, other_boot);
	open_pool();
	cr_assert_eq(pool_kv_lookup(p, "a", 1, &kv), 0);
	cr_assert_eq(pool_pin_held(p, sess, a), 1);
}
