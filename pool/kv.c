/*
 * kv.c -- the pool's KV calls: kvindex.c's table tied to the region
 * table. kvindex knows keys and (region, gen, page, len) tuples; this
 * module enforces who may register what where (owner, bounds, one key per
 * page) and keeps each region's key count and page bitmap in step, so an
 * ORPHAN region is freed exactly when its last key goes.
 *
 * DESIGN NOTES
 *
 * 1. Ordering: pool_kv_insert makes the index entry durable (kvindex_put)
 *    before it counts the key; pool_kv_remove makes the delete durable
 *    (kvindex_drop) before regtab_unlink may free the region on media, so
 *    a crash in between leaves an ORPHAN with no keys, which open reaps.
 *
 * 2. A request group's commit is one durable step. Its keys go into the
 *    index as KV_PEND slots (kvindex.c note 11), which every reader takes
 *    for absent; the commit point is one persisted 8-byte store; only
 *    then does each slot turn LIVE. On media, with s = commit_seq:
 *      a. s odd, persisted                        [pool_commit_begin]
 *      b. each key: a PEND slot, durable          [pool_kv_stage]
 *      c. commit_done = s, persisted: the commit point
 *                                                 [pool_commit_publish]
 *      d. each PEND slot LIVE, persisted          [pool_commit_publish]
 *         (or, for a commit that fails in b: each PEND slot TOMB
 *                                                 [pool_commit_rollback])
 *      e. s even, persisted                       [pool_commit_end]
 *    Recovery [kv_commit_mode, kv_commit_settle], with s odd: if
 *    commit_done == s the commit passed c, and every PEND slot becomes
 *    LIVE; if not, every PEND slot becomes TOMB; then s even. Each step
 *    is idempotent and s changes last, so a crash during recovery leaves
 *    the same decision to the next open. Pages: a PEND slot links its
 *    page to its region (DRAM) like a key, so no other key takes it
 *    during the commit; after a crash only LIVE slots are linked (so a
 *    rolled-back group's pages hold no key and go with their region as
 *    any unregistered page does). Eviction meets a key only once LIVE
 *    (evlist_link at d). Readers: a lock-free reader of one key sees it
 *    at d at the earliest, after the commit point; a reader of many
 *    checks s around its reads (even and unchanged: none of b..d ran);
 *    the server's LOOKUP runs under the lock the whole commit holds.
 *    Cost per commit: three persisted stores (a, c, e); per key, one
 *    (d) more than a plain insert.
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
			evlist_link(p, slot, v.region);
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

/* pool_kv_insert, or with pend pool_kv_stage (note 2b) */
static int
kv_insert_as(struct pool *p, uint64_t owner, const void *key, size_t klen,
    uint32_t region, uint64_t off, uint64_t len, struct pool_kv *out,
    bool *inserted, bool pend)
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
		/* LIVE, or PEND: staged earlier in this commit (a key named
		 * twice in one group); either way the slot's own body */
		cxlp_assert(kvindex_get_held(&p->kv, pr.slot, &v) == 0);
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
	rc = pend ? kvindex_put_pend(&p->kv, &pr, key, klen, &v, &slot) :
	    kvindex_put(&p->kv, &pr, key, klen, &v, &slot);
	if (rc != 0) {
		return rc;
	}
	cxlp_assert(regtab_link(p, &v) == 0);
	if (!pend) {
		evlist_link(p, slot, region);
	}
	p->keys++;
	p->key_bytes += klen;
	p->value_bytes += len;
	kv_out(p, &v, slot, out);
	*inserted = true;
	return 0;
}

/* pool_kv_insert -- see pool.h */
int
pool_kv_insert(struct pool *p, uint64_t owner, const void *key,
    size_t klen, uint32_t region, uint64_t off, uint64_t len,
    struct pool_kv *out, bool *inserted)
{
	return kv_insert_as(p, owner, key, klen, region, off, len, out,
	    inserted, false);
}

