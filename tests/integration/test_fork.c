/*
 * test_fork.c -- a process that forks after it used the library
 * (handler/core/fork.c): the child connects a handler of its own, stores and
 * reads; the parent's handler fails every call in the child with
 * CXLP_E_CLOSED and its close there ends nothing; the parent's handler
 * goes on in the parent. Children in a row, at once, a grandchild, and
 * children forked while threads of the parent are inside calls.
 *
 * The children are forked, not exec'd: that is what is under test. They
 * report through their exit status only (never a Criterion assert in a
 * forked child); each asks to be killed if its parent dies. A child that
 * does not exit within CHILD_WAIT_S fails the test, except under ASan:
 * GCC 12's libasan does not hold its allocator's locks across fork (it
 * does since llvm/llvm-project#75290), so a child forked while a thread
 * was in malloc can hang in its first allocation, before any line of
 * ours runs (seen here: the grandchild's new nng threads waiting for
 * the allocator's lock); there it is a skip, as in tests/python.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "itest.h"

#ifdef __SANITIZE_ADDRESS__
static const bool asan = true;
#define CHILD_WAIT_S 15 /* a skip: keeps the file within meson's 180 s */
#else
static const bool asan = false;
#define CHILD_WAIT_S 60
#endif

TestSuite(fork, .init = itest_start, .fini = itest_stop, .timeout = 120);

/* The exit code of child pid (128 + signal); one that is still running
 * after CHILD_WAIT_S is killed and fails the test (a skip under ASan:
 * see above). */
static int
child_wait(pid_t pid)
{
	for (unsigned ms = 0; ms < CHILD_WAIT_S * 1000; ms += 20) {
		int st;
		pid_t got = waitpid(pid, &st, WNOHANG);

		cr_assert_neq(got, -1, "waitpid: %s", strerror(errno));
		if (got == pid) {
			return WIFEXITED(st) ? WEXITSTATUS(st) :
			    128 + WTERMSIG(st);
		}
		test_sleep_ms(20);
	}
	kill(pid, SIGKILL);
	(void)kv_wait_child(pid);
	if (asan) {
		/* a skip does not run the suite's fini: stop srv here, or it
		 * keeps meson's output pipes open until meson's timeout */
		(void)test_server_stop(&srv);
		cr_skip_test("a forked child hung under ASan (see the top)");
	}
	cr_assert_fail("child %d did not exit in %d s", (int)pid, CHILD_WAIT_S);
	return -1;
}

/* fork_child -- run fn(arg) in a forked child, which exits with its
 * return value; the child's pid. */
static pid_t
fork_child(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
	if (pid == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(fn(arg));
	}
	return pid;
}

/* In a child: store kv_key(prefix, key) from a handler of its own, read
 * it back and read the parent's key (prefix "parent", key 1). 0, or the
 * step that failed. */
static int
child_store_and_read(const char *prefix, uint32_t key)
{
	struct cxlp_handler *h = kv_connect(srv.url, 4096, 4 * MiB, true);
	uint32_t writer = 0;
	const void *data;
	cxlp_page_t pg;
	size_t len, kl;
	bool ok = false;
	char k[64];
	void *buf;

	if (h == NULL) {
		return 2;
	}
	kl = kv_key(k, sizeof(k), prefix, key);
	if (cxlp_alloc(h, &pg, &buf) != 0) {
		return 3;
	}
	kv_fill(buf, 3000, (uint32_t)getpid(), key);
	if (cxlp_store(h, k, kl, pg, 3000, 0, &ok) != 0 || !ok) {
		return 4;
	}
	if (cxlp_retrieve(h, k, kl, 0, &data, &len) != 0 || len != 3000 ||
	    !kv_check(data, len, key, &writer) ||
	    writer != (uint32_t)getpid()) {
		return 5;
	}
	if (cxlp_retrieve(h, "parent-1", 8, 0, &data, &len) != 0 ||
	    !kv_check(data, len, 1, &writer) || writer != 1) {
		return 6;
	}
	if (cxlp_healthcheck(h) != 0) {
		return 7;
	}
	cxlp_close(&h);
	return 0;
}

