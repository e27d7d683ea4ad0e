/*
 * test_kvread_fresh.c -- kvread.c on memory another host writes (its note
 * 9): every line a lookup or kvread_word reads is dropped first.
 *
 * Two buffers stand for the two hosts: the writer's (kvindex.c and the
 * region records written there, as the metaserver's host holds them, and
 * as the device holds them once written back) and the reader's cache of
 * it, which kvread reads. The reader's fresh hook copies the lines of a
 * range from the writer's buffer into the cache (a drop, then a reload
 * from the device). Before each call the cache is poison everywhere, so a
 * read of any line the call did not drop meets the poison (zeros: a cache
 * taken while the index was empty; or 0xa5 bytes), and the answer differs
 * from kvindex's: a missing drop fails the comparison. A write on the
 * writer's side made during a lookup (the hook's meddle) shows that the
 * words checked after a read are dropped again.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxlpool.h"
#include "kvindex.h"
#include "kvread.h"
#include "pool.h"

#define ALIGN (2u << 20)
#define PS 16384u
#define LINE 64u
#define POISON 0xa5
#define MAX_DROPS 8192

struct twohost {
	struct pool_sb sb;
	uint8_t *dev;   /* the writer's memory (and the device) */
	uint8_t *cache; /* the reader's cached copy: what kvread reads */
	uint64_t len;
	struct pool_rrec *rtab; /* in dev */
	struct keyheap heap;
	struct kvindex kv;
	struct kvread kr;       /* over cache */
	uint64_t lo[MAX_DROPS], hi[MAX_DROPS]; /* lines dropped since */
	size_t ndrops;
	uint64_t calls;
	uint8_t poison;         /* what the cache holds where not dropped */
	/* a write on the writer's host while the reader reads: run once, at
	 * the first drop of a range that holds meddle_at */
	void (*meddle)(struct twohost *t);
	const uint8_t *meddle_at; /* in cache */
};

static void
no_persist(void *ctx, const void *addr, size_t len)
{
	(void)ctx;
	(void)addr;
	(void)len;
}

/* the reader's drop: its lines of [addr, addr + len) reloaded */
static void
cache_fresh(const void *ctx, const void *addr, size_t len)
{
	struct twohost *t = (struct twohost *)(uintptr_t)ctx;
	const uint8_t *a = addr;
	uint64_t lo, hi;

	cr_assert(a >= t->cache && len <= t->len &&
	    (uint64_t)(a - t->cache) <= t->len - len, "drop outside the map");
	lo = (uint64_t)(a - t->cache) / LINE * LINE;
	hi = ((uint64_t)(a - t->cache) + len + LINE - 1) / LINE * LINE;
	memcpy(t->cache + lo, t->dev + lo, hi - lo);
	if (t->meddle != NULL && t->meddle_at >= t->cache + lo &&
	    t->meddle_at < t->cache + hi) {
		void (*m)(struct twohost *) = t->meddle;

		t->meddle = NULL;
		m(t); /* after this drop's reload: the reader's copy is old */
	}
	cr_assert_lt(t->ndrops, MAX_DROPS);
	t->lo[t->ndrops] = lo;
	t->hi[t->ndrops++] = hi;
	t->calls++;
}

/* every line of the cache poison again (only the dropped ones are not) */
static void
repoison(struct twohost *t)
{
	for (size_t i = 0; i < t->ndrops; i++) {
		memset(t->cache + t->lo[i], t->poison, t->hi[i] - t->lo[i]);
	}
	t->ndrops = 0;
}

