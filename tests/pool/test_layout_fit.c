/*
 * test_layout_fit.c -- pool/layout.c's alignment math for pools on
 * existing media (layout_fit, layout_media_check), which devdax pools
 * depend on and which needs no device to test: the pool's align is at
 * least the media's, its size is the target's rounded down to align, and
 * a pool whose align is finer than its media's is refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "cxlpool.h"
#include "layout.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

TestSuite(layout_fit);

static void
fit(uint64_t target, uint64_t want, uint64_t media, uint64_t size,
    uint64_t align)
{
	uint64_t s = 0, a = 0;
	char why[200];

	cr_assert_eq(layout_fit(target, want, media, &s, &a, why,
	    sizeof(why)), 0, "%s", why);
	cr_assert_eq(a, align, "align %llu, want %llu", (unsigned long long)a,
	    (unsigned long long)align);
	cr_assert_eq(s, size, "size %llu, want %llu", (unsigned long long)s,
	    (unsigned long long)size);
}

Test(layout_fit, a_file_keeps_the_default_2mib_align)
{
	fit(1 * GiB, 0, 4 * KiB, 1 * GiB, 2 * MiB);
}

Test(layout_fit, a_device_with_2mib_alignment_keeps_2mib)
{
	fit(64 * GiB, 0, 2 * MiB, 64 * GiB, 2 * MiB);
}

Test(layout_fit, a_device_with_1gib_alignment_raises_align_to_1gib)
{
	fit(16 * GiB + 512 * MiB, 0, 1 * GiB, 16 * GiB, 1 * GiB);
}

Test(layout_fit, a_coarser_requested_align_wins_over_the_media)
{
	fit(1 * GiB, 8 * MiB, 2 * MiB, 1 * GiB, 8 * MiB);
	fit(1 * GiB, 4 * KiB, 2 * MiB, 1 * GiB, 2 * MiB);
}

Test(layout_fit, a_device_size_is_rounded_down_to_align)
{
	fit(3 * GiB + 3 * MiB + 4 * KiB, 0, 2 * MiB, 3 * GiB + 2 * MiB,
	    2 * MiB);
}

Test(layout_fit, alignments_that_are_not_powers_of_two_are_refused)
{
	uint64_t s, a;
	char why[200];

	cr_assert_eq(layout_fit(GiB, 3 * MiB, 2 * MiB, &s, &a, why,
	    sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "power of two") != NULL, "%s", why);
	cr_assert_eq(layout_fit(GiB, 0, 3 * MiB, &s, &a, why, sizeof(why)),
	    -EINVAL);
	cr_assert_eq(layout_fit(GiB, 0, 0, &s, &a, why, sizeof(why)),
	    -EINVAL);
}

Test(layout_fit, a_target_smaller_than_two_units_is_refused)
{
	uint64_t s, a;
	char why[200];

	cr_assert_eq(layout_fit(1 * GiB + 1, 0, 1 * GiB, &s, &a, why,
	    sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "fewer than two") != NULL, "%s", why);
}

Test(layout_fit, a_fitted_geometry_plans_a_valid_pool)
{
	struct pool_sb sb;
	uint64_t s, a;
	char why[200];

	cr_assert_eq(layout_fit(8 * GiB + 5 * MiB, 0, 1 * GiB, &s, &a, why,
	    sizeof(why)), 0);
	cr_assert_eq(layout_plan(&sb, s, a, 0, 0, why, sizeof(why)), 0, "%s",
	    why);
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, 8 * GiB + 5 * MiB, why,
	    sizeof(why)), 0, "%s", why);
	cr_assert_eq(sb.area[POOL_AREA_DATA].off % GiB, 0);
	cr_assert_eq(layout_media_check(&sb, 1 * GiB, why, sizeof(why)), 0);
}

Test(layout_fit, a_pool_finer_than_its_media_is_refused)
{
	struct pool_sb sb;
	char why[200];

	cr_assert_eq(layout_plan(&sb, 1 * GiB, 2 * MiB, 0, 0, why,
	    sizeof(why)), 0);
	cr_assert_eq(layout_media_check(&sb, 4 * KiB, why, sizeof(why)), 0);
	cr_assert_eq(layout_media_check(&sb, 2 * MiB, why, sizeof(why)), 0);
	cr_assert_eq(layout_media_check(&sb, 1 * GiB, why, sizeof(why)),
	    CXLP_E_CORRUPT);
	cr_assert(strstr(why, "reformat") != NULL, "%s", why);
}
