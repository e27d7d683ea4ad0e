/*
 * test_kvread.c -- tests of pool/kvread.c: lock-free lookups over a
 * metadata area that kvindex.c writes.
 *
 * The metadata area is a malloc'ed buffer laid out by layout_plan (no
 * file, no mapping): kvindex.c writes it through a no-op persist, region
 * records are written by hand, and kvread reads it as a handler would.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxlpool.h"
#include "kvindex.h"
#include "kvread.h"
#include "pool.h"

#define ALIGN (2u << 20)
#define PS 16384u /* page size of the test regions */

struct meta {
	struct pool_sb sb;
	uint8_t *base;
	uint64_t len;
	struct pool_rrec *rtab;
	struct keyheap heap;
	struct kvindex kv;
	struct kvread kr;
};

static void
no_persist(void *ctx, const void *addr, size_t len)
{
	(void)ctx;
	(void)addr;
	(void)len;
}

static void
meta_setup(struct meta *m, uint64_t slots)
{
	const struct pool_area *a = m->sb.area;
	char why[200];

	memset(m, 0, sizeof(*m));
	cr_assert_eq(layout_plan(&m->sb, 64u << 20, ALIGN, slots, 16, why,
	    sizeof(why)), 0, "%s", why);
	m->len = a[POOL_AREA_DATA].off;
	m->base = aligned_alloc(4096, m->len);
	cr_assert_not_null(m->base);
	memset(m->base, 0, m->len);
	memcpy(m->base, &m->sb, sizeof(m->sb));
	m->rtab = (void *)(m->base + a[POOL_AREA_REGION].off);
	cr_assert_eq(keyheap_init(&m->heap, m->base + a[POOL_AREA_HEAP].off,
	    a[POOL_AREA_HEAP].count * KV_GRANULE), 0);
	kvindex_init(&m->kv, (void *)(m->base + a[POOL_AREA_INDEX].off),
	    a[POOL_AREA_INDEX].count, &m->heap, no_persist, NULL);
	kvindex_format(&m->kv);
	cr_assert_eq(kvread_init(&m->kr, &m->sb, m->base, m->len, why,
	    sizeof(why)), 0, "%s", why);
}

static void
meta_fini(struct meta *m)
{
	keyheap_fini(&m->heap);
	free(m->base);
}

/* region record id: units [unit, unit + 2) of the data area, PS pages */
static void
region_put(struct meta *m, uint32_t id, uint32_t state, uint32_t gen,
    uint64_t unit)
{
	struct pool_rrec *r = &m->rtab[id];

	memset(r, 0, sizeof(*r));
	r->owner = 1;
	r->off = m->sb.area[POOL_AREA_DATA].off + unit * ALIGN;
	r->len = 2 * ALIGN;
	r->page_size = PS;
	r->checksum = layout_rrec_checksum(&(struct pool_rrec){
	    .word = rrec_word(state, gen), .owner = 1, .off = r->off,
	    .len = r->len, .page_size = PS });
	__atomic_store_n(&r->word, rrec_word(state, gen), __ATOMIC_RELEASE);
}

static size_t
key_of(char *buf, size_t n, const char *kind, unsigned i)
{
	return (size_t)snprintf(buf, n, "%s-%u@model@rank0", kind, i);
}

static void
put_ok(struct meta *m, const char *key, size_t klen, struct kv_val v)
{
	uint64_t slot;
	bool ins;
	struct kv_val old;

	cr_assert_eq(kvindex_insert(&m->kv, key, klen, &v, &slot, &ins,
	    &old), 0);
	cr_assert(ins);
}

/* kvread agrees with kvindex_lookup on key */
static void
agree(struct meta *m, const char *key, size_t klen)
{
	struct kvread_loc l;
	struct kv_val v;
	uint64_t slot;
	int want = kvindex_lookup(&m->kv, key, klen, &v, &slot);
	int got = kvread_lookup(&m->kr, key, klen, &l);
	const struct pool_rrec *r = &m->rtab[v.region];

	cr_assert_eq(got, want, "%.*s: kvread %d, kvindex %d", (int)klen,
	    key, got, want);
	if (want != 0) {
		return;
	}
	cr_assert_eq(l.slot, slot);
	cr_assert_eq(l.region, v.region);
	cr_assert_eq(l.gen, v.gen);
	cr_assert_eq(l.region_off, r->off);
	cr_assert_eq(l.region_len, r->len);
	cr_assert_eq(l.off, r->off + (uint64_t)v.page * PS);
	cr_assert_eq(l.len, v.len);
}

