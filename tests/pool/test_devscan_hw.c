/*
 * test_devscan_hw.c -- suite 'hw': map the first DAX device found
 * read-only through pool/map.c. Skips without hardware.
 */
#include <criterion/criterion.h>

#include "cxlpool.h"
#include "devscan.h"
#include "map.h"

TestSuite(devscan_hw);

Test(devscan_hw, first_dax_device_maps_read_only_with_its_size)
{
	struct devscan_dev dev;
	struct pmap *m;
	size_t n;

	cr_assert_eq(devscan_list(&dev, 1, &n), 0);
	if (n == 0) {
		cr_skip_test("no DAX devices on this machine");
	}
	cr_assert_eq(pmap_open(&m, dev.path, 0, 0, false), 0, "%s: %s",
	    dev.path, cxlp_errormsg());
	cr_assert(pmap_is_devdax(m));
	cr_assert(pmap_is_volatile(m));
	cr_assert_eq(pmap_file_size(m), dev.size);
	pmap_close(&m);
}
