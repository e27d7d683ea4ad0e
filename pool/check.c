/*
 * check.c -- pool_check: every invariant of the pool, verified against the
 * media (not only the DRAM caches), one report per problem.
 *
 * Why this shape: pool-inspect runs it on a pool opened read-only, where
 * damaged records were skipped rather than repaired, so the check re-reads
 * every record and recomputes what the caches should say: superblock
 * (layout_validate), region records (layout_rrec_problem, overlaps), the
 * session table, the index and key heap (kvindex_scan), index entries
 * against regions (live, same gen, page in range, one key per page, value
 * fits), per-region key counts, the free-space accounting
 * (alloc_check plus the sum of region lengths), and the pin table with
 * its DRAM index (pinidx_check, and the per-key and per-session totals
 * against sums of the media's counts).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "pool_int.h"

struct ck {
	const struct pool *p;
	void (*report)(void *arg, const char *problem);
	void *arg;
	int problems;
};

static void
problem(struct ck *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
problem(struct ck *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	problem_vreport(c->report, c->arg, &c->problems, fmt, ap);
	va_end(ap);
}

static void
relay(void *arg, const char *msg)
{
	problem(arg, "%s", msg);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void
check_sb(struct ck *c)
{
	char why[200];

	if (layout_validate(c->p->sb, pmap_file_size(c->p->map), why,
	    sizeof(why)) != 0) {
		problem(c, "superblock: %s", why);
	}
}

/* records, overlaps (by sorting offset << 20 | id pairs), DRAM agreement */
static void
check_regions(struct ck *c, uint64_t *used_bytes)
{
	const struct pool *p = c->p;
	uint64_t *ids = calloc(p->nregions + 1, sizeof(*ids));
	uint64_t n = 0, prev_end = 0;

	*used_bytes = 0;
	if (ids == NULL) {
		problem(c, "check: out of memory");
		return;
	}
	for (uint32_t i = 0; i < p->nregions; i++) {
		const struct pool_rrec *r = &p->rtab[i];
		const char *why;

		if (rrec_state(r->word) == POOL_REGION_FREE) {
			continue;
		}
		if ((why = layout_rrec_problem(p->sb, p->align, r)) != NULL) {
			problem(c, "region %u: %s", i, why);
			continue;
		}
		ids[n++] = i;
		*used_bytes += r->len;
	}
	/* insertion sort by offset: few regions */
	for (uint64_t i = 1; i < n; i++) {
		for (uint64_t j = i; j > 0 && p->rtab[ids[j]].off <
		    p->rtab[ids[j - 1]].off; j--) {
			uint64_t t = ids[j];

			ids[j] = ids[j - 1];
			ids[j - 1] = t;
		}
	}
	for (uint64_t i = 0; i < n; i++) {
		const struct pool_rrec *r = &p->rtab[ids[i]];

		if (i > 0 && r->off < prev_end) {
			problem(c, "region %llu overlaps region %llu",
			    (unsigned long long)ids[i],
			    (unsigned long long)ids[i - 1]);
		}
		prev_end = r->off + r->len > prev_end ? r->off + r->len :
		    prev_end;
	}
	free(ids);
}

/* a live record's problem, or NULL (FREE records are never read) */
static const char *
live_problem(const struct pool *p, const struct pool_rrec *r)
{
	return rrec_state(r->word) == POOL_REGION_FREE ? NULL :
	    layout_rrec_problem(p->sb, p->align, r);
}

/* the region table's copy (rmirror.c): a damaged primary the copy
 * restores (check_regions saw the restored record), a damaged copy, and
 * on a pool open for writing, where the copy is kept in step, any
 * difference */
static void
check_copies(struct ck *c)
{
	const struct pool *p = c->p;

	for (uint32_t i = 0; p->rmir != NULL && i < p->nregions; i++) {
		const struct pool_rrec *pr = &p->rprim[i], *mr = &p->rmir[i];
		const char *pw = live_problem(p, pr), *mw = live_problem(p, mr);

		if (pw != NULL && mw == NULL &&
		    rrec_state(mr->word) != POOL_REGION_FREE) {
			problem(c, "region %u: %s (its copy is intact: a "
			    "writable open restores it)", i, pw);
		}
		if (mw != NULL) {
			problem(c, "region %u copy: %s", i, mw);
		} else if (!p->rdonly && memcmp(pr, mr, sizeof(*pr)) != 0) {
			problem(c, "region %u: its copy differs", i);
		}
	}
}

