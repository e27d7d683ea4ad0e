/*
 * test_alloc.c -- pool/alloc.c: first fit, coalescing, NOSPACE, rebuild
 * by alloc_take, death on double free, and a differential test against a
 * bitmap model under thousands of random operations.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>

#include "alloc.h"
#include "cxlpool.h"

static struct alloc a;

static void
fini(void)
{
	alloc_fini(&a);
}

TestSuite(alloc, .fini = fini);

Test(alloc, reserve_is_first_fit_from_the_lowest_unit)
{
	uint64_t s0, s1, s2;

	cr_assert_eq(alloc_init(&a, 100), 0);
	cr_assert_eq(alloc_reserve(&a, 10, &s0), 0);
	cr_assert_eq(alloc_reserve(&a, 20, &s1), 0);
	cr_assert_eq(alloc_reserve(&a, 5, &s2), 0);
	cr_assert_eq(s0, 0);
	cr_assert_eq(s1, 10);
	cr_assert_eq(s2, 30);
	alloc_release(&a, s0, 10);
	cr_assert_eq(alloc_reserve(&a, 4, &s0), 0);
	cr_assert_eq(s0, 0, "the hole at 0 fits 4 units and comes first");
	cr_assert_eq(alloc_reserve(&a, 7, &s0), 0);
	cr_assert_eq(s0, 35, "the 6-unit hole at 4 is too small");
}

Test(alloc, release_coalesces_with_both_neighbours)
{
	uint64_t s[3];

	cr_assert_eq(alloc_init(&a, 30), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(alloc_reserve(&a, 10, &s[i]), 0);
	}
	alloc_release(&a, s[0], 10);
	alloc_release(&a, s[2], 10);
	cr_assert_eq(a.next, 2);
	alloc_release(&a, s[1], 10);
	cr_assert_eq(a.next, 1, "three extents merged into one");
	cr_assert_eq(alloc_largest(&a), 30);
	cr_assert_eq(alloc_check(&a, NULL, 0), 0);
}

Test(alloc, reserve_fails_with_nospace_when_no_extent_is_long_enough)
{
	uint64_t s0, s1;

	cr_assert_eq(alloc_init(&a, 10), 0);
	cr_assert_eq(alloc_reserve(&a, 4, &s0), 0);
	cr_assert_eq(alloc_reserve(&a, 2, &s1), 0);
	alloc_release(&a, s0, 4);
	cr_assert_eq(a.free_units, 8);
	cr_assert_eq(alloc_reserve(&a, 5, &s0), CXLP_E_NOSPACE,
	    "8 units free, but in pieces of 4 and 4");
	cr_assert_eq(alloc_reserve(&a, 11, &s0), CXLP_E_NOSPACE);
}

Test(alloc, take_marks_a_range_used_and_refuses_overlap)
{
	uint64_t s;

	cr_assert_eq(alloc_init(&a, 50), 0);
	cr_assert_eq(alloc_take(&a, 10, 5), 0);
	cr_assert_eq(alloc_take(&a, 12, 5), CXLP_E_CORRUPT);
	cr_assert_eq(alloc_take(&a, 48, 5), CXLP_E_CORRUPT, "past the end");
	cr_assert_eq(alloc_take(&a, 0, 10), 0);
	cr_assert_eq(alloc_reserve(&a, 1, &s), 0);
	cr_assert_eq(s, 15);
	cr_assert_eq(a.free_units, 34);
}

Test(alloc, double_free_aborts, .signal = SIGABRT)
{
	uint64_t s;

	alloc_init(&a, 10);
	alloc_reserve(&a, 3, &s);
	alloc_release(&a, s, 3);
	alloc_release(&a, s, 3);
}

Test(alloc, check_reports_a_broken_invariant)
{
	char why[128];

	cr_assert_eq(alloc_init(&a, 10), 0);
	a.free_units = 3;
	cr_assert_eq(alloc_check(&a, why, sizeof(why)), CXLP_E_CORRUPT);
}

/* the model: one byte per unit, 1 = used */
static bool
model_fits(const unsigned char *m, uint64_t n, uint64_t len, uint64_t *at)
{
	for (uint64_t s = 0; s + len <= n; s++) {
		uint64_t k = 0;

		while (k < len && !m[s + k]) {
			k++;
		}
		if (k == len) {
			*at = s;
			return true;
		}
		s += k;
	}
	return false;
}

Test(alloc, matches_a_bitmap_model_under_random_operations)
{
	enum { N = 257, OPS = 20000 };
	unsigned char model[N] = { 0 };
	uint64_t starts[N], lens[N], nlive = 0;

	srandom(42);
	cr_assert_eq(alloc_init(&a, N), 0);
	for (int op = 0; op < OPS; op++) {
		if (nlive > 0 && random() % 2) {
			uint64_t i = (uint64_t)random() % nlive;

			alloc_release(&a, starts[i], lens[i]);
			memset(model + starts[i], 0, lens[i]);
			starts[i] = starts[--nlive];
			lens[i] = lens[nlive];
		} else {
			uint64_t len = 1 + (uint64_t)random() % 12, s, ms;
			bool fits = model_fits(model, N, len, &ms);
			int rc = alloc_reserve(&a, len, &s);

			cr_assert_eq(rc == 0, fits, "op %d len %llu", op,
			    (unsigned long long)len);
			if (rc == 0) {
				cr_assert_eq(s, ms, "first fit differs");
				memset(model + s, 1, len);
				starts[nlive] = s;
				lens[nlive++] = len;
			}
		}
		uint64_t free_units = 0;

		for (int u = 0; u < N; u++) {
			free_units += !model[u];
		}
		cr_assert_eq(a.free_units, free_units);
		cr_assert_eq(alloc_check(&a, NULL, 0), 0);
	}
}
