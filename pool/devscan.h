/*
 * devscan.h -- find the DAX media a pool could live on: device DAX
 * character devices (/dev/daxX.Y, through libdaxctl) and fsdax
 * namespaces (/dev/pmemN block devices, through libndctl, with the mount
 * point that serves them with -o dax, from /proc/self/mountinfo).
 * devscan_daxctl.c asks the libraries; devscan_none.c (builds without
 * them) finds nothing; devscan.c holds the parts that need neither
 * (matching a path to a device, parsing mountinfo) so tests run them on
 * any machine. Meson picks one of the first two.
 */
#ifndef CXLP_POOL_DEVSCAN_H
#define CXLP_POOL_DEVSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum devscan_kind {
	DEVSCAN_DEVDAX = 0, /* /dev/daxX.Y: the pool is the device */
	DEVSCAN_FSDAX = 1,  /* /dev/pmemN: pool files on its dax mount */
};

struct devscan_dev {
	char path[64];    /* "/dev/dax0.0", "/dev/pmem0" */
	uint64_t size;    /* bytes */
	uint64_t align;   /* bytes: mapping offset/length granule (devdax:
	                   * the device alignment; fsdax files: 4096) */
	uint32_t kind;    /* enum devscan_kind */
	int32_t numa_node; /* target NUMA node of the memory, -1 unknown */
	uint64_t devno;   /* device number (makedev(major, minor)), 0 unknown */
	char mount[256];  /* fsdax: where it is mounted ("" if nowhere) */
	bool mount_dax;   /* fsdax: that mount has the dax option */
	bool persistent;  /* keeps its contents across a reboot: served by
	                   * an NVDIMM (pmem) region, as every fsdax
	                   * namespace and a pmem namespace in devdax mode
	                   * are; false for device DAX over memory that does
	                   * not (CXL RAM, soft-reserved "hmem" ranges) */
};

#define DEVSCAN_MAX 64 /* devices devscan_find looks through */

/* devscan_list -- fill out[0..max) with the enabled DAX devices and active
 * fsdax namespaces found and set *found to how many exist (may exceed
 * max). Returns 0 (none found is not an error) or a negative error if the
 * scan itself failed. */
int devscan_list(struct devscan_dev *out, size_t max, size_t *found);

/* devscan_find -- the device that path names ("/dev/dax0.0", "dax0.0", a
 * symlink to one) or, for a file on an fsdax mount, the namespace under
 * it. Returns 0 and *out, CXLP_E_NOTFOUND (message lists what exists), or
 * a scan error. */
int devscan_find(const char *path, struct devscan_dev *out);

/* devscan_match -- pure: the index in devs[0..n) of the device path names
 * (same path, or the bare name "dax0.0" of "/dev/dax0.0") or whose devno
 * is devno (devno 0 matches nothing). -1 if none. */
long devscan_match(const struct devscan_dev *devs, size_t n,
    const char *path, uint64_t devno);

/* devscan_mountinfo -- pure: in text (the contents of
 * /proc/self/mountinfo), the first mount of device devno; copies its
 * unescaped mount point to mnt[0..n) and sets *dax when the mount or
 * superblock options say dax or dax=always. Returns 1 found, 0 not. */
int devscan_mountinfo(const char *text, uint64_t devno, char *mnt, size_t n,
    bool *dax);

/* devscan_mount_lookup -- fill d->mount and d->mount_dax from this
 * process's /proc/self/mountinfo (left empty if unreadable). */
void devscan_mount_lookup(struct devscan_dev *d);

/* devscan_kind_name -- "devdax", "fsdax" ("unknown" otherwise). */
const char *devscan_kind_name(uint32_t kind);

#endif /* CXLP_POOL_DEVSCAN_H */
