/*
 * test_replycache.c -- metaserver/replycache.c: a session's recent replies
 * by req_id, bounded in count and bytes, checked directly and against a
 * model of "the last RCACHE_ENTRIES finished replies".
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ms_int.h"

TestSuite(replycache);

static void
finish_str(struct rcache *rc, uint64_t id, const char *s)
{
	rcache_finish(rc, id, s, strlen(s) + 1);
}

Test(replycache, a_new_req_id_is_pending_until_finished_then_hits)
{
	struct rcache rc;
	struct pbuf b;

	rcache_init(&rc);
	pbuf_init(&b);
	cr_assert_eq(rcache_begin(&rc, 5, true, &b), RCACHE_NEW);
	cr_assert_eq(rcache_begin(&rc, 5, true, &b), RCACHE_WAIT);
	finish_str(&rc, 5, "reply five");
	pbuf_put_bytes(&b, "junk", 4);
	cr_assert_eq(rcache_begin(&rc, 5, true, &b), RCACHE_HIT);
	cr_assert_eq(b.len, strlen("reply five") + 1);
	cr_assert_str_eq((const char *)b.data, "reply five");
	cr_assert_eq(rcache_count(&rc), 1);
	pbuf_fini(&b);
	rcache_fini(&rc);
}

Test(replycache, abort_forgets_a_pending_request)
{
	struct rcache rc;
	struct pbuf b;

	rcache_init(&rc);
	pbuf_init(&b);
	cr_assert_eq(rcache_begin(&rc, 9, true, &b), RCACHE_NEW);
	rcache_abort(&rc, 9);
	cr_assert_eq(rcache_count(&rc), 0);
	cr_assert_eq(rcache_begin(&rc, 9, true, &b), RCACHE_NEW);
	pbuf_fini(&b);
	rcache_fini(&rc);
}

Test(replycache, the_oldest_reply_is_dropped_past_the_entry_bound)
{
	struct rcache rc;
	struct pbuf b;

	rcache_init(&rc);
	pbuf_init(&b);
	for (uint64_t id = 1; id <= RCACHE_ENTRIES + 1; id++) {
		cr_assert_eq(rcache_begin(&rc, id, true, &b), RCACHE_NEW);
		finish_str(&rc, id, "r");
	}
	cr_assert_eq(rcache_count(&rc), RCACHE_ENTRIES);
	cr_assert_eq(rcache_begin(&rc, 2, true, &b), RCACHE_HIT);
	cr_assert_eq(rcache_begin(&rc, RCACHE_ENTRIES + 1, true, &b),
	    RCACHE_HIT);
	/* evicted: applied once, its reply gone; never applied again */
	cr_assert_eq(rcache_begin(&rc, 1, true, &b), CXLP_E_UNKNOWN);
	cr_assert_eq(rcache_count(&rc), RCACHE_ENTRIES);
	/* unless the op finds its own first run (REGION_ALLOC) */
	cr_assert_eq(rcache_begin(&rc, 1, false, &b), RCACHE_NEW);
	pbuf_fini(&b);
	rcache_fini(&rc);
}

/* The ids of evicted replies are remembered for RCACHE_GONE evictions: a
 * retry after that many more is taken for a new request again. */
Test(replycache, an_evicted_id_is_remembered_for_rcache_gone_evictions)
{
	struct rcache rc;
	struct pbuf b;
	uint64_t last = RCACHE_ENTRIES + RCACHE_GONE;

	rcache_init(&rc);
	pbuf_init(&b);
	for (uint64_t id = 1; id <= last; id++) {
		cr_assert_eq(rcache_begin(&rc, id, true, &b), RCACHE_NEW);
		finish_str(&rc, id, "r");
	}
	for (uint64_t id = 1; id <= RCACHE_GONE; id++) {
		cr_assert_eq(rcache_begin(&rc, id, true, &b), CXLP_E_UNKNOWN,
		    "%llu", (unsigned long long)id);
	}
	cr_assert_eq(rcache_begin(&rc, last + 1, true, &b), RCACHE_NEW);
	finish_str(&rc, last + 1, "r"); /* evicts RCACHE_GONE + 1 */
	cr_assert_eq(rcache_begin(&rc, 1, true, &b), RCACHE_NEW,
	    "forgotten by now");
	cr_assert_eq(rcache_begin(&rc, RCACHE_GONE + 1, true, &b),
	    CXLP_E_UNKNOWN);
	pbuf_fini(&b);
	rcache_fini(&rc);
}

