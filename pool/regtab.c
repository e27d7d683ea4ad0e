/*
 * regtab.c -- the region table: 64-byte records on media, one DRAM mirror
 * per record (live flag, key count, page bitmap), and the calls that move
 * a record between FREE, OWNED and ORPHAN.
 *
 * Why this shape: a record is bigger than one atomic store, so its body
 * (gen, owner, off, len, page_size, checksum) is written and persisted
 * while the record still reads FREE, and the state changes only through
 * the first word (state | gen << 32), one aligned 8-byte store:
 *   FREE -> OWNED   [regtab_alloc: body, persist, word, persist]
 *   OWNED -> ORPHAN [pool_region_disown, keys still point in]
 *   OWNED|ORPHAN -> FREE [regtab_free: from disown with no keys, or from
 *                   regtab_unlink when an ORPHAN's last key goes]
 * The body never changes while the region is live, so the checksum holds
 * across OWNED -> ORPHAN (it excludes the state bits). Free space is
 * alloc.c's, rebuilt from the live records at open; key counts and page
 * bitmaps are rebuilt from the index by kv.c. An ORPHAN with no keys left
 * after a crash (key deleted, region not yet freed) is freed by
 * regtab_reap at open. The body also keeps the id of the request that
 * allocated it (req, layout 2): a REGION_ALLOC replayed after a restart
 * finds its region there [pool_region_alloc_req] instead of taking a
 * second one. Pools of POOL_INCOMPAT_RMIRROR keep a copy of every record
 * (rmirror.c), written after the primary: every store to a record's
 * word goes through rrec_set_word, and an alloc ends with rmirror_sync.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "persist.h"
#include "pool_int.h"

static int regtab_alloc(struct pool *p, uint64_t owner, uint64_t req,
    uint64_t len, uint64_t page_size, struct pool_region *out);

static uint64_t
data_units(const struct pool *p)
{
	return p->sb->area[POOL_AREA_DATA].count;
}

/* DRAM state for the valid live record i, whose space is taken */
static int
regtab_adopt(struct pool *p, uint32_t i)
{
	const struct pool_rrec *r = &p->rtab[i];
	struct region_dram *g = &p->reg[i];

	g->npages = r->len / r->page_size;
	g->pages = calloc(g->npages / 64 + 1, sizeof(*g->pages));
	if (g->pages == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for region %u", i);
	}
	g->live = true;
	g->nkeys = 0;
	p->regions++;
	p->orphans += rrec_state(r->word) == POOL_REGION_ORPHAN;
	return 0;
}

/* open: take record i's space and adopt it; 0, CXLP_E_CORRUPT, -ENOMEM */
static int
regtab_load(struct pool *p, uint32_t i)
{
	const struct pool_rrec *r = &p->rtab[i];
	uint64_t start = (r->off - p->data_off) / p->align;
	int rc;

	if (alloc_take(&p->alloc, start, r->len / p->align) != 0) {
		return CXLP_E_CORRUPT;
	}
	if ((rc = regtab_adopt(p, i)) != 0) {
		alloc_release(&p->alloc, start, r->len / p->align);
	}
	return rc;
}

/* regtab_rebuild -- see pool_int.h */
int
regtab_rebuild(struct pool *p, bool repair)
{
	int rc;

	if ((rc = rmirror_prepare(p, repair)) != 0 ||
	    (rc = alloc_init(&p->alloc, data_units(p))) != 0) {
		return rc;
	}
	p->reg = calloc(p->nregions, sizeof(*p->reg));
	if (p->reg == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for the region table");
	}
	for (uint32_t i = 0; i < p->nregions; i++) {
		struct pool_rrec *r = &p->rtab[i];
		const char *why;

		if (rrec_state(r->word) == POOL_REGION_FREE) {
			continue;
		}
		why = layout_rrec_problem(p->sb, p->align, r);
		rc = why ? CXLP_E_CORRUPT : regtab_load(p, i);
		if (rc == -ENOMEM) {
			return rc;
		}
		/* a published record is whole (header comment): damage */
		if (rc != 0) {
			damage_region(p, i, why ? why : "overlaps another "
			    "region");
		}
		if (rc != 0 && repair) {
			rrec_set_word(p, i,
			    rrec_word(POOL_REGION_FREE, rrec_gen(r->word)));
		}
	}
	if (repair) {
		rmirror_sync_all(p);
	}
	return 0;
}

/* regtab_fini -- see pool_int.h */
void
regtab_fini(struct pool *p)
{
	for (uint32_t i = 0; p->reg != NULL && i < p->nregions; i++) {
		free(p->reg[i].pages);
	}
	free(p->reg);
	p->reg = NULL;
	alloc_fini(&p->alloc);
	rmirror_fini(p);
}

