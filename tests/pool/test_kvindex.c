/*
 * test_kvindex.c -- pool/kvindex.c over malloc'ed memory: insert, lookup,
 * remove, tombstone reuse and sweeping (also under churn and at open),
 * NOSPACE, recovery from a slot
 * caught mid-write or damaged, a request group's PEND slots (note 11:
 * unseen until published, settled by recovery as kv->pend says), and a
 * differential test against a naive array model under random operations.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxlpool.h"
#include "kvindex.h"

static struct kvindex kv;
static struct keyheap heap;
static struct kv_slot *slots;
static uint8_t *heapmem;
static int persists;

static void
count_persist(void *ctx, const void *addr, size_t len)
{
	(void)ctx;
	(void)addr;
	(void)len;
	persists++;
}

static void
setup(uint64_t nslots, uint64_t heap_bytes)
{
	slots = calloc(nslots, sizeof(*slots));
	heapmem = calloc(1, heap_bytes);
	cr_assert(slots && heapmem);
	cr_assert_eq(keyheap_init(&heap, heapmem, heap_bytes), 0);
	kvindex_init(&kv, slots, nslots, &heap, count_persist, NULL);
	kvindex_format(&kv);
}

static void
fini(void)
{
	keyheap_fini(&heap);
	free(slots);
	free(heapmem);
}

TestSuite(kvindex, .fini = fini);

static int
put(const char *key, uint32_t page, bool *inserted)
{
	struct kv_val v = { 1, 1, page, 100 }, old;
	uint64_t slot;

	return kvindex_insert(&kv, key, strlen(key), &v, &slot, inserted, &old);
}

Test(kvindex, inserted_key_is_found_with_its_value)
{
	struct kv_val v = { 3, 4, 5, 6 }, got;
	uint64_t slot, s2;
	bool ins;

	setup(64, 4096);
	cr_assert_eq(kvindex_insert(&kv, "k1", 2, &v, &slot, &ins, NULL), 0);
	cr_assert(ins);
	cr_assert_eq(kvindex_lookup(&kv, "k1", 2, &got, &s2), 0);
	cr_assert_eq(s2, slot);
	cr_assert_eq(memcmp(&got, &v, sizeof(v)), 0);
	cr_assert_eq(kvindex_lookup(&kv, "k2", 2, &got, NULL), CXLP_E_NOTFOUND);
	cr_assert_eq(kvindex_lookup(&kv, "k", 1, &got, NULL), CXLP_E_NOTFOUND);
	cr_assert_eq(kv.live, 1);
}

Test(kvindex, second_insert_of_a_key_returns_the_first_value)
{
	struct kv_val a = { 1, 1, 1, 1 }, b = { 2, 2, 2, 2 }, old;
	uint64_t s1, s2;
	bool ins;

	setup(64, 4096);
	kvindex_insert(&kv, "same", 4, &a, &s1, &ins, NULL);
	cr_assert_eq(kvindex_insert(&kv, "same", 4, &b, &s2, &ins, &old), 0);
	cr_assert_not(ins);
	cr_assert_eq(s1, s2);
	cr_assert_eq(old.region, 1);
	cr_assert_eq(kv.live, 1);
}

Test(kvindex, insert_is_persisted_record_then_slot_then_word)
{
	bool ins;

	setup(64, 4096);
	persists = 0;
	put("abc", 0, &ins);
	cr_assert_eq(persists, 3);
	persists = 0;
	kvindex_remove(&kv, "abc", 3, NULL);
	cr_assert_geq(persists, 1);
}

Test(kvindex, removed_key_is_gone_and_its_tombstone_is_reused)
{
	char key[16];
	bool ins;
	uint64_t s_before, s_after;

	setup(16, 4096);
	/* fill a probe chain so that deletes leave tombstones */
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "key%d", i);
		cr_assert_eq(put(key, (uint32_t)i, &ins), 0);
	}
	cr_assert_eq(kvindex_lookup(&kv, "key3", 4, NULL, &s_before), 0);
	cr_assert_eq(kvindex_remove(&kv, "key3", 4, NULL), 0);
	cr_assert_eq(kvindex_lookup(&kv, "key3", 4, NULL, NULL),
	    CXLP_E_NOTFOUND);
	cr_assert_eq(kvindex_remove(&kv, "key3", 4, NULL), CXLP_E_NOTFOUND);
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "key%d", i);
		cr_assert_eq(kvindex_lookup(&kv, key, strlen(key), NULL, NULL),
		    i == 3 ? CXLP_E_NOTFOUND : 0, "%s", key);
	}
	cr_assert_eq(put("key3", 3, &ins), 0);
	cr_assert_eq(kvindex_lookup(&kv, "key3", 4, NULL, &s_after), 0);
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
	cr_assert_eq(kv.live, 10);
	(void)s_before;
}

