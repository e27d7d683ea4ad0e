/*
 * test_devscan_hw.c -- suite 'hw': real DAX devices. Every test skips
 * with a message on a machine without one. Read-only tests use the first
 * device devscan finds (or every one); the test that formats a device
 * does so only when CXLP_HW_DEVICE names one it may wipe (e.g.
 * CXLP_HW_DEVICE=/dev/dax0.0), never by itself.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "cxlpool.h"
#include "devscan.h"
#include "map.h"
#include "pool.h"

TestSuite(devscan_hw);

/* the first devdax device, or skip */
static struct devscan_dev
first_devdax(void)
{
	struct devscan_dev devs[DEVSCAN_MAX];
	size_t n;

	cr_assert_eq(devscan_list(devs, DEVSCAN_MAX, &n), 0);
	for (size_t i = 0; i < n && i < DEVSCAN_MAX; i++) {
		if (devs[i].kind == DEVSCAN_DEVDAX) {
			return devs[i];
		}
	}
	cr_skip_test("no device DAX (/dev/daxX.Y) on this machine");
	return devs[0];
}

Test(devscan_hw, first_dax_device_maps_read_only_with_its_size)
{
	struct devscan_dev dev = first_devdax();
	struct pmap *m;

	cr_assert_eq(pmap_open(&m, dev.path, 0, 0, false), 0, "%s: %s",
	    dev.path, cxlp_errormsg());
	cr_assert(pmap_is_devdax(m));
	cr_assert(pmap_is_volatile(m));
	cr_assert_eq(pmap_file_size(m), dev.size);
	pmap_close(&m);
}

Test(devscan_hw, a_device_maps_at_its_alignment_and_finer_than_pages)
{
	struct devscan_dev dev = first_devdax();
	struct pmap *m;

	cr_assert_eq(pmap_open(&m, dev.path, 0, 0, false), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pmap_alignment(m), dev.align, "pmem2 and daxctl agree");
	cr_assert_neq(pmap_granularity(m), PMAP_GRAN_PAGE,
	    "device DAX is mapped at cache-line or byte granularity, got %s",
	    pmap_gran_name(pmap_granularity(m)));
	pmap_close(&m);
	if (dev.align > 4096) {
		cr_assert_neq(pmap_open(&m, dev.path, 4096, dev.align, false),
		    0, "an offset off the device alignment is refused");
		cr_assert_null(m);
	}
}

Test(devscan_hw, a_device_is_found_by_its_path_and_bare_name)
{
	struct devscan_dev dev = first_devdax(), d;

	cr_assert_eq(devscan_find(dev.path, &d), 0, "%s", cxlp_errormsg());
	cr_assert_str_eq(d.path, dev.path);
	cr_assert_eq(devscan_find(strrchr(dev.path, '/') + 1, &d), 0);
	cr_assert_str_eq(d.path, dev.path);
}

/* The sysfs topology, read without the libraries: a device an NVDIMM
 * bus serves has an "ndbusN" directory among its ancestors. */
static bool
under_nvdimm_bus(uint64_t devno)
{
	char link[64], real[PATH_MAX];

	snprintf(link, sizeof(link), "/sys/dev/char/%u:%u",
	    major((dev_t)devno), minor((dev_t)devno));
	cr_assert_not_null(realpath(link, real), "%s", link);
	return strstr(real, "/ndbus") != NULL;
}

Test(devscan_hw, device_dax_is_persistent_exactly_when_an_nvdimm_serves_it)
{
	struct devscan_dev devs[DEVSCAN_MAX];
	size_t n, seen = 0;

	cr_assert_eq(devscan_list(devs, DEVSCAN_MAX, &n), 0);
	for (size_t i = 0; i < n && i < DEVSCAN_MAX; i++) {
		if (devs[i].kind == DEVSCAN_FSDAX) {
			cr_assert(devs[i].persistent, "%s", devs[i].path);
			continue;
		}
		cr_assert_neq(devs[i].devno, 0, "%s", devs[i].path);
		cr_assert_eq(devs[i].persistent,
		    under_nvdimm_bus(devs[i].devno), "%s: libndctl says %s",
		    devs[i].path, devs[i].persistent ? "persistent" :
		    "volatile");
		seen++;
	}
	if (seen == 0) {
		cr_skip_test("no device DAX (/dev/daxX.Y) on this machine");
	}
}

Test(devscan_hw, a_named_device_is_formatted_and_reopened_as_a_pool)
{
	const char *path = getenv("CXLP_HW_DEVICE");
	struct pool_params pp = { 0 };
	struct pool_media m;
	struct devscan_dev d;
	struct pool *p;

	if (path == NULL) {
		cr_skip_test("set CXLP_HW_DEVICE=/dev/daxX.Y to let this test "
		    "wipe that device");
	}
	cr_assert_eq(devscan_find(path, &d), 0, "%s", cxlp_errormsg());
	cr_assert_eq(pool_open(&p, path, POOL_REFORMAT, &pp), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_align(p) % d.align, 0);
	cr_assert_leq(pool_size(p), d.size);
	cr_assert_gt(pool_size(p) + pool_align(p), d.size);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	pool_media(p, &m);
	cr_assert_eq(m.is_volatile, !d.persistent, "%s is %s media", path,
	    d.persistent ? "persistent" : "volatile");
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, NULL), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
	pool_close(&p);
}
