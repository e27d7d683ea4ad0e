/*
 * cmd_devices.c -- `pool-inspect devices [PATH] [--json]`: the DAX media
 * a pool could live on, from pool/devscan (libdaxctl for device DAX,
 * libndctl for fsdax namespaces). With PATH, only the device PATH names
 * (or, for a file, the fsdax namespace under it); exit 1 if it is none.
 * Finding no devices is not an error: pools then live on files.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cxlpool.h"
#include "devscan.h"
#include "err.h"
#include "inspect.h"

static void
row_text(const struct devscan_dev *d)
{
	char size[FMT_SIZE_LEN], align[FMT_SIZE_LEN], node[16] = "-";

	if (d->numa_node >= 0) {
		snprintf(node, sizeof(node), "%d", d->numa_node);
	}
	printf("%-16s  %-6s  %-10s  %10s  %10s  %4s  %s%s\n", d->path,
	    devscan_kind_name(d->kind),
	    d->persistent ? "persistent" : "volatile", fmt_size(size, d->size),
	    fmt_size(align, d->align), node,
	    d->kind == DEVSCAN_FSDAX && d->mount[0] ? d->mount : "-",
	    d->kind == DEVSCAN_FSDAX && d->mount[0] && !d->mount_dax ?
	    " (not mounted -o dax)" : "");
}

static void
row_json(struct jw *w, const struct devscan_dev *d)
{
	jw_obj(w, NULL);
	jw_str(w, "path", d->path);
	jw_str(w, "kind", devscan_kind_name(d->kind));
	jw_bool(w, "persistent", d->persistent);
	jw_u64(w, "size", d->size);
	jw_u64(w, "align", d->align);
	jw_i64(w, "numa_node", d->numa_node);
	if (d->kind == DEVSCAN_FSDAX) {
		jw_str(w, "mount", d->mount[0] ? d->mount : NULL);
		jw_bool(w, "mount_dax", d->mount_dax);
	}
	jw_close(w);
}

static void
print(const struct inspect_opts *o, const struct devscan_dev *d, size_t n)
{
	struct jw w;

	if (o->json) {
		jw_begin(&w, stdout, 0);
		jw_arr(&w, "devices");
		for (size_t i = 0; i < n; i++) {
			row_json(&w, &d[i]);
		}
		jw_close(&w);
		jw_u64(&w, "count", n);
		jw_end(&w);
		return;
	}
	if (n == 0) {
		printf("no DAX devices found (libdaxctl/libndctl list none); "
		    "pools can live on files\n");
		return;
	}
	printf("%-16s  %-6s  %-10s  %10s  %10s  %4s  %s\n", "PATH", "KIND",
	    "MEDIA", "SIZE", "ALIGN", "NODE", "MOUNT");
	for (size_t i = 0; i < n; i++) {
		row_text(&d[i]);
	}
}

/* cmd_devices -- see inspect.h */
int
cmd_devices(int argc, char **argv)
{
	struct devscan_dev *d;
	struct inspect_opts o;
	size_t n = 0;
	int rc;

	if ((rc = inspect_args(argc, argv, OPT_PATH, "[PATH] [--json]",
	    &o)) != 0) {
		return rc;
	}
	if ((d = calloc(DEVSCAN_MAX, sizeof(*d))) == NULL) {
		fprintf(stderr, "pool-inspect: out of memory\n");
		return 1;
	}
	if (o.path != NULL) {
		rc = devscan_find(o.path, d);
		n = 1;
	} else {
		rc = devscan_list(d, DEVSCAN_MAX, &n);
		n = n < DEVSCAN_MAX ? n : DEVSCAN_MAX;
	}
	if (rc != 0) {
		fprintf(stderr, "pool-inspect: %s (%s)\n", cxlp_errormsg(),
		    cxlp_strerror(rc));
	} else {
		print(&o, d, n);
	}
	free(d);
	return rc == 0 ? 0 : 1;
}
