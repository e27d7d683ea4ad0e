/*
 * crashpoints_evict.c -- the eviction steps of the crash-point sweep's
 * script (issue 17; the rest is crashpoints_workload.c). Session A has
 * taken the rest of the pool, so no extent is free: its next REGION_ALLOC
 * empties the orphan region that B left at its BYE (the server evicts
 * B's last key there) and is granted its extent; A fills that region
 * with two keys and sends RECLAIM, for which the server evicts keys of
 * A's own regions and names their pages (metaserver/evict.c notes 1, 2);
 * A then registers a new key at the first page named.
 *
 * A RECLAIM has no replay record: one retried across a crash evicts
 * again. So its replay's pages count, exactly: the keys at them are gone,
 * and each must have been an unpinned key of the caller (eviction never
 * takes what is held). Every other key its first run might have taken is
 * unsure.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "crashpoints.h"

/* cp_region_orphan -- see crashpoints.h. Once acknowledged, b2 is gone:
 * evicted by the first run or by the replay. */
void
cp_region_orphan(struct run *r, int s, struct proto_loc *loc)
{
	if (!cp_region(r, s, loc, 2 * MiB, BIG)) {
		r->m.unsure[KB0 + 2] = true;
		return;
	}
	r->m.present[KB0 + 2] = false;
	if (loc->region_off != r->rb1.region_off) {
		fprintf(stderr, "crashpoints: a full pool granted region %u "
		    "at %llu, not the orphan's extent\n", loc->region,
		    (unsigned long long)loc->region_off);
		r->failed++;
	}
}

/* which of A's grants region id at gen is, with its page size */
static const struct proto_loc *
grant_of(const struct run *r, uint32_t region, uint32_t gen, uint64_t *ps)
{
	const struct proto_loc *g[] = { &r->ra1, &r->ra3, &r->ra4 };

	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		if (g[i]->region_len != 0 && g[i]->region == region &&
		    g[i]->gen == gen) {
			*ps = g[i] == &r->ra4 ? BIG : PAGE;
			return g[i];
		}
	}
	return NULL;
}

static bool
owns(const struct run *r, int s, uint32_t region)
{
	for (unsigned i = 0; i < r->m.nown[s]; i++) {
		if (r->m.own[s][i] == region) {
			return true;
		}
	}
	return false;
}

static bool
pinned(const struct run *r, int k)
{
	return r->m.pins[SA][k] + r->m.pins[SB][k] > 0;
}

/* the key the model has at pp, if it is one eviction may take for s:
 * an unpinned key of s's regions; else -1 */
static int
victim_at(const struct run *r, int s, const struct proto_page *pp)
{
	uint64_t ps;
	const struct proto_loc *g = grant_of(r, pp->region, pp->gen, &ps);

	for (int k = 0; g != NULL && k < NKEYS; k++) {
		if (r->m.present[k] && r->m.region[k] == pp->region &&
		    r->m.off[k] == g->region_off + pp->page * ps) {
			return owns(r, s, pp->region) && !pinned(r, k) ? k :
			    -1;
		}
	}
	return -1;
}

/* what a RECLAIM cut short might have evicted: every key it may take */
static void
mark_victims_unsure(struct run *r, int s)
{
	for (int k = 0; k < NKEYS; k++) {
		if (r->m.present[k] && owns(r, s, r->m.region[k]) &&
		    !pinned(r, k)) {
			r->m.unsure[k] = true;
		}
	}
}

/* The reply's pages: each held an unpinned key of s, which is gone. */
static void
reclaimed(struct run *r, int s, const struct proto_reclaimed *m,
    uint32_t want)
{
	if (m->kind != PROTO_RECLAIM_PAGES || m->n > want) {
		fprintf(stderr, "crashpoints: RECLAIM on a full pool answered "
		    "kind %u, %u pages\n", m->kind, m->n);
		r->failed++;
		return;
	}
	for (uint32_t i = 0; i < m->n; i++) {
		int k = victim_at(r, s, &m->pages[i]);

		if (k < 0) {
			fprintf(stderr, "crashpoints: RECLAIM named page %u "
			    "of region %u, which held no key it may take\n",
			    m->pages[i].page, m->pages[i].region);
			r->failed++;
			continue;
		}
		r->m.present[k] = r->m.unsure[k] = false;
		r->back[r->nback++] = m->pages[i];
	}
}

/* cp_reclaim -- see crashpoints.h */
void
cp_reclaim(struct run *r, int s, uint32_t want)
{
	struct proto_reclaimed m = { 0 };
	struct preader rd;
	struct pbuf b;
	uint8_t *rep = NULL;
	size_t n = 0;
	int rc;

	pbuf_init(&b);
	proto_put_reclaim_req(&b, 2 * MiB, BIG, want, 0);
	rc = cp_xcall(r, s, PROTO_OP_RECLAIM, &b, &rep, &n);
	if (rc == 0) {
		rc = raw_reply(PROTO_OP_RECLAIM, rep, n, &rd);
	}
	if (rc == 0) {
		rc = proto_get_reclaimed(&rd, &m);
	}
	free(rep);
	pbuf_fini(&b);
	if (cp_crash_op(r)) {
		mark_victims_unsure(r, s);
	}
	if (rc != 0) {
		cp_not_acked(r, "reclaim", rc);
		r->stop = true; /* no page to register at */
		return;
	}
	reclaimed(r, s, &m, want);
	free(m.pages);
	r->stop |= r->nback == 0;
}

/* cp_register_back -- see crashpoints.h */
void
cp_register_back(struct run *r, int s, int k)
{
	uint64_t ps = 0;
	const struct proto_loc *g = grant_of(r, r->back[0].region,
	    r->back[0].gen, &ps);
	struct proto_reg reg;

	cr_assert_not_null(g); /* victim_at found it */
	reg = cp_reg_at(k, g->region, g->region_off + r->back[0].page * ps);
	cp_register(r, s, &k, &reg, 1, false);
}