struct child_arg {
	struct cxlp_handler *parent_h; /* the parent's, stale in the child */
	const char *prefix;
	uint32_t key;
};

static int
child_main(void *arg)
{
	const struct child_arg *a = arg;

	return child_store_and_read(a->prefix, a->key);
}

/* The parent's key that children read: "parent-1", written by 1. */
static struct cxlp_handler *
parent_connect(void)
{
	struct cxlp_handler *h = itest_connect();

	itest_put(h, "parent", 1, 1, 2000);
	return h;
}

/* The parent reads what child key kv_key(prefix, key) holds. */
static void
parent_reads(struct cxlp_handler *h, const char *prefix, uint32_t key)
{
	uint32_t writer = 0;
	const void *data;
	size_t len;
	char k[64];
	size_t kl = kv_key(k, sizeof(k), prefix, key);

	cr_assert_rc(cxlp_retrieve(h, k, kl, 0, &data, &len), 0);
	cr_assert(kv_check(data, len, key, &writer), "%s: bad bytes", k);
}

Test(fork, a_child_connects_stores_and_reads_after_the_parent_connected)
{
	struct cxlp_handler *h = parent_connect();
	struct child_arg a = { h, "child", 1 };
	pid_t pid = fork_child(child_main, &a);

	/* nng 1.5.2 unpatched: SIGABRT (134), "not fork-reentrant safe" */
	cr_assert_eq(child_wait(pid), 0, "the child failed (exit code "
	    "names the step; 134: aborted)");
	cr_assert_rc(cxlp_healthcheck(h), 0);
	parent_reads(h, "child", 1);
	itest_put(h, "parent", 1, 2, 100);
	cxlp_close(&h);
}

/* Each call on the parent's handler in the child: CXLP_E_CLOSED. */
static int
stale_calls(struct cxlp_handler *h, cxlp_page_t pg)
{
	const void *keys[1] = { "parent-1" };
	const size_t kl[1] = { 8 };
	const size_t lens[1] = { 100 };
	struct cxlp_region_info info[4];
	struct cxlp_reservation *r = NULL;
	struct cxlp_group *g = NULL;
	struct cxlp_counters ctr;
	struct cxlp_stats st;
	cxlp_version_t ver;
	const void *data[1];
	size_t len[1], np;
	int status[1];
	uint32_t reg;
	uint64_t off;
	unsigned peak;
	bool b[1];
	void *buf;
	cxlp_page_t p2;

	memset(&ver, 0, sizeof(ver));
	int rcs[] = {
		cxlp_alloc(h, &p2, &buf),
		cxlp_free(h, pg),
		cxlp_store(h, "s", 1, pg, 100, 0, b),
		cxlp_batch_store(h, 1, keys, kl, &pg, lens, 0, b),
		cxlp_batch_store_async(h, 1, keys, kl, &pg, lens, 0, NULL, NULL),
		cxlp_retrieve(h, "parent-1", 8, 0, data, len),
		cxlp_batch_retrieve(h, 1, keys, kl, 0, data, len, status),
		cxlp_batch_retrieve_async(h, 1, keys, kl, 0, NULL, NULL),
		cxlp_exists(h, "parent-1", 8),
		cxlp_batch_exists(h, 1, keys, kl, b),
		cxlp_pin(h, "parent-1", 8),
		cxlp_batch_pin(h, 1, keys, kl, &np),
		cxlp_unpin(h, "parent-1", 8),
		cxlp_delete(h, "parent-1", 8),
		cxlp_lease(h, "parent-1", 8, 1000),
		cxlp_stats(h, &st),
		cxlp_healthcheck(h),
		cxlp_counters(h, &ctr, sizeof(ctr)),
		cxlp_reserve(h, 1, 0, &r),
		cxlp_validate(h, &ver),
		cxlp_group_open(h, "g", 1, 1, 0, 0, &g),
		cxlp_region_list(h, info, 4),
		cxlp_region_view(h, 0, info),
		cxlp_locate(h, keys[0], &reg, &off),
		cxlp_page_at(h, 0, 0, &p2, &buf),
		cxlp_set_region_fn(h, NULL, NULL),
		cxlp_async_inflight(h, &peak),
	};

	for (size_t i = 0; i < sizeof(rcs) / sizeof(rcs[0]); i++) {
		if (rcs[i] != CXLP_E_CLOSED) {
			fprintf(stderr, "stale call %zu: %d (%s), want "
			    "CXLP_E_CLOSED\n", i, rcs[i], cxlp_strerror(rcs[i]));
			return 10 + (int)i;
		}
	}
	return 0;
}

