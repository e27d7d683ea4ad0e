/*
 * kv.c -- the pool's KV calls: kvindex.c's table tied to the region
 * table. kvindex knows keys and (region, gen, page, len) tuples; this
 * module enforces who may register what where (owner, bounds, one key per
 * page) and keeps each region's key count and page bitmap in step, so an
 * ORPHAN region is freed exactly when its last key goes.
 *
 * Ordering: pool_kv_insert makes the index entry durable (kvindex_put)
 * before it counts the key; pool_kv_remove makes the delete durable
 * (kvindex_drop) before regtab_unlink may free the region on media, so a
 * crash in between leaves an ORPHAN with no keys, which open reaps.
 */
#include <errno.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "crashpt.h"
#include "persist.h"
#include "pool_int.h"

static void
kv_out(const struct pool *p, const struct kv_val *v, uint64_t slot,
    struct pool_kv *out)
{
	if (out == NULL) {
		return;
	}
	out->region = v->region;
	out->gen = v->gen;
	out->off = regtab_key_off(p, v);
	out->len = v->len;
	out->slot = slot;
}

/* kv_rebuild -- see pool_int.h */
int
kv_rebuild(struct pool *p, bool repair)
{
	uint64_t cursor = 0, slot;
	struct kv_val v;
	const void *key;
	size_t klen;

	p->keys = p->key_bytes = p->value_bytes = 0;
	while (kvindex_next(&p->kv, &cursor, &slot) == 1) {
		kvindex_get(&p->kv, slot, &v, &key, &klen);
		if (regtab_link(p, &v) == 0) {
			evict_link(p, slot, v.region);
			p->keys++;
			p->key_bytes += klen;
			p->value_bytes += v.len;
			continue;
		}
		/* no crash unlinks a key from its region (kv.c ordering) */
		damage_key(p, slot, &v, key, klen);
		if (repair) {
			kvindex_drop(&p->kv, slot);
		}
	}
	return 0;
}

static int
insert_checks(const struct pool *p, uint64_t owner, const void *key,
    size_t klen, uint32_t region, uint64_t off, uint64_t len)
{
	const struct pool_rrec *r;

	if (key == NULL || klen == 0 || klen > CXLP_KEY_MAX) {
		return cxlp_fail(CXLP_E_KEYLEN, "key length %zu not in 1..%d",
		    klen, CXLP_KEY_MAX);
	}
	if (p->rdonly) {
		return cxlp_fail(-EROFS, "%s: opened read-only", p->path);
	}
	r = &p->rtab[region < p->nregions ? region : 0];
	if (region >= p->nregions || !p->reg[region].live ||
	    rrec_state(r->word) != POOL_REGION_OWNED || r->owner != owner) {
		return cxlp_fail(CXLP_E_PERM, "region %u is not owned by "
		    "session %llu", region, (unsigned long long)owner);
	}
	/* a whole page: the region's length need not be a multiple of its
	 * page size, and a partial last page is no page (regtab_link) */
	if (off < r->off || off - r->off >= r->len ||
	    (off - r->off) % r->page_size != 0 ||
	    (off - r->off) / r->page_size >= r->len / r->page_size) {
		return cxlp_fail(CXLP_E_BOUNDS, "offset %llu is not a page "
		    "of region %u", (unsigned long long)off, region);
	}
	if (len > r->page_size) {
		return cxlp_fail(CXLP_E_TOOBIG, "value of %llu bytes exceeds "
		    "page size %llu", (unsigned long long)len,
		    (unsigned long long)r->page_size);
	}
	return 0;
}

/* pool_kv_insert -- see pool.h */
int
pool_kv_insert(struct pool *p, uint64_t owner, const void *key,
    size_t klen, uint32_t region, uint64_t off, uint64_t len,
    struct pool_kv *out, bool *inserted)
{
	struct kv_probe pr;
	struct kv_val v;
	uint64_t slot;
	int rc;

	*inserted = false;
	if ((rc = insert_checks(p, owner, key, klen, region, off, len)) != 0) {
		return rc;
	}
	if (kvindex_probe(&p->kv, key, klen, &pr) == 1) {
		kvindex_get(&p->kv, pr.slot, &v, NULL, NULL);
		kv_out(p, &v, pr.slot, out);
		return 0;
	}
	v.region = region;
	v.gen = rrec_gen(p->rtab[region].word);
	v.page = (uint32_t)((off - p->rtab[region].off) /
	    p->rtab[region].page_size);
	v.len = (uint32_t)len;
	if (p->reg[region].pages[v.page / 64] >> (v.page % 64) & 1u) {
		return cxlp_fail(CXLP_E_BUSY, "page at %llu already holds a "
		    "key", (unsigned long long)off);
	}
	if ((rc = kvindex_put(&p->kv, &pr, key, klen, &v, &slot)) != 0) {
		return rc;
	}
	cxlp_assert(regtab_link(p, &v) == 0);
	evict_link(p, slot, region);
	p->keys++;
	p->key_bytes += klen;
	p->value_bytes += len;
	kv_out(p, &v, slot, out);
	*inserted = true;
	return 0;
}

