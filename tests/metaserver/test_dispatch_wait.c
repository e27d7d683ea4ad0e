/*
 * test_dispatch_wait.c -- RECLAIMs that wait for room, through
 * ms_dispatch with threads standing for the server's workers: peers that
 * repeat a waiting request, or wait for something no region gives, must
 * not hold workers or regions from the others (waitq.c notes 2 and 3).
 */
#include <pthread.h>

#include "clock.h"
#include "dispatch_fixture.h"

TestSuite(dispatch_wait, .init = dfx_setup, .fini = dfx_teardown,
    .timeout = 60);

static struct dfx_cl A, B, D;
static struct proto_loc aregs[64];
static unsigned naregs;

/* A takes every region of the pool; B and D are sessions with none */
static void
fill(void)
{
	dfx_client(&A, 1);
	aregs[naregs++] = A.region;
	while (naregs < 64 &&
	    dfx_region_alloc(&A, REGION_LEN, PAGE, &aregs[naregs]) == 0) {
		naregs++;
	}
	cr_assert_gt(naregs, 2);
	dfx_hello(&B, 2);
	dfx_hello(&D, 3);
}

/* one RECLAIM, in a thread of its own */
struct rq {
	struct dfx_cl *c;
	uint64_t id, len;
	uint32_t wait;
	pthread_t tid;
	int status;
	uint64_t ms;
};

static void *
rq_main(void *arg)
{
	struct rq *t = arg;
	struct pbuf f, rep;
	struct proto_rep_hdr h;
	struct preader r;
	uint64_t t0 = cxlp_now_ms();

	pbuf_init(&f);
	pbuf_init(&rep);
	dfx_put_req(&f, t->c, PROTO_OP_RECLAIM, t->id);
	proto_put_reclaim_req(&f, t->len, PAGE, 1, t->wait);
	(void)ms_dispatch(&dfx_ms, t->c->pipe, f.data, f.len, &rep);
	t->status = proto_get_rep_hdr(rep.data, rep.len, &h, &r) == 0 ?
	    h.status : -999;
	t->ms = cxlp_now_ms() - t0;
	pbuf_fini(&f);
	pbuf_fini(&rep);
	return NULL;
}

static void
rq_start(struct rq *t, struct dfx_cl *c, uint64_t id, uint64_t len,
    uint32_t wait)
{
	*t = (struct rq){ .c = c, .id = id, .len = len, .wait = wait };
	cr_assert_eq(pthread_create(&t->tid, NULL, rq_main, t), 0);
}

static void
rq_join(struct rq *t)
{
	cr_assert_eq(pthread_join(t->tid, NULL), 0);
}

/* A handler resends a request whose reply is late under the same id; a
 * hostile one sends it many times. Each copy of a waiting RECLAIM used
 * to wait for the first, a worker apiece: now it is answered BUSY. */
Test(dispatch_wait, copies_of_a_waiting_reclaim_are_busy_at_once)
{
	struct rq first, copy[5];

	fill();
	rq_start(&first, &B, 100, REGION_LEN, 1500);
	usleep(100 * 1000);
	for (int i = 0; i < 5; i++) {
		rq_start(&copy[i], &B, 100, REGION_LEN, 1500);
	}
	for (int i = 0; i < 5; i++) {
		rq_join(&copy[i]);
		cr_assert_eq(copy[i].status, CXLP_E_BUSY, "copy %d: %d", i,
		    copy[i].status);
		cr_assert_lt(copy[i].ms, 1000, "copy %d waited %llu ms", i,
		    (unsigned long long)copy[i].ms);
	}
	rq_join(&first);
	cr_assert_eq(first.status, CXLP_E_NOSPACE);
	cr_assert_geq(first.ms, 1400);
}

/* B waits only for its own keys to be evictable (len 0: it may not
 * grow); a region that comes free is D's at once, not held for B. */
Test(dispatch_wait, a_waiter_that_wants_no_region_holds_none_back)
{
	struct rq b, d;
	struct pbuf body;

	fill();
	rq_start(&b, &B, 300, 0, 1500 | PROTO_RECLAIM_MORE);
	usleep(100 * 1000);
	pbuf_init(&body);
	proto_put_region_free(&body, aregs[1].region, aregs[1].gen);
	cr_assert_eq(dfx_call(&A, PROTO_OP_REGION_FREE, &body, NULL, NULL), 0);
	pbuf_fini(&body);
	rq_start(&d, &D, 400, REGION_LEN, 0);
	rq_join(&d);
	cr_assert_eq(d.status, 0, "D got no region: %d", d.status);
	rq_join(&b);
	cr_assert_eq(b.status, CXLP_E_NOSPACE);
}

/* B waits for a region: A gives one back, which wakes B, and B gets it;
 * meanwhile a REGION_ALLOC of D's (a connect) gets none. */
Test(dispatch_wait, a_region_given_back_goes_to_the_waiter)
{
	struct rq b;
	struct proto_loc loc;
	struct pbuf body;

	fill();
	rq_start(&b, &B, 500, REGION_LEN, 3000 | PROTO_RECLAIM_MORE);
	usleep(100 * 1000);
	cr_assert_neq(dfx_region_alloc(&D, REGION_LEN, PAGE, &loc), 0);
	pbuf_init(&body);
	proto_put_region_free(&body, aregs[1].region, aregs[1].gen);
	cr_assert_eq(dfx_call(&A, PROTO_OP_REGION_FREE, &body, NULL, NULL), 0);
	pbuf_fini(&body);
	rq_join(&b);
	cr_assert_eq(b.status, 0, "the waiter did not get the region: %d",
	    b.status);
	cr_assert_lt(b.ms, 2500, "it was not woken by the region given back");
}