Test(kvindex, deleting_every_key_leaves_no_tombstones)
{
	char key[16];
	bool ins;

	setup(64, 8192);
	for (int i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(key, (uint32_t)i, &ins);
	}
	for (int i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(kvindex_remove(&kv, key, strlen(key), NULL), 0);
	}
	cr_assert_eq(kv.live, 0);
	cr_assert_eq(kv.tombs, 0, "swept back to EMPTY");
	for (uint64_t i = 0; i < kv.nslots; i++) {
		cr_assert_eq(kv_state(slots[i].word), KV_EMPTY);
	}
	cr_assert_eq(heap.used, 0);
}

static uint64_t
empty_slots(void)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < kv.nslots; i++) {
		n += kv_state(slots[i].word) == KV_EMPTY;
	}
	return n;
}

/* What a miss costs: the slots a probe walks before an EMPTY one,
 * averaged over every home slot. */
static double
miss_walk(void)
{
	uint64_t total = 0;

	for (uint64_t h = 0; h < kv.nslots; h++) {
		uint64_t n = 0;

		while (n < kv.nslots && kv_state(slots[(h + n) %
		    kv.nslots].word) != KV_EMPTY) {
			n++;
		}
		total += n + 1;
	}
	return (double)total / (double)kv.nslots;
}

/* Keys "c<i>" for i < n; the pages are their numbers. */
static void
fill_keys(int n)
{
	char key[16];
	bool ins;

	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "c%d", i);
		cr_assert_eq(put(key, (uint32_t)i, &ins), 0);
		cr_assert(ins);
	}
}

/* Every key c<i>, i in [from, to), is found with page i. */
static void
all_found(int from, int to)
{
	for (int i = from; i < to; i++) {
		char key[16];
		struct kv_val v;

		snprintf(key, sizeof(key), "c%d", i);
		cr_assert_eq(kvindex_lookup(&kv, key, strlen(key), &v, NULL), 0,
		    "%s lost", key);
		cr_assert_eq(v.page, (uint32_t)i);
	}
}

/* A cache under LRU churn: delete the oldest key, store a new one, many
 * times over at 70% load. Deletes must empty the tombstones no probe
 * needs; with only a tombstone just before an EMPTY emptied, the table
 * lost every EMPTY slot and each miss walked all of it. */
Test(kvindex, churn_at_high_load_keeps_empty_slots)
{
	enum { NSLOTS = 1024, LIVE = 716, ROUNDS = 20 * NSLOTS };
	char key[16];
	bool ins;

	setup(NSLOTS, NSLOTS * 64);
	fill_keys(LIVE);
	for (int r = 0; r < ROUNDS; r++) {
		snprintf(key, sizeof(key), "c%d", r);
		cr_assert_eq(kvindex_remove(&kv, key, strlen(key), NULL), 0);
		snprintf(key, sizeof(key), "c%d", r + LIVE);
		cr_assert_eq(put(key, (uint32_t)(r + LIVE), &ins), 0);
		cr_assert(ins);
	}
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
	cr_assert_eq(kv.live, LIVE);
	cr_assert_geq(empty_slots(), NSLOTS / 16, "%llu EMPTY slots left of "
	    "%d", (unsigned long long)empty_slots(), NSLOTS - LIVE);
	cr_assert_leq(miss_walk(), 64, "a miss walks %.1f slots",
	    miss_walk()); /* 31 here: the tombstones left are all needed */
	cr_log_info("churn: %llu EMPTY slots, a miss walks %.1f",
	    (unsigned long long)empty_slots(), miss_walk());
	all_found(ROUNDS, ROUNDS + LIVE);
}