/* pool_kv_check -- see pool.h */
int
pool_kv_check(const struct pool *p, uint64_t owner, const void *key,
    size_t klen, uint32_t region, uint64_t off, uint64_t len)
{
	const struct pool_rrec *r;
	uint64_t page;
	int rc = insert_checks(p, owner, key, klen, region, off, len);

	if (rc != 0) {
		return rc;
	}
	r = &p->rtab[region];
	page = (off - r->off) / r->page_size;
	if (p->reg[region].pages[page / 64] >> (page % 64) & 1u) {
		return cxlp_fail(CXLP_E_BUSY, "page at %llu already holds a "
		    "key", (unsigned long long)off);
	}
	return 0;
}

/* pool_commit_begin -- see pool.h: odd, and ordered before every store
 * of the inserts that follow (a release fence orders earlier stores
 * before later ones) */
void
pool_commit_begin(struct pool *p)
{
	pool_set8(&p->sb->commit_seq, p->sb->commit_seq | 1u);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* pool_commit_end -- see pool.h: even, after every store of the inserts
 * (pool_set8 is a release store) */
void
pool_commit_end(struct pool *p)
{
	pool_set8(&p->sb->commit_seq, (p->sb->commit_seq | 1u) + 1u);
}

/* pool_commit_step -- see pool.h */
void
pool_commit_step(struct pool *p)
{
	(void)p;
	crashpt_commit_pause();
}

/* pool_commit_recover -- see pool.h */
void
pool_commit_recover(struct pool *p)
{
	if (p->sb->commit_seq & 1u) {
		pool_commit_end(p);
	}
}

/* pool_kv_hash -- see pool.h */
uint64_t
pool_kv_hash(const void *key, size_t klen)
{
	return kvindex_hash(key, klen);
}

/* pool_kv_prefetch -- see pool.h; two passes, so that the slot loads
 * of the second find the lines the first one asked for */
void
pool_kv_prefetch(const struct pool *p, const uint64_t *h, size_t n,
    bool write)
{
	for (size_t i = 0; i < n; i++) {
		kvindex_prefetch(&p->kv, h[i], write);
	}
	for (size_t i = 0; i < n; i++) {
		kvindex_prefetch_key(&p->kv, h[i]);
	}
}

/* pool_kv_lookup -- see pool.h */
int
pool_kv_lookup(const struct pool *p, const void *key, size_t klen,
    struct pool_kv *out)
{
	struct kv_val v;
	uint64_t slot;

	if (key == NULL || klen == 0 || klen > CXLP_KEY_MAX) {
		return cxlp_fail(CXLP_E_KEYLEN, "key length %zu not in 1..%d",
		    klen, CXLP_KEY_MAX);
	}
	if (kvindex_lookup(&p->kv, key, klen, &v, &slot) != 0 ||
	    v.region >= p->nregions || !p->reg[v.region].live) {
		return cxlp_fail(CXLP_E_NOTFOUND, "key not in the pool");
	}
	kv_out(p, &v, slot, out);
	return 0;
}

/* pool_kv_remove -- see pool.h */
int
pool_kv_remove(struct pool *p, const void *key, size_t klen,
    struct pool_kv *out)
{
	struct kv_val v;
	uint64_t slot;

	if (key == NULL || klen == 0 || klen > CXLP_KEY_MAX) {
		return cxlp_fail(CXLP_E_KEYLEN, "key length %zu not in 1..%d",
		    klen, CXLP_KEY_MAX);
	}
	if (p->rdonly) {
		return cxlp_fail(-EROFS, "%s: opened read-only", p->path);
	}
	if (kvindex_lookup(&p->kv, key, klen, &v, &slot) != 0) {
		return cxlp_fail(CXLP_E_NOTFOUND, "key not in the pool");
	}
	kv_drop_slot(p, slot, out);
	return 0;
}

/* kv_drop_slot -- see pool_int.h */
void
kv_drop_slot(struct pool *p, uint64_t slot, struct pool_kv *out)
{
	struct kv_val v;
	const void *k;
	size_t kl;

	cxlp_assert(kvindex_get(&p->kv, slot, &v, &k, &kl) == 0);
	kv_out(p, &v, slot, out);
	kvindex_drop(&p->kv, slot);
	p->keys--;
	p->key_bytes -= kl;
	p->value_bytes -= v.len;
	evict_unlink(p, slot, v.region);
	regtab_unlink(p, &v);
}

/* pool_kv_next -- see pool.h */
int
pool_kv_next(const struct pool *p, uint64_t *cursor, struct pool_kv *kv,
    const void **key, size_t *klen)
{
	uint64_t slot;
	struct kv_val v;

	while (kvindex_next(&p->kv, cursor, &slot) == 1) {
		kvindex_get(&p->kv, slot, &v, key, klen);
		if (v.region < p->nregions && p->reg[v.region].live) {
			kv_out(p, &v, slot, kv);
			return 1;
		}
	}
	return 0;
}