Test(replycache, replies_are_bounded_in_bytes_but_the_newest_is_kept)
{
	struct rcache rc;
	struct pbuf b;
	size_t big = RCACHE_BYTES_MAX / 3 + 1;
	uint8_t *data = calloc(1, RCACHE_BYTES_MAX + 10);

	cr_assert_not_null(data);
	rcache_init(&rc);
	pbuf_init(&b);
	for (uint64_t id = 1; id <= 3; id++) {
		cr_assert_eq(rcache_begin(&rc, id, true, &b), RCACHE_NEW);
		rcache_finish(&rc, id, data, big);
	}
	cr_assert_leq(rc.bytes, RCACHE_BYTES_MAX);
	cr_assert_eq(rcache_begin(&rc, 1, true, &b), CXLP_E_UNKNOWN, "evicted");
	cr_assert_eq(rcache_begin(&rc, 3, true, &b), RCACHE_HIT);
	cr_assert_eq(rcache_begin(&rc, 4, true, &b), RCACHE_NEW);
	rcache_finish(&rc, 4, data, RCACHE_BYTES_MAX + 10);
	cr_assert_eq(rcache_count(&rc), 1);
	cr_assert_eq(rc.bytes, RCACHE_BYTES_MAX + 10);
	cr_assert_eq(rcache_begin(&rc, 4, true, &b), RCACHE_HIT);
	pbuf_fini(&b);
	rcache_fini(&rc);
	free(data);
}

Test(replycache, pending_entries_are_never_evicted)
{
	struct rcache rc;
	struct pbuf b;

	rcache_init(&rc);
	pbuf_init(&b);
	for (uint64_t id = 1; id <= RCACHE_ENTRIES; id++) {
		cr_assert_eq(rcache_begin(&rc, id, true, &b), RCACHE_NEW);
	}
	cr_assert_eq(rcache_begin(&rc, 1000, true, &b), CXLP_E_BUSY);
	cr_assert_eq(rcache_begin(&rc, 1, true, &b), RCACHE_WAIT);
	finish_str(&rc, 1, "one");
	/* reuses 1's cell */
	cr_assert_eq(rcache_begin(&rc, 1000, true, &b), RCACHE_NEW);
	cr_assert_eq(rcache_begin(&rc, 1, true, &b), CXLP_E_UNKNOWN,
	    "1 was applied");
	cr_assert_eq(rcache_begin(&rc, 2000, true, &b), CXLP_E_BUSY);
	pbuf_fini(&b);
	rcache_fini(&rc);
}

Test(replycache, finish_of_an_unknown_req_id_changes_nothing)
{
	struct rcache rc;

	rcache_init(&rc);
	finish_str(&rc, 3, "x");
	cr_assert_eq(rcache_count(&rc), 0);
	cr_assert_eq(rc.bytes, 0);
	rcache_fini(&rc);
}

/* id is among done[from, to) */
static bool
among(const uint64_t *done, size_t from, size_t to, uint64_t id)
{
	for (size_t k = from; k < to; k++) {
		if (done[k] == id) {
			return true;
		}
	}
	return false;
}

/* Model: ids finished in order; the last RCACHE_ENTRIES are remembered with
 * their replies, the RCACHE_GONE evicted before them as gone. */
Test(replycache, random_requests_match_a_last_n_model)
{
	static uint64_t done[200000];
	struct rcache rc;
	struct pbuf b;
	unsigned seed = 99;
	size_t ndone = 0;

	rcache_init(&rc);
	pbuf_init(&b);
	for (int i = 0; i < 20000; i++) {
		uint64_t id = 1 + (uint64_t)(rand_r(&seed) % 400);
		size_t kept = ndone > RCACHE_ENTRIES ?
		    ndone - RCACHE_ENTRIES : 0;
		size_t gone = kept > RCACHE_GONE ? kept - RCACHE_GONE : 0;
		bool want_hit = among(done, kept, ndone, id);
		bool want_gone = !want_hit && among(done, gone, kept, id);
		char text[32];
		int got;

		snprintf(text, sizeof(text), "reply-%llu",
		    (unsigned long long)id);
		got = rcache_begin(&rc, id, true, &b);
		cr_assert_eq(got, want_hit ? RCACHE_HIT : want_gone ?
		    CXLP_E_UNKNOWN : RCACHE_NEW, "i=%d id=%llu", i,
		    (unsigned long long)id);
		if (want_hit) {
			cr_assert_str_eq((const char *)b.data, text);
			continue;
		}
		if (want_gone) {
			continue;
		}
		finish_str(&rc, id, text);
		done[ndone++] = id;
	}
	pbuf_fini(&b);
	rcache_fini(&rc);
}