static struct twohost *
setup(uint64_t slots)
{
	struct twohost *t = calloc(1, sizeof(*t));
	const struct pool_area *a;
	char why[200];

	cr_assert_not_null(t);
	a = t->sb.area;
	cr_assert_eq(layout_plan(&t->sb, 64u << 20, ALIGN, slots, 16, why,
	    sizeof(why)), 0, "%s", why);
	t->len = a[POOL_AREA_DATA].off;
	t->dev = aligned_alloc(4096, t->len);
	t->cache = aligned_alloc(4096, t->len);
	cr_assert(t->dev != NULL && t->cache != NULL);
	memset(t->dev, 0, t->len);
	memcpy(t->dev, &t->sb, sizeof(t->sb));
	memset(t->cache, POISON, t->len);
	t->rtab = (void *)(t->dev + a[POOL_AREA_REGION].off);
	cr_assert_eq(keyheap_init(&t->heap, t->dev + a[POOL_AREA_HEAP].off,
	    a[POOL_AREA_HEAP].count * KV_GRANULE), 0);
	kvindex_init(&t->kv, (void *)(t->dev + a[POOL_AREA_INDEX].off),
	    a[POOL_AREA_INDEX].count, &t->heap, no_persist, NULL);
	kvindex_format(&t->kv);
	cr_assert_eq(kvread_init(&t->kr, &t->sb, t->cache, t->len, why,
	    sizeof(why)), 0, "%s", why);
	cr_assert_null(t->kr.fresh, "kvread_init leaves the hook unset");
	t->kr.fresh = cache_fresh;
	t->kr.fresh_ctx = t;
	return t;
}

static void
teardown(struct twohost *t)
{
	keyheap_fini(&t->heap);
	free(t->dev);
	free(t->cache);
	free(t);
}

static void
region_put(struct twohost *t, uint32_t id, uint32_t gen, uint64_t unit)
{
	struct pool_rrec *r = &t->rtab[id];

	memset(r, 0, sizeof(*r));
	r->owner = 1;
	r->off = t->sb.area[POOL_AREA_DATA].off + unit * ALIGN;
	r->len = 2 * ALIGN;
	r->page_size = PS;
	r->checksum = layout_rrec_checksum(&(struct pool_rrec){
	    .word = rrec_word(POOL_REGION_OWNED, gen), .owner = 1,
	    .off = r->off, .len = r->len, .page_size = PS });
	__atomic_store_n(&r->word, rrec_word(POOL_REGION_OWNED, gen),
	    __ATOMIC_RELEASE);
}

static size_t
key_of(char *buf, size_t n, unsigned i)
{
	return (size_t)snprintf(buf, n, "fresh-%u@model@rank%u", i, i % 5);
}

/* kvread on a poisoned cache agrees with kvindex on the writer's memory,
 * and a hit's word is the slot's word now (kvread_word, also poisoned
 * first) */
static void
agree(struct twohost *t, const void *key, size_t klen,
    const struct kvread_loc *got, int rc)
{
	struct kv_val v;
	uint64_t slot;
	int want = kvindex_lookup(&t->kv, key, klen, &v, &slot);

	cr_assert_eq(rc, want, "%.*s: kvread %d on the reader's cache, "
	    "kvindex %d: a line read without its drop", (int)klen,
	    (const char *)key, rc, want);
	if (want != 0) {
		return;
	}
	cr_assert_eq(got->slot, slot);
	cr_assert_eq(got->region, v.region);
	cr_assert_eq(got->off, t->rtab[v.region].off +
	    (uint64_t)v.page * PS);
	cr_assert_eq(got->word, t->kv.slots[slot].word);
	repoison(t);
	cr_assert_eq(kvread_word(&t->kr, slot), t->kv.slots[slot].word,
	    "kvread_word read the slot's word without dropping its line");
}

TestSuite(kvread_fresh, .timeout = 60);

