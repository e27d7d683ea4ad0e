/*
 * test_devscan.c -- pool/devscan*.c: the scan succeeds with or without
 * DAX hardware and what it lists looks like DAX media; and, on any
 * machine, the parts that need no device: picking a device by path or
 * device number (devscan_match), finding an fsdax mount in mountinfo text
 * (devscan_mountinfo), and devscan_find's refusal of a non-device.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "cxlpool.h"
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
		cr_assert(strncmp(devs[i].path, "/dev/dax", 8) == 0 ||
		    strncmp(devs[i].path, "/dev/pmem", 9) == 0, "%s",
		    devs[i].path);
		cr_assert_gt(devs[i].size, 0);
		cr_assert_gt(devs[i].align, 0);
		cr_assert_eq(devs[i].align & (devs[i].align - 1), 0);
	}
}

Test(devscan, a_zero_sized_buffer_still_counts)
{
	size_t n = 99;

	cr_assert_eq(devscan_list(NULL, 0, &n), 0);
	cr_assert_lt(n, 99);
}

static struct devscan_dev devs[3];

/* dax0.0 with an unknown devno, dax1.0 (252:1), fsdax pmem0 (259:0) */
static void
fill(void)
{
	static const char *const paths[] = { "/dev/dax0.0", "/dev/dax1.0",
	    "/dev/pmem0" };

	for (int i = 0; i < 3; i++) {
		snprintf(devs[i].path, sizeof(devs[i].path), "%s", paths[i]);
		devs[i].kind = i < 2 ? DEVSCAN_DEVDAX : DEVSCAN_FSDAX;
	}
	devs[1].devno = makedev(252, 1);
	devs[2].devno = makedev(259, 0);
}

Test(devscan, match_picks_by_path_by_bare_name_or_by_device_number)
{
	fill();
	cr_assert_eq(devscan_match(devs, 3, "/dev/dax1.0", 0), 1);
	cr_assert_eq(devscan_match(devs, 3, "dax0.0", 0), 0);
	cr_assert_eq(devscan_match(devs, 3, "/dev/dax/by-name/x",
	    makedev(252, 1)), 1, "a symlink is matched by device number");
	cr_assert_eq(devscan_match(devs, 3, "/mnt/pmem0/pool",
	    makedev(259, 0)), 2, "a file on fsdax finds its namespace");
}

Test(devscan, match_finds_nothing_for_other_paths_or_devno_zero)
{
	fill();
	cr_assert_eq(devscan_match(devs, 3, "/dev/dax9.9", 0), -1);
	cr_assert_eq(devscan_match(devs, 3, "/dev/shm/pool", 0), -1,
	    "devno 0 never matches the device whose devno is unknown");
	cr_assert_eq(devscan_match(devs, 0, "/dev/dax0.0", 0), -1);
}

static const char mountinfo[] =
    "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
    "30 1 259:1 / /mnt/slow rw,relatime - ext4 /dev/pmem1 rw\n"
    "31 1 259:0 / /mnt/pmem\\0400 rw,relatime shared:5 - xfs /dev/pmem0 "
    "rw,attr2,dax=always,noquota\n"
    "32 1 259:2 / /mnt/legacy rw,dax - ext4 /dev/pmem2 rw\n"
    "33 1 259:3 / /mnt/never rw - ext4 /dev/pmem3 rw,dax=never\n";

Test(devscan, mountinfo_finds_the_mount_of_an_fsdax_namespace)
{
	char mnt[64];
	bool dax;

	cr_assert_eq(devscan_mountinfo(mountinfo, makedev(259, 0), mnt,
	    sizeof(mnt), &dax), 1);
	cr_assert_str_eq(mnt, "/mnt/pmem 0", "octal escapes are undone");
	cr_assert(dax, "dax=always in the superblock options");
	cr_assert_eq(devscan_mountinfo(mountinfo, makedev(259, 2), mnt,
	    sizeof(mnt), &dax), 1);
	cr_assert_str_eq(mnt, "/mnt/legacy");
	cr_assert(dax, "legacy dax in the mount options");
}

Test(devscan, mountinfo_tells_a_mount_without_dax)
{
	char mnt[64];
	bool dax = true;

	cr_assert_eq(devscan_mountinfo(mountinfo, makedev(259, 1), mnt,
	    sizeof(mnt), &dax), 1);
	cr_assert_str_eq(mnt, "/mnt/slow");
	cr_assert_not(dax);
	cr_assert_eq(devscan_mountinfo(mountinfo, makedev(259, 3), mnt,
	    sizeof(mnt), &dax), 1);
	cr_assert_not(dax, "dax=never is not dax");
}

Test(devscan, mountinfo_without_the_device_or_malformed_finds_nothing)
{
	char mnt[64] = "junk";
	bool dax = true;

	cr_assert_eq(devscan_mountinfo(mountinfo, makedev(259, 7), mnt,
	    sizeof(mnt), &dax), 0);
	cr_assert_str_eq(mnt, "");
	cr_assert_not(dax);
	cr_assert_eq(devscan_mountinfo("1 2 garbage\n\n x y 259:0\n",
	    makedev(259, 0), mnt, sizeof(mnt), &dax), 0);
	cr_assert_eq(devscan_mountinfo("", makedev(259, 0), mnt, sizeof(mnt),
	    &dax), 0);
}

Test(devscan, find_refuses_a_path_that_is_no_dax_media)
{
	struct devscan_dev d;

	cr_assert_eq(devscan_find("/dev/null", &d), CXLP_E_NOTFOUND);
	cr_assert(strstr(cxlp_errormsg(), "/dev/null: not a DAX device") !=
	    NULL, "%s", cxlp_errormsg());
}

Test(devscan, kinds_have_names)
{
	cr_assert_str_eq(devscan_kind_name(DEVSCAN_DEVDAX), "devdax");
	cr_assert_str_eq(devscan_kind_name(DEVSCAN_FSDAX), "fsdax");
	cr_assert_str_eq(devscan_kind_name(77), "unknown");
}
