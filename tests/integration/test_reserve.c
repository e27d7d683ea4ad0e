/*
 * test_reserve.c -- reservations (handler/region/reserve.c): n pages held at
 * once, taken without a wait or a round trip, all or nothing on a pool
 * that cannot give them, waited for when the call allows, and given back
 * by release.
 */
#include <pthread.h>

#include "clock.h"
#include "evfill.h"

TestSuite(reserve, .fini = itest_stop, .timeout = 120);

#define N 40

Test(reserve, a_reservation_holds_its_pages_and_hands_them_out_without_asking)
{
	struct cxlp_handler *h;
	struct cxlp_reservation *r = NULL;
	struct cxlp_stats s0, st;
	cxlp_page_t pg;
	void *buf;

	ev_start("clock", NULL);
	h = ev_connect(0);
	cr_assert_rc(cxlp_reserve(h, N, 0, &r), 0);
	cr_assert_eq(cxlp_reserve_left(r), N);
	s0 = kv_stats(h);
	cr_assert_eq(s0.pages_reserved, N);
	cr_assert_geq(s0.pages_allocated, N);
	for (uint32_t k = 0; k < N; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "r", k);
		bool stored = false;

		cr_assert_rc(cxlp_reserve_alloc(h, r, &pg, &buf), 0);
		kv_fill(buf, VLEN, 1, k);
		cr_assert_rc(cxlp_store(h, key, kl, pg, VLEN, 0, &stored), 0);
		cr_assert(stored);
	}
	cr_assert_rc(cxlp_reserve_alloc(h, r, &pg, &buf), CXLP_E_NOSPACE);
	st = kv_stats(h);
	cr_assert_eq(st.pages_reserved, 0);
	cr_assert_eq(st.reclaims, s0.reclaims, "a reserved page asked the "
	    "server for room");
	cr_assert_eq(st.pages_registered, s0.pages_registered + N);
	for (uint32_t k = 0; k < N; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "r", k);
		const void *data;
		size_t len;
		uint32_t writer;

		cr_assert_rc(cxlp_retrieve(h, key, kl, 0, &data, &len), 0);
		cr_assert(kv_check(data, len, k, &writer), "bytes of %s", key);
	}
	cr_assert_rc(cxlp_reserve_release(h, &r), 0);
	cr_assert_null(r);
	cxlp_close(&h);
}

Test(reserve, release_gives_back_the_pages_not_taken)
{
	struct cxlp_handler *h;
	struct cxlp_reservation *r = NULL;
	struct cxlp_stats s0, st;
	cxlp_page_t pg;
	void *buf;

	ev_start("clock", NULL);
	h = ev_connect(0);
	s0 = kv_stats(h);
	cr_assert_rc(cxlp_reserve(h, N, 0, &r), 0);
	cr_assert_rc(cxlp_reserve_alloc(h, r, &pg, &buf), 0);
	cr_assert_rc(cxlp_reserve_release(h, &r), 0);
	st = kv_stats(h);
	cr_assert_eq(st.pages_reserved, 0);
	cr_assert_eq(st.pages_allocated, s0.pages_allocated + 1, "the page "
	    "taken is the caller's; the others went back");
	cr_assert_rc(cxlp_free(h, pg), 0);
	cr_assert_eq(kv_stats(h).pages_free, s0.pages_free);
	cxlp_close(&h);
}

/* A pool whose every key is pinned can give no page: the reservation
 * fails whole, holding nothing, and says why; with a wait, it gets its
 * pages as soon as pins go. */
Test(reserve, on_a_pool_that_cannot_give_them_it_is_all_or_nothing)
{
	struct cxlp_handler *h;
	struct cxlp_reservation *r = NULL;
	struct cxlp_stats s0;
	uint64_t n;

	ev_start("clock", NULL);
	h = ev_connect(0);
	n = ev_fill(h, "pin", CXLP_STORE_PIN);
	for (uint32_t k = 0; k < 5; k++) { /* room for 5 pages, not N */
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "pin", k);

		cr_assert_rc(cxlp_unpin(h, key, kl), 0);
	}
	s0 = kv_stats(h);
	cr_assert_rc(cxlp_reserve(h, N, 0, &r), CXLP_E_NOSPACE);
	cr_assert_null(r);
	cr_assert(strstr(cxlp_errormsg(), "reserve: 5 of 40 pages") != NULL,
	    "message: %s", cxlp_errormsg());
	cr_assert_eq(kv_stats(h).pages_allocated, s0.pages_allocated,
	    "a failed reservation kept pages");
	cr_assert_eq(kv_stats(h).pages_reserved, 0);
	for (uint32_t k = 5; k < N && k < n; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "pin", k);

		cr_assert_rc(cxlp_unpin(h, key, kl), 0);
	}
	cr_assert_rc(cxlp_reserve(h, N, 0, &r), 0, "%s", cxlp_errormsg());
	cr_assert_eq(cxlp_reserve_left(r), N);
	cr_assert_rc(cxlp_reserve_release(h, &r), 0);
	cxlp_close(&h);
}