static void
check_space(struct ck *c, uint64_t used_bytes)
{
	const struct pool *p = c->p;
	uint64_t data = p->sb->area[POOL_AREA_DATA].len;
	char why[200];

	if (alloc_check(&p->alloc, why, sizeof(why)) != 0) {
		problem(c, "free extents: %s", why);
	}
	if (used_bytes + p->alloc.free_units * p->align != data) {
		problem(c, "space: regions hold %llu bytes, %llu are free, "
		    "the data area has %llu", (unsigned long long)used_bytes,
		    (unsigned long long)(p->alloc.free_units * p->align),
		    (unsigned long long)data);
	}
}

static void
check_sessions(struct ck *c)
{
	const struct pool *p = c->p;

	for (uint32_t i = 0; i < p->nsess; i++) {
		const struct pool_srec *s = &p->stab[i];

		if (s->id == 0) {
			continue;
		}
		if (layout_srec_checksum(s) != s->checksum) {
			problem(c, "session record %u: checksum mismatch", i);
			continue;
		}
		if (s->id >= p->sb->next_session_id) {
			problem(c, "session %llu: id not below next id %llu",
			    (unsigned long long)s->id,
			    (unsigned long long)p->sb->next_session_id);
		}
		for (uint32_t j = i + 1; j < p->nsess; j++) {
			if (p->stab[j].id == s->id) {
				problem(c, "session %llu recorded twice",
				    (unsigned long long)s->id);
			}
		}
	}
}

/* one live entry against the region table; its (region, page) into pairs */
static void
check_entry(struct ck *c, uint64_t slot, const struct kv_val *v,
    uint64_t *pairs, uint64_t *n)
{
	const struct pool *p = c->p;
	const struct pool_rrec *r;

	if (v->region >= p->nregions || layout_rrec_problem(p->sb,
	    p->align, &p->rtab[v->region]) != NULL) {
		problem(c, "key in slot %llu: region %u is not live",
		    (unsigned long long)slot, v->region);
		return;
	}
	r = &p->rtab[v->region];
	if (v->gen != rrec_gen(r->word) || v->page >= r->len / r->page_size ||
	    v->len > r->page_size) {
		problem(c, "key in slot %llu: gen %u page %u len %u do not "
		    "fit region %u (gen %u)", (unsigned long long)slot, v->gen,
		    v->page, v->len, v->region, rrec_gen(r->word));
		return;
	}
	pairs[(*n)++] = (uint64_t)v->region << 32 | v->page;
}

static void
check_counts(struct ck *c, uint64_t *pairs, uint64_t n)
{
	const struct pool *p = c->p;

	qsort(pairs, n, sizeof(*pairs), cmp_u64);
	for (uint64_t i = 1; i < n; i++) {
		if (pairs[i] == pairs[i - 1]) {
			problem(c, "region %u page %u holds two keys",
			    (uint32_t)(pairs[i] >> 32), (uint32_t)pairs[i]);
		}
	}
	for (uint32_t id = 0, i = 0; id < p->nregions; id++) {
		uint64_t cnt = 0;

		while (i < n && pairs[i] >> 32 == id) {
			cnt++, i++;
		}
		if (p->reg[id].live && cnt != p->reg[id].nkeys) {
			problem(c, "region %u: %llu keys point in, counted "
			    "%llu", id, (unsigned long long)cnt,
			    (unsigned long long)p->reg[id].nkeys);
		}
		if (cnt == 0 && rrec_state(p->rtab[id].word) ==
		    POOL_REGION_ORPHAN) {
			problem(c, "region %u: ORPHAN with no keys (should "
			    "have been freed)", id);
		}
	}
}

static void
check_index(struct ck *c)
{
	const struct pool *p = c->p;
	uint64_t cursor = 0, slot, n = 0;
	uint64_t *pairs = calloc(p->kv.nslots, sizeof(*pairs));
	struct kv_val v;

	kvindex_scan(&p->kv, relay, c);
	if (pairs == NULL) {
		problem(c, "check: out of memory");
		return;
	}
	while (kvindex_next(&p->kv, &cursor, &slot) == 1) {
		kvindex_get(&p->kv, slot, &v, NULL, NULL);
		check_entry(c, slot, &v, pairs, &n);
	}
	check_counts(c, pairs, n);
	free(pairs);
}