TestSuite(kvread, .timeout = 60);

Test(kvread, finds_what_kvindex_finds_under_random_ops)
{
	static const uint32_t gens[3] = { 1, 7, 3 };
	struct meta m;
	char key[64];
	unsigned seed = 12345;

	meta_setup(&m, 1024);
	for (uint32_t r = 0; r < 3; r++) {
		region_put(&m, r, r == 2 ? POOL_REGION_ORPHAN :
		    POOL_REGION_OWNED, gens[r], 2 * r);
	}
	for (int op = 0; op < 20000; op++) {
		unsigned i = (unsigned)rand_r(&seed) % 300;
		size_t kl = key_of(key, sizeof(key), "k", i);
		uint32_t r = (uint32_t)rand_r(&seed) % 3;
		struct kv_val v = { r, gens[r],
		    (uint32_t)rand_r(&seed) % (2 * ALIGN / PS),
		    (uint32_t)rand_r(&seed) % (PS + 1) };

		if (kvindex_lookup(&m.kv, key, kl, NULL, NULL) == 0) {
			cr_assert_eq(kvindex_remove(&m.kv, key, kl, NULL), 0);
		} else if (m.kv.live < m.kv.max_live) {
			put_ok(&m, key, kl, v);
		}
		kl = key_of(key, sizeof(key), "k", (unsigned)rand_r(&seed) %
		    300);
		agree(&m, key, kl);
		if (op % 2000 == 0) {
			for (unsigned j = 0; j < 300; j++) {
				agree(&m, key, key_of(key, sizeof(key), "k",
				    j));
			}
		}
	}
	cr_assert_eq(kvindex_check(&m.kv, NULL, 0), 0);
	meta_fini(&m);
}

Test(kvread, reports_absent_keys_as_not_found)
{
	struct meta m;
	struct kvread_loc l;
	char key[64];
	size_t kl;

	meta_setup(&m, 64);
	region_put(&m, 0, POOL_REGION_OWNED, 1, 0);
	kl = key_of(key, sizeof(key), "ghost", 1);
	cr_assert_eq(kvread_lookup(&m.kr, key, kl, &l), CXLP_E_NOTFOUND);
	put_ok(&m, key, kl - 1, (struct kv_val){ 0, 1, 0, 10 });
	cr_assert_eq(kvread_lookup(&m.kr, key, kl, &l), CXLP_E_NOTFOUND,
	    "a key that is a prefix of the wanted one does not match");
	cr_assert_eq(kvread_lookup(&m.kr, key, kl - 1, &l), 0);
	cr_assert_eq(kvindex_remove(&m.kv, key, kl - 1, NULL), 0);
	cr_assert_eq(kvread_lookup(&m.kr, key, kl - 1, &l), CXLP_E_NOTFOUND);
	meta_fini(&m);
}

Test(kvread, a_hit_returns_the_slot_word_that_every_change_moves)
{
	struct meta m;
	struct kvread_loc l, again;
	uint64_t w;

	meta_setup(&m, 64);
	region_put(&m, 0, POOL_REGION_OWNED, 1, 0);
	put_ok(&m, "k", 1, (struct kv_val){ 0, 1, 3, 10 });
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), 0);
	cr_assert_eq(l.word, m.kv.slots[l.slot].word);
	cr_assert_eq(kv_state(l.word), KV_LIVE);
	cr_assert_eq(kvread_word(&m.kr, l.slot), l.word, "unchanged");
	cr_assert_eq(kvindex_remove(&m.kv, "k", 1, NULL), 0);
	w = kvread_word(&m.kr, l.slot);
	cr_assert_neq(w, l.word, "a delete moves the word");
	/* the same key, value and location again: a new word all the same */
	put_ok(&m, "k", 1, (struct kv_val){ 0, 1, 3, 10 });
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &again), 0);
	cr_assert_eq(again.off, l.off);
	cr_assert_neq(again.word, l.word, "a store again is a new version");
	cr_assert_eq(kvread_word(&m.kr, again.slot), again.word);
	meta_fini(&m);
}