struct stale_arg {
	struct cxlp_handler *h;
	struct cxlp_reservation *r; /* the parent's, taken before the fork */
	cxlp_page_t pg;             /* allocated by the parent, not stored */
};

static int
stale_main(void *arg)
{
	struct stale_arg *a = arg;
	int rc = stale_calls(a->h, a->pg);

	if (rc != 0) {
		return rc;
	}
	if (cxlp_reserve_release(a->h, &a->r) != 0 || a->r != NULL) {
		return 8;
	}
	cxlp_close(&a->h); /* frees nothing, ends nothing */
	if (a->h != NULL) {
		return 9;
	}
	return child_store_and_read("stale", 1);
}

Test(fork, the_parents_handler_fails_every_call_in_the_child_and_goes_on)
{
	struct stale_arg a = { .h = parent_connect() };
	struct cxlp_stats before = kv_stats(a.h), after;
	void *buf;
	pid_t pid;

	cr_assert_rc(cxlp_alloc(a.h, &a.pg, &buf), 0);
	cr_assert_rc(cxlp_reserve(a.h, 2, 0, &a.r), 0);
	pid = fork_child(stale_main, &a);
	cr_assert_eq(child_wait(pid), 0, "the child failed (exit code "
	    "10 + n: stale call n did not return CXLP_E_CLOSED)");
	/* the child's close of it said no BYE and freed nothing here */
	cr_assert_rc(cxlp_healthcheck(a.h), 0);
	after = kv_stats(a.h);
	cr_assert_eq(after.pages_allocated, before.pages_allocated + 3);
	cr_assert_rc(cxlp_reserve_release(a.h, &a.r), 0);
	cr_assert_rc(cxlp_free(a.h, a.pg), 0);
	parent_reads(a.h, "stale", 1);
	itest_put(a.h, "parent", 1, 2, 100);
	cxlp_close(&a.h);
}

Test(fork, children_in_a_row_and_at_once_each_connect)
{
	struct cxlp_handler *h = parent_connect();
	struct child_arg a[6];
	pid_t pids[3];

	for (uint32_t i = 0; i < 3; i++) { /* in a row */
		a[i] = (struct child_arg){ h, "row", i + 1 };
		cr_assert_eq(child_wait(fork_child(child_main, &a[i])), 0,
		    "child %u in a row failed", i);
	}
	for (uint32_t i = 0; i < 3; i++) { /* at once */
		a[3 + i] = (struct child_arg){ h, "once", i + 1 };
		pids[i] = fork_child(child_main, &a[3 + i]);
	}
	for (uint32_t i = 0; i < 3; i++) {
		cr_assert_eq(child_wait(pids[i]), 0, "child %u at once "
		    "failed", i);
	}
	for (uint32_t i = 1; i <= 3; i++) {
		parent_reads(h, "row", i);
		parent_reads(h, "once", i);
	}
	cr_assert_rc(cxlp_healthcheck(h), 0);
	cxlp_close(&h);
}

/* A child connects, then forks a grandchild that connects too (two
 * generations, nng started afresh twice); then the child's own handler
 * still works. */
