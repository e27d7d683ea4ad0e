/*
 * test_check.c -- pool/check.c: a clean pool reports nothing; each kind
 * of damage, made on media and seen through a read-only open (which does
 * not repair), is reported.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "cxlpool.h"
#include "pool_int.h"
#include "pool_test.h"

static char path[256];
static struct pool *p;
static struct pool_region r1, r2;
static uint64_t sid;
static char seen[4096];

static void
collect(void *arg, const char *problem)
{
	(void)arg;
	strncat(seen, problem, sizeof(seen) - strlen(seen) - 2);
	strcat(seen, "\n");
}

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
	cr_assert_eq(pool_region_alloc(p, sid, 4u << 20, 8192, &r2), 0);
	cr_assert_eq(pool_kv_insert(p, sid, "one", 3, r1.id, r1.off, 10, &kv,
	    &ins), 0);
	cr_assert_eq(pool_kv_insert(p, sid, "two", 3, r2.id, r2.off + 8192,
	    20, &kv, &ins), 0);
	seen[0] = '\0';
}

static void
teardown(void)
{
	pool_close(&p);
	unlink(path);
}

TestSuite(check, .init = setup, .fini = teardown);

/* reopen read-only and check; returns the problem count */
static int
check_rdonly(void)
{
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	return pool_check(p, collect, NULL);
}

Test(check, a_clean_pool_reports_nothing)
{
	cr_assert_eq(pool_check(p, collect, NULL), 0, "%s", seen);
	cr_assert_eq(check_rdonly(), 0, "%s", seen);
}

Test(check, a_region_record_with_a_bad_checksum_is_reported)
{
	p->rtab[r1.id].page_size = 2048;
	p->rmir[r1.id].page_size = 2048; /* its copy too (rmirror.c) */
	cr_assert_geq(check_rdonly(), 1);
	cr_assert(strstr(seen, "checksum") != NULL, "%s", seen);
	cr_assert(strstr(seen, "not live") != NULL,
	    "its key now points nowhere: %s", seen);
}

Test(check, overlapping_regions_are_reported)
{
	struct pool_rrec *r = &p->rtab[r2.id];

	r->off = r1.off;
	r->checksum = layout_rrec_checksum(r);
	cr_assert_geq(check_rdonly(), 1);
	cr_assert(strstr(seen, "overlaps") != NULL, "%s", seen);
}

Test(check, a_damaged_index_slot_is_reported)
{
	struct pool_kv kv;

	cr_assert_eq(pool_kv_lookup(p, "two", 3, &kv), 0);
	p->kv.slots[kv.slot].len ^= 4;
	cr_assert_geq(check_rdonly(), 1);
	cr_assert(strstr(seen, "checksum or key record") != NULL, "%s", seen);
}

Test(check, a_slot_caught_mid_write_is_reported)
{
	struct pool_kv kv;
	uint64_t *w;

	cr_assert_eq(pool_kv_lookup(p, "one", 3, &kv), 0);
	w = &p->kv.slots[kv.slot].word;
	*w = kv_word(kv_seq(*w) + 1, KV_TOMB, 0);
	cr_assert_geq(check_rdonly(), 1);
	cr_assert(strstr(seen, "mid-write") != NULL, "%s", seen);
}

Test(check, a_key_into_a_freed_region_is_reported)
{
	struct pool_rrec *r = &p->rtab[r2.id];

	r->word = rrec_word(POOL_REGION_FREE, rrec_gen(r->word));
	cr_assert_geq(check_rdonly(), 1);
	cr_assert(strstr(seen, "not live") != NULL, "%s", seen);
}

Test(check, two_keys_on_one_page_are_reported)
{
	struct pool_kv kv;
	struct kv_slot *s;
	uint64_t i;

	cr_assert_eq(pool_kv_lookup(p, "two", 3, &kv), 0);
	i = kv.slot;
	s = &p->kv.slots[i];
	s->region = r1.id;
	s->gen = r1.gen;
	s->page = 0;
	s->word = kv_word(kv_seq(s->word), KV_LIVE, layout_slot_checksum(s, i));
	cr_assert_geq(check_rdonly(), 1);
	cr_assert(strstr(seen, "two keys") != NULL, "%s", seen);
}

Test(check, a_damaged_region_record_with_an_intact_copy_keeps_its_keys)
{
	struct pool_kv kv;

	p->rtab[r1.id].page_size = 2048;
	cr_assert_eq(check_rdonly(), 1, "%s", seen);
	cr_assert(strstr(seen, "region 0: checksum mismatch (its copy is "
	    "intact") != NULL, "%s", seen);
	cr_assert_eq(pool_kv_lookup(p, "one", 3, &kv), 0, "read-only opens "
	    "read the copy");
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, POOL_NODROP, NULL), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_check(p, collect, NULL), 0, "%s", seen);
	cr_assert_eq(p->rtab[r1.id].page_size, 4096, "restored on media");
	cr_assert_eq(pool_kv_lookup(p, "one", 3, &kv), 0);
}

Test(check, a_damaged_region_copy_is_reported_and_rewritten)
{
	p->rmir[r2.id].len ^= 1ull << 21;
	cr_assert_eq(check_rdonly(), 1, "%s", seen);
	cr_assert(strstr(seen, "region 1 copy: checksum mismatch") != NULL,
	    "%s", seen);
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, POOL_NODROP, NULL), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_check(p, collect, NULL), 0, "%s", seen);
}

Test(check, a_region_copy_out_of_step_on_a_writable_pool_is_reported)
{
	p->rmir[r2.id].word = rrec_word(POOL_REGION_ORPHAN,
	    rrec_gen(p->rmir[r2.id].word));
	cr_assert_eq(pool_check(p, collect, NULL), 1, "%s", seen);
	cr_assert(strstr(seen, "region 1: its copy differs") != NULL, "%s",
	    seen);
}

Test(check, a_damaged_session_record_is_reported)
{
	for (uint32_t i = 0; i < p->nsess; i++) {
		if (p->stab[i].id == sid) {
			p->stab[i].pid = 99;
		}
	}
	cr_assert_geq(check_rdonly(), 1);
	cr_assert(strstr(seen, "session") != NULL, "%s", seen);
}

Test(check, a_damaged_superblock_is_reported_on_an_open_pool)
{
	p->sb->compat ^= 1;
	cr_assert_geq(pool_check(p, collect, NULL), 1);
	cr_assert(strstr(seen, "superblock") != NULL, "%s", seen);
	p->sb->compat ^= 1;
}

Test(check, damaged_records_are_repaired_by_a_writable_open)
{
	struct pool_kv kv;

	cr_assert_eq(pool_kv_lookup(p, "two", 3, &kv), 0);
	p->kv.slots[kv.slot].len ^= 4;
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0);
	cr_assert_eq(pool_check(p, collect, NULL), 0, "%s", seen);
	cr_assert_eq(pool_kv_lookup(p, "two", 3, &kv), CXLP_E_NOTFOUND);
	cr_assert_eq(pool_kv_lookup(p, "one", 3, &kv), 0);
}