/* record i back to FREE: media first, then DRAM */
static void
regtab_free(struct pool *p, uint32_t i)
{
	struct pool_rrec *r = &p->rtab[i];
	struct region_dram *g = &p->reg[i];

	cxlp_assert(g->live && g->nkeys == 0);
	p->orphans -= rrec_state(r->word) == POOL_REGION_ORPHAN;
	if (!p->rdonly) {
		rrec_set_word(p, i,
		    rrec_word(POOL_REGION_FREE, rrec_gen(r->word)));
	}
	alloc_release(&p->alloc, (r->off - p->data_off) / p->align,
	    r->len / p->align);
	free(g->pages);
	memset(g, 0, sizeof(*g));
	p->regions--;
}

static int
alloc_args(const struct pool *p, uint64_t owner, uint64_t len,
    uint64_t page_size, uint64_t *rlen)
{
	if (p->rdonly) {
		return cxlp_fail(-EROFS, "%s: opened read-only", p->path);
	}
	if (owner == 0 || len == 0 || len > p->sb->size) {
		return cxlp_fail(-EINVAL, "region: owner %llu, len %llu",
		    (unsigned long long)owner, (unsigned long long)len);
	}
	*rlen = (len + p->align - 1) / p->align * p->align;
	if (page_size < POOL_PAGE_MIN || page_size > *rlen ||
	    page_size > UINT32_MAX || *rlen / page_size > UINT32_MAX) {
		return cxlp_fail(-EINVAL, "region: page size %llu for %llu "
		    "bytes (min %u, max 4 GiB - 1)",
		    (unsigned long long)page_size,
		    (unsigned long long)*rlen, POOL_PAGE_MIN);
	}
	return 0;
}

static uint32_t
free_record(const struct pool *p)
{
	for (uint32_t i = 0; i < p->nregions; i++) {
		if (rrec_state(p->rtab[i].word) == POOL_REGION_FREE &&
		    !p->reg[i].live) {
			return i;
		}
	}
	cxlp_assert(!"region table has fewer records than data units");
	return 0;
}

/* the OWNED region of owner stamped req, or UINT32_MAX */
static uint32_t
find_stamped(const struct pool *p, uint64_t owner, uint64_t req)
{
	for (uint32_t i = 0; req != 0 && i < p->nregions; i++) {
		const struct pool_rrec *r = &p->rtab[i];

		if (p->reg[i].live && r->req == req && r->owner == owner &&
		    rrec_state(r->word) == POOL_REGION_OWNED) {
			return i;
		}
	}
	return UINT32_MAX;
}

/* pool_region_alloc_req -- see pool.h */
int
pool_region_alloc_req(struct pool *p, uint64_t owner, uint64_t req,
    uint64_t len, uint64_t page_size, struct pool_region *out, bool *found)
{
	uint32_t i = find_stamped(p, owner, req);

	*found = i != UINT32_MAX;
	if (*found) {
		return pool_region_get(p, i, out);
	}
	return regtab_alloc(p, owner, req, len, page_size, out);
}

/* pool_region_find_req -- see pool.h */
int
pool_region_find_req(const struct pool *p, uint64_t owner, uint64_t req,
    struct pool_region *out)
{
	uint32_t i = req == 0 ? UINT32_MAX : find_stamped(p, owner, req);

	return i == UINT32_MAX ? CXLP_E_NOTFOUND : pool_region_get(p, i, out);
}

/* pool_region_alloc -- see pool.h */
int
pool_region_alloc(struct pool *p, uint64_t owner, uint64_t len,
    uint64_t page_size, struct pool_region *out)
{
	return regtab_alloc(p, owner, 0, len, page_size, out);
}

/* FREE -> OWNED for owner, stamped req (header comment) */
static int
regtab_alloc(struct pool *p, uint64_t owner, uint64_t req, uint64_t len,
    uint64_t page_size, struct pool_region *out)
{
	struct pool_rrec rec, *r;
	uint64_t rlen = 0, start;
	uint32_t i;
	int rc;

	if ((rc = alloc_args(p, owner, len, page_size, &rlen)) != 0 ||
	    (rc = alloc_reserve(&p->alloc, rlen / p->align, &start)) != 0) {
		return rc;
	}
	i = free_record(p);
	r = &p->rtab[i];
	memset(&rec, 0, sizeof(rec));
	rec.word = rrec_word(POOL_REGION_OWNED, rrec_gen(r->word) + 1);
	rec.owner = owner;
	rec.off = p->data_off + start * p->align;
	rec.len = rlen;
	rec.page_size = page_size;
	rec.req = req;
	rec.checksum = layout_rrec_checksum(&rec);
	/* the body while the word still says FREE, then publish */
	memcpy((uint8_t *)r + 8, (uint8_t *)&rec + 8, sizeof(rec) - 8);
	pool_persist_cb(p, r, sizeof(*r));
	if ((rc = regtab_adopt(p, i)) != 0) {
		alloc_release(&p->alloc, start, rlen / p->align);
		return rc;
	}
	pool_store8(p, &r->word, rec.word);
	rmirror_sync(p, i); /* the copy after the primary (rmirror.c) */
	return pool_region_get(p, i, out);
}

