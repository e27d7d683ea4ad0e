/*
 * cmd_summary.c -- `pool-inspect summary POOL [--json]`: the pool's
 * geometry, media and use, from pool_stats and pool_media on a read-only
 * open. Text is one "label  value" line each, sizes in binary units;
 * JSON has every number in bytes or counts. The layout line is the
 * version the superblock says, and whether a metaserver of this release
 * would upgrade it or must finish an upgrade a crash cut short
 * (pool/upgrade.c). Free space comes as the
 * bytes in no region and the largest free extent (the largest region a
 * REGION_ALLOC can still get without eviction); the access line is the
 * eviction policy's state (access.c): whether the pool has an access
 * area and how many index slots have their reference byte set; the
 * evicted line, the keys and value bytes evicted since format by cause
 * (the superblock's totals, pool/evict.c note 7). The owner is the
 * pool's
 * owner record (pool/owner.h) as it reads now: the metaserver serving
 * it, or the last one if it was killed; whether its heartbeat still
 * moves shows from one summary to the next. The last takeover is the
 * one an elected leader recorded in the superblock (pool/owner.h
 * pool_takeover_get); the leader and the standbys as etcd has them come
 * with --elect (election.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cxlpool.h"
#include "inspect.h"
#include "layout.h"
#include "owner.h"
#include "pool.h"

static void
print_access_text(const struct inspect_access *ac)
{
	char a[FMT_SIZE_LEN];

	if (!ac->area) {
		printf("%-14s none (layout %u.%u, before 2.2): only the "
		    "server's lookups count in the eviction order\n", "access",
		    ac->major, ac->minor);
		return;
	}
	if (ac->per_host) {
		printf("%-14s %" PRIu64 " of %" PRIu64 " slots read (counters "
		    "of %u hosts, area %s, layout %u.%u)\n", "access",
		    ac->referenced, ac->slots, ac->hosts, fmt_size(a, ac->len),
		    ac->major, ac->minor);
		return;
	}
	printf("%-14s %" PRIu64 " of %" PRIu64 " slots referenced (area %s, "
	    "layout %u.%u)\n", "access", ac->referenced, ac->slots,
	    fmt_size(a, ac->len), ac->major, ac->minor);
}

static void
print_access_json(struct jw *w, const struct inspect_access *ac)
{
	char layout[24];

	snprintf(layout, sizeof(layout), "%u.%u", ac->major, ac->minor);
	jw_obj(w, "access");
	jw_str(w, "layout", layout);
	jw_bool(w, "area", ac->area);
	if (ac->area) {
		jw_u64(w, "slots", ac->slots);
		jw_u64(w, "referenced", ac->referenced);
		jw_u64(w, "area_off", ac->off);
		jw_u64(w, "area_bytes", ac->len);
		if (ac->per_host) {
			jw_u64(w, "hosts", ac->hosts);
		}
	}
	jw_close(w);
}

static const char *const cause_name[POOL_EVICT_CAUSES] = {
	[POOL_EVICT_PRESSURE] = "pressure",
	[POOL_EVICT_WATERMARK] = "watermark",
	[POOL_EVICT_ORPHAN] = "orphan",
};

static void
print_evicted_text(const struct pool_evict_stats *ev)
{
	uint64_t keys = 0, bytes = 0;
	char a[FMT_SIZE_LEN];

	for (int c = 0; c < POOL_EVICT_CAUSES; c++) {
		keys += ev->total_keys[c];
		bytes += ev->total_bytes[c];
	}
	printf("%-14s %" PRIu64 " keys (%s of values) since format: %" PRIu64
	    " pressure, %" PRIu64 " watermark, %" PRIu64 " orphan\n",
	    "evicted", keys, fmt_size(a, bytes),
	    ev->total_keys[POOL_EVICT_PRESSURE],
	    ev->total_keys[POOL_EVICT_WATERMARK],
	    ev->total_keys[POOL_EVICT_ORPHAN]);
}

static void
print_evicted_json(struct jw *w, const struct pool_evict_stats *ev)
{
	jw_obj(w, "evicted_since_format");
	for (int c = 0; c < POOL_EVICT_CAUSES; c++) {
		jw_obj(w, cause_name[c]);
		jw_u64(w, "keys", ev->total_keys[c]);
		jw_u64(w, "bytes", ev->total_bytes[c]);
		jw_close(w);
	}
	jw_close(w);
}

/* the layout the superblock says, and whether this release would
 * upgrade it (pool/upgrade.c) or a crash cut its upgrade short */
