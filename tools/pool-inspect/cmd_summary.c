/*
 * cmd_summary.c -- `pool-inspect summary POOL [--json]`: the pool's
 * geometry and use, from pool_stats on a read-only open.
 */
#include <inttypes.h>
#include <stdio.h>

#include "inspect.h"
#include "pool.h"

struct field {
	const char *name;  /* JSON key and text label */
	uint64_t value;
	const char *unit;  /* text only */
};

static void
print_text(const char *path, const struct field *f, size_t n)
{
	printf("%-16s %s\n", "pool", path);
	for (size_t i = 0; i < n; i++) {
		printf("%-16s %" PRIu64 "%s%s\n", f[i].name, f[i].value,
		    f[i].unit[0] ? " " : "", f[i].unit);
	}
}

static void
print_json(const char *path, const struct field *f, size_t n)
{
	printf("{\"pool\": ");
	inspect_json_str(stdout, path);
	for (size_t i = 0; i < n; i++) {
		printf(", \"%s\": %" PRIu64, f[i].name, f[i].value);
	}
	printf("}\n");
}

/* cmd_summary -- see inspect.h */
int
cmd_summary(int argc, char **argv)
{
	struct inspect_opts o;
	struct pool_stats st;
	struct pool *p;
	int rc;

	if ((rc = inspect_args(argc, argv, "POOL [--json]", &o)) != 0 ||
	    (rc = inspect_open(o.path, &p)) != 0) {
		return rc;
	}
	pool_stats(p, &st);
	const struct field f[] = {
		{ "size", st.size, "bytes" },
		{ "align", st.align, "bytes" },
		{ "metadata_bytes", st.meta_bytes, "bytes" },
		{ "data_bytes", st.data_bytes, "bytes" },
		{ "regions", st.regions, "allocated" },
		{ "regions_owned", st.regions - st.orphan_regions, "" },
		{ "regions_orphan", st.orphan_regions, "" },
		{ "region_slots", st.region_slots, "" },
		{ "allocated_bytes", st.data_bytes - st.free_bytes, "bytes" },
		{ "free_bytes", st.free_bytes, "bytes" },
		{ "largest_free", st.largest_free, "bytes" },
		{ "keys", st.keys, "" },
		{ "index_slots", st.index_slots, "" },
		{ "value_bytes", st.value_bytes, "bytes" },
		{ "key_bytes", st.key_bytes, "bytes" },
		{ "key_heap_bytes", st.key_heap_bytes, "bytes" },
		{ "sessions", st.sessions, "" },
	};
	if (o.json) {
		print_json(o.path, f, sizeof(f) / sizeof(f[0]));
	} else {
		print_text(o.path, f, sizeof(f) / sizeof(f[0]));
	}
	pool_close(&p);
	return 0;
}