/* Every EMPTY slot made a tombstone (a pool churned before deletes swept):
 * no EMPTY slot is left anywhere. */
static void
tomb_every_empty_slot(void)
{
	for (uint64_t i = 0; i < kv.nslots; i++) {
		uint64_t w = slots[i].word;

		if (kv_state(w) == KV_EMPTY) {
			slots[i].word = kv_word(kv_seq(w) + 2, KV_TOMB, 0);
		}
	}
	cr_assert_eq(empty_slots(), 0);
}

Test(kvindex, recovery_empties_the_tombstones_no_probe_needs)
{
	uint64_t dropped = 1;

	setup(256, 256 * 64);
	fill_keys(128);
	tomb_every_empty_slot();
	cr_assert_eq(kvindex_recover(&kv, true, &dropped), 0);
	cr_assert_eq(dropped, 0);
	cr_assert_geq(empty_slots(), 64, "%llu EMPTY slots",
	    (unsigned long long)empty_slots());
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
	all_found(0, 128);
}

/* A delete in a table with no EMPTY slot sweeps the whole table. */
Test(kvindex, a_delete_with_no_empty_slot_anywhere_sweeps_the_table)
{
	setup(256, 256 * 64);
	fill_keys(128);
	tomb_every_empty_slot();
	kv.tombs = kv.nslots - kv.live;
	cr_assert_eq(kvindex_remove(&kv, "c0", 2, NULL), 0);
	cr_assert_geq(empty_slots(), 64, "%llu EMPTY slots",
	    (unsigned long long)empty_slots());
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
	all_found(1, 128);
}

Test(kvindex, full_index_is_nospace)
{
	char key[16];
	bool ins;
	int i;

	setup(64, 64 * 64);
	for (i = 0; i < 48; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(put(key, (uint32_t)i, &ins), 0, "key %d", i);
	}
	cr_assert_eq(put("one-more", 99, &ins), CXLP_E_NOSPACE);
	cr_assert_eq(put("k7", 7, &ins), 0, "an existing key is still found");
	cr_assert_not(ins);
	cr_assert_eq(kvindex_remove(&kv, "k0", 2, NULL), 0);
	cr_assert_eq(put("one-more", 99, &ins), 0);
}

Test(kvindex, full_key_heap_is_nospace)
{
	char key[64];
	bool ins;

	setup(64, 256);
	memset(key, 'x', sizeof(key));
	key[63] = '\0';
	cr_assert_eq(put(key, 0, &ins), 0); /* 72 bytes: 5 granules */
	key[0] = 'y';
	cr_assert_eq(put(key, 1, &ins), 0);
	key[0] = 'z';
	cr_assert_eq(put(key, 2, &ins), 0);
	key[0] = 'w';
	cr_assert_eq(put(key, 3, &ins), CXLP_E_NOSPACE);
	cr_assert_eq(kv.live, 3);
}

Test(kvindex, recovery_restores_a_slot_caught_mid_write)
{
	struct kv_val v;
	uint64_t slot, dropped;
	bool ins;

	setup(64, 4096);
	put("keep", 1, &ins);
	put("torn", 2, &ins);
	kvindex_lookup(&kv, "torn", 4, &v, &slot);
	/* a crash between steps c and e of kvindex_put: odd word, old state */
	slots[slot].word = kv_word(kv_seq(slots[slot].word) + 1, KV_EMPTY, 0);
	cr_assert_eq(kvindex_recover(&kv, true, &dropped), 0);
	cr_assert_eq(dropped, 1);
	cr_assert_eq(kvindex_lookup(&kv, "torn", 4, NULL, NULL),
	    CXLP_E_NOTFOUND);
	cr_assert_eq(kvindex_lookup(&kv, "keep", 4, NULL, NULL), 0);
	cr_assert_eq(kv_seq(slots[slot].word) % 2, 0);
	cr_assert_eq(kv.live, 1);
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
}