/* On a full pool, the pages of a reservation larger than one RECLAIM's
 * batch come in one round trip (reserve.c note 1). */
Test(reserve, a_large_reservation_on_a_full_pool_asks_once)
{
	struct cxlp_handler *h;
	struct cxlp_reservation *r = NULL;
	struct cxlp_stats s0, st;
	uint64_t cap;

	ev_start("clock", NULL);
	h = ev_connect(0);
	(void)ev_fill(h, "a", 0);
	cap = ev_capacity(h);
	s0 = kv_stats(h);
	cr_assert_rc(cxlp_reserve(h, cap / 4, 0, &r), 0, "%s",
	    cxlp_errormsg()); /* 5 batches of 1/20 */
	st = kv_stats(h);
	cr_assert_eq((st.reclaims - st.refills) - (s0.reclaims - s0.refills),
	    1, "%llu round trips for %llu pages",
	    (unsigned long long)(st.reclaims - s0.reclaims),
	    (unsigned long long)(cap / 4));
	cr_assert_eq(st.pages_reserved, cap / 4);
	cr_assert_rc(cxlp_reserve_release(h, &r), 0);
	cxlp_close(&h);
}

struct bg {
	struct cxlp_handler *h;
	struct cxlp_reservation *r;
	int rc;
	uint64_t ms;
};

static void *
bg_reserve(void *arg)
{
	struct bg *b = arg;
	uint64_t t0 = cxlp_now_ms();

	b->rc = cxlp_reserve(b->h, 3, 20000, &b->r);
	b->ms = cxlp_now_ms() - t0;
	return NULL;
}

Test(reserve, a_reservation_that_may_wait_gets_its_pages_when_pins_go)
{
	struct bg b = { 0 };
	pthread_t t;

	ev_start("clock", NULL);
	b.h = ev_connect(0);
	(void)ev_fill(b.h, "pin", CXLP_STORE_PIN);
	cr_assert_eq(pthread_create(&t, NULL, bg_reserve, &b), 0);
	usleep(400 * 1000);
	for (uint32_t k = 0; k < 3; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "pin", k);

		cr_assert_rc(cxlp_unpin(b.h, key, kl), 0);
	}
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_rc(b.rc, 0);
	cr_assert_geq(b.ms, 350, "it did not wait");
	cr_assert_lt(b.ms, 15000);
	cr_assert_eq(cxlp_reserve_left(b.r), 3);
	cr_assert_rc(cxlp_reserve_release(b.h, &b.r), 0);
	itest_assert_pool_checks();
	cxlp_close(&b.h);
}

Test(reserve, bad_arguments_are_refused)
{
	struct cxlp_handler *h;
	struct cxlp_reservation *r = NULL;
	cxlp_page_t pg;
	void *buf;

	ev_start("clock", NULL);
	h = ev_connect(0);
	cr_assert_rc(cxlp_reserve(h, 0, 0, &r), -EINVAL);
	cr_assert_rc(cxlp_reserve(h, CXLP_RESERVE_MAX + 1u, 0, &r), -EINVAL);
	cr_assert_rc(cxlp_reserve(h, 1, 0, NULL), -EINVAL);
	cr_assert_rc(cxlp_reserve(NULL, 1, 0, &r), -EINVAL);
	cr_assert_rc(cxlp_reserve_alloc(h, NULL, &pg, &buf), -EINVAL);
	cr_assert_eq(cxlp_reserve_left(NULL), 0);
	cr_assert_rc(cxlp_reserve_release(h, NULL), 0);
	cr_assert_rc(cxlp_reserve_release(h, &r), 0);
	cxlp_close(&h);
}
