/*
 * test_waitq.c -- the queue of RECLAIMs waiting for room (waitq.c) on its
 * own, with threads standing for server workers: only the oldest session
 * tries again at an event, and it alone may take a region; a session
 * keeps its place between waits and loses it when it leaves or stays
 * away; the queue's bound and a second wait of one session (a hostile or
 * broken handler) are answered CXLP_E_BUSY at once; shutdown ends every
 * wait.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <unistd.h>

#include "clock.h"
#include "cxlpool.h"
#include "ms_int.h"

static struct ms ms;

static void
setup(void)
{
	memset(&ms, 0, sizeof(ms));
	ms_waitq_init(&ms.waitq, 8); /* 4 may wait */
}

static void
teardown(void)
{
	ms_waitq_fini(&ms.waitq);
}

TestSuite(waitq, .init = setup, .fini = teardown, .timeout = 30);

struct sw {
	struct ms_wait w;
	pthread_t tid;
	int rc;
	uint64_t woke_ms; /* when its wait returned */
};

static void *
sw_main(void *arg)
{
	struct sw *s = arg;

	s->rc = ms_waitq_wait(&ms, &s->w);
	__atomic_store_n(&s->woke_ms, cxlp_now_ms(), __ATOMIC_RELEASE);
	return NULL;
}

/* session sess starts a wait of wait_ms in a thread of its own */
static void
sw_start(struct sw *s, uint64_t sess, unsigned wait_ms)
{
	*s = (struct sw){ .w = { .sess = sess, .region = true,
		.epoch = ms_waitq_epoch(&ms),
		.until_ms = cxlp_now_ms() + wait_ms } };
	cr_assert_eq(pthread_create(&s->tid, NULL, sw_main, s), 0);
	usleep(50 * 1000); /* it has joined the queue */
}

static void
sw_join(struct sw *s)
{
	cr_assert_eq(pthread_join(s->tid, NULL), 0);
}

Test(waitq, only_the_oldest_wakes_at_an_event_and_it_alone_takes_a_region)
{
	struct sw a, b;

	sw_start(&a, 1, 5000);
	sw_start(&b, 2, 5000);
	cr_assert(ms_waitq_may_take_region(&ms, 1));
	cr_assert_not(ms_waitq_may_take_region(&ms, 2));
	cr_assert_not(ms_waitq_may_take_region(&ms, 3), "a newcomer "
	    "overtook the queue");
	ms_space_event(&ms);
	sw_join(&a);
	cr_assert_eq(a.rc, 0, "the head was not woken");
	usleep(300 * 1000);
	cr_assert_eq(__atomic_load_n(&b.woke_ms, __ATOMIC_ACQUIRE), 0,
	    "b tried again before the head had its turn");
	ms_waitq_leave(&ms, 1); /* the head got room */
	sw_join(&b); /* the event came after b's try: b tries now */
	cr_assert_eq(b.rc, 0);
	cr_assert_lt(b.woke_ms - a.woke_ms, 3000);
	cr_assert(ms_waitq_may_take_region(&ms, 2), "b is the head now");
	ms_waitq_leave(&ms, 2);
	cr_assert(ms_waitq_may_take_region(&ms, 3));
}

Test(waitq, a_session_keeps_its_place_between_waits_until_it_stays_away)
{
	struct sw a, b;

	sw_start(&a, 1, 100);
	sw_join(&a); /* a slice ran out: 1 keeps its place, away */
	sw_start(&b, 2, 3000);
	cr_assert(ms_waitq_may_take_region(&ms, 1));
	cr_assert_not(ms_waitq_may_take_region(&ms, 2));
	sw_join(&b); /* 1 stays away: it is dropped, and 2 is head */
	cr_assert_eq(b.rc, CXLP_E_TIMEOUT);
	cr_assert(ms_waitq_may_take_region(&ms, 2), "an absent head held "
	    "the queue");
	ms_waitq_leave(&ms, 2);
}

Test(waitq, a_wait_past_its_end_is_over_even_after_an_event)
{
	struct ms_wait w = { .sess = 7, .epoch = ms_waitq_epoch(&ms),
		.until_ms = cxlp_now_ms() - 1000 };

	ms_space_event(&ms);
	cr_assert_eq(ms_waitq_wait(&ms, &w), CXLP_E_TIMEOUT);
	ms_waitq_leave(&ms, 7);
}

/* a waiter behind the head whose session ends stops waiting at once
 * (session end is a space event), not at the end of its wait */
Test(waitq, a_wait_of_a_session_that_ended_is_over)
{
	static bool dead;
	struct sw a, b;
	uint64_t t0;

	sw_start(&a, 1, 5000);
	b = (struct sw){ .w = { .sess = 2, .epoch = ms_waitq_epoch(&ms),
		.until_ms = cxlp_now_ms() + 5000, .dead = &dead } };
	cr_assert_eq(pthread_create(&b.tid, NULL, sw_main, &b), 0);
	usleep(50 * 1000);
	t0 = cxlp_now_ms();
	__atomic_store_n(&dead, true, __ATOMIC_RELEASE);
	ms_space_event(&ms);
	sw_join(&b);
	cr_assert_eq(b.rc, CXLP_E_TIMEOUT);
	cr_assert_lt(b.woke_ms - t0, 2000, "it waited on");
	sw_join(&a); /* the head tries again */
	cr_assert_eq(a.rc, 0);
}

Test(waitq, a_full_queue_and_a_second_wait_of_one_session_are_busy)
{
	struct sw s[4];
	struct ms_wait extra = { .sess = 9, .until_ms = cxlp_now_ms() + 5000 };
	struct ms_wait again = { .sess = 1, .until_ms = cxlp_now_ms() + 5000 };
	uint64_t t0;

	for (unsigned i = 0; i < 4; i++) {
		sw_start(&s[i], 1 + i, 5000);
	}
	t0 = cxlp_now_ms();
	cr_assert_eq(ms_waitq_wait(&ms, &extra), CXLP_E_BUSY);
	cr_assert_eq(ms_waitq_wait(&ms, &again), CXLP_E_BUSY);
	cr_assert_lt(cxlp_now_ms() - t0, 1000, "a refused wait waited");
	ms_waitq_close(&ms); /* shutdown: every wait ends now */
	for (unsigned i = 0; i < 4; i++) {
		sw_join(&s[i]);
		cr_assert_eq(s[i].rc, CXLP_E_TIMEOUT);
		cr_assert_lt(s[i].woke_ms - t0, 2000, "shutdown left a wait");
	}
}
