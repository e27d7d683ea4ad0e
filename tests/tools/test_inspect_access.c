/*
 * test_inspect_access.c -- pool-inspect summary on what eviction looks at
 * (tools/pool-inspect/access.c and cmd_summary.c): the free bytes and the
 * largest free extent of a data area with holes, in text and JSON, and
 * the access area: how many index slots have their reference byte set
 * after readers touched some keys, and a pool formatted before layout 2.2
 * reported as having none; the evictions since format, by cause, added
 * up over two opens; on a sim pool, the slots some host's counter
 * counted, across the hosts' slices.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coh.h"
#include "cxlpool.h"
#include "hostslice.h"
#include "inspect_fixture.h"
#include "layout.h"
#include "map.h"
#include "sim.h"
#include "pool_test.h"

TestSuite(inspect, .init = inspect_setup, .fini = inspect_teardown);

static struct pool *
open_rw(void)
{
	struct pool *p = NULL;

	cr_assert_eq(pool_open(&p, path, 0, NULL), 0, "%s", cxlp_errormsg());
	return p;
}

/* A, B (4 MiB), C, D (2 MiB each), E (the rest), then B and D returned:
 * 6 MiB free in two holes, the larger 4 MiB. */
static void
make_holes(void)
{
	struct pool_region a, b, c, d, e;
	struct pool_stats st;
	struct pool *p;

	make_pool(0);
	p = open_rw();
	pool_stats(p, &st);
	cr_assert_eq(pool_region_alloc(p, sid, 4u << 20, 4096, &b), 0);
	cr_assert_eq(pool_region_alloc(p, sid, 2u << 20, 4096, &c), 0);
	cr_assert_eq(pool_region_alloc(p, sid, 2u << 20, 4096, &d), 0);
	cr_assert_gt(st.free_bytes, 8u << 20);
	cr_assert_eq(pool_region_alloc(p, sid, st.free_bytes - (8u << 20),
	    4096, &e), 0);
	cr_assert_eq(pool_region_alloc(p, sid, 2u << 20, 4096, &a),
	    CXLP_E_NOSPACE);
	cr_assert_eq(pool_region_disown(p, b.id), 0);
	cr_assert_eq(pool_region_disown(p, d.id), 0);
	pool_close(&p);
}

Test(inspect, summary_shows_free_bytes_and_the_largest_free_extent)
{
	make_holes();
	cr_assert_eq(run("summary %s", path), 0, "%s", out);
	has("\nfree           6.0 MiB (largest extent 4.0 MiB)\n");
	cr_assert_eq(run_json("summary %s", path), 0, "%s", out);
	has("\"free_bytes\": 6291456,");
	has("\"largest_free\": 4194304,");
}

Test(inspect, summary_of_a_full_pool_shows_no_free_extent)
{
	struct pool_region r;
	struct pool_stats st;
	struct pool *p;

	make_pool(0);
	p = open_rw();
	pool_stats(p, &st);
	cr_assert_eq(pool_region_alloc(p, sid, st.free_bytes, 4096, &r), 0);
	pool_close(&p);
	cr_assert_eq(run("summary %s", path), 0, "%s", out);
	has("\nfree           0 B (largest extent 0 B)\n");
	cr_assert_eq(run_json("summary %s", path), 0, "%s", out);
	has("\"free_bytes\": 0,");
	has("\"largest_free\": 0,");
}

/* slots of the first n keys make_pool stored ("model@0@<i>") */
static void
touch_keys(int n, int times)
{
	struct pool *p = open_rw();
	char key[32];

	for (int i = 0; i < n; i++) {
		struct pool_kv kv;

		snprintf(key, sizeof(key), "model@0@%d", i);
		cr_assert_eq(pool_kv_lookup(p, key, strlen(key), &kv), 0);
		for (int t = 0; t < times; t++) {
			pool_access_touch(p, kv.slot);
		}
	}
	pool_close(&p);
}

Test(inspect, summary_counts_the_reference_bytes_readers_set)
{
	char line[128];
	struct pool_stats st;
	struct pool *p;

	make_pool(5);
	cr_assert_eq(pool_open(&p, path, POOL_RDONLY, NULL), 0);
	pool_stats(p, &st);
	pool_close(&p);
	cr_assert_eq(run("summary %s", path), 0, "%s", out);
	snprintf(line, sizeof(line), "\naccess         0 of %llu slots "
	    "referenced (area ", (unsigned long long)st.index_slots);
	has(line);
	touch_keys(3, 2); /* a second touch of a set byte changes nothing */
	cr_assert_eq(run("summary %s", path), 0, "%s", out);
	snprintf(line, sizeof(line), "\naccess         3 of %llu slots "
	    "referenced (area ", (unsigned long long)st.index_slots);
	has(line);
	has(", layout 2.5)\n");
	cr_assert_eq(run_json("summary %s", path), 0, "%s", out);
	snprintf(line, sizeof(line), "\"access\": {\"layout\": \"2.5\", "
	    "\"area\": true, \"slots\": %llu, \"referenced\": 3, ",
	    (unsigned long long)st.index_slots);
	has(line);
}

/* evict n keys of make_pool's under cause in one open (a server's run) */
static void
evict_run(size_t n, enum pool_evict_cause cause)
{
	struct pool *p = open_rw();

	cr_assert_eq(pool_evict_clock(p, n, cause, NULL), n);
	pool_close(&p);
}

