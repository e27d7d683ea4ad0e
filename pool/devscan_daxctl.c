/*
 * devscan_daxctl.c -- DAX discovery through the libraries: device DAX
 * through libdaxctl, fsdax namespaces through libndctl. Both read /sys
 * only, so on a machine without DAX hardware they list nothing and report
 * no error; a pool then lives on a file. Which device DAX is persistent
 * is learnt from libndctl too: the ones an NVDIMM region's dax devices
 * name (a pmem namespace in devdax mode, CXL persistent memory through
 * its nvdimm bridge); any other (CXL RAM, soft-reserved memory) is
 * volatile. The libraries' own logging is
 * silenced: the library never prints (STYLE), and a scan that finds
 * nothing is not an error.
 */
#include <daxctl/libdaxctl.h>
#include <errno.h>
#include <ndctl/libndctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "devscan.h"
#include "err.h"

/* out[*found] if there is room; *found counts every device either way */
static struct devscan_dev *
slot(struct devscan_dev *out, size_t max, size_t *found)
{
	struct devscan_dev *d = *found < max ? &out[*found] : NULL;

	(*found)++;
	if (d != NULL) {
		memset(d, 0, sizeof(*d));
	}
	return d;
}

static void
record_devdax(struct daxctl_region *region, struct daxctl_dev *dev,
    struct devscan_dev *d)
{
	unsigned long align = daxctl_dev_get_align(dev);
	int major = daxctl_dev_get_major(dev);
	int minor = daxctl_dev_get_minor(dev);

	snprintf(d->path, sizeof(d->path), "/dev/%s",
	    daxctl_dev_get_devname(dev));
	d->kind = DEVSCAN_DEVDAX;
	d->size = daxctl_dev_get_size(dev);
	d->align = align ? align : daxctl_region_get_align(region);
	d->numa_node = daxctl_dev_get_target_node(dev);
	d->devno = major > 0 && minor >= 0 ?
	    makedev((unsigned)major, (unsigned)minor) : 0;
}

static int
scan_devdax(struct devscan_dev *out, size_t max, size_t *found)
{
	struct daxctl_region *region;
	struct daxctl_dev *dev;
	struct daxctl_ctx *ctx;
	struct devscan_dev *d;
	int rc;

	if ((rc = daxctl_new(&ctx)) != 0) {
		return cxlp_fail(rc < 0 ? rc : -ENOMEM, "daxctl_new failed");
	}
	daxctl_set_log_priority(ctx, 0);
	daxctl_region_foreach(ctx, region) {
		daxctl_dev_foreach(region, dev) {
			if (!daxctl_dev_is_enabled(dev) ||
			    daxctl_dev_get_size(dev) == 0) {
				continue;
			}
			if ((d = slot(out, max, found)) != NULL) {
				record_devdax(region, dev, d);
			}
		}
	}
	daxctl_unref(ctx);
	return 0;
}

static void
record_fsdax(struct ndctl_namespace *ns, struct devscan_dev *d)
{
	struct ndctl_pfn *pfn = ndctl_namespace_get_pfn(ns);
	char sysdev[80];
	unsigned maj, min;
	FILE *f;

	snprintf(d->path, sizeof(d->path), "/dev/%s",
	    ndctl_namespace_get_block_device(ns));
	d->kind = DEVSCAN_FSDAX;
	d->persistent = true; /* a namespace of a pmem region */
	d->size = pfn != NULL ? ndctl_pfn_get_size(pfn) :
	    ndctl_namespace_get_size(ns);
	d->align = 4096; /* files on the mount map at page granularity */
	d->numa_node = ndctl_namespace_get_numa_node(ns);
	snprintf(sysdev, sizeof(sysdev), "/sys/class/block/%s/dev",
	    ndctl_namespace_get_block_device(ns));
	if ((f = fopen(sysdev, "re")) != NULL) {
		if (fscanf(f, "%u:%u", &maj, &min) == 2) {
			d->devno = makedev(maj, min);
		}
		fclose(f);
	}
	devscan_mount_lookup(d);
}

/* Every device DAX of a pmem region's enabled dax devices is persistent
 * (out[0..n): the device DAX entries found so far). */
static void
mark_pmem_devdax(struct ndctl_region *region, struct devscan_dev *out,
    size_t n)
{
	struct ndctl_dax *dax;

	/* (<ndctl/ndctl.h>, which names the type numbers, does not build
	 * outside ndctl's tree; the name is the same information) */
	if (strcmp(ndctl_region_get_type_name(region), "pmem") != 0) {
		return;
	}
	ndctl_dax_foreach(region, dax) {
		struct daxctl_region *dr = ndctl_dax_is_enabled(dax) ?
		    ndctl_dax_get_daxctl_region(dax) : NULL;
		struct daxctl_dev *dev;

		if (dr == NULL) {
			continue;
		}
		daxctl_dev_foreach(dr, dev) {
			long i = devscan_match(out, n,
			    daxctl_dev_get_devname(dev), 0);

			if (i >= 0) {
				out[i].persistent = true;
			}
		}
	}
}

/* fsdax namespaces into out; marks the persistent ones of the ndevdax
 * device DAX entries already in out */
static int
scan_nd(struct devscan_dev *out, size_t max, size_t *found, size_t ndevdax)
{
	struct ndctl_namespace *ns;
	struct ndctl_region *region;
	struct ndctl_bus *bus;
	struct ndctl_ctx *ctx;
	struct devscan_dev *d;
	int rc;

	if ((rc = ndctl_new(&ctx)) != 0) {
		return cxlp_fail(rc < 0 ? rc : -ENOMEM, "ndctl_new failed");
	}
	ndctl_set_log_priority(ctx, 0);
	ndctl_bus_foreach(ctx, bus) {
		ndctl_region_foreach(bus, region) {
			mark_pmem_devdax(region, out, ndevdax);
			ndctl_namespace_foreach(region, ns) {
				if (!ndctl_namespace_is_active(ns) ||
				    ndctl_namespace_get_mode(ns) !=
				    NDCTL_NS_MODE_FSDAX) {
					continue;
				}
				if ((d = slot(out, max, found)) != NULL) {
					record_fsdax(ns, d);
				}
			}
		}
	}
	ndctl_unref(ctx);
	return 0;
}

/* devscan_list -- see devscan.h */
int
devscan_list(struct devscan_dev *out, size_t max, size_t *found)
{
	int rc;

	*found = 0;
	if ((rc = scan_devdax(out, max, found)) != 0) {
		return rc;
	}
	return scan_nd(out, max, found, *found < max ? *found : max);
}
