/*
 * devscan.h -- list the device DAX character devices (/dev/daxX.Y) a pool
 * could live on. devscan_daxctl.c asks libdaxctl; devscan_none.c (builds
 * without it) finds nothing. Meson picks one.
 */
#ifndef CXLP_POOL_DEVSCAN_H
#define CXLP_POOL_DEVSCAN_H

#include <stddef.h>
#include <stdint.h>

struct devscan_dev {
	char path[64];  /* "/dev/dax0.0" */
	uint64_t size;  /* bytes */
	uint64_t align; /* bytes: mapping offset/length granule */
};

/* devscan_list -- fill out[0..max) with the enabled DAX devices found and
 * set *found to how many exist (may exceed max). Returns 0 (none found is
 * not an error) or a negative error if the scan itself failed. */
int devscan_list(struct devscan_dev *out, size_t max, size_t *found);

#endif /* CXLP_POOL_DEVSCAN_H */