/* a pin total the DRAM index gives, against the media's */
struct pin_sum {
	uint64_t key;   /* slot or session */
	uint64_t count; /* pins of one record */
};

static int
cmp_sum(const void *a, const void *b)
{
	return cmp_u64(&((const struct pin_sum *)a)->key,
	    &((const struct pin_sum *)b)->key);
}

/* per key of v (one entry per record), the sum of its records' counts
 * against what the index answers (pinidx.c note 3) */
static void
check_pin_totals(struct ck *c, struct pin_sum *v, uint64_t n, bool slots)
{
	qsort(v, n, sizeof(*v), cmp_sum);
	for (uint64_t i = 0, j; i < n; i = j) {
		uint64_t sum = 0, got;

		for (j = i; j < n && v[j].key == v[i].key; j++) {
			sum += v[j].count;
		}
		got = slots ? pool_pin_total(c->p, v[i].key) :
		    pool_pin_session_total(c->p, v[i].key);
		if (got != sum) {
			problem(c, "pins: %s %llu holds %llu pins on media, "
			    "%llu in the index", slots ? "slot" : "session",
			    (unsigned long long)v[i].key,
			    (unsigned long long)sum, (unsigned long long)got);
		}
	}
}

/* the pin table: every live record valid (pintab.c design note 4), one
 * record per (session, slot), the DRAM index in step with the media:
 * its chains (pinidx_check), counters and, if its chains can be walked,
 * its totals */
static void
check_pins(struct ck *c)
{
	const struct pool *p = c->p;
	struct pin_sum *bys = calloc(p->npins + 1, sizeof(*bys));
	struct pin_sum *byk = calloc(p->npins + 1, sizeof(*byk));
	uint64_t records = 0, pins = 0;
	bool walkable;

	if (bys == NULL || byk == NULL) {
		problem(c, "check: out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < p->npins; i++) {
		const struct pool_pinrec *r = &p->ptab[i];
		const char *why;

		if (r->session == 0) {
			continue;
		}
		if ((why = pintab_rec_problem(p, r)) != NULL) {
			problem(c, "pin record %u: %s", i, why);
			continue;
		}
		if (!p->pin.live[i]) {
			problem(c, "pin record %u: a second record for "
			    "session %llu slot %llu", i,
			    (unsigned long long)r->session,
			    (unsigned long long)r->slot);
			continue;
		}
		bys[records] = (struct pin_sum){ r->session,
			pin_count(r->word) };
		byk[records++] = (struct pin_sum){ r->slot,
			pin_count(r->word) };
		pins += pin_count(r->word);
	}
	if (records != p->pin.records || pins != p->pin.pins) {
		problem(c, "pins: %llu records holding %llu pins on media, "
		    "%llu and %llu counted", (unsigned long long)records,
		    (unsigned long long)pins,
		    (unsigned long long)p->pin.records,
		    (unsigned long long)p->pin.pins);
	}
	pinidx_check(p, relay, c, &walkable);
	if (walkable) {
		check_pin_totals(c, bys, records, false);
		check_pin_totals(c, byk, records, true);
	}
out:
	free(bys);
	free(byk);
}

static void
bad_list(void *arg, uint32_t region, uint64_t listed)
{
	struct ck *c = arg;

	problem(c, "region %u: %llu keys on its eviction list, %llu keys "
	    "point into it", region, (unsigned long long)listed,
	    (unsigned long long)(c->p->reg[region].live ?
	    c->p->reg[region].nkeys : 0));
}

/* pool_check -- see pool.h */
int
pool_check(const struct pool *p,
    void (*report)(void *arg, const char *problem), void *arg)
{
	struct ck c = { p, report, arg, 0 };
	uint64_t used = 0;

	check_sb(&c);
	check_regions(&c, &used);
	check_copies(&c);
	check_space(&c, used);
	check_sessions(&c);
	check_index(&c);
	check_pins(&c);
	evlist_check(p, bad_list, &c);
	return c.problems;
}
