/*
 * test_group.c -- request groups (handler/kv/group.c, metaserver/group.c):
 * admission by reservation, staging that no reader sees, the commit of
 * the last batch, rollback (past the total, an alloc timeout, abort,
 * cancel from another process, a killed writer, a metaserver restart)
 * and the pins of chunks already present. Each test asserts what the
 * pool holds afterwards: keys present or absent, with their bytes, and
 * pages free again.
 */
#include <pthread.h>

#include "clock.h"
#include "evfill.h"
#include "worker.h"

TestSuite(group, .fini = itest_stop, .timeout = 120);

#define KEYS 16

struct chunk {
	char key[KEYS][48];
	const void *keys[KEYS];
	size_t kl[KEYS], lens[KEYS];
	cxlp_page_t pg[KEYS];
	bool stored[KEYS];
};

/* keys [first, first + n) of prefix, written into pages of g */
static void
chunks(struct cxlp_handler *h, struct cxlp_group *g, struct chunk *c,
    const char *prefix, uint32_t first, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		void *buf;

		cr_assert_rc(cxlp_group_alloc(h, g, &c->pg[i], &buf), 0);
		c->kl[i] = kv_key(c->key[i], sizeof(c->key[i]), prefix,
		    first + i);
		c->keys[i] = c->key[i];
		c->lens[i] = VLEN;
		kv_fill(buf, VLEN, 3, first + i);
	}
}

static int
send(struct cxlp_handler *h, struct cxlp_group *g, struct chunk *c,
    uint32_t n)
{
	return cxlp_group_store(h, g, n, c->keys, c->kl, c->pg, c->lens,
	    c->stored);
}

/* how many of keys [0, n) of prefix the pool has; each found one has its
 * bytes */
static uint32_t
present(struct cxlp_handler *h, const char *prefix, uint32_t n)
{
	uint32_t found = 0;

	for (uint32_t i = 0; i < n; i++) {
		char key[48];
		size_t kl = kv_key(key, sizeof(key), prefix, i);
		const void *data;
		size_t len;
		uint32_t w;

		if (cxlp_retrieve(h, key, kl, 0, &data, &len) == 0) {
			cr_assert(kv_check(data, len, i, &w), "bytes of %s",
			    key);
			found++;
		}
	}
	return found;
}

Test(group, its_keys_are_seen_only_when_the_last_batch_commits_it)
{
	struct cxlp_handler *h, *r;
	struct cxlp_group *g = NULL;
	struct cxlp_stats s0, st;
	struct chunk c;

	ev_start("clock", NULL);
	h = ev_connect(0);
	r = ev_connect(0);
	s0 = kv_stats(h);
	cr_assert_rc(cxlp_group_open(h, "req-1", 5, 12, CXLP_GROUP_ATOMIC, 0,
	    &g), 0);
	cr_assert_eq(kv_stats(h).pages_reserved, 12, "admission reserves");
	chunks(h, g, &c, "req-1", 0, 8);
	cr_assert_rc(send(h, g, &c, 8), 0);
	cr_assert_eq(cxlp_group_count(g), 8);
	cr_assert_eq(cxlp_group_state(g), CXLP_GROUP_OPEN);
	cr_assert_eq(present(r, "req-1", 12), 0, "staged keys are visible");
	cr_assert_eq(present(h, "req-1", 12), 0);
	chunks(h, g, &c, "req-1", 8, 4);
	cr_assert_rc(send(h, g, &c, 4), 0);
	cr_assert_eq(cxlp_group_state(g), CXLP_GROUP_COMMITTED);
	cr_assert_eq(present(r, "req-1", 12), 12);
	st = kv_stats(h);
	cr_assert_eq(st.pages_reserved, 0);
	cr_assert_eq(st.pages_registered, s0.pages_registered + 12);
	cr_assert_eq(st.pages_allocated, s0.pages_allocated);
	cr_assert_rc(send(h, g, &c, 1), CXLP_E_GROUP, "a committed group");
	cxlp_group_close(h, &g);
	cr_assert_eq(present(r, "req-1", 12), 12, "close after commit");
	itest_assert_pool_checks();
	cxlp_close(&r);
	cxlp_close(&h);
}

