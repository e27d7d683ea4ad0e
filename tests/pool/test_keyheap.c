/*
 * test_keyheap.c -- pool/keyheap.c: record sizes, reuse of exact classes,
 * splitting, coalescing on demand, rebuild by mark + sweep, NOSPACE.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cxlpool.h"
#include "keyheap.h"

static struct keyheap h;
static uint8_t *mem;

static void
setup_bytes(uint64_t bytes)
{
	mem = calloc(1, bytes);
	cr_assert_not_null(mem);
	cr_assert_eq(keyheap_init(&h, mem, bytes), 0);
}

static void
fini(void)
{
	keyheap_fini(&h);
	free(mem);
}

TestSuite(keyheap, .fini = fini);

Test(keyheap, records_round_up_to_granules_with_an_8_byte_header)
{
	cr_assert_eq(keyheap_rec_gran(1), 1);
	cr_assert_eq(keyheap_rec_gran(8), 1);
	cr_assert_eq(keyheap_rec_gran(9), 2);
	cr_assert_eq(keyheap_rec_gran(1024), KH_NCLASS);
}

Test(keyheap, write_then_read_returns_the_key)
{
	const void *k;
	size_t klen, bytes;
	uint32_t ref, hlo;

	setup_bytes(4096);
	cr_assert_eq(keyheap_alloc(&h, 5, &ref), 0);
	keyheap_write(&h, ref, "hello", 5, 77, &bytes);
	cr_assert_eq(bytes, 13);
	cr_assert_eq(keyheap_read(&h, ref, &k, &klen, &hlo), 0);
	cr_assert_eq(klen, 5);
	cr_assert_eq(hlo, 77);
	cr_assert_eq(memcmp(k, "hello", 5), 0);
}

Test(keyheap, a_freed_record_is_reused_by_the_same_size)
{
	uint32_t a, b;

	setup_bytes(4096);
	cr_assert_eq(keyheap_alloc(&h, 40, &a), 0);
	keyheap_free(&h, a, 40);
	cr_assert_eq(keyheap_alloc(&h, 35, &b), 0);
	cr_assert_eq(a, b);
	cr_assert_eq(keyheap_check(&h, NULL, 0), 0);
}

Test(keyheap, full_heap_is_nospace_and_frees_make_room)
{
	uint32_t refs[16], r;

	setup_bytes(16 * 16);
	for (int i = 0; i < 16; i++) {
		cr_assert_eq(keyheap_alloc(&h, 8, &refs[i]), 0);
	}
	cr_assert_eq(keyheap_alloc(&h, 1, &r), CXLP_E_NOSPACE);
	/* free two neighbours: a 2-granule record fits only if coalesced */
	keyheap_free(&h, refs[4], 8);
	keyheap_free(&h, refs[5], 8);
	cr_assert_eq(keyheap_alloc(&h, 20, &r), 0);
	cr_assert_eq(r, refs[4]);
	cr_assert_eq(keyheap_check(&h, NULL, 0), 0);
}

Test(keyheap, a_larger_free_chunk_is_split)
{
	uint32_t big, small, rest;

	setup_bytes(10 * 16);
	cr_assert_eq(keyheap_alloc(&h, 8 + 16 * 4, &big), 0); /* 5 gran */
	cr_assert_eq(keyheap_alloc(&h, 8 + 16 * 4, &rest), 0);
	keyheap_free(&h, big, 8 + 16 * 4);
	cr_assert_eq(keyheap_alloc(&h, 8, &small), 0);
	cr_assert_eq(small, big);
	cr_assert_eq(h.free, 4);
	cr_assert_eq(keyheap_check(&h, NULL, 0), 0);
}

Test(keyheap, mark_and_sweep_rebuild_free_space_from_live_records)
{
	uint32_t r;

	setup_bytes(64 * 16);
	keyheap_reset(&h);
	cr_assert_eq(keyheap_mark(&h, 3, 20), 0);   /* granules 3-4 */
	cr_assert_eq(keyheap_mark(&h, 10, 1), 0);   /* granule 10 */
	cr_assert_eq(keyheap_mark(&h, 4, 1), CXLP_E_CORRUPT, "overlap");
	cr_assert_eq(keyheap_mark(&h, 63, 30), CXLP_E_CORRUPT, "past end");
	keyheap_sweep(&h);
	cr_assert_eq(h.top, 11);
	cr_assert_eq(h.used, 3);
	cr_assert_eq(h.free, 8);
	cr_assert_eq(keyheap_check(&h, NULL, 0), 0);
	cr_assert_eq(keyheap_alloc(&h, 40, &r), 0); /* 3 granules: 0-2 */
	cr_assert_eq(r, 0);
}

Test(keyheap, freeing_a_free_record_aborts, .signal = SIGABRT)
{
	uint32_t r;

	setup_bytes(4096);
	keyheap_alloc(&h, 8, &r);
	keyheap_free(&h, r, 8);
	keyheap_free(&h, r, 8);
}

Test(keyheap, check_catches_bad_accounting)
{
	uint32_t r;
	char why[200];

	setup_bytes(4096);
	keyheap_alloc(&h, 8, &r);
	h.used++;
	cr_assert_eq(keyheap_check(&h, why, sizeof(why)), CXLP_E_CORRUPT);
}

Test(keyheap, random_alloc_free_keeps_the_invariants)
{
	enum { N = 500 };
	uint32_t refs[N];
	size_t lens[N], n = 0;

	setup_bytes(16 * 1024);
	srandom(7);
	for (int op = 0; op < 5000; op++) {
		if (n > 0 && random() % 2) {
			size_t i = (size_t)random() % n;

			keyheap_free(&h, refs[i], lens[i]);
			refs[i] = refs[--n];
			lens[i] = lens[n];
		} else if (n < N) {
			size_t len = 1 + (size_t)random() % 200;

			if (keyheap_alloc(&h, len, &refs[n]) == 0) {
				lens[n++] = len;
			} else {
				cr_assert_lt(h.ngran - h.used,
				    keyheap_rec_gran(len) + h.ngran / 2,
				    "NOSPACE with most of the heap free");
			}
		}
		if (op % 100 == 0) {
			cr_assert_eq(keyheap_check(&h, NULL, 0), 0);
		}
	}
	cr_assert_eq(keyheap_check(&h, NULL, 0), 0);
}