static void
print_layout_text(const struct pool *p)
{
	uint32_t major, minor;
	int cut;

	pool_layout(p, &major, &minor, &cut);
	if (cut >= 0) {
		printf("%-14s %u.%u (its upgrade from %u.%d was cut short: the "
		    "next metaserver to serve it finishes it; until then "
		    "release %u.%d refuses it)\n", "layout", major, minor,
		    major, cut, major, cut);
	} else if (major == POOL_MAJOR && minor < POOL_MINOR) {
		printf("%-14s %u.%u (a metaserver of this release upgrades it "
		    "to %u.%u in place when it serves it)\n", "layout", major,
		    minor, POOL_MAJOR, POOL_MINOR);
	} else {
		printf("%-14s %u.%u\n", "layout", major, minor);
	}
}

static void
print_layout_json(struct jw *w, const struct pool *p)
{
	uint32_t major, minor;
	char v[24];
	int cut;

	pool_layout(p, &major, &minor, &cut);
	snprintf(v, sizeof(v), "%u.%u", major, minor);
	jw_str(w, "layout", v);
	if (cut >= 0) {
		snprintf(v, sizeof(v), "%u.%d", major, cut);
		jw_str(w, "layout_upgrade_cut_from", v);
	}
}

/* the figures summary prints, gathered */
struct summary {
	struct pool_stats st;
	struct pool_media m;
	struct inspect_access ac;
	struct pool_evict_stats ev;
	struct inspect_elect el;
};

static void
print_text(const char *path, const struct pool *p, const struct summary *s)
{
	const struct pool_stats *st = &s->st;
	const struct pool_media *m = &s->m;
	char a[FMT_SIZE_LEN], b[FMT_SIZE_LEN], c[FMT_SIZE_LEN];

	printf("%-14s %s\n", "pool", path);
	print_layout_text(p);
	printf("%-14s %s, %s, %s store granularity, %s mapping alignment\n",
	    "media", m->devdax ? "devdax" : "file",
	    m->is_volatile ? "volatile" : "persistent", m->granularity,
	    fmt_size(a, m->align));
	printf("%-14s %s\n", "coherence", pool_coh_name(pool_coherence(p)));
	printf("%-14s %" PRIu64 "%s\n", "term", pool_term(p),
	    pool_term(p) == 0 ? " (never served by an elected leader)" : "");
	printf("%-14s %s (metadata %s, data %s)\n", "size",
	    fmt_size(a, st->size), fmt_size(b, st->meta_bytes),
	    fmt_size(c, st->data_bytes));
	printf("%-14s %s\n", "align", fmt_size(a, st->align));
	printf("%-14s %" PRIu64 " of %" PRIu64 " slots (%" PRIu64 " owned, %"
	    PRIu64 " orphan)\n", "regions", st->regions, st->region_slots,
	    st->regions - st->orphan_regions, st->orphan_regions);
	printf("%-14s %s\n", "allocated",
	    fmt_size(a, st->data_bytes - st->free_bytes));
	printf("%-14s %s (largest extent %s)\n", "free",
	    fmt_size(a, st->free_bytes), fmt_size(b, st->largest_free));
	printf("%-14s %" PRIu64 " (index %" PRIu64 " slots)\n", "keys",
	    st->keys, st->index_slots);
	printf("%-14s %s\n", "values", fmt_size(a, st->value_bytes));
	printf("%-14s %s (key heap %s)\n", "key bytes",
	    fmt_size(a, st->key_bytes), fmt_size(b, st->key_heap_bytes));
	printf("%-14s %" PRIu64 "\n", "sessions", st->sessions);
	print_evicted_text(&s->ev);
	print_access_text(&s->ac);
	inspect_owner_text(p);
	inspect_takeover_text(p);
	if (s->el.spec != NULL || pool_term(p) != 0) { /* an elected pool */
		inspect_elect_text(&s->el);
	}
}