Test(kvindex, recovery_drops_a_slot_with_a_bad_checksum)
{
	uint64_t slot, dropped;
	bool ins;

	setup(64, 4096);
	put("good", 1, &ins);
	put("bad", 2, &ins);
	kvindex_lookup(&kv, "bad", 3, NULL, &slot);
	slots[slot].len ^= 1;
	cr_assert_eq(kvindex_lookup(&kv, "bad", 3, NULL, NULL),
	    CXLP_E_NOTFOUND, "lookups never serve an invalid slot");
	cr_assert_neq(kvindex_check(&kv, NULL, 0), 0);
	kvindex_recover(&kv, true, &dropped);
	cr_assert_eq(dropped, 1);
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
	cr_assert_eq(kv.live, 1);
	cr_assert_eq(heap.used, keyheap_rec_gran(4), "bad key's record freed");
}

/* a PEND slot for key (note 11), with kv.pend KEEP */
static uint64_t
put_pend(const char *key, uint32_t page)
{
	struct kv_val v = { 1, 1, page, 100 };
	struct kv_probe pr;
	uint64_t slot;

	kv.pend = KV_PEND_KEEP;
	cr_assert_eq(kvindex_probe(&kv, key, strlen(key), &pr), 0);
	cr_assert_eq(kvindex_put_pend(&kv, &pr, key, strlen(key), &v, &slot),
	    0);
	return slot;
}

Test(kvindex, a_pending_key_is_unseen_until_published_but_taken)
{
	struct kv_probe pr;
	uint64_t slot, s2, cursor = 0;
	bool ins;

	setup(64, 4096);
	slot = put_pend("p", 1);
	cr_assert_eq(kvindex_lookup(&kv, "p", 1, NULL, NULL), CXLP_E_NOTFOUND);
	cr_assert_eq(kvindex_get(&kv, slot, NULL, NULL, NULL),
	    CXLP_E_NOTFOUND);
	cr_assert_eq(kvindex_next(&kv, &cursor, &s2), 0);
	cr_assert_eq(kvindex_probe(&kv, "p", 1, &pr), 1, "the writer's probe "
	    "finds it");
	cr_assert(pr.pend);
	cr_assert_eq(put("p", 2, &ins), 0);
	cr_assert(!ins, "a key named twice in a commit goes in once");
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
	kvindex_publish(&kv, slot);
	cr_assert_eq(kvindex_lookup(&kv, "p", 1, NULL, &s2), 0);
	cr_assert_eq(s2, slot);
	kv.pend = KV_PEND_NONE;
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
	/* one rolled back: a tombstone, its record free */
	slot = put_pend("q", 2);
	kvindex_drop(&kv, slot);
	kv.pend = KV_PEND_NONE;
	cr_assert_eq(kvindex_lookup(&kv, "q", 1, NULL, NULL), CXLP_E_NOTFOUND);
	cr_assert_eq(kv.live, 1);
	cr_assert_eq(heap.used, keyheap_rec_gran(1));
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
}

/* two keys put in as PEND, then recovered (with repair) in mode m: what
 * recovery dropped in *dropped and its report in *rec */
static void
recover_pending(enum kv_pend m, uint64_t *dropped, struct kv_recovery *rec)
{
	setup(64, 4096);
	(void)put_pend("a", 1);
	(void)put_pend("b", 2);
	kv.pend = m;
	/* read-only, as pool-inspect opens it: the check finds the slots
	 * consistent with what recovery will make of them */
	memset(rec, 0, sizeof(*rec));
	cr_assert_eq(kvindex_recover_report(&kv, false, rec), 0);
	cr_assert_eq(kvindex_check(&kv, NULL, 0) == 0, m != KV_PEND_NONE,
	    "mode %d: the check before recovery", m);
	memset(rec, 0, sizeof(*rec));
	cr_assert_eq(kvindex_recover_report(&kv, true, rec), 0);
	*dropped = rec->torn + rec->damaged;
}

