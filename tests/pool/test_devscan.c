/*
 * test_devscan.c -- pool/devscan_*.c: the scan succeeds with or without
 * DAX hardware, and what it lists looks like DAX devices.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "devscan.h"

TestSuite(devscan);

Test(devscan, scan_succeeds_and_lists_dax_devices_or_skips)
{
	struct devscan_dev devs[16];
	size_t n = 99;

	cr_assert_eq(devscan_list(devs, 16, &n), 0);
	if (n == 0) {
		cr_skip_test("no DAX devices on this machine");
	}
	for (size_t i = 0; i < n && i < 16; i++) {
		cr_assert(strncmp(devs[i].path, "/dev/dax", 8) == 0, "%s",
		    devs[i].path);
		cr_assert_gt(devs[i].size, 0);
		cr_assert_gt(devs[i].align, 0);
	}
}

Test(devscan, a_zero_sized_buffer_still_counts)
{
	size_t n = 99;

	cr_assert_eq(devscan_list(NULL, 0, &n), 0);
	cr_assert_lt(n, 99);
}