/* pool_kv_stage -- see pool.h */
int
pool_kv_stage(struct pool *p, uint64_t owner, const void *key,
    size_t klen, uint32_t region, uint64_t off, uint64_t len,
    struct pool_kv *out, bool *inserted)
{
	cxlp_assert(p->sb->commit_seq & 1u);
	return kv_insert_as(p, owner, key, klen, region, off, len, out,
	    inserted, true);
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

/* pool_commit_begin -- see pool.h; note 2a. The release store and the
 * fence order it before every store of the inserts that follow. */
void
pool_commit_begin(struct pool *p)
{
	cxlp_assert(!(p->sb->commit_seq & 1u));
	crashpt_scope(1);
	pool_store8(p, &p->sb->commit_seq, p->sb->commit_seq | 1u);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	p->kv.pend = KV_PEND_KEEP;
}

/* slot i holds a PEND key: its value in *v */
static bool
slot_pend(const struct pool *p, uint64_t i, struct kv_val *v)
{
	const struct kv_slot *s = &p->kv.slots[i];

	if (i >= p->kv.nslots ||
	    kv_state(kvindex_load_word(s)) != KV_PEND) {
		return false;
	}
	*v = (struct kv_val){ s->region, s->gen, s->page, s->len };
	return true;
}

/* pool_commit_publish -- see pool.h; notes 2c and 2d */
void
pool_commit_publish(struct pool *p, const uint64_t *slots, size_t n)
{
	struct kv_val v;

	cxlp_assert(p->sb->commit_seq & 1u);
	pool_store8(p, &p->sb->commit_done, p->sb->commit_seq);
	for (size_t i = 0; i < n; i++) {
		if (slot_pend(p, slots[i], &v)) {
			kvindex_publish(&p->kv, slots[i]);
			evlist_link(p, slots[i], v.region);
			crashpt_commit_pause();
		}
	}
}

/* pool_commit_rollback -- see pool.h; a staged key leaves as a removed
 * one does (kv_drop_slot), but eviction never knew it */
void
pool_commit_rollback(struct pool *p, const uint64_t *slots, size_t n)
{
	struct kv_val v;
	const void *k;
	size_t kl;

	for (size_t i = 0; i < n; i++) {
		if (!slot_pend(p, slots[i], &v)) {
			continue;
		}
		cxlp_assert(kvindex_slot_held(&p->kv, slots[i], &k, &kl));
		kvindex_drop(&p->kv, slots[i]);
		p->keys--;
		p->key_bytes -= kl;
		p->value_bytes -= v.len;
		regtab_unlink(p, &v);
	}
}

/* pool_commit_end -- see pool.h; note 2e */
void
pool_commit_end(struct pool *p)
{
	pool_store8(p, &p->sb->commit_seq, (p->sb->commit_seq | 1u) + 1u);
	p->kv.pend = KV_PEND_NONE;
	crashpt_scope(0);
}

/* pool_commit_step -- see pool.h */
void
pool_commit_step(struct pool *p)
{
	(void)p;
	crashpt_commit_pause();
}

/* kv_commit_mode -- see pool_int.h */
bool
kv_commit_mode(struct pool *p)
{
	const struct pool_sb *sb = p->sb;

	if (!(sb->commit_seq & 1u)) {
		p->kv.pend = KV_PEND_NONE;
		return false;
	}
	p->kv.pend = sb->commit_done == sb->commit_seq ? KV_PEND_KEEP :
	    KV_PEND_DROP;
	return true;
}

/* kv_commit_settle -- see pool_int.h */
void
kv_commit_settle(struct pool *p)
{
	if (p->sb->commit_seq & 1u) {
		log_info("op=commit_recover pool=%s seq=%llu outcome=%s",
		    p->path, (unsigned long long)p->sb->commit_seq,
		    p->kv.pend == KV_PEND_KEEP ? "completed" : "rolled_back");
		pool_store8(p, &p->sb->commit_seq, p->sb->commit_seq + 1u);
	}
	p->kv.pend = KV_PEND_NONE;
}

/* pool_commit_pending -- see pool.h */
bool
pool_commit_pending(const struct pool *p, uint64_t *keys, bool *complete)
{
	struct kv_val v;

	*keys = 0;
	*complete = p->kv.pend == KV_PEND_KEEP;
	if (!(p->sb->commit_seq & 1u)) {
		return false;
	}
	for (uint64_t i = 0; i < p->kv.nslots; i++) {
		*keys += slot_pend(p, i, &v);
	}
	return true;
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
	evlist_unlink(p, slot, v.region);
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