/* Two handles of one handler on one id would each commit, abort and free
 * what the other staged: the second open is refused, and its
 * reservation given back; once the first has ended, the id is free. */
Test(group, an_id_open_in_this_handler_is_not_opened_twice)
{
	struct cxlp_handler *h;
	struct cxlp_group *g = NULL, *g2 = NULL;

	ev_start("clock", NULL);
	h = ev_connect(0);
	cr_assert_rc(cxlp_group_open(h, "twice", 5, 2, 0, 0, &g), 0);
	cr_assert_rc(cxlp_group_open(h, "twice", 5, 2, 0, 0, &g2),
	    CXLP_E_GROUP);
	cr_assert_null(g2);
	cr_assert(strstr(cxlp_errormsg(), "the id is in use") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_eq(kv_stats(h).pages_reserved, 2, "only the first's");
	cr_assert_rc(cxlp_group_abort(h, g), 0);
	cxlp_group_close(h, &g);
	cr_assert_rc(cxlp_group_open(h, "twice", 5, 2, 0, 0, &g2), 0);
	cxlp_group_close(h, &g2);
	cxlp_close(&h);
}

Test(group, one_without_a_total_is_refused_at_its_first_store)
{
	struct cxlp_handler *h;
	struct cxlp_group *g = NULL;
	struct chunk c;
	cxlp_page_t pg;
	void *buf;

	ev_start("clock", NULL);
	h = ev_connect(0);
	cr_assert_rc(cxlp_group_open(h, "nototal", 7, 0, 0, 0, &g), 0);
	cr_assert_rc(cxlp_alloc(h, &pg, &buf), 0);
	c.keys[0] = "k";
	c.kl[0] = 1;
	c.pg[0] = pg;
	c.lens[0] = 1;
	cr_assert_rc(send(h, g, &c, 1), CXLP_E_GROUP);
	cr_assert(strstr(cxlp_errormsg(), "declares no total") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_rc(cxlp_exists(h, "k", 1), 0);
	/* the anonymous path: a plain store has no total and no admission,
	 * and its key is seen at once */
	cr_assert_rc(cxlp_store(h, "k", 1, pg, 1, 0, &c.stored[0]), 0,
	    "the page stayed the caller's");
	cr_assert(c.stored[0]);
	cr_assert_rc(cxlp_exists(h, "k", 1), 1);
	cxlp_group_close(h, &g);
	cxlp_close(&h);
}

Test(group, a_batch_past_the_total_rolls_every_earlier_batch_back)
{
	struct cxlp_handler *h;
	struct cxlp_group *g = NULL;
	struct cxlp_stats s0, st;
	struct chunk c;

	ev_start("clock", NULL);
	h = ev_connect(0);
	s0 = kv_stats(h);
	cr_assert_rc(cxlp_group_open(h, "over", 4, 6, 0, 0, &g), 0);
	chunks(h, g, &c, "over", 0, 4);
	cr_assert_rc(send(h, g, &c, 4), 0);
	chunks(h, g, &c, "over", 4, 4);
	cr_assert_rc(send(h, g, &c, 4), CXLP_E_GROUP);
	cr_assert(strstr(cxlp_errormsg(), "8 of its declared 6") != NULL,
	    "%s", cxlp_errormsg());
	cr_assert_eq(cxlp_group_state(g), CXLP_GROUP_ROLLED_BACK);
	for (uint32_t i = 0; i < 4; i++) {
		cr_assert_rc(cxlp_free(h, c.pg[i]), 0, "refused batch's page");
	}
	st = kv_stats(h);
	cr_assert_eq(st.pages_registered, s0.pages_registered);
	cr_assert_eq(st.pages_allocated, s0.pages_allocated);
	cr_assert_eq(st.pages_reserved, 0);
	cr_assert_rc(cxlp_group_commit(h, g), CXLP_E_CANCELED);
	cxlp_group_close(h, &g);
	/* the server forgot it too: its id opens again, empty */
	cr_assert_rc(cxlp_group_open(h, "over", 4, 2, 0, 0, &g), 0);
	chunks(h, g, &c, "over", 0, 2);
	cr_assert_rc(send(h, g, &c, 2), 0);
	cr_assert_eq(present(h, "over", 8), 2, "rolled-back keys came in");
	cxlp_group_close(h, &g);
	cxlp_close(&h);
}

Test(group, an_alloc_that_times_out_rolls_an_atomic_group_back)
{
	struct cxlp_config *cfg;
	struct cxlp_handler *h;
	struct cxlp_group *g = NULL;
	struct chunk c;
	cxlp_page_t pg;
	uint64_t t0;
	void *buf;

	ev_start("clock", NULL);
	cfg = ev_config();
	cr_assert_rc(cxlp_config_set_alloc_wait_ms(cfg, 300), 0);
	h = ev_connect_with(cfg);
	cr_assert_rc(cxlp_group_open(h, "slow", 4, 8,
	    CXLP_GROUP_ATOMIC | CXLP_GROUP_NORESERVE, 0, &g), 0);
	chunks(h, g, &c, "slow", 0, 4);
	cr_assert_rc(send(h, g, &c, 4), 0);
	(void)ev_fill(h, "pin", CXLP_STORE_PIN); /* nothing evictable */
	t0 = cxlp_now_ms();
	cr_assert_rc(cxlp_group_alloc(h, g, &pg, &buf), CXLP_E_NOSPACE);
	cr_assert_geq(cxlp_now_ms() - t0, 250, "it did not wait");
	cr_assert(strstr(cxlp_errormsg(), "rolled back") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_eq(cxlp_group_state(g), CXLP_GROUP_ROLLED_BACK);
	cr_assert_eq(present(h, "slow", 8), 0);
	cr_assert_eq(kv_stats(h).pages_free, 4, "the staged pages are free");
	cxlp_group_close(h, &g);
	cxlp_close(&h);
}

struct opener {
	struct cxlp_handler *h;
	struct cxlp_group *g;
	int rc;
	uint64_t ms;
};

static void *
open_waiting(void *arg)
{
	struct opener *o = arg;
	uint64_t t0 = cxlp_now_ms();

	o->rc = cxlp_group_open(o->h, "late", 4, 6, 0, 20000, &o->g);
	o->ms = cxlp_now_ms() - t0;
	return NULL;
}

/* a group of 4 regions' worth of pages, waiting up to 20 s */
static void *
open_late(void *arg)
{
	struct opener *o = arg;
	uint64_t t0 = cxlp_now_ms();

	o->rc = cxlp_group_open(o->h, "late", 4, 4 * REGION / PAGE, 0, 20000,
	    &o->g);
	o->ms = cxlp_now_ms() - t0;
	return NULL;
}

/* Admission: a group the pool cannot take waits, and fails at the end of
 * its wait holding nothing; one that may wait longer is admitted when
 * pins go. */
Test(group, admission_waits_for_room_and_times_out)
{
	struct opener o = { 0 };
	struct cxlp_group *g = NULL;
	uint64_t t0, alloc0;
	pthread_t t;

	ev_start("clock", NULL);
	o.h = ev_connect(0);
	(void)ev_fill(o.h, "pin", CXLP_STORE_PIN);
	alloc0 = kv_stats(o.h).pages_allocated;
	t0 = cxlp_now_ms();
	cr_assert_rc(cxlp_group_open(o.h, "full", 4, 6, 0, 300, &g),
	    CXLP_E_NOSPACE);
	cr_assert_geq(cxlp_now_ms() - t0, 250);
	cr_assert_null(g);
	cr_assert_eq(kv_stats(o.h).pages_allocated, alloc0, "held pages");
	cr_assert_eq(pthread_create(&t, NULL, open_waiting, &o), 0);
	test_sleep_ms(400);
	for (uint32_t k = 0; k < 6; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "pin", k);

		cr_assert_rc(cxlp_unpin(o.h, key, kl), 0);
	}
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_rc(o.rc, 0);
	cr_assert_geq(o.ms, 350, "it did not wait");
	cr_assert_eq(kv_stats(o.h).pages_reserved, 6);
	cxlp_group_close(o.h, &o.g);
	cr_assert_eq(kv_stats(o.h).pages_reserved, 0, "close released it");
	cxlp_close(&o.h);
}

/* Requests that fit proceed side by side: two handlers' groups, their
 * batches interleaved, both commit whole. */
Test(group, groups_that_fit_proceed_concurrently)
{
	struct cxlp_handler *a, *b;
	struct cxlp_group *ga = NULL, *gb = NULL;
	struct chunk c;

	ev_start("clock", NULL);
	a = ev_connect(0);
	b = ev_connect(0);
	cr_assert_rc(cxlp_group_open(a, "ga", 2, 8, 0, 0, &ga), 0);
	cr_assert_rc(cxlp_group_open(b, "gb", 2, 8, 0, 0, &gb), 0);
	for (uint32_t i = 0; i < 8; i += 4) {
		chunks(a, ga, &c, "ga", i, 4);
		cr_assert_rc(send(a, ga, &c, 4), 0);
		chunks(b, gb, &c, "gb", i, 4);
		cr_assert_rc(send(b, gb, &c, 4), 0);
	}
	cr_assert_eq(cxlp_group_state(ga), CXLP_GROUP_COMMITTED);
	cr_assert_eq(cxlp_group_state(gb), CXLP_GROUP_COMMITTED);
	cr_assert_eq(present(a, "gb", 8), 8);
	cr_assert_eq(present(b, "ga", 8), 8);
	cxlp_group_close(a, &ga);
	cxlp_group_close(b, &gb);
	cxlp_close(&b);
	cxlp_close(&a);
}

/* One handler's group reserves nearly the whole pool; another's waits for
 * admission and is admitted when the first one's reservation is
 * released (its abort frees the pages, its emptied regions go back). */
Test(group, releasing_a_reservation_admits_a_waiting_group)
{
	struct opener o = { 0 };
	struct cxlp_handler *a;
	struct cxlp_group *ga = NULL;
	uint64_t cap;
	pthread_t t;

	ev_start("clock", NULL);
	a = ev_connect(0);
	o.h = ev_connect(0);
	cap = ev_capacity(a);
	cr_assert_rc(cxlp_group_open(a, "big", 3, cap - 2 * REGION / PAGE,
	    0, 0, &ga), 0, "%s", cxlp_errormsg());
	cr_assert_eq(pthread_create(&t, NULL, open_late, &o), 0);
	test_sleep_ms(400);
	cr_assert_null(o.g, "admitted while the pool was reserved");
	cr_assert_rc(cxlp_group_abort(a, ga), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_rc(o.rc, 0, "%s", cxlp_errormsg());
	cr_assert_geq(o.ms, 350);
	cxlp_group_close(o.h, &o.g);
	cxlp_group_close(a, &ga);
	cxlp_close(&o.h);
	cxlp_close(&a);
}

static void
spawn_writer(struct test_child *c, const char *id)
{
	char ready = 0;

	itest_spawn(c, "group-writer", id);
	itest_go(c);
	cr_assert(test_child_read(c, &ready, 1) && ready == GW_READY,
	    "group-writer failed (exit %d)", itest_wait(c));
}

Test(group, a_cancel_from_another_process_rolls_it_back)
{
	struct cxlp_handler *h;
	struct test_child c;
	struct gw_result r;

	itest_start();
	h = itest_connect();
	spawn_writer(&c, "pd-7");
	cr_assert_rc(cxlp_group_cancel(h, "pd-7", 4), 0);
	cr_assert_rc(cxlp_group_cancel(h, "pd-8", 4), CXLP_E_NOTFOUND);
	(void)itest_put(h, "pd-7-go", 1, 0, 8); /* the writer goes on */
	cr_assert(test_child_read(&c, &r, sizeof(r)));
	cr_assert_eq(itest_wait(&c), 0);
	cr_assert_eq(r.rc, CXLP_E_CANCELED, "the writer's next batch: %d",
	    r.rc);
	cr_assert_eq(r.state, CXLP_GROUP_ROLLED_BACK);
	cr_assert_eq(r.pages_registered, 0, "staged pages kept");
	cr_assert_eq(r.pages_allocated, 0, "reservation or pages kept");
	cr_assert_eq(present(h, "pd-7", GW_TOTAL), 0);
	itest_assert_pool_checks();
	cxlp_close(&h);
}

Test(group, a_killed_writers_open_group_is_rolled_back)
{
	struct cxlp_handler *h;
	struct cxlp_group *g = NULL;
	struct test_child c;
	uint64_t until;
	int rc;

	itest_start();
	h = itest_connect();
	spawn_writer(&c, "pd-9");
	cr_assert_rc(cxlp_group_open(h, "pd-9", 4, 1, 0, 0, &g), CXLP_E_GROUP,
	    "the id is the writer's while it lives");
	kill(c.pid, SIGKILL);
	(void)itest_wait(&c);
	until = cxlp_now_ms() + 15000;
	while ((rc = cxlp_group_open(h, "pd-9", 4, 1, 0, 0, &g)) ==
	    CXLP_E_GROUP && cxlp_now_ms() < until) {
		test_sleep_ms(50);
	}
	cr_assert_rc(rc, 0, "the dead writer's group is still open");
	cr_assert_eq(present(h, "pd-9", GW_TOTAL), 0);
	cxlp_group_close(h, &g);
	cxlp_close(&h);
}

Test(group, a_metaserver_restart_rolls_an_open_group_back)
{
	struct cxlp_handler *h;
	struct cxlp_group *g = NULL;
	struct cxlp_stats s0, st;
	struct chunk c;
	cxlp_page_t pa;

	itest_start();
	h = itest_connect();
	pa = itest_put(h, "old", 3, 0, 100); /* present: pinned by the group */
	(void)pa;
	s0 = kv_stats(h);
	cr_assert_rc(cxlp_group_open(h, "rs", 2, 4, CXLP_GROUP_ATOMIC, 0, &g),
	    0);
	{
		const void *k[1] = {"old-0"};
		size_t kl[1] = {5};
		bool pres[1];

		cr_assert_rc(cxlp_group_skip_present(h, g, 1, k, kl, pres), 0);
		cr_assert(pres[0]);
	}
	chunks(h, g, &c, "rs", 0, 2);
	cr_assert_rc(send(h, g, &c, 2), 0);
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, NULL), 0);
	chunks(h, g, &c, "rs", 2, 1);
	cr_assert_rc(send(h, g, &c, 1), CXLP_E_CANCELED);
	cr_assert(strstr(cxlp_errormsg(), "no longer knows") != NULL, "%s",
	    cxlp_errormsg());
	st = kv_stats(h);
	cr_assert_eq(st.pages_registered, s0.pages_registered);
	cr_assert_eq(st.pages_allocated, s0.pages_allocated);
	cr_assert_eq(st.pins, 0, "the group's pin outlived the restart");
	cr_assert_eq(present(h, "rs", 4), 0);
	cr_assert_rc(cxlp_delete(h, "old-0", 5), 0);
	cxlp_group_close(h, &g);
	cxlp_close(&h);
}

/* Chunks already present are pinned for the group, atomically with
 * finding them: the owner cannot delete them until the commit (or, with
 * CXLP_GROUP_PIN, until it unpins them); they count toward the total. */
Test(group, chunks_already_present_are_pinned_not_written_again)
{
	struct cxlp_handler *h;
	struct cxlp_group *g = NULL;
	const void *k[3] = {"dd-0", "dd-1", "dd-2"};
	size_t kl[3] = {4, 4, 4};
	bool pres[3];
	struct chunk c;

	itest_start();
	h = itest_connect();
	(void)itest_put(h, "dd", 3, 0, 100);
	cr_assert_rc(cxlp_group_open(h, "dd", 2, 3, CXLP_GROUP_PIN, 0, &g), 0);
	cr_assert_rc(cxlp_group_skip_present(h, g, 3, k, kl, pres), 0);
	cr_assert(pres[0] && !pres[1] && !pres[2]);
	cr_assert_eq(cxlp_group_count(g), 1);
	cr_assert_rc(cxlp_delete(h, "dd-0", 4), CXLP_E_PINNED);
	chunks(h, g, &c, "dd", 1, 2);
	cr_assert_rc(send(h, g, &c, 2), 0);
	cr_assert_eq(cxlp_group_state(g), CXLP_GROUP_COMMITTED);
	cr_assert_eq(present(h, "dd", 3), 3);
	cr_assert_eq(kv_stats(h).pins, 3, "CXLP_GROUP_PIN keeps all three");
	{
		int st[3];

		cr_assert_rc(cxlp_batch_unpin(h, 3, k, kl, st), 0);
		cr_assert(st[0] == 0 && st[1] == 0 && st[2] == 0);
	}
	cr_assert_rc(cxlp_delete(h, "dd-0", 4), 0);
	cxlp_group_close(h, &g);
	/* without CXLP_GROUP_PIN the commit releases the group's pins */
	(void)itest_put(h, "dd", 3, 0, 100);
	cr_assert_rc(cxlp_group_open(h, "dd1", 3, 1, 0, 0, &g), 0);
	cr_assert_rc(cxlp_group_skip_present(h, g, 1, k, kl, pres), 0);
	cr_assert_eq(cxlp_group_state(g), CXLP_GROUP_COMMITTED, "the last "
	    "chunk, though present, commits the group");
	cr_assert_eq(kv_stats(h).pins, 0);
	cr_assert_rc(cxlp_delete(h, "dd-0", 4), 0);
	cxlp_group_close(h, &g);
	/* abort releases the group's pins */
	(void)itest_put(h, "dd", 3, 0, 100);
	cr_assert_rc(cxlp_group_open(h, "dd2", 3, 3, 0, 0, &g), 0);
	cr_assert_rc(cxlp_group_skip_present(h, g, 1, k, kl, pres), 0);
	cr_assert_rc(cxlp_group_abort(h, g), 0);
	cr_assert_eq(kv_stats(h).pins, 0);
	cr_assert_rc(cxlp_delete(h, "dd-0", 4), 0);
	cxlp_group_close(h, &g);
	cxlp_close(&h);
}

/* A reader polling batch_exists over a group's keys while the group is
 * sent in 8 batches, committed by the last, never sees some of them. */
static void
reader_sees_all_or_nothing(void)
{
	struct cxlp_handler *h;
	struct cxlp_group *g = NULL;
	struct test_child c;
	struct gr_result r;
	struct chunk ch;
	char ready = 0;

	h = itest_connect();
	itest_spawn(&c, "group-reader", "vis");
	itest_go(&c);
	cr_assert(test_child_read(&c, &ready, 1) && ready == GR_READY,
	    "group-reader failed (exit %d)", itest_wait(&c));
	cr_assert_rc(cxlp_group_open(h, "vis", 3, GR_KEYS, 0, 0, &g), 0);
	for (uint32_t b = 0; b < GR_KEYS / 8; b++) {
		chunks(h, g, &ch, "vis", b * 8, 8);
		cr_assert_rc(send(h, g, &ch, 8), 0);
		test_sleep_ms(5);
	}
	cr_assert_eq(cxlp_group_state(g), CXLP_GROUP_COMMITTED);
	cr_assert(test_child_read(&c, &r, sizeof(r)), "reader exit %d",
	    itest_wait(&c));
	cr_assert_eq(itest_wait(&c), 0);
	cr_assert_eq(r.all, 1, "the reader never saw the group");
	cr_assert_eq(r.partial, 0, "%u of %u polls saw part of the group",
	    r.partial, r.polls);
	cr_assert_geq(r.none, 1, "the reader did not poll before the commit");
	cxlp_group_close(h, &g);
	cxlp_close(&h);
}

Test(group, a_reader_never_sees_half_a_group)
{
	itest_start();
	reader_sees_all_or_nothing();
}

/* The same with a commit made slow (a pause after each key it inserts,
 * a test hook of the metaserver): batch lookups from shared memory meet
 * it mid-way and must not answer with the keys in so far (direct.c). */
Test(group, a_reader_never_sees_half_a_group_while_its_commit_runs)
{
	cr_assert_eq(setenv("CXLP_COMMIT_PAUSE_US", "300", 1), 0);
	itest_start();
	reader_sees_all_or_nothing();
}

/* A commit whose answer is lost to a metaserver killed in the middle of
 * it (a test hook pauses the commit after each key it inserts and after
 * each it publishes), retried against the restarted server, which knows
 * no group: the handler looks the staged keys up. Killed after its first
 * insert of two, before the commit point: the restart rolled the group
 * back whole, none of its keys is found, and the group is rolled back;
 * killed after the commit point (pool/kv.c note 2), while it publishes
 * the keys: the restart completed it, and the group is committed.
 * Either way no page that a key points at is freed. (Every step of the
 * commit and of its recovery: tests/crash/test_group_crash.c.) */
struct commit_run {
	struct cxlp_handler *h;
	struct cxlp_group *g;
	struct chunk c;
	int rc;
};

static void *
commit_run(void *arg)
{
	struct commit_run *a = arg;

	a->rc = send(a->h, a->g, &a->c, 2);
	return NULL;
}

static void
kill_during_commit(unsigned kill_after_ms, bool committed)
{
	struct commit_run a = { 0 };
	struct cxlp_stats s0, st;
	pthread_t t;

	cr_assert_eq(setenv("CXLP_COMMIT_PAUSE_US", "1000000", 1), 0);
	itest_start();
	cr_assert_eq(unsetenv("CXLP_COMMIT_PAUSE_US"), 0);
	a.h = kv_connect_timeout(srv.url, 1000, 5);
	cr_assert_not_null(a.h);
	s0 = kv_stats(a.h);
	cr_assert_rc(cxlp_group_open(a.h, "cr", 2, 2, 0, 0, &a.g), 0);
	chunks(a.h, a.g, &a.c, "cr", 0, 2);
	cr_assert_eq(pthread_create(&t, NULL, commit_run, &a), 0);
	test_sleep_ms(kill_after_ms);
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, NULL), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	st = kv_stats(a.h);
	if (committed) {
		cr_assert_rc(a.rc, 0);
		cr_assert_eq(cxlp_group_state(a.g), CXLP_GROUP_COMMITTED);
		cr_assert_eq(present(a.h, "cr", 2), 2);
		cr_assert_eq(st.pages_registered, s0.pages_registered + 2);
	} else {
		cr_assert_rc(a.rc, CXLP_E_CANCELED);
		cr_assert_eq(cxlp_group_state(a.g), CXLP_GROUP_ROLLED_BACK);
		cr_assert_eq(present(a.h, "cr", 2), 0, "half a group is in");
		cr_assert_eq(st.pages_registered, s0.pages_registered);
	}
	cr_assert_eq(st.pages_allocated, s0.pages_allocated);
	cxlp_group_close(a.h, &a.g);
	itest_assert_pool_checks();
	cxlp_close(&a.h);
}

Test(group, a_restart_in_the_middle_of_a_commit_rolls_it_back_whole)
{
	kill_during_commit(500, false);
}

Test(group, a_restart_after_the_commit_point_leaves_it_committed)
{
	kill_during_commit(2500, true);
}