Test(kvread_fresh, every_line_a_lookup_reads_is_dropped_first)
{
	enum { KEYS = 300, NB = 2 * KVREAD_BATCH + 9 };
	struct twohost *t = setup(1024);
	static char bkeys[NB][64];
	const void *kp[NB];
	size_t kl[NB];
	struct kvread_loc out[NB];
	int rc[NB];
	unsigned seed = 99;
	char key[64];

	region_put(t, 0, 3, 0);
	region_put(t, 1, 8, 2);
	for (int op = 0; op < 6000; op++) {
		unsigned i = (unsigned)rand_r(&seed) % KEYS;
		size_t n = key_of(key, sizeof(key), i);
		uint32_t r = (uint32_t)rand_r(&seed) % 2;
		struct kv_val v = { r, r ? 8 : 3,
		    (uint32_t)rand_r(&seed) % (2 * ALIGN / PS), 100 + i };
		struct kvread_loc l;
		struct kv_val old;
		uint64_t s;
		bool ins;

		if (kvindex_lookup(&t->kv, key, n, NULL, NULL) == 0) {
			cr_assert_eq(kvindex_remove(&t->kv, key, n, NULL), 0);
		} else if (t->kv.live < t->kv.max_live) {
			cr_assert_eq(kvindex_insert(&t->kv, key, n, &v, &s,
			    &ins, &old), 0);
		}
		n = key_of(key, sizeof(key), (unsigned)rand_r(&seed) % KEYS);
		t->poison = op % 2 ? POISON : 0;
		repoison(t);
		agree(t, key, n, &l, kvread_lookup(&t->kr, key, n, &l));
		if (op % 500 != 0) {
			continue;
		}
		for (unsigned j = 0; j < NB; j++) {
			kl[j] = key_of(bkeys[j], sizeof(bkeys[j]), j % KEYS);
			kp[j] = bkeys[j];
		}
		repoison(t);
		kvread_lookup_batch(&t->kr, NB, kp, kl, out, rc);
		for (unsigned j = 0; j < NB; j++) {
			agree(t, kp[j], kl[j], &out[j], rc[j]);
		}
	}
	cr_assert_gt(t->calls, 0);
	teardown(t);
}

/* ---- writes during a lookup ------------------------------------------- */

static struct kv_val moved = { 0, 3, 9, 77 };

/* key "k" stored again elsewhere (a delete and a store of the server) */
static void
restore_k(struct twohost *t)
{
	struct kv_val old;
	uint64_t s;
	bool ins;

	cr_assert_eq(kvindex_remove(&t->kv, "k", 1, NULL), 0);
	cr_assert_eq(kvindex_insert(&t->kv, "k", 1, &moved, &s, &ins, &old),
	    0);
}

/* where kvread finds "k" stored at v first, while meddle runs at the
 * first drop of the cache line holding at (an offset in the cache) */
static void
lookup_meddled(struct twohost *t, void (*meddle)(struct twohost *),
    uint64_t at, struct kvread_loc *l)
{
	t->meddle = meddle;
	t->meddle_at = t->cache + at;
	repoison(t);
	cr_assert_eq(kvread_lookup(&t->kr, "k", 1, l), 0);
	cr_assert_null(t->meddle, "the lookup never dropped the line");
}

Test(kvread_fresh, a_slot_changed_while_its_key_record_is_read_is_read_again)
{
	struct twohost *t = setup(64);
	struct kv_val v = { 0, 3, 2, 50 }, old;
	struct kvread_loc l;
	uint64_t s;
	bool ins;

	region_put(t, 0, 3, 0);
	cr_assert_eq(kvindex_insert(&t->kv, "k", 1, &v, &s, &ins, &old), 0);
	/* the drop of k's record: the body was read, w2 is next */
	lookup_meddled(t, restore_k, (uint64_t)((const uint8_t *)
	    t->heap.base + (uint64_t)t->kv.slots[s].key * KV_GRANULE -
	    t->dev), &l);
	cr_assert_eq(l.off, t->rtab[0].off + (uint64_t)moved.page * PS,
	    "the lookup kept the location it read before the slot changed "
	    "(w2 read from the line cached before the change)");
	cr_assert_eq(l.word, t->kv.slots[l.slot].word);
	teardown(t);
}

/* region 0 freed and granted again as gen 4, and "k" stored in it */
static void
regrant(struct twohost *t)
{
	region_put(t, 0, 4, 0);
	moved.gen = 4;
	restore_k(t);
}

Test(kvread_fresh, a_region_record_changed_while_it_is_read_is_read_again)
{
	struct twohost *t = setup(64);
	struct kv_val v = { 0, 3, 2, 50 }, old;
	struct kvread_loc l;
	uint64_t s;
	bool ins;

	region_put(t, 0, 3, 0);
	cr_assert_eq(kvindex_insert(&t->kv, "k", 1, &v, &s, &ins, &old), 0);
	lookup_meddled(t, regrant, (uint64_t)((uint8_t *)&t->rtab[0] -
	    t->dev), &l);
	cr_assert_eq(l.gen, 4, "the lookup took region gen %u, freed while it "
	    "read the record (its word read again from the stale line)",
	    l.gen);
	cr_assert_eq(l.off, t->rtab[0].off + (uint64_t)moved.page * PS);
	teardown(t);
}
