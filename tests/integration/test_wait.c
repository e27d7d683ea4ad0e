/*
 * test_wait.c -- backpressure (metaserver/waitq.c, handler/region/reclaim.c
 * note 6): an alloc on a pool where nothing can be evicted waits, up to
 * the handler's alloc wait, and gets room as soon as something makes it;
 * waiting handlers are served in the order they came; a wait that runs
 * out ends in CXLP_E_NOSPACE saying what holds the pool; without a wait
 * the alloc fails at once, as before.
 */
#include <pthread.h>

#include "clock.h"
#include "evfill.h"

TestSuite(wait, .fini = itest_stop, .timeout = 120);

static struct cxlp_handler *
connect_waiting(unsigned wait_ms, unsigned reserve)
{
	struct cxlp_config *cfg = ev_config();

	cr_assert_rc(cxlp_config_set_alloc_wait_ms(cfg, wait_ms), 0);
	cr_assert_rc(cxlp_config_set_reserve_regions(cfg, reserve), 0);
	return ev_connect_with(cfg);
}

/* One alloc in a thread of its own: when it began and ended, and how. */
struct waiter {
	struct cxlp_handler *h;
	pthread_t tid;
	uint64_t t0, t1;
	int rc;
	char why[256];
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	cxlp_page_t pg;
	void *buf;

	__atomic_store_n(&w->t0, cxlp_now_ms(), __ATOMIC_RELEASE);
	w->rc = cxlp_alloc(w->h, &pg, &buf);
	w->t1 = cxlp_now_ms();
	snprintf(w->why, sizeof(w->why), "%s", cxlp_errormsg());
	return NULL;
}

static void
waiter_start(struct waiter *w, struct cxlp_handler *h)
{
	*w = (struct waiter){ .h = h };
	cr_assert_eq(pthread_create(&w->tid, NULL, waiter_main, w), 0);
}

static void
waiter_join(struct waiter *w)
{
	cr_assert_eq(pthread_join(w->tid, NULL), 0);
}

static void
unpin(struct cxlp_handler *h, const char *prefix, uint32_t k)
{
	char key[32];
	size_t kl = kv_key(key, sizeof(key), prefix, k);

	cr_assert_rc(cxlp_unpin(h, key, kl), 0, "unpin %s", key);
}

Test(wait, an_alloc_waits_for_room_and_gets_it_when_a_pin_goes)
{
	struct cxlp_handler *h;
	struct waiter w;
	cxlp_page_t pg;
	void *buf;
	uint64_t t0;

	ev_start("clock", NULL);
	h = connect_waiting(0, 1);
	(void)ev_fill(h, "pin", CXLP_STORE_PIN);
	t0 = cxlp_now_ms(); /* without a wait: at once, as before */
	cr_assert_rc(cxlp_alloc(h, &pg, &buf), CXLP_E_NOSPACE);
	cr_assert_lt(cxlp_now_ms() - t0, 1000);
	cxlp_close(&h);
	itest_stop();

	ev_start("clock", NULL);
	h = connect_waiting(20000, 1);
	(void)ev_fill(h, "pin", CXLP_STORE_PIN);
	waiter_start(&w, h);
	while (__atomic_load_n(&w.t0, __ATOMIC_ACQUIRE) == 0) {
		usleep(1000); /* its alloc has begun (a slow start under TSan) */
	}
	usleep(400 * 1000);
	unpin(h, "pin", 7); /* now one key may go */
	waiter_join(&w);
	cr_assert_rc(w.rc, 0, "alloc after the unpin: %s", w.why);
	cr_assert_geq(w.t1 - w.t0, 350, "it did not wait for the unpin");
	cr_assert_lt(w.t1 - w.t0, 10000, "it waited %llu ms after the unpin",
	    (unsigned long long)(w.t1 - w.t0));
	cr_assert_eq(kv_stats(h).evicted_pressure, 1);
	itest_assert_pool_checks();
	cxlp_close(&h);
}

Test(wait, a_wait_that_runs_out_says_what_holds_the_pool)
{
	struct cxlp_handler *h;
	struct waiter w;

	ev_start("clock", NULL);
	h = connect_waiting(800, 1);
	(void)ev_fill(h, "pin", CXLP_STORE_PIN);
	waiter_start(&w, h);
	waiter_join(&w);
	cr_assert_rc(w.rc, CXLP_E_NOSPACE);
	cr_assert_geq(w.t1 - w.t0, 700, "it did not wait (%llu ms)",
	    (unsigned long long)(w.t1 - w.t0));
	cr_assert(strstr(w.why, "waited") != NULL &&
	    strstr(w.why, "pinned") != NULL, "message: %s", w.why);
	cxlp_close(&h);
}

/* With eviction off, room comes only from regions given back. A holds
 * the pool in regions of REGION / PAGE keys each, filled in order, and
 * gives back every region it empties (reserve 0). Each round two new
 * handlers wait for a region, one after the other, and A empties one
 * region: the first to come gets it, the second waits on and runs out.
 * The order alternates between rounds, so a queue that served at random
 * would pass all of them one time in 2^ROUNDS. */
#define ROUNDS 3

Test(wait, handlers_that_wait_are_served_in_the_order_they_came)
{
	const char *off[] = { "--evict", "off", NULL };
	const uint32_t per_region = REGION / PAGE;
	struct cxlp_handler *a, *got[ROUNDS];

	ev_start("clock", off);
	a = connect_waiting(0, 0);
	cr_assert_geq(ev_fill(a, "a", 0), ROUNDS * per_region);
	for (unsigned r = 0; r < ROUNDS; r++) {
		struct waiter w[2];
		struct cxlp_handler *x = connect_waiting(1500, 0);
		struct cxlp_handler *y = connect_waiting(1500, 0);
		struct waiter *first = &w[r % 2], *second = &w[1 - r % 2];

		waiter_start(first, r % 2 ? y : x);
		usleep(200 * 1000);
		waiter_start(second, r % 2 ? x : y);
		usleep(200 * 1000);
		for (uint32_t k = r * per_region; k < (r + 1) * per_region;
		    k++) {
			char key[32];
			size_t kl = kv_key(key, sizeof(key), "a", k);

			cr_assert_rc(cxlp_delete(a, key, kl), 0);
		}
		waiter_join(first);
		waiter_join(second);
		cr_assert_rc(first->rc, 0, "round %u: the first waiter: %s", r,
		    first->why);
		cr_assert_rc(second->rc, CXLP_E_NOSPACE, "round %u: the second "
		    "waiter took the region", r);
		got[r] = first->h; /* keeps its region: no room next round */
		cxlp_close(second->h == x ? &x : &y);
	}
	itest_assert_pool_checks();
	for (unsigned r = 0; r < ROUNDS; r++) {
		cxlp_close(&got[r]);
	}
	cxlp_close(&a);
}
