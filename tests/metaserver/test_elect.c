/*
 * test_elect.c -- tests of metaserver/elect.c against real etcd members
 * (etcd_fixture.c): who leads, that epochs grow, and the fencing rule:
 * elect_may_write is never true past the earliest moment the leader's
 * lease could expire (the last successful renewal's send + TTL).
 *
 * Outcomes are orderings and epochs, never durations: every wait is a
 * generous bound on something that must happen, so a slow machine makes
 * a test slower, not red.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "elect.h"
#include "err.h"
#include "etcd.h"
#include "etcd_fixture.h"

#define TTL_MS 2000u
#define WAIT_MS 30000u /* bound on anything that must happen */
#define KEY "/cxlpool/test-elect"

static struct etcdfx fx;

static void
setup(void)
{
	etcdfx_skip_unless_present();
	etcdfx_start(&fx, 1);
}

static void
setup3(void)
{
	etcdfx_skip_unless_present();
	etcdfx_start(&fx, 3);
}

static void
teardown(void)
{
	etcdfx_stop(&fx);
}

TestSuite(elect, .init = setup, .fini = teardown, .timeout = 120);

static uint64_t
boot_ms(void)
{
	return cxlp_clock_ms(CLOCK_BOOTTIME);
}

/* What one campaigner's callbacks saw. */
struct rec {
	pthread_mutex_t lock;
	char value[64];
	struct elect *_Atomic e;
	int elected, lost, changed;
	uint64_t epoch;        /* of the last term won */
	uint64_t elected_at;   /* boot ms */
	uint64_t lost_at;
	bool wrote_at_lost;    /* elect_may_write inside lost */
	uint64_t seen_epoch;   /* leader_changed */
	char seen[64];
	struct rec *other;     /* whose may_write to sample when elected */
	int other_wrote;       /* -1: not sampled */
};

static void
on_elected(void *arg, uint64_t epoch)
{
	struct rec *r = arg;
	struct elect *o = r->other != NULL ? atomic_load(&r->other->e) : NULL;

	pthread_mutex_lock(&r->lock);
	r->other_wrote = o != NULL ? elect_may_write(o) : -1;
	r->elected++;
	r->epoch = epoch;
	r->elected_at = boot_ms();
	pthread_mutex_unlock(&r->lock);
}

static void
on_lost(void *arg, const char *reason)
{
	struct rec *r = arg;
	struct elect *e = atomic_load(&r->e);

	pthread_mutex_lock(&r->lock);
	r->wrote_at_lost = e != NULL && elect_may_write(e);
	r->lost++;
	r->lost_at = boot_ms();
	pthread_mutex_unlock(&r->lock);
}

static void
on_changed(void *arg, const char *value, uint64_t epoch)
{
	struct rec *r = arg;

	pthread_mutex_lock(&r->lock);
	r->changed++;
	r->seen_epoch = epoch;
	snprintf(r->seen, sizeof(r->seen), "%s", value);
	pthread_mutex_unlock(&r->lock);
}

static void
rec_start(struct rec *r, const char *name, uint32_t poll_ms)
{
	struct elect_cfg cfg = {
		.endpoints = fx.spec, .key = KEY, .ttl_ms = TTL_MS,
		.poll_ms = poll_ms, .value = r->value,
	};
	struct elect_cbs cbs = { on_elected, on_lost, on_changed, r };
	struct elect *e;

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	r->other_wrote = -1;
	snprintf(r->value, sizeof(r->value), "%s tcp://host-%s:1 pid=%d",
	    name, name, (int)getpid());
	cr_assert_eq(elect_start(&e, &cfg, &cbs), 0, "%s", cxlp_errormsg());
	atomic_store(&r->e, e);
}

static void
rec_stop(struct rec *r)
{
	struct elect *e = atomic_exchange(&r->e, NULL);

	elect_stop(&e);
}

/* A snapshot of r's counters. */
static struct rec
rec_get(struct rec *r)
{
	struct rec c;

	pthread_mutex_lock(&r->lock);
	c = *r;
	pthread_mutex_unlock(&r->lock);
	return c;
}

