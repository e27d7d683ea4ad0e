/*
 * devscan_daxctl.c -- DAX device discovery through libdaxctl. libdaxctl
 * reads /sys only, so on a machine without DAX hardware it lists nothing
 * and reports no error; a pool then lives on a file.
 */
#include <daxctl/libdaxctl.h>
#include <errno.h>
#include <stdio.h>

#include "devscan.h"
#include "err.h"

static void
record(struct daxctl_region *region, struct daxctl_dev *dev,
    struct devscan_dev *out, size_t max, size_t *found)
{
	unsigned long align = daxctl_dev_get_align(dev);
	struct devscan_dev *d;

	if (*found < max) {
		d = &out[*found];
		snprintf(d->path, sizeof(d->path), "/dev/%s",
		    daxctl_dev_get_devname(dev));
		d->size = daxctl_dev_get_size(dev);
		d->align = align ? align : daxctl_region_get_align(region);
	}
	(*found)++;
}

/* devscan_list -- see devscan.h */
int
devscan_list(struct devscan_dev *out, size_t max, size_t *found)
{
	struct daxctl_region *region;
	struct daxctl_dev *dev;
	struct daxctl_ctx *ctx;
	int rc;

	*found = 0;
	if ((rc = daxctl_new(&ctx)) != 0) {
		return cxlp_fail(rc < 0 ? rc : -ENOMEM, "daxctl_new failed");
	}
	daxctl_region_foreach(ctx, region) {
		daxctl_dev_foreach(region, dev) {
			if (daxctl_dev_is_enabled(dev) &&
			    daxctl_dev_get_size(dev) > 0) {
				record(region, dev, out, max, found);
			}
		}
	}
	daxctl_unref(ctx);
	return 0;
}
