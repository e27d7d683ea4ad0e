/*
 * test_inspect_check.c -- pool-inspect check (tools/pool-inspect) on a
 * clean pool and on pools damaged in each of several ways through pool/'s
 * private structs: each problem named, exit 1, in text and JSON.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "inspect_fixture.h"
#include "pool_int.h"
#include "pool_test.h"

TestSuite(inspect, .init = inspect_setup, .fini = inspect_teardown);

Test(inspect, check_exits_zero_on_a_clean_pool)
{
	make_pool(2);
	cr_assert_eq(run("check %s", path), 0, "%s", out);
	has(": 0 problems\n");
	cr_assert_eq(run_json("check %s", path), 0, "%s", out);
	has("\"problems_list\": [], \"problems\": 0, \"ok\": true");
}

/* ---- check on damaged pools -------------------------------------------- */

static void
slot_of(struct pool *p, const char *key, struct kv_slot **s, uint64_t *i)
{
	struct pool_kv kv;

	cr_assert_eq(pool_kv_lookup(p, key, strlen(key), &kv), 0);
	*i = kv.slot;
	*s = &p->kv.slots[kv.slot];
}

static void
bad_region_checksum(struct pool *p)
{
	p->rtab[r2.id].page_size = 2048;
}

static void
overlapping_regions(struct pool *p)
{
	struct pool_rrec *r = &p->rtab[r2.id];

	r->off = r1.off;
	r->checksum = layout_rrec_checksum(r);
}

static void
flipped_index_slot(struct pool *p)
{
	struct kv_slot *s;
	uint64_t i;

	slot_of(p, "other", &s, &i);
	s->len ^= 4;
}

static void
slot_mid_write(struct pool *p)
{
	struct kv_slot *s;
	uint64_t i;

	slot_of(p, "model@0@0", &s, &i);
	s->word = kv_word(kv_seq(s->word) + 1, KV_TOMB, 0);
}

static void
key_into_freed_region(struct pool *p)
{
	struct pool_rrec *r = &p->rtab[r2.id];

	r->word = rrec_word(POOL_REGION_FREE, rrec_gen(r->word));
}

static void
two_keys_on_one_page(struct pool *p)
{
	struct kv_slot *s;
	uint64_t i;

	slot_of(p, "other", &s, &i);
	s->region = r1.id;
	s->gen = r1.gen;
	s->page = 0;
	s->len = 100;
	s->word = kv_word(kv_seq(s->word), KV_LIVE, layout_slot_checksum(s, i));
}

static void
bad_session_record(struct pool *p)
{
	for (uint32_t i = 0; i < p->nsess; i++) {
		if (p->stab[i].id == sid) {
			p->stab[i].pid = 99;
		}
	}
}

static void
orphan_without_keys(struct pool *p)
{
	struct pool_region r3;
	struct pool_rrec *r;

	cr_assert_eq(pool_region_alloc(p, sid, 2u << 20, 4096, &r3), 0);
	r = &p->rtab[r3.id];
	r->word = rrec_word(POOL_REGION_ORPHAN, rrec_gen(r->word));
}

static void
flipped_superblock(struct pool *p)
{
	((uint8_t *)p->sb)[60] ^= 1;
}

/* make a pool, damage it through a writable open (closing does not
 * repair), then check must exit 1 and name the damage, in text and JSON */
static void
damaged(void (*damage)(struct pool *p), const char *named)
{
	struct pool *p;

	make_pool(2);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0);
	damage(p);
	pool_close(&p);
	cr_assert_eq(run("check %s", path), 1, "%s", out);
	has(named);
	cr_assert(strstr(out, "problem: ") != NULL, "%s", out);
	cr_assert_eq(run_json("check %s", path), 1, "%s", out);
	has(named);
	has("\"ok\": false");
}

Test(inspect, check_names_a_region_record_with_a_bad_checksum)
{
	damaged(bad_region_checksum, "region 1: checksum mismatch");
}

Test(inspect, check_names_overlapping_regions)
{
	damaged(overlapping_regions, "overlaps region");
}

Test(inspect, check_names_a_damaged_index_slot)
{
	damaged(flipped_index_slot, "bad state, checksum or key record");
}

Test(inspect, check_names_a_slot_caught_mid_write)
{
	damaged(slot_mid_write, "mid-write");
}

Test(inspect, check_names_a_key_pointing_into_a_freed_region)
{
	damaged(key_into_freed_region, "region 1 is not live");
}

Test(inspect, check_names_a_page_owned_by_two_keys)
{
	damaged(two_keys_on_one_page, "page 0 holds two keys");
}

Test(inspect, check_names_a_damaged_session_record)
{
	damaged(bad_session_record, "session record");
}

Test(inspect, check_names_an_orphan_region_that_should_have_been_freed)
{
	damaged(orphan_without_keys, "ORPHAN with no keys");
}

Test(inspect, check_names_a_torn_superblock)
{
	damaged(flipped_superblock, "superblock checksum mismatch");
}

Test(inspect, check_names_a_truncated_pool)
{
	make_pool(1);
	cr_assert_eq(truncate(path, TEST_POOL_SIZE / 2), 0);
	cr_assert_eq(run("check %s", path), 1, "%s", out);
	has("truncated");
	has("1 problem\n");
}

Test(inspect, check_names_each_of_several_problems)
{
	struct pool *p;

	make_pool(2);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0);
	bad_session_record(p);
	slot_mid_write(p);
	orphan_without_keys(p);
	pool_close(&p);
	cr_assert_eq(run("check %s", path), 1, "%s", out);
	has("session record");
	has("mid-write");
	has("ORPHAN with no keys");
	cr_assert_eq(run_json("check %s", path), 1, "%s", out);
	cr_assert_null(strstr(out, "\"problems\": 0,"), "%s", out);
}