static int
grandchild_main(void *arg)
{
	struct cxlp_handler *mine = kv_connect(srv.url, 4096, 4 * MiB, true);
	struct child_arg a = { mine, "grand", 1 };
	pid_t pid;
	int rc;

	(void)arg;
	if (mine == NULL) {
		return 2;
	}
	if ((pid = fork()) == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cxlp_healthcheck(mine) != CXLP_E_CLOSED) {
			_exit(20);
		}
		_exit(child_main(&a));
	}
	if (pid < 0 || (rc = kv_wait_child(pid)) != 0) {
		return pid < 0 ? 3 : rc;
	}
	rc = cxlp_healthcheck(mine);
	cxlp_close(&mine);
	return rc == 0 ? 0 : 4;
}

Test(fork, a_grandchild_connects_after_its_parent_did)
{
	struct cxlp_handler *h = parent_connect();

	cr_assert_eq(child_wait(fork_child(grandchild_main, NULL)), 0);
	parent_reads(h, "grand", 1);
	cxlp_close(&h);
}

/* Threads of the parent store and read without pause on its handler
 * while it forks: whatever lock or request they hold at the fork, a
 * child gets CXLP_E_CLOSED from the parent's handler and connects its
 * own. */
struct busy {
	struct cxlp_handler *h;
	atomic_bool stop;
	atomic_uint rounds;
	int failed; /* first unexpected rc (atomic) */
};

struct busy_thread {
	struct busy *b;
	char prefix[16]; /* its own keys */
};

static void *
busy_main(void *arg)
{
	struct busy_thread *bt = arg;
	struct busy *b = bt->b;
	const void *data;
	cxlp_page_t pg;
	size_t len;
	bool ok;
	void *buf;
	char k[64];

	for (unsigned i = 0; !atomic_load(&b->stop); i++) {
		size_t kl = kv_key(k, sizeof(k), bt->prefix, i);
		int rc = cxlp_alloc(b->h, &pg, &buf);

		if (rc == 0) {
			kv_fill(buf, 512, 9, i);
			rc = cxlp_store(b->h, k, kl, pg, 512, 0, &ok);
		}
		if (rc == 0) {
			rc = cxlp_retrieve(b->h, k, kl, 0, &data, &len);
		}
		if (rc == 0) {
			rc = cxlp_delete(b->h, k, kl);
		}
		if (rc == 0 && !ok) {
			rc = -EPROTO;
		}
		if (rc != 0) {
			int none = 0;

			__atomic_compare_exchange_n(&b->failed, &none, rc, false,
			    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		}
		atomic_fetch_add(&b->rounds, 1);
	}
	return NULL;
}

static int
busy_child_main(void *arg)
{
	struct child_arg *a = arg;

	if (cxlp_healthcheck(a->parent_h) != CXLP_E_CLOSED ||
	    cxlp_exists(a->parent_h, "parent-1", 8) != CXLP_E_CLOSED) {
		return 20;
	}
	cxlp_close(&a->parent_h);
	return child_store_and_read(a->prefix, a->key);
}

Test(fork, children_forked_while_threads_use_the_parents_handler)
{
	struct busy b = { .h = parent_connect() };
	struct busy_thread bt[3];
	struct child_arg a[6];
	pthread_t t[3];

	for (int i = 0; i < 3; i++) {
		bt[i].b = &b;
		snprintf(bt[i].prefix, sizeof(bt[i].prefix), "busy%d", i);
		cr_assert_eq(pthread_create(&t[i], NULL, busy_main, &bt[i]),
		    0);
	}
	for (uint32_t i = 0; i < 6; i++) {
		unsigned seen = atomic_load(&b.rounds);

		while (atomic_load(&b.rounds) < seen + 5) {
			test_sleep_ms(1);
		}
		a[i] = (struct child_arg){ b.h, "busy-child", i + 1 };
		cr_assert_eq(child_wait(fork_child(busy_child_main, &a[i])),
		    0, "child %u failed", i);
	}
	atomic_store(&b.stop, true);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
	}
	cr_assert_eq(b.failed, 0, "a busy thread's call failed: %d (%s)",
	    b.failed, cxlp_strerror(b.failed));
	for (uint32_t i = 1; i <= 6; i++) {
		parent_reads(b.h, "busy-child", i);
	}
	cxlp_close(&b.h);
}
