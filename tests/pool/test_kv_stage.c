/*
 * test_kv_stage.c -- pool/kv.c pool_kv_stage: a key staged twice in one
 * commit (a request group naming it twice) is answered with the first
 * staging's entry, not with whatever was staged in between.
 */
#include <criterion/criterion.h>
#include <unistd.h>

#include "err.h"
#include "pool.h"
#include "pool_test.h"

Test(kv_stage, same_key_twice_answers_the_first)
{
	char path[256];
	uint64_t sess, slots[2];
	struct pool_region reg;
	struct pool_kv k1, x, k2, got;
	struct pool *p;
	bool ins;

	p = test_pool_keys(path, sizeof(path), &sess, &reg, slots, 0);
	pool_commit_begin(p);
	cr_assert_eq(pool_kv_stage(p, sess, "k", 1, reg.id, reg.off, 10,
	    &k1, &ins), 0, "%s", cxlp_errormsg());
	cr_assert(ins);
	cr_assert_eq(pool_kv_stage(p, sess, "x", 1, reg.id,
	    reg.off + 32768, 20, &x, &ins), 0, "%s", cxlp_errormsg());
	cr_assert(ins);
	cr_assert_eq(pool_kv_stage(p, sess, "k", 1, reg.id,
	    reg.off + 2 * 32768, 30, &k2, &ins), 0, "%s", cxlp_errormsg());
	cr_assert_not(ins);
	cr_assert_eq(k2.slot, k1.slot);
	cr_assert_eq(k2.region, k1.region);
	cr_assert_eq(k2.gen, k1.gen);
	cr_assert_eq(k2.off, k1.off, "off %llu, want %llu (x's: %llu)",
	    (unsigned long long)k2.off, (unsigned long long)k1.off,
	    (unsigned long long)x.off);
	cr_assert_eq(k2.len, 10);
	slots[0] = k1.slot;
	slots[1] = x.slot;
	pool_commit_publish(p, slots, 2);
	pool_commit_end(p);
	cr_assert_eq(pool_kv_lookup(p, "k", 1, &got), 0);
	cr_assert_eq(got.off, reg.off);
	cr_assert_eq(got.len, 10);
	pool_close(&p);
	unlink(path);
}
