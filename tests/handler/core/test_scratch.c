/*
 * test_scratch.c -- tests of handler/core/scratch.c, the memory a batch call
 * reuses instead of cycling it through malloc: zeroed, aligned, disjoint
 * arrays; one block after a call that overflowed it; the keep limits;
 * an empty body on every get; and threads that never share a scratch.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "scratch.h"

static struct scratch_cache c;

static void
setup(void)
{
	scratch_cache_init(&c);
}

static void
teardown(void)
{
	scratch_cache_fini(&c);
}

TestSuite(scratch, .init = setup, .fini = teardown);

static bool
all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != 0) {
			return false;
		}
	}
	return true;
}

Test(scratch, arrays_are_zeroed_aligned_and_disjoint_even_when_reused)
{
	for (int round = 0; round < 3; round++) {
		struct scratch *s = scratch_get(&c);
		uint8_t *a, *b, *d;

		cr_assert_not_null(s);
		a = scratch_array(s, 1000, 24);
		b = scratch_array(s, 3, 7);
		d = scratch_array(s, 5000, 8);
		cr_assert(a != NULL && b != NULL && d != NULL);
		cr_assert_eq((uintptr_t)a % 16, 0);
		cr_assert_eq((uintptr_t)b % 16, 0);
		cr_assert_eq((uintptr_t)d % 16, 0);
		cr_assert(all_zero(a, 24000) && all_zero(b, 21) &&
		    all_zero(d, 40000), "round %d: not zeroed", round);
		/* fill each with its own byte; none may overwrite another */
		memset(a, 0xa1, 24000);
		memset(b, 0xb2, 21);
		memset(d, 0xd3, 40000);
		cr_assert(a[23999] == 0xa1 && b[0] == 0xb2 && b[20] == 0xb2 &&
		    d[0] == 0xd3, "round %d: arrays overlap", round);
		scratch_put(&c, s);
	}
}

Test(scratch, a_call_that_overflowed_the_block_carves_from_one_block_next_time)
{
	struct scratch *s = scratch_get(&c);
	uint8_t *a, *b;

	/* first call: the scratch is new, so these come from extra blocks */
	a = scratch_array(s, 4096, 32);
	b = scratch_array(s, 4096, 32);
	cr_assert(a != NULL && b != NULL);
	scratch_put(&c, s);
	cr_assert_eq(c.nidle, 1);

	/* the same scratch (LIFO) now has one block of the size used: the
	 * second array starts right where the first ends */
	s = scratch_get(&c);
	a = scratch_array(s, 4096, 32);
	b = scratch_array(s, 4096, 32);
	cr_assert(a != NULL && b != NULL);
	cr_assert_eq(b, a + 4096 * 32, "arrays not carved from one block");
	/* more than that still works, from an extra block */
	cr_assert_not_null(scratch_array(s, 100, 8));
	scratch_put(&c, s);
}

Test(scratch, the_body_is_empty_after_every_get)
{
	struct scratch *s = scratch_get(&c);

	pbuf_put_u64(scratch_body(s), 42);
	cr_assert_eq(scratch_body(s)->len, 8);
	scratch_put(&c, s);
	s = scratch_get(&c);
	cr_assert_eq(scratch_body(s)->len, 0);
	cr_assert_eq(scratch_body(s)->err, 0);
	scratch_put(&c, s);
}

Test(scratch, the_cache_keeps_at_most_its_limit_and_frees_the_rest)
{
	struct scratch *s[SCRATCH_CACHED + 4];

	for (int i = 0; i < SCRATCH_CACHED + 4; i++) {
		s[i] = scratch_get(&c);
		cr_assert_not_null(s[i]);
		cr_assert_not_null(scratch_array(s[i], 16, 16));
		for (int j = 0; j < i; j++) {
			cr_assert_neq(s[i], s[j], "scratch handed out twice");
		}
	}
	cr_assert_eq(c.nidle, 0);
	for (int i = 0; i < SCRATCH_CACHED + 4; i++) {
		scratch_put(&c, s[i]);
	}
	/* the rest were freed: the leak check of the ASan run sees them */
	cr_assert_eq(c.nidle, SCRATCH_CACHED);
}

Test(scratch, a_scratch_grown_past_the_keep_limit_is_freed_not_kept)
{
	struct scratch *s = scratch_get(&c);

	cr_assert_not_null(scratch_array(s, SCRATCH_KEEP_MAX / 8 + 1, 8));
	scratch_put(&c, s);
	cr_assert_eq(c.nidle, 0, "a %u-byte scratch was kept",
	    SCRATCH_KEEP_MAX);

	s = scratch_get(&c);
	pbuf_put_bytes(scratch_body(s), NULL, 0);
	for (size_t i = 0; i <= SCRATCH_KEEP_MAX / 8; i++) {
		pbuf_put_u64(scratch_body(s), i);
	}
	scratch_put(&c, s);
	cr_assert_eq(c.nidle, 0, "a scratch with a huge body was kept");
}

Test(scratch, put_of_null_does_nothing)
{
	scratch_put(&c, NULL);
	cr_assert_eq(c.nidle, 0);
}

#define THREADS 8
#define ROUNDS 2000

/* Each thread stamps its arrays with its own byte and checks them after
 * yielding: a scratch shared between two threads shows a foreign byte. */
static void *
stamp_main(void *arg)
{
	uint8_t me = (uint8_t)(uintptr_t)arg;

	for (int r = 0; r < ROUNDS; r++) {
		struct scratch *s = scratch_get(&c);
		size_t n = 64 + (size_t)(r % 7) * 300;
		uint8_t *a = s != NULL ? scratch_array(s, n, 8) : NULL;

		if (a == NULL || !all_zero(a, n * 8)) {
			return (void *)1;
		}
		memset(a, me, n * 8);
		sched_yield();
		for (size_t i = 0; i < n * 8; i++) {
			if (a[i] != me) {
				return (void *)2;
			}
		}
		scratch_put(&c, s);
	}
	return NULL;
}

Test(scratch, threads_never_share_a_scratch)
{
	pthread_t t[THREADS];

	for (uintptr_t i = 0; i < THREADS; i++) {
		cr_assert_eq(pthread_create(&t[i], NULL, stamp_main,
		    (void *)(i + 1)), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		void *rv;

		pthread_join(t[i], &rv);
		cr_assert_null(rv, "thread %d: %s", i, rv == (void *)1 ?
		    "array not zeroed or no memory" : "array overwritten");
	}
	cr_assert_leq(c.nidle, SCRATCH_CACHED);
}