Test(kvread, batch_lookups_answer_as_single_ones)
{
	enum { NB = 3 * KVREAD_BATCH + 5 }; /* several chunks and a tail */
	static char keys[NB][KH_KEY_MAX];
	const void *kp[NB];
	size_t kl[NB];
	struct kvread_loc out[NB], one;
	int rc[NB];
	unsigned seed = 7, hits = 0;
	struct meta m;

	meta_setup(&m, 1024);
	region_put(&m, 0, POOL_REGION_OWNED, 5, 0);
	for (unsigned i = 0; i < NB; i++) {
		/* lengths 1..KH_KEY_MAX; every third key stored; some
		 * entries repeat an earlier key */
		unsigned src = i % 7 == 6 ? i / 2 : i;

		kl[i] = 1 + (src * 37u) % KH_KEY_MAX;
		memset(keys[i], 'a' + (int)(src % 26), kl[i]);
		snprintf(keys[i], kl[i] < 12 ? kl[i] : 12, "%u", src);
		kp[i] = keys[i];
		if (src == i && i % 3 == 0) {
			put_ok(&m, keys[i], kl[i], (struct kv_val){ 0, 5,
			    (uint32_t)rand_r(&seed) % (2 * ALIGN / PS), i });
		}
	}
	kvread_lookup_batch(&m.kr, NB, kp, kl, out, rc);
	for (unsigned i = 0; i < NB; i++) {
		int want = kvread_lookup(&m.kr, kp[i], kl[i], &one);

		cr_assert_eq(rc[i], want, "key %u: batch %d, single %d", i,
		    rc[i], want);
		if (want == 0) {
			hits++;
			cr_assert_eq(memcmp(&out[i], &one, sizeof(one)), 0,
			    "key %u: batch and single locations differ", i);
		}
	}
	cr_assert_gt(hits, NB / 4, "the batch had hits and misses");
	cr_assert_lt(hits, NB);
	meta_fini(&m);
}

Test(kvread, asks_the_server_while_the_slot_stays_mid_write)
{
	struct meta m;
	struct kvread_loc l;
	uint64_t slot;
	struct kv_slot *s;

	meta_setup(&m, 64);
	region_put(&m, 0, POOL_REGION_OWNED, 1, 0);
	put_ok(&m, "k", 1, (struct kv_val){ 0, 1, 3, 10 });
	cr_assert_eq(kvindex_lookup(&m.kv, "k", 1, NULL, &slot), 0);
	s = &m.kv.slots[slot];
	s->word = kv_word(kv_seq(s->word) + 1, kv_state(s->word), 0);
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), KVREAD_ASK);
	meta_fini(&m);
}

Test(kvread, asks_the_server_when_the_region_is_not_the_slots)
{
	struct meta m;
	struct kvread_loc l;

	meta_setup(&m, 64);
	region_put(&m, 0, POOL_REGION_OWNED, 1, 0);
	put_ok(&m, "k", 1, (struct kv_val){ 0, 1, 3, 10 });
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), 0);
	cr_assert_eq(l.off, m.rtab[0].off + 3 * PS);
	region_put(&m, 0, POOL_REGION_OWNED, 2, 0);
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), KVREAD_ASK,
	    "region reused (gen 2) under a gen-1 slot");
	region_put(&m, 0, POOL_REGION_FREE, 1, 0);
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), KVREAD_ASK,
	    "region freed under a live slot");
	meta_fini(&m);
}

Test(kvread, never_serves_values_that_fail_their_checks)
{
	struct meta m;
	struct kvread_loc l;
	uint64_t slot;
	struct kv_slot *s;
	uint32_t ref;

	meta_setup(&m, 64);
	region_put(&m, 0, POOL_REGION_OWNED, 1, 0);
	put_ok(&m, "big", 3, (struct kv_val){ 0, 1, 2 * ALIGN / PS, 1 });
	cr_assert_eq(kvread_lookup(&m.kr, "big", 3, &l), KVREAD_ASK,
	    "page beyond the region");
	put_ok(&m, "long", 4, (struct kv_val){ 0, 1, 1, PS + 1 });
	cr_assert_eq(kvread_lookup(&m.kr, "long", 4, &l), KVREAD_ASK,
	    "value longer than the page");
	put_ok(&m, "k", 1, (struct kv_val){ 0, 1, 2, 10 });
	m.rtab[0].len = 64 * ALIGN; /* outside the data area; checksum off */
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), KVREAD_ASK);
	region_put(&m, 0, POOL_REGION_OWNED, 1, 0);
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), 0);
	/* a key ref outside the heap, with a valid slot checksum: skipped */
	cr_assert_eq(kvindex_lookup(&m.kv, "k", 1, NULL, &slot), 0);
	s = &m.kv.slots[slot];
	ref = s->key;
	s->key = (uint32_t)m.kr.ngran;
	s->word = kv_word(kv_seq(s->word), KV_LIVE,
	    layout_slot_checksum(s, slot));
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), CXLP_E_NOTFOUND);
	/* a body whose checksum fails: skipped, as kvindex does */
	s->key = ref;
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), CXLP_E_NOTFOUND);
	s->word = kv_word(kv_seq(s->word), KV_LIVE,
	    layout_slot_checksum(s, slot));
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), 0);
	s->len++;
	cr_assert_eq(kvread_lookup(&m.kr, "k", 1, &l), CXLP_E_NOTFOUND);
	meta_fini(&m);
}