Test(kvindex, recovery_publishes_the_pending_slots_of_a_decided_commit)
{
	struct kv_recovery rec;
	uint64_t dropped;

	recover_pending(KV_PEND_KEEP, &dropped, &rec);
	cr_assert_eq(dropped, 0);
	cr_assert_eq(rec.pend, 2);
	cr_assert_eq(kvindex_lookup(&kv, "a", 1, NULL, NULL), 0);
	cr_assert_eq(kvindex_lookup(&kv, "b", 1, NULL, NULL), 0);
	kv.pend = KV_PEND_NONE;
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
	cr_assert_eq(kv.live, 2);
}

Test(kvindex, recovery_drops_the_pending_slots_of_an_undecided_commit)
{
	struct kv_recovery rec;
	uint64_t dropped;

	recover_pending(KV_PEND_DROP, &dropped, &rec);
	cr_assert_eq(rec.pend, 2);
	cr_assert_eq(kvindex_lookup(&kv, "a", 1, NULL, NULL), CXLP_E_NOTFOUND);
	kv.pend = KV_PEND_NONE;
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
	cr_assert_eq(kv.live, 0);
	cr_assert_eq(heap.used, 0, "their records are free");
}

Test(kvindex, a_pending_slot_with_no_commit_under_way_is_damage)
{
	struct kv_recovery rec;
	uint64_t dropped;

	recover_pending(KV_PEND_NONE, &dropped, &rec);
	cr_assert_eq(rec.damaged, 2);
	cr_assert_eq(kvindex_lookup(&kv, "a", 1, NULL, NULL), CXLP_E_NOTFOUND);
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
}

Test(kvindex, recovery_without_repair_writes_nothing)
{
	uint64_t slot, dropped, word;
	bool ins;

	setup(64, 4096);
	put("x", 1, &ins);
	kvindex_lookup(&kv, "x", 1, NULL, &slot);
	slots[slot].word = word = kv_word(3, KV_TOMB, 0);
	persists = 0;
	kvindex_recover(&kv, false, &dropped);
	cr_assert_eq(persists, 0);
	cr_assert_eq(slots[slot].word, word);
}

Test(kvindex, rebuild_from_slots_keeps_every_key_and_the_heap_state)
{
	char key[32];
	bool ins;
	uint64_t used;

	setup(256, 16384);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "model@%d@chunk", i);
		put(key, (uint32_t)i, &ins);
	}
	used = heap.used;
	kvindex_recover(&kv, true, NULL);
	cr_assert_eq(kv.live, 100);
	cr_assert_eq(heap.used, used);
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
}

struct model_ent {
	char key[24];
	uint32_t page;
	bool live;
};

Test(kvindex, matches_a_naive_array_model_under_random_operations)
{
	enum { NKEYS = 300, OPS = 20000 };
	static struct model_ent m[NKEYS];
	uint64_t nlive = 0;

	setup(512, 512 * 64);
	srandom(1234);
	for (int i = 0; i < NKEYS; i++) {
		snprintf(m[i].key, sizeof(m[i].key), "key-%d-%ld", i,
		    random() % 1000);
	}
	for (int op = 0; op < OPS; op++) {
		int i = (int)(random() % NKEYS);
		size_t kl = strlen(m[i].key);
		struct kv_val v = { 0, 0, (uint32_t)op, 1 }, got;
		uint64_t slot;
		bool ins;
		int r = (int)(random() % 3);

		if (r == 0) {
			cr_assert_eq(kvindex_insert(&kv, m[i].key, kl, &v,
			    &slot, &ins, &got), 0);
			cr_assert_eq(ins, !m[i].live);
			if (ins) {
				m[i].live = true;
				m[i].page = (uint32_t)op;
				nlive++;
			}
		} else if (r == 1) {
			cr_assert_eq(kvindex_remove(&kv, m[i].key, kl, &got),
			    m[i].live ? 0 : CXLP_E_NOTFOUND);
			nlive -= m[i].live;
			m[i].live = false;
		} else {
			int rc = kvindex_lookup(&kv, m[i].key, kl, &got, NULL);

			cr_assert_eq(rc, m[i].live ? 0 : CXLP_E_NOTFOUND);
			cr_assert(rc != 0 || got.page == m[i].page);
		}
		cr_assert_eq(kv.live, nlive);
		if (op % 500 == 0) {
			cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
		}
	}
	cr_assert_eq(kvindex_check(&kv, NULL, 0), 0);
}
