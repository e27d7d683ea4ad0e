/*
 * test_regview_reentry.c -- what a region callback may and may not call
 * on its own handler (cxlpool.h, "The region callback"; handler/region/regview.c
 * note 3, async.c note 2), from a review:
 *   - cxlp_close of the handler is refused: the call delivering the
 *     event goes on using the handler once the callback returns (it was
 *     handed to a thread that freed the handler under that call);
 *   - an asynchronous submit never waits for a slot (it waited for a
 *     request that might need the delivering thread: a deadlock).
 * The MAPPED events here come from cxlp_region_view of another handler's
 * region, delivered on the calling thread.
 */
#include "async_fixture.h"

TestSuite(regview_reentry, .init = async_start, .fini = async_stop_all,
    .timeout = 60);

/* a's region holding key, stored by a */
static uint32_t
region_of(struct cxlp_handler *a, const char *key)
{
	cxlp_page_t pg;
	void *buf;
	bool ok = false;
	uint32_t r;
	uint64_t off;

	cr_assert_rc(cxlp_alloc(a, &pg, &buf), 0);
	memset(buf, 0x6b, 64);
	cr_assert_rc(cxlp_store(a, key, strlen(key), pg, 64, 0, &ok), 0);
	cr_assert(ok);
	cr_assert_rc(cxlp_locate(a, buf, &r, &off), 0);
	return r;
}

static struct {
	struct cxlp_handler *h;
	bool still_open; /* the handler pointer survived cxlp_close */
	int submit_rc;
	int mapped;
} seen;

static void
close_on_map(void *arg, int event, const struct cxlp_region_info *info)
{
	struct cxlp_handler *copy = seen.h;

	(void)arg, (void)info;
	if (event == CXLP_REGION_MAPPED) {
		cxlp_close(&copy);
		seen.still_open = copy != NULL;
	}
}

Test(regview_reentry, close_from_the_callback_is_refused_and_h_stays_usable)
{
	struct cxlp_handler *a = connect_n(4, true), *b = connect_n(4, true);
	struct cxlp_region_info v;
	const void *data;
	size_t len;
	uint32_t ra = region_of(a, "rk");

	memset(&seen, 0, sizeof(seen));
	seen.h = b;
	cr_assert_rc(cxlp_set_region_fn(b, close_on_map, NULL), 0);
	cr_assert_rc(cxlp_region_view(b, ra, &v), 0);
	cr_assert(seen.still_open, "cxlp_close from the region callback "
	    "took the handler");
	cr_assert_rc(cxlp_retrieve(b, "rk", 2, 0, &data, &len), 0);
	cr_assert_eq(len, 64);
	cr_assert_eq(((const uint8_t *)data)[63], 0x6b);
	cr_assert_rc(cxlp_set_region_fn(b, NULL, NULL), 0);
	cxlp_close(&b);
	cxlp_close(&a);
}

static void
retrieved_cb(void *arg, int rc, size_t n, const void *const data[],
    const size_t lens[], const int status[])
{
	(void)data, (void)lens, (void)status;
	cb_end((intptr_t)arg, rc, n, NULL);
}

static void
submit_on_map(void *arg, int event, const struct cxlp_region_info *info)
{
	const void *k[1] = { "rk" };
	size_t kl[1] = { 2 };

	(void)arg, (void)info;
	if (event == CXLP_REGION_MAPPED) {
		seen.submit_rc = cxlp_batch_retrieve_async(seen.h, 1, k, kl, 0,
		    retrieved_cb, (void *)(intptr_t)1);
		if (seen.submit_rc == 0) {
			cb_submitted();
		}
	}
}

/* b has one slot, held by a pinned retrieve (a LOOKUP, not a direct
 * read) whose answer the slow proxy keeps 1.5 s; its region callback's
 * submit answers -EAGAIN at once. */
Test(regview_reentry, a_submit_from_the_callback_never_waits_for_a_slot)
{
	struct cxlp_handler *a = connect_n(4, true), *b = connect_n(1, false);
	struct cxlp_region_info v;
	const void *k[1] = { "rk" };
	size_t kl[1] = { 2 };
	uint32_t ra = region_of(a, "rk");

	cb_reset();
	memset(&seen, 0, sizeof(seen));
	seen.h = b;
	seen.submit_rc = 1;
	slow_set(1500);
	cr_assert_rc(cxlp_batch_retrieve_async(b, 1, k, kl, CXLP_RETRIEVE_PIN,
	    retrieved_cb, (void *)(intptr_t)0), 0);
	cb_submitted();
	cr_assert_rc(cxlp_async_inflight(b, NULL), 1);
	cr_assert_rc(cxlp_set_region_fn(b, submit_on_map, NULL), 0);
	cr_assert_rc(cxlp_region_view(b, ra, &v), 0);
	cr_assert_eq(seen.submit_rc, -EAGAIN, "the callback's submit "
	    "returned %d: it waited for the slot", seen.submit_rc);
	cb_wait(seen.submit_rc == 0 ? 2 : 1);
	cr_assert_rc(cb.rcs[0], 0);
	slow_set(0);
	cr_assert_rc(cxlp_unpin(b, "rk", 2), 0);
	cr_assert_rc(cxlp_set_region_fn(b, NULL, NULL), 0);
	cxlp_close(&b);
	cxlp_close(&a);
}