Test(kvread, init_refuses_a_mapping_shorter_than_the_index)
{
	struct meta m;
	struct kvread kr;
	char why[200] = "";

	meta_setup(&m, 64);
	cr_assert_eq(kvread_init(&kr, &m.sb, m.base,
	    m.sb.area[POOL_AREA_INDEX].off, why, sizeof(why)),
	    CXLP_E_CORRUPT);
	cr_assert_neq(why[0], '\0');
	m.sb.area[POOL_AREA_INDEX].count = 48; /* not a power of two */
	cr_assert_eq(kvread_init(&kr, &m.sb, m.base, m.len, NULL, 0),
	    CXLP_E_CORRUPT);
	meta_fini(&m);
}

/* ---- stress: one writer, several lock-free readers -------------------- */

#define NKEYS 8u
#define NREADERS 3
#define WRITES 100000u

struct stress {
	struct meta m;
	uint32_t ver[NKEYS]; /* version being or last inserted (atomic) */
	int done;            /* atomic */
	uint64_t hits, misses, asks, bad; /* atomic */
	char bad_msg[256];
	pthread_mutex_t lock;
};

/* version v of key i: region v % 3, page 2i + (v & 1), len v */
static struct kv_val
version_val(unsigned i, uint32_t v)
{
	return (struct kv_val){ v % 3, 1, 2 * i + (v & 1), v };
}