Test(inspect, summary_shows_the_evictions_since_format_across_opens)
{
	struct pool_evict_stats ev;
	char line[192];
	struct pool *p;

	make_pool(5);
	cr_assert_eq(run("summary %s", path), 0, "%s", out);
	has("\nevicted        0 keys (0 B of values) since format: 0 "
	    "pressure, 0 watermark, 0 orphan\n");
	evict_run(2, POOL_EVICT_PRESSURE);
	evict_run(1, POOL_EVICT_WATERMARK); /* a second run adds to the first */
	cr_assert_eq(pool_open(&p, path, POOL_RDONLY, NULL), 0);
	pool_evict_stats(p, &ev);
	pool_close(&p);
	cr_assert_eq(ev.keys[POOL_EVICT_PRESSURE], 0, "a counter of this open");
	cr_assert_eq(ev.total_keys[POOL_EVICT_PRESSURE], 2);
	cr_assert_eq(ev.total_keys[POOL_EVICT_WATERMARK], 1);
	cr_assert_gt(ev.total_bytes[POOL_EVICT_PRESSURE], 0);
	cr_assert_eq(run("summary %s", path), 0, "%s", out);
	has("\nevicted        3 keys (");
	has(" of values) since format: 2 pressure, 1 watermark, 0 orphan\n");
	cr_assert_eq(run_json("summary %s", path), 0, "%s", out);
	snprintf(line, sizeof(line), "\"evicted_since_format\": "
	    "{\"pressure\": {\"keys\": 2, \"bytes\": %llu}, \"watermark\": "
	    "{\"keys\": 1, \"bytes\": %llu}, \"orphan\": {\"keys\": 0, "
	    "\"bytes\": 0}}",
	    (unsigned long long)ev.total_bytes[POOL_EVICT_PRESSURE],
	    (unsigned long long)ev.total_bytes[POOL_EVICT_WATERMARK]);
	has(line);
}

/* The pool at path as layout 2.1 wrote it: no compat bit, the access
 * area's superblock bytes reserved (zero). */
static void
make_2_1(void)
{
	struct pool_sb sb;
	int fd;

	make_pool(2);
	fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	sb.compat &= ~POOL_COMPAT_ACCESS;
	sb.minor = 1;
	memset(&sb.access, 0, sizeof(sb.access));
	layout_seal(&sb);
	cr_assert_eq(pwrite(fd, &sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	close(fd);
}

Test(inspect, summary_of_a_pool_before_layout_2_2_has_no_access_area)
{
	make_2_1();
	cr_assert_eq(run("summary %s", path), 0, "%s", out);
	has("\naccess         none (layout 2.1, before 2.2): only the "
	    "server's lookups count in the eviction order\n");
	cr_assert_eq(run_json("summary %s", path), 0, "%s", out);
	has("\"access\": {\"layout\": \"2.1\", \"area\": false}");
	cr_assert_eq(run("check %s", path), 0, "%s", out);
}

/* host `name` counts slots [first, first + n) in its slice of the sim
 * pool at path, as its handlers' direct reads do (pool/hostslice.c) */
static void
count_as(const char *name, uint64_t first, uint64_t n)
{
	struct pmap *head, *am;
	const struct pool_sb *sb;
	struct coh *c;
	int i;

	setenv("CXLP_SIM_HOST", name, 1);
	cr_assert_eq(coh_open(&c, path, POOL_COH_SIM), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pmap_open_coh(&head, path, 0, POOL_SB_SIZE, false, c), 0);
	sb = pmap_addr(head);
	i = hostslice_find(head, sb, coh_host_hash());
	cr_assert_geq(i, 0, "host %s has no slice", name);
	cr_assert_eq(pmap_open_coh(&am, path, sb->access.off, sb->access.len,
	    true, c), 0);
	for (uint64_t s = first; s < first + n; s++) {
		hostslice_count(am, (uint8_t *)pmap_addr(am) + (uint64_t)i *
		    layout_access_stride(sb), s);
	}
	pmap_close(&am);
	pmap_close(&head);
	coh_close(&c);
	setenv("CXLP_SIM_HOST", "A", 1);
}

static uint64_t
hash_as(const char *name)
{
	uint64_t h;

	setenv("CXLP_SIM_HOST", name, 1);
	h = coh_host_hash();
	setenv("CXLP_SIM_HOST", "A", 1);
	return h;
}

/* the simulated hosts' caches go with the pool, passed or failed */
static void
sim_teardown(void)
{
	char lock[300];

	(void)sim_forget_hosts(path);
	snprintf(lock, sizeof(lock), "%s.simlock", path);
	unlink(lock);
	inspect_teardown();
}

Test(inspect, summary_counts_slots_read_on_any_host_of_a_sim_pool,
    .fini = sim_teardown)
{
	struct pool_params pp = { .size = 32ull << 20,
		.coherence = POOL_COH_SIM };
	char line[160];
	struct pool *p;

	setenv("CXLP_SIM_HOST", "A", 1);
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_host_slice(p, hash_as("B")), 0);
	cr_assert_eq(pool_host_slice(p, hash_as("D")), 1);
	pool_close(&p);
	count_as("B", 5, 2); /* slots 5, 6 */
	count_as("D", 6, 2); /* slots 6, 7: one slot read on both */
	cr_assert_eq(run("summary %s", path), 0, "%s", out);
	snprintf(line, sizeof(line), "\naccess         3 of %u slots read "
	    "(counters of 2 hosts, area ", (32u << 20) / 4096);
	has(line);
	cr_assert_eq(run_json("summary %s", path), 0, "%s", out);
	has("\"referenced\": 3, ");
	has("\"hosts\": 2}");
}