#define WAIT_FOR(cond)                                                     \
	do {                                                               \
		uint64_t end_ = cxlp_now_ms() + WAIT_MS;                   \
		while (!(cond) && cxlp_now_ms() < end_) {                  \
			cxlp_sleep_ms(5);                                  \
		}                                                          \
		cr_assert(cond, "not within %u ms: %s", WAIT_MS, #cond);   \
	} while (0)

static struct etcd *
client(void)
{
	struct etcd_endpoints ep;
	struct etcd *c;

	cr_assert_eq(etcd_endpoints_parse(fx.spec, &ep), 0);
	cr_assert_eq(etcd_new(&c, &ep, 5000), 0);
	return c;
}

static bool
is_leader(struct rec *r)
{
	struct elect *e = atomic_load(&r->e);

	return e != NULL && elect_may_write(e);
}

Test(elect, one_campaigner_becomes_leader_and_its_record_is_the_key)
{
	struct rec a;
	struct elect_status st;
	struct etcd_kv kv;
	struct etcd *c = client();

	rec_start(&a, "a", 0);
	WAIT_FOR(rec_get(&a).elected == 1);
	cr_assert(is_leader(&a));
	elect_status(a.e, &st);
	cr_assert_eq(st.role, ELECT_LEADER);
	cr_assert_eq(st.epoch, rec_get(&a).epoch);
	cr_assert_eq(st.terms, 1);
	cr_assert_eq(st.valid_until_ms, st.renew_sent_ms + st.ttl_ms -
	    st.margin_ms);
	cr_assert_eq(etcd_get(c, KEY, &kv), 0);
	cr_assert_str_eq(kv.value, a.value);
	cr_assert_eq((uint64_t)kv.create_rev, st.epoch);
	cr_assert_neq(kv.lease, 0);
	/* stopping resigns: the key goes at once, not after the TTL */
	rec_stop(&a);
	cr_assert_eq(etcd_get(c, KEY, &kv), -ENOENT);
	cr_assert_eq(a.lost, 0, "no callback from elect_stop");
	etcd_delete(&c);
}

Test(elect, two_campaigners_make_exactly_one_leader_and_one_standby)
{
	struct rec a, b;
	struct rec *l, *s;

	rec_start(&a, "a", 0);
	rec_start(&b, "b", 0);
	WAIT_FOR(rec_get(&a).elected + rec_get(&b).elected >= 1);
	l = rec_get(&a).elected ? &a : &b;
	s = l == &a ? &b : &a;
	WAIT_FOR(rec_get(s).changed >= 1);
	cr_assert_eq(rec_get(s).seen_epoch, rec_get(l).epoch);
	cr_assert_str_eq(rec_get(s).seen, l->value);
	/* through several keepalive periods, still one leader */
	cxlp_sleep_ms(2 * TTL_MS);
	cr_assert_eq(rec_get(l).elected, 1);
	cr_assert_eq(rec_get(s).elected, 0);
	cr_assert_eq(rec_get(l).lost + rec_get(s).lost, 0);
	cr_assert(is_leader(l));
	cr_assert(!is_leader(s));
	rec_stop(&a);
	rec_stop(&b);
}

/* A leader frozen as by SIGSTOP (no keepalive, no callback): the
 * standby wins after the TTL with a greater epoch, and the frozen one's
 * deadline had passed before that; thawed, it finds itself lost before
 * anything else. */
Test(elect, frozen_leader_is_replaced_after_its_ttl_and_wakes_fenced)
{
	struct rec a, b;
	struct elect_status sa;

	rec_start(&a, "a", 0);
	WAIT_FOR(rec_get(&a).elected == 1);
	rec_start(&b, "b", 0);
	b.other = &a;
	WAIT_FOR(rec_get(&b).changed >= 1);
	elect_test_hold(a.e, true);
	WAIT_FOR(rec_get(&b).elected == 1);
	elect_status(a.e, &sa);
	cr_assert_gt(rec_get(&b).epoch, rec_get(&a).epoch);
	cr_assert_eq(rec_get(&b).other_wrote, 0, "a could still write when "
	    "b was elected");
	cr_assert_lt(sa.valid_until_ms, rec_get(&b).elected_at);
	cr_assert(sa.valid_until_ms <= sa.renew_sent_ms + sa.ttl_ms -
	    sa.margin_ms);
	/* still frozen: not a single step, yet it may not write */
	cr_assert(!is_leader(&a));
	cr_assert_eq(rec_get(&a).lost, 0);
	elect_test_hold(a.e, false);
	WAIT_FOR(rec_get(&a).lost == 1);
	cr_assert(!rec_get(&a).wrote_at_lost);
	WAIT_FOR(rec_get(&a).seen_epoch == rec_get(&b).epoch);
	cr_assert_eq(rec_get(&a).elected, 1);
	cr_assert(is_leader(&b));
	rec_stop(&a);
	rec_stop(&b);
}

/* Sample r's elect_may_write until r's term is lost: the last boot ms
 * it was seen true (0: never). */
static uint64_t
last_true_until_lost(struct rec *r)
{
	uint64_t end = cxlp_now_ms() + WAIT_MS, last = 0;

	while (rec_get(r).lost == 0 && cxlp_now_ms() < end) {
		uint64_t t = boot_ms();

		if (is_leader(r)) {
			last = t;
		}
		usleep(200);
	}
	cr_assert_eq(rec_get(r).lost, 1, "the leader never lost its term");
	return last;
}

/* r lost its term with etcd unreachable: it stopped writing by its
 * deadline, before its lease could expire at etcd. */
static void
assert_fenced(struct rec *r, uint64_t last_true)
{
	struct elect_status st;

	elect_status(atomic_load(&r->e), &st);
	cr_assert_eq(st.role, ELECT_STANDBY);
	cr_assert_gt(st.renew_sent_ms, 0);
	/* the earliest the lease could expire: the last successful
	 * renewal's send + TTL; may_write ended a margin before */
	cr_assert_lt(last_true, st.renew_sent_ms + st.ttl_ms - st.margin_ms,
	    "may_write true at %" PRIu64 ", deadline %" PRIu64, last_true,
	    st.renew_sent_ms + st.ttl_ms - st.margin_ms);
	cr_assert_geq(rec_get(r).lost_at, st.renew_sent_ms + st.ttl_ms -
	    st.margin_ms, "lost before the deadline, with etcd down");
	cr_assert(!rec_get(r).wrote_at_lost);
}

Test(elect, etcd_killed_leader_stops_before_its_lease_could_expire)
{
	struct rec a, b;
	uint64_t last, epoch0;

	rec_start(&a, "a", 0);
	WAIT_FOR(rec_get(&a).elected == 1);
	rec_start(&b, "b", 0);
	WAIT_FOR(rec_get(&b).changed >= 1);
	epoch0 = rec_get(&a).epoch;
	cr_assert(is_leader(&a));
	etcdfx_kill(&fx, 0);
	last = last_true_until_lost(&a);
	cr_assert_gt(last, 0, "a was leader when etcd died");
	assert_fenced(&a, last);
	cr_assert_eq(rec_get(&b).elected, 0);
	/* etcd back: one leader again, of a later term */
	etcdfx_restart(&fx, 0);
	WAIT_FOR(rec_get(&a).elected + rec_get(&b).elected == 2);
	cxlp_sleep_ms(TTL_MS);
	cr_assert_eq(rec_get(&a).elected + rec_get(&b).elected, 2);
	cr_assert_neq(is_leader(&a), is_leader(&b));
	cr_assert_gt(rec_get(is_leader(&a) ? &a : &b).epoch, epoch0);
	rec_stop(&a);
	rec_stop(&b);
}

/* Rounds of: the leader resigns, two standbys (polling every 5 ms) race
 * for the vacancy. Exactly one wins each round, epochs grow. */
Test(elect, two_standbys_racing_for_one_vacancy_make_one_winner)
{
	enum { ROUNDS = 8 };
	struct rec r[3];
	struct etcd *c = client();
	struct etcd_kv kv;
	unsigned leader = 0;
	int won[3] = { 0 };
	uint64_t epoch = 0;

	rec_start(&r[0], "r0", 5);
	WAIT_FOR(rec_get(&r[0]).elected == 1);
	epoch = rec_get(&r[0]).epoch;
	rec_start(&r[1], "r1", 5);
	rec_start(&r[2], "r2", 5);
	WAIT_FOR(rec_get(&r[1]).changed >= 1 && rec_get(&r[2]).changed >= 1);
	for (int round = 0; round < ROUNDS; round++) {
		unsigned x = (leader + 1) % 3, y = (leader + 2) % 3, w;
		int ex = rec_get(&r[x]).elected, ey = rec_get(&r[y]).elected;

		rec_stop(&r[leader]);
		WAIT_FOR(rec_get(&r[x]).elected + rec_get(&r[y]).elected ==
		    ex + ey + 1);
		/* the loser has had time to take it too, had it been able */
		cxlp_sleep_ms(300);
		cr_assert_eq(rec_get(&r[x]).elected + rec_get(&r[y]).elected,
		    ex + ey + 1, "round %d: both won", round);
		w = rec_get(&r[x]).elected > ex ? x : y;
		cr_assert(is_leader(&r[w]));
		cr_assert(!is_leader(&r[w == x ? y : x]));
		cr_assert_gt(rec_get(&r[w]).epoch, epoch, "round %d", round);
		epoch = rec_get(&r[w]).epoch;
		cr_assert_eq(etcd_get(c, KEY, &kv), 0);
		cr_assert_str_eq(kv.value, r[w].value);
		won[w]++;
		rec_start(&r[leader], leader == 0 ? "r0" : leader == 1 ? "r1" :
		    "r2", 5);
		WAIT_FOR(rec_get(&r[leader]).changed >= 1);
		leader = w;
	}
	for (int i = 0; i < 3; i++) {
		rec_stop(&r[i]);
	}
	etcd_delete(&c);
}

/* Two of three members stopped: the survivor has no quorum, renewals
 * fail, and the leader stops writing by its deadline. */
Test(elect, minority_of_a_three_member_cluster_stops_the_leader,
    .init = setup3)
{
	struct rec a, b;
	uint64_t last;

	rec_start(&a, "a", 0);
	WAIT_FOR(rec_get(&a).elected == 1);
	rec_start(&b, "b", 0);
	WAIT_FOR(rec_get(&b).changed >= 1);
	etcdfx_kill(&fx, 1);
	etcdfx_kill(&fx, 2);
	last = last_true_until_lost(&a);
	cr_assert_gt(last, 0);
	assert_fenced(&a, last);
	cr_assert_eq(rec_get(&b).elected, 0);
	rec_stop(&a);
	rec_stop(&b);
}