static void *
writer_main(void *arg)
{
	struct stress *st = arg;
	unsigned seed = 99;
	char key[64];

	for (unsigned n = 0; n < WRITES; n++) {
		unsigned i = (unsigned)rand_r(&seed) % NKEYS;
		size_t kl = key_of(key, sizeof(key), "k", i);
		uint32_t v = __atomic_load_n(&st->ver[i], __ATOMIC_RELAXED);
		uint64_t slot;
		struct kv_val val, old;
		bool ins;

		if (kvindex_lookup(&st->m.kv, key, kl, NULL, NULL) == 0) {
			kvindex_remove(&st->m.kv, key, kl, NULL);
			continue;
		}
		/* bump first: a reader that sees v + 1 knows v is gone */
		__atomic_store_n(&st->ver[i], v + 1, __ATOMIC_RELEASE);
		val = version_val(i, v + 1);
		if (kvindex_insert(&st->m.kv, key, kl, &val, &slot, &ins,
		    &old) != 0 || !ins) {
			snprintf(st->bad_msg, sizeof(st->bad_msg), "insert");
			__atomic_fetch_add(&st->bad, 1, __ATOMIC_RELAXED);
		}
	}
	__atomic_store_n(&st->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void
stress_bad(struct stress *st, const char *what, unsigned i,
    const struct kvread_loc *l, uint32_t v0, uint32_t v1)
{
	pthread_mutex_lock(&st->lock);
	if (st->bad == 0) {
		snprintf(st->bad_msg, sizeof(st->bad_msg), "key %u: %s: "
		    "region %u off %llu len %llu, versions %u..%u", i, what,
		    l->region, (unsigned long long)l->off,
		    (unsigned long long)l->len, v0, v1);
	}
	st->bad++;
	pthread_mutex_unlock(&st->lock);
}

/* a found value must be one version v in [v0, v1], whole */
static void
check_found(struct stress *st, unsigned i, const struct kvread_loc *l,
    uint32_t v0, uint32_t v1)
{
	uint32_t v = (uint32_t)l->len;
	struct kv_val want = version_val(i, v);
	const struct pool_rrec *r = &st->m.rtab[want.region];

	if (v < v0 || v > v1 || v == 0) {
		stress_bad(st, "version outside the lookup's window", i, l, v0,
		    v1);
	} else if (l->region != want.region || l->gen != 1 ||
	    l->off != r->off + (uint64_t)want.page * PS ||
	    l->region_off != r->off || l->region_len != r->len) {
		stress_bad(st, "torn value", i, l, v0, v1);
	}
}

/* one lookup's outcome for key i (ghost: i >= NKEYS), found while the
 * key's version moved from v0 to v1 */
static void
tally(struct stress *st, unsigned i, int rc, const struct kvread_loc *l,
    uint32_t v0, uint32_t v1)
{
	bool ghost = i >= NKEYS;

	if (rc == KVREAD_ASK) {
		__atomic_fetch_add(&st->asks, 1, __ATOMIC_RELAXED);
	} else if (rc == CXLP_E_NOTFOUND) {
		__atomic_fetch_add(&st->misses, 1, __ATOMIC_RELAXED);
	} else if (rc != 0 || ghost) {
		stress_bad(st, ghost ? "ghost key found" : "bad rc", i % NKEYS,
		    l, v0, v1);
	} else {
		__atomic_fetch_add(&st->hits, 1, __ATOMIC_RELAXED);
		check_found(st, i, l, v0, v1);
	}
}

static uint32_t
version_now(struct stress *st, unsigned i)
{
	return i >= NKEYS ? 0 : __atomic_load_n(&st->ver[i], __ATOMIC_ACQUIRE);
}

/* key i of the stress set: k-<i> for i < NKEYS, else a ghost never
 * stored */
static size_t
stress_key(char *buf, size_t n, unsigned i)
{
	return key_of(buf, n, i >= NKEYS ? "ghost" : "k", i % NKEYS);
}

static void *
reader_main(void *arg)
{
	struct stress *st = arg;
	unsigned seed = (unsigned)(uintptr_t)pthread_self();
	char key[64];

	while (!__atomic_load_n(&st->done, __ATOMIC_ACQUIRE)) {
		unsigned i = (unsigned)rand_r(&seed) % (2 * NKEYS);
		size_t kl = stress_key(key, sizeof(key), i);
		uint32_t v0 = version_now(st, i);
		struct kvread_loc l;
		int rc = kvread_lookup(&st->m.kr, key, kl, &l);

		tally(st, i, rc, &l, v0, version_now(st, i));
	}
	return NULL;
}

/* the same through kvread_lookup_batch: every key, ghosts included, in
 * one batch (prefetch hints read slots mid-write too) */
static void *
batch_reader_main(void *arg)
{
	struct stress *st = arg;
	char keys[2 * NKEYS][64];
	const void *kp[2 * NKEYS];
	size_t kl[2 * NKEYS];
	struct kvread_loc l[2 * NKEYS];
	int rc[2 * NKEYS];
	uint32_t v0[2 * NKEYS];

	for (unsigned i = 0; i < 2 * NKEYS; i++) {
		kl[i] = stress_key(keys[i], sizeof(keys[i]), i);
		kp[i] = keys[i];
	}
	while (!__atomic_load_n(&st->done, __ATOMIC_ACQUIRE)) {
		for (unsigned i = 0; i < 2 * NKEYS; i++) {
			v0[i] = version_now(st, i);
		}
		kvread_lookup_batch(&st->m.kr, 2 * NKEYS, kp, kl, l, rc);
		for (unsigned i = 0; i < 2 * NKEYS; i++) {
			tally(st, i, rc[i], &l[i], v0[i], version_now(st, i));
		}
	}
	return NULL;
}

Test(kvread, readers_see_only_whole_values_a_key_had_while_a_writer_churns)
{
	struct stress *st = calloc(1, sizeof(*st));
	pthread_t w, r[NREADERS];

	cr_assert_not_null(st);
	pthread_mutex_init(&st->lock, NULL);
	meta_setup(&st->m, 256);
	for (uint32_t g = 0; g < 3; g++) {
		region_put(&st->m, g, POOL_REGION_OWNED, 1, 2 * g);
	}
	for (int k = 0; k < NREADERS; k++) {
		cr_assert_eq(pthread_create(&r[k], NULL, k % 2 ?
		    batch_reader_main : reader_main, st), 0);
	}
	cr_assert_eq(pthread_create(&w, NULL, writer_main, st), 0);
	pthread_join(w, NULL);
	for (int k = 0; k < NREADERS; k++) {
		pthread_join(r[k], NULL);
	}
	cr_assert_eq(st->bad, 0, "%llu bad reads; first: %s",
	    (unsigned long long)st->bad, st->bad_msg);
	cr_assert_gt(st->hits + st->misses, 0);
	cr_log_info("hits %llu misses %llu asks %llu",
	    (unsigned long long)st->hits, (unsigned long long)st->misses,
	    (unsigned long long)st->asks);
	cr_assert_eq(kvindex_check(&st->m.kv, NULL, 0), 0);
	meta_fini(&st->m);
	pthread_mutex_destroy(&st->lock);
	free(st);
}
