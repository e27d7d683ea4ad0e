/*
 * test_batch.c -- batch_store per DESIGN contract 2: duplicates inside a
 * batch, batches mixing new, existing and duplicate keys, and keys that
 * come back pinned. Page fates are checked through the handler's counts and
 * by reading the bytes back, not by trusting the reported booleans.
 */
#include "itest.h"

TestSuite(batch, .init = itest_start, .fini = itest_stop, .timeout = 60);

#define MAXB 8

struct batch {
	size_t n;
	char keys[MAXB][32];
	const void *kp[MAXB];
	size_t kl[MAXB];
	size_t lens[MAXB];
	cxlp_page_t pages[MAXB];
	bool ok[MAXB];
};

/* batch_add -- alloc a page for key name filled for (writer, id). */
static void
batch_add(struct cxlp_handler *h, struct batch *b, const char *name,
    uint32_t writer, uint32_t id)
{
	size_t i = b->n++;
	void *buf;

	snprintf(b->keys[i], sizeof(b->keys[i]), "%s", name);
	b->kp[i] = b->keys[i];
	b->kl[i] = strlen(name);
	b->lens[i] = 512;
	cr_assert_rc(cxlp_alloc(h, &b->pages[i], &buf), 0);
	kv_fill(buf, b->lens[i], writer, id);
}

static int
batch_store(struct cxlp_handler *h, struct batch *b, unsigned flags)
{
	return cxlp_batch_store(h, b->n, b->kp, b->kl, b->pages, b->lens,
	    flags, b->ok);
}

/* key_writer -- whose pattern key name (stored with id) holds. */
static uint32_t
key_writer(struct cxlp_handler *h, const char *name, uint32_t id)
{
	const void *d;
	size_t len;
	uint32_t w = 0;

	cr_assert_rc(cxlp_retrieve(h, name, strlen(name), 0, &d, &len), 0);
	cr_assert(kv_check(d, len, id, &w), "%s: bytes wrong", name);
	return w;
}

Test(batch, key_repeated_in_one_batch_keeps_the_first_page)
{
	struct cxlp_handler *h = itest_connect();
	struct batch b = { 0 };
	struct cxlp_stats st0, st;

	st0 = kv_stats(h);
	for (uint32_t w = 1; w <= 3; w++) {
		batch_add(h, &b, "dup", w, 9);
	}
	cr_assert_rc(batch_store(h, &b, 0), 0);
	for (size_t i = 0; i < b.n; i++) {
		cr_assert(b.ok[i], "entry %zu reported false", i);
	}
	cr_assert_eq(key_writer(h, "dup", 9), 1, "a later duplicate won");
	st = kv_stats(h);
	cr_assert_eq(st.pages_registered, 1);
	cr_assert_eq(st.pages_allocated, 0);
	cr_assert_eq(st.pages_free, st0.pages_free - 1,
	    "duplicate pages were not freed");
	cr_assert_eq(st.keys, 1);
	cxlp_close(&h);
}

Test(batch, mixed_batch_of_new_existing_and_duplicate_keys)
{
	struct cxlp_handler *h = itest_connect();
	struct batch pre = { 0 }, b = { 0 };
	struct cxlp_stats st0, st;

	batch_add(h, &pre, "a", 1, 1);
	batch_add(h, &pre, "b", 1, 2);
	cr_assert_rc(batch_store(h, &pre, 0), 0);
	st0 = kv_stats(h);
	batch_add(h, &b, "a", 2, 1); /* exists */
	batch_add(h, &b, "c", 2, 3); /* new */
	batch_add(h, &b, "c", 3, 3); /* duplicate in batch */
	batch_add(h, &b, "d", 2, 4); /* new */
	batch_add(h, &b, "b", 2, 2); /* exists */
	cr_assert_rc(batch_store(h, &b, 0), 0);
	for (size_t i = 0; i < b.n; i++) {
		cr_assert(b.ok[i], "entry %zu reported false", i);
	}
	cr_assert_eq(key_writer(h, "a", 1), 1);
	cr_assert_eq(key_writer(h, "b", 2), 1);
	cr_assert_eq(key_writer(h, "c", 3), 2);
	cr_assert_eq(key_writer(h, "d", 4), 2);
	st = kv_stats(h);
	cr_assert_eq(st.keys, 4);
	cr_assert_eq(st.pages_registered, 4);
	cr_assert_eq(st.pages_allocated, 0);
	cr_assert_eq(st.pages_free, st0.pages_free - 2);
	cxlp_close(&h);
}

Test(batch, store_pin_returns_winners_and_losers_pinned)
{
	struct cxlp_handler *h = itest_connect();
	struct batch pre = { 0 }, b = { 0 };

	batch_add(h, &pre, "old", 1, 1);
	cr_assert_rc(batch_store(h, &pre, 0), 0);
	batch_add(h, &b, "old", 2, 1);
	batch_add(h, &b, "new", 2, 2);
	cr_assert_rc(batch_store(h, &b, CXLP_STORE_PIN), 0);
	cr_assert(b.ok[0] && b.ok[1]);
	cr_assert_rc(cxlp_delete(h, "old", 3), CXLP_E_PINNED);
	cr_assert_rc(cxlp_delete(h, "new", 3), CXLP_E_PINNED);
	cr_assert_rc(cxlp_unpin(h, "old", 3), 0);
	cr_assert_rc(cxlp_unpin(h, "new", 3), 0);
	cr_assert_rc(cxlp_delete(h, "old", 3), 0);
	cr_assert_rc(cxlp_delete(h, "new", 3), 0);
	cxlp_close(&h);
}

Test(batch, delete_of_own_key_frees_its_page)
{
	struct cxlp_handler *h = itest_connect();
	struct cxlp_stats st0, st;

	st0 = kv_stats(h);
	itest_put(h, "del", 1, 1, 100);
	cr_assert_rc(cxlp_delete(h, "del-1", 5), 0);
	st = kv_stats(h);
	cr_assert_eq(st.pages_free, st0.pages_free);
	cr_assert_eq(st.pages_registered, 0);
	cr_assert_eq(st.keys, 0);
	cr_assert_rc(cxlp_delete(h, "del-1", 5), CXLP_E_NOTFOUND);
	cxlp_close(&h);
}

Test(batch, batch_retrieve_and_exists_report_per_key)
{
	struct cxlp_handler *h = itest_connect();
	const void *kp[3] = { "x-1", "missing", "x-2" };
	size_t kl[3] = { 3, 7, 3 }, lens[3];
	const void *data[3];
	int status[3];
	bool ex[3];

	itest_put(h, "x", 5, 1, 300);
	itest_put(h, "x", 5, 2, 400);
	cr_assert_rc(cxlp_batch_retrieve(h, 3, kp, kl, 0, data, lens, status),
	    0);
	cr_assert_eq(status[0], 0);
	cr_assert_eq(status[1], CXLP_E_NOTFOUND);
	cr_assert_eq(status[2], 0);
	cr_assert(kv_check(data[0], lens[0], 1, NULL));
	cr_assert(kv_check(data[2], lens[2], 2, NULL));
	cr_assert_rc(cxlp_batch_exists(h, 3, kp, kl, ex), 0);
	cr_assert(ex[0] && !ex[1] && ex[2]);
	cxlp_close(&h);
}