/* pool_region_get -- see pool.h */
int
pool_region_get(const struct pool *p, uint32_t id, struct pool_region *out)
{
	const struct pool_rrec *r;

	if (id >= p->nregions || !p->reg[id].live) {
		return cxlp_fail(CXLP_E_NOTFOUND, "region %u is not allocated",
		    id);
	}
	r = &p->rtab[id];
	out->id = id;
	out->gen = rrec_gen(r->word);
	out->state = rrec_state(r->word);
	out->owner = out->state == POOL_REGION_OWNED ? r->owner : 0;
	out->off = r->off;
	out->len = r->len;
	out->page_size = r->page_size;
	out->nkeys = p->reg[id].nkeys;
	return 0;
}

/* pool_region_disown -- see pool.h; disowning an ORPHAN is a no-op */
int
pool_region_disown(struct pool *p, uint32_t id)
{
	struct pool_rrec *r;

	if (p->rdonly) {
		return cxlp_fail(-EROFS, "%s: opened read-only", p->path);
	}
	if (id >= p->nregions || !p->reg[id].live) {
		return cxlp_fail(CXLP_E_NOTFOUND, "region %u is not allocated",
		    id);
	}
	r = &p->rtab[id];
	if (p->reg[id].nkeys == 0) {
		regtab_free(p, id);
	} else if (rrec_state(r->word) == POOL_REGION_OWNED) {
		rrec_set_word(p, id,
		    rrec_word(POOL_REGION_ORPHAN, rrec_gen(r->word)));
		p->orphans++;
	}
	return 0;
}

/* pool_region_max -- see pool.h */
uint32_t
pool_region_max(const struct pool *p)
{
	return p->nregions;
}

/* regtab_link -- see pool_int.h */
int
regtab_link(struct pool *p, const struct kv_val *v)
{
	struct region_dram *g;
	const struct pool_rrec *r;

	if (v->region >= p->nregions || !p->reg[v->region].live) {
		return CXLP_E_CORRUPT;
	}
	g = &p->reg[v->region];
	r = &p->rtab[v->region];
	if (v->gen != rrec_gen(r->word) || v->page >= g->npages ||
	    v->len > r->page_size ||
	    (g->pages[v->page / 64] >> (v->page % 64) & 1u)) {
		return CXLP_E_CORRUPT;
	}
	g->pages[v->page / 64] |= 1ull << (v->page % 64);
	g->nkeys++;
	return 0;
}

/* regtab_unlink -- see pool_int.h */
void
regtab_unlink(struct pool *p, const struct kv_val *v)
{
	struct region_dram *g = &p->reg[v->region];

	cxlp_assert(g->live && g->nkeys > 0);
	cxlp_assert(g->pages[v->page / 64] >> (v->page % 64) & 1u);
	g->pages[v->page / 64] &= ~(1ull << (v->page % 64));
	g->nkeys--;
	if (g->nkeys == 0 &&
	    rrec_state(p->rtab[v->region].word) == POOL_REGION_ORPHAN) {
		regtab_free(p, v->region);
	}
}

/* regtab_reap -- free every ORPHAN region no key points into (left by a
 * crash between a last key's delete and its region's free); without
 * repair only count them. */
uint64_t
regtab_reap(struct pool *p, bool repair)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < p->nregions; i++) {
		if (p->reg[i].live && p->reg[i].nkeys == 0 &&
		    rrec_state(p->rtab[i].word) == POOL_REGION_ORPHAN) {
			n++;
			if (repair) {
				regtab_free(p, i);
			}
		}
	}
	return n;
}

/* regtab_key_off -- see pool_int.h */
uint64_t
regtab_key_off(const struct pool *p, const struct kv_val *v)
{
	const struct pool_rrec *r = &p->rtab[v->region];

	return r->off + (uint64_t)v->page * r->page_size;
}