static void
print_json(const char *path, const struct pool *p, const struct summary *s)
{
	const struct pool_stats *st = &s->st;
	const struct pool_media *m = &s->m;
	struct jw w;

	jw_begin(&w, stdout, 0);
	jw_str(&w, "pool", path);
	print_layout_json(&w, p);
	jw_str(&w, "coherence", pool_coh_name(pool_coherence(p)));
	jw_u64(&w, "term", pool_term(p));
	jw_u64(&w, "size", st->size);
	jw_u64(&w, "align", st->align);
	jw_u64(&w, "metadata_bytes", st->meta_bytes);
	jw_u64(&w, "data_bytes", st->data_bytes);
	jw_u64(&w, "regions", st->regions);
	jw_u64(&w, "regions_owned", st->regions - st->orphan_regions);
	jw_u64(&w, "regions_orphan", st->orphan_regions);
	jw_u64(&w, "region_slots", st->region_slots);
	jw_u64(&w, "allocated_bytes", st->data_bytes - st->free_bytes);
	jw_u64(&w, "free_bytes", st->free_bytes);
	jw_u64(&w, "largest_free", st->largest_free);
	jw_u64(&w, "keys", st->keys);
	jw_u64(&w, "index_slots", st->index_slots);
	jw_u64(&w, "value_bytes", st->value_bytes);
	jw_u64(&w, "key_bytes", st->key_bytes);
	jw_u64(&w, "key_heap_bytes", st->key_heap_bytes);
	jw_u64(&w, "sessions", st->sessions);
	jw_obj(&w, "media");
	jw_bool(&w, "devdax", m->devdax);
	jw_bool(&w, "volatile", m->is_volatile);
	jw_str(&w, "granularity", m->granularity);
	jw_u64(&w, "align", m->align);
	jw_close(&w);
	print_evicted_json(&w, &s->ev);
	print_access_json(&w, &s->ac);
	inspect_owner_json(&w, p);
	inspect_takeover_json(&w, p);
	inspect_elect_json(&w, &s->el);
	jw_end(&w);
}

/* the election as etcd has it, with --elect (its key: --elect-key, or
 * the servers' default /cxlpool/<uuid>) */
static void
read_election(const struct inspect_opts *o, const struct pool *p,
    struct inspect_elect *el)
{
	char key[64], hex[33];

	memset(el, 0, sizeof(*el));
	if (o->elect == NULL) {
		return;
	}
	pool_uuid_hex(p, hex);
	snprintf(key, sizeof(key), "/cxlpool/%s", hex);
	inspect_elect_read(o->elect, o->elect_key != NULL ? o->elect_key :
	    key, el);
}

/* cmd_summary -- see inspect.h */
int
cmd_summary(int argc, char **argv)
{
	static struct summary s;
	struct inspect_opts o;
	struct pool *p;
	int rc;

	if ((rc = inspect_args(argc, argv, OPT_POOL | OPT_ELECT,
	    "POOL [--elect URL [--elect-key K]] [--json]", &o)) != 0 ||
	    (rc = inspect_open(o.path, &p)) != 0) {
		return rc;
	}
	if (inspect_access(o.path, pool_align(p), &s.ac) != 0) {
		fprintf(stderr, "pool-inspect: %s: access area: %s\n", o.path,
		    cxlp_errormsg());
		pool_close(&p);
		return 1;
	}
	pool_stats(p, &s.st);
	pool_media(p, &s.m);
	pool_evict_stats(p, &s.ev);
	read_election(&o, p, &s.el);
	if (o.json) {
		print_json(o.path, p, &s);
	} else {
		print_text(o.path, p, &s);
	}
	pool_close(&p);
	return 0;
}
