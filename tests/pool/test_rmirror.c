/*
 * test_rmirror.c -- pool/rmirror.c: the region table's copy. New pools
 * carry it (POOL_INCOMPAT_RMIRROR); every change of a record reaches the
 * copy; a copy one step behind (a crash between the two) is brought in
 * step silently, a damaged record is restored from the other copy with
 * nothing lost, and a pool formatted before the copy (no feature bit)
 * still opens, without one.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cxlpool.h"
#include "err.h"
#include "pool_int.h"
#include "pool_test.h"

static char path[256];
static struct pool *p;
static struct pool_region r1, r2;
static uint64_t sid;

static void
setup(void)
{
	struct pool_params pp = { .size = TEST_POOL_SIZE };
	struct pool_session s = { .pid = 1 };
	struct pool_kv kv;
	bool ins;

	test_pool_path(path, sizeof(path), "/dev/shm");
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0);
	cr_assert_eq(pool_session_add(p, &s), 0);
	sid = s.id;
	cr_assert_eq(pool_region_alloc(p, sid, 2u << 20, 4096, &r1), 0);
	cr_assert_eq(pool_region_alloc(p, sid, 2u << 20, 4096, &r2), 0);
	cr_assert_eq(pool_kv_insert(p, sid, "one", 3, r1.id, r1.off, 10, &kv,
	    &ins), 0);
}

static void
teardown(void)
{
	pool_close(&p);
	unlink(path);
}

TestSuite(rmirror, .init = setup, .fini = teardown);

static void
reopen(unsigned flags, struct pool_damage *d)
{
	pool_close(&p);
	cr_assert_eq(pool_open_report(&p, path, flags, NULL, d), 0, "%s",
	    cxlp_errormsg());
}

Test(rmirror, a_new_pool_keeps_every_record_twice)
{
	cr_assert(p->sb->incompat & POOL_INCOMPAT_RMIRROR);
	cr_assert_not_null(p->rmir);
	cr_assert_eq(memcmp(p->rprim, p->rmir, p->nregions *
	    sizeof(*p->rmir)), 0);
	cr_assert_eq(pool_region_disown(p, r1.id), 0);  /* to ORPHAN */
	cr_assert_eq(pool_region_disown(p, r2.id), 0);  /* to FREE */
	cr_assert_eq(memcmp(p->rprim, p->rmir, p->nregions *
	    sizeof(*p->rmir)), 0);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(rmirror, a_copy_a_crash_left_behind_is_brought_in_step_silently)
{
	struct pool_damage d;

	/* killed between the primary's publish and the copy's */
	p->rmir[r2.id].word = rrec_word(POOL_REGION_FREE,
	    rrec_gen(p->rmir[r2.id].word) - 1);
	reopen(POOL_NODROP, &d);
	cr_assert_eq(d.torn, 1);
	cr_assert_eq(d.restored + d.nrec, 0);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(rmirror, a_damaged_primary_is_restored_with_its_keys)
{
	struct pool_damage d;
	struct pool_kv kv;

	p->rtab[r1.id].off ^= 1ull << 30;
	reopen(POOL_NODROP, &d);
	cr_assert_eq(d.restored, 1);
	cr_assert_eq(d.nrec + d.keys, 0);
	cr_assert_eq(pool_kv_lookup(p, "one", 3, &kv), 0);
	cr_assert_eq(kv.off, r1.off);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

static void
without_rmirror(struct pool_sb *sb)
{
	sb->incompat &= ~POOL_INCOMPAT_RMIRROR;
	layout_seal(sb);
}

Test(rmirror, a_pool_without_the_copy_opens_and_refuses_its_damage)
{
	struct pool_damage d;
	struct pool_kv kv;

	pool_close(&p);
	/* as a pool formatted before the copy */
	test_pool_edit_sb(path, without_rmirror);
	reopen(0, NULL);
	cr_assert_null(p->rmir);
	cr_assert_eq(pool_kv_lookup(p, "one", 3, &kv), 0);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	p->rtab[r1.id].off ^= 1ull << 30; /* no copy to undo it */
	pool_close(&p);
	cr_assert_eq(pool_open_report(&p, path, POOL_NODROP, NULL, &d),
	    CXLP_E_CORRUPT);
	cr_assert_null(p);
	cr_assert_eq(d.nrec, 1);
	cr_assert_eq(d.rec[0].kind, POOL_DAMAGE_REGION);
	cr_assert_eq(d.keys, 1);
	cr_assert(strstr(cxlp_errormsg(), "region 0 record: checksum "
	    "mismatch (1 keys") != NULL, "%s", cxlp_errormsg());
	reopen(0, &d);
	cr_assert(d.dropped);
	cr_assert_eq(pool_kv_lookup(p, "one", 3, &kv), CXLP_E_NOTFOUND);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}
