/*
 * test_handler.c -- tests of libcxlpool (handler.c, regions.c, store.c,
 * ops.c, client.c) against a real cxlpool-metaserver process.
 *
 * Each test starts its own metaserver on a fresh pool and a private ipc
 * socket (tests/support/server.h) and stops it at the end.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cxlpool.h"
#include "handler_fixture.h"
#include "rawclient.h"

/* Under ASan, check for leaks at the end of each test: Criterion would not
 * fail a test for LeakSanitizer's report at exit. */

#define PAGE (64u << 10)
#define REGION (2u << 20)
#define PAGES_PER_REGION (REGION / PAGE)


static void
sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* SIGSTOP is asynchronous: wait until /proc says the server is stopped. */
static void
wait_stopped(pid_t pid)
{
	char path[64], buf[256], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f != NULL) {
			fclose(f);
		}
		buf[n] = '\0';
		p = strrchr(buf, ')');
		if (p != NULL && p[1] == ' ' && p[2] == 'T') {
			return;
		}
		sleep_ms(5);
	}
	cr_assert_fail("metaserver did not stop");
}

static void
setup(void)
{
	hfx_start(PAGE, REGION);
}

TestSuite(handler, .init = setup, .fini = hfx_stop, .timeout = 100);

static struct cxlp_stats
stats_ok(struct cxlp_handler *h)
{
	struct cxlp_stats st;
	int rc = cxlp_stats(h, &st);

	cr_assert_eq(rc, 0, "stats: %s (%s)", cxlp_strerror(rc),
	    cxlp_errormsg());
	cr_assert_eq(st.pages_free + st.pages_allocated +
	    st.pages_registered + st.pages_unresolved, st.pages_total);
	return st;
}

static cxlp_page_t
alloc_ok(struct cxlp_handler *h, void **buf)
{
	cxlp_page_t pg;
	void *b;
	int rc = cxlp_alloc(h, &pg, buf != NULL ? buf : &b);

	cr_assert_eq(rc, 0, "alloc: %s (%s)", cxlp_strerror(rc),
	    cxlp_errormsg());
	return pg;
}

/* Fill a page with a pattern derived from seed, then store it. */
static bool
put(struct cxlp_handler *h, const char *key, cxlp_page_t *pgout,
    size_t len, int seed)
{
	void *buf;
	cxlp_page_t pg = alloc_ok(h, &buf);
	bool stored = false;
	int rc;

	for (size_t i = 0; i < len; i++) {
		((unsigned char *)buf)[i] = (unsigned char)(i * 7 + seed);
	}
	rc = cxlp_store(h, key, strlen(key), pg, len, 0, &stored);
	cr_assert_eq(rc, 0, "store: %s (%s)", cxlp_strerror(rc),
	    cxlp_errormsg());
	if (pgout != NULL) {
		*pgout = pg;
	}
	return stored;
}

static void
assert_bytes(const void *data, size_t len, int seed)
{
	for (size_t i = 0; i < len; i++) {
		cr_assert_eq(((const unsigned char *)data)[i],
		    (unsigned char)(i * 7 + seed), "byte %zu", i);
	}
}

Test(handler, connect_then_close_frees_the_handler)
{
	struct cxlp_handler *h = hfx_connect();
	struct cxlp_stats st = stats_ok(h);

	cr_assert_eq(cxlp_healthcheck(h), 0);
	cr_assert_eq(cxlp_page_size(h), PAGE);
	cr_assert_eq(st.own_regions, 1);
	cr_assert_eq(st.pages_total, PAGES_PER_REGION);
	cr_assert_eq(st.pages_free, PAGES_PER_REGION);
	cr_assert_geq(st.sessions, 1);
	cxlp_close(&h);
	cr_assert_null(h);
	cxlp_close(&h);
	cxlp_close(NULL);
}

Test(handler, alloc_takes_a_second_region_when_the_first_is_full)
{
	struct cxlp_handler *h = hfx_connect();
	void *bufs[PAGES_PER_REGION + 1];
	struct cxlp_stats st;

	for (unsigned i = 0; i <= PAGES_PER_REGION; i++) {
		alloc_ok(h, &bufs[i]);
		memset(bufs[i], (int)i, PAGE);
		for (unsigned j = 0; j < i; j++) {
			cr_assert_neq(bufs[i], bufs[j]);
		}
	}
	st = stats_ok(h);
	cr_assert_eq(st.own_regions, 2);
	cr_assert_eq(st.pages_total, 2 * PAGES_PER_REGION);
	cr_assert_eq(st.pages_allocated, PAGES_PER_REGION + 1);
	cr_assert_eq(((unsigned char *)bufs[3])[PAGE - 1], 3);
	cxlp_close(&h);
}

Test(handler, alloc_without_auto_expand_reports_nospace_when_full)
{
	struct cxlp_handler *h;
	cxlp_page_t pg;
	void *buf;

	cr_assert_eq(cxlp_config_set_auto_expand(cfg, false), 0);
	h = hfx_connect();
	for (unsigned i = 0; i < PAGES_PER_REGION; i++) {
		alloc_ok(h, NULL);
	}
	cr_assert_eq(cxlp_alloc(h, &pg, &buf), CXLP_E_NOSPACE);
	cr_assert_eq(stats_ok(h).own_regions, 1);
	cxlp_close(&h);
}

/* This program links the codec (tests/support), and with it a copy of
 * common/err.c of its own beside libcxlpool's. The reason a library call
 * failed must still reach cxlp_errormsg() here: both copies write one
 * buffer (common/err.c). It used to read its own, empty one, which hid
 * every library message from the tests' failure output. */
Test(handler, the_reason_of_a_library_failure_reaches_this_program)
{
	void *lib = dlopen("libcxlpool.so.0", RTLD_NOW | RTLD_NOLOAD);
	struct cxlp_handler *h = hfx_connect();

	cr_assert_not_null(lib, "%s", dlerror());
	cr_assert_neq(dlsym(lib, "cxlp_errormsg"), (void *)cxlp_errormsg,
	    "this program has no copy of err.c: the test proves nothing");
	cr_assert_eq(cxlp_free(h, (cxlp_page_t)0x7777), CXLP_E_BADPAGE);
	cr_assert_str_eq(cxlp_errormsg(), "page 0x7777: no such page");
	dlclose(lib);
	cxlp_close(&h);
}

Test(handler, alloc_past_max_regions_reports_nospace)
{
	struct cxlp_handler *h;
	cxlp_page_t pg;
	void *buf;

	cr_assert_eq(cxlp_config_set_max_regions(cfg, 2), 0);
	h = hfx_connect();
	for (unsigned i = 0; i < 2 * PAGES_PER_REGION; i++) {
		alloc_ok(h, NULL);
	}
	cr_assert_eq(cxlp_alloc(h, &pg, &buf), CXLP_E_NOSPACE);
	cr_assert_eq(stats_ok(h).own_regions, 2);
	cxlp_close(&h);
}

Test(handler, free_then_free_again_is_badpage)
{
	struct cxlp_handler *h = hfx_connect();
	cxlp_page_t pg = alloc_ok(h, NULL);

	cr_assert_eq(cxlp_free(h, pg), 0);
	cr_assert_eq(cxlp_free(h, pg), CXLP_E_BADPAGE);
	cr_assert_eq(cxlp_free(h, ((cxlp_page_t)7 << 32)), CXLP_E_BADPAGE);
	cr_assert_eq(cxlp_free(h, PAGES_PER_REGION), CXLP_E_BADPAGE);
	cr_assert_eq(stats_ok(h).pages_free, PAGES_PER_REGION);
	cxlp_close(&h);
}

Test(handler, store_then_retrieve_gives_my_own_bytes_in_place)
{
	struct cxlp_handler *h = hfx_connect();
	const void *data = NULL;
	cxlp_page_t pg;
	size_t len = 0;
	struct cxlp_stats st;

	cr_assert(put(h, "model@0@abc", &pg, 5000, 3));
	cr_assert_eq(cxlp_retrieve(h, "model@0@abc", 11, 0, &data, &len), 0);
	cr_assert_eq(len, 5000);
	assert_bytes(data, len, 3);
	cr_assert_eq(cxlp_exists(h, "model@0@abc", 11), 1);
	cr_assert_eq(cxlp_exists(h, "model@0@abd", 11), 0);
	cr_assert_eq(cxlp_free(h, pg), CXLP_E_BADPAGE);
	st = stats_ok(h);
	cr_assert_eq(st.pages_registered, 1);
	cr_assert_eq(st.keys, 1);
	cr_assert_eq(st.foreign_maps, 0);
	cxlp_close(&h);
}

Test(handler, retrieve_of_a_missing_key_is_notfound)
{
	struct cxlp_handler *h = hfx_connect();
	const void *data;
	size_t len;

	cr_assert_eq(cxlp_retrieve(h, "nope", 4, 0, &data, &len),
	    CXLP_E_NOTFOUND);
	cxlp_close(&h);
}

Test(handler, a_second_store_of_a_key_keeps_the_first_and_frees_its_page)
{
	struct cxlp_handler *h = hfx_connect();
	const void *data;
	cxlp_page_t p1, p2;
	size_t len;
	struct cxlp_stats st;

	cr_assert(put(h, "k", &p1, 100, 1));
	cr_assert(put(h, "k", &p2, 200, 2));
	cr_assert_eq(cxlp_free(h, p2), CXLP_E_BADPAGE);
	cr_assert_eq(cxlp_retrieve(h, "k", 1, 0, &data, &len), 0);
	cr_assert_eq(len, 100);
	assert_bytes(data, len, 1);
	st = stats_ok(h);
	cr_assert_eq(st.pages_registered, 1);
	cr_assert_eq(st.pages_allocated, 0);
	cxlp_close(&h);
}

Test(handler, a_batch_with_a_key_twice_registers_the_first_page_only)
{
	struct cxlp_handler *h = hfx_connect();
	const void *keys[3] = {"a", "b", "a"};
	size_t klens[3] = {1, 1, 1}, lens[3] = {10, 20, 30};
	cxlp_page_t pages[3];
	bool stored[3] = {false, false, false};
	struct cxlp_stats st;

	for (int i = 0; i < 3; i++) {
		pages[i] = alloc_ok(h, NULL);
	}
	cr_assert_eq(cxlp_batch_store(h, 3, keys, klens, pages, lens, 0,
	    stored), 0);
	cr_assert(stored[0] && stored[1] && stored[2]);
	cr_assert_eq(cxlp_free(h, pages[2]), CXLP_E_BADPAGE);
	st = stats_ok(h);
	cr_assert_eq(st.pages_registered, 2);
	cr_assert_eq(st.pages_allocated, 0);
	cr_assert_eq(st.keys, 2);
	cxlp_close(&h);
}

Test(handler, a_refused_batch_leaves_every_page_with_the_caller)
{
	struct cxlp_handler *h = hfx_connect();
	const void *keys[2] = {"x", "y"};
	size_t klens[2] = {1, 1}, lens[2] = {1, 1};
	cxlp_page_t pages[2];
	bool stored[2];

	pages[0] = alloc_ok(h, NULL);
	pages[1] = pages[0];
	cr_assert_eq(cxlp_batch_store(h, 2, keys, klens, pages, lens, 0,
	    stored), CXLP_E_BADPAGE);
	pages[1] = alloc_ok(h, NULL);
	cr_assert_eq(cxlp_batch_store(h, 0, keys, klens, pages, lens, 0,
	    stored), -EINVAL);
	cr_assert_eq(cxlp_batch_store(h, 2, NULL, klens, pages, lens, 0,
	    stored), -EINVAL);
	klens[1] = 0;
	cr_assert_eq(cxlp_batch_store(h, 2, keys, klens, pages, lens, 0,
	    stored), CXLP_E_KEYLEN);
	klens[1] = CXLP_KEY_MAX + 1;
	cr_assert_eq(cxlp_batch_store(h, 2, keys, klens, pages, lens, 0,
	    stored), CXLP_E_KEYLEN);
	klens[1] = 1;
	lens[1] = PAGE + 1;
	cr_assert_eq(cxlp_batch_store(h, 2, keys, klens, pages, lens, 0,
	    stored), CXLP_E_TOOBIG);
	lens[1] = 1;
	pages[1] = (cxlp_page_t)9 << 32;
	cr_assert_eq(cxlp_batch_store(h, 2, keys, klens, pages, lens, 0,
	    stored), CXLP_E_BADPAGE);
	cr_assert_eq(stats_ok(h).pages_allocated, 2);
	cr_assert_eq(stats_ok(h).keys, 0);
	cr_assert_eq(cxlp_free(h, pages[0]), 0);
	cxlp_close(&h);
}

Test(handler, stats_page_counts_add_up)
{
	struct cxlp_handler *h = hfx_connect();
	cxlp_page_t pg;
	struct cxlp_stats st;

	for (int i = 0; i < 5; i++) {
		char key[16];

		snprintf(key, sizeof(key), "key%d", i);
		cr_assert(put(h, key, NULL, 64, i));
	}
	alloc_ok(h, NULL);
	pg = alloc_ok(h, NULL);
	cr_assert_eq(cxlp_free(h, pg), 0);
	st = stats_ok(h);
	cr_assert_eq(st.pages_registered, 5);
	cr_assert_eq(st.pages_allocated, 1);
	cr_assert_eq(st.pages_free, PAGES_PER_REGION - 6);
	cr_assert_eq(st.pages_free + st.pages_allocated + st.pages_registered,
	    st.pages_total);
	cr_assert_eq(st.keys, 5);
	cr_assert_eq(st.value_bytes, 5 * 64);
	cxlp_close(&h);
}

Test(handler, delete_of_my_key_frees_its_page)
{
	struct cxlp_handler *h = hfx_connect();
	struct cxlp_stats st;

	cr_assert(put(h, "gone", NULL, 10, 0));
	cr_assert_eq(cxlp_delete(h, "gone", 4), 0);
	cr_assert_eq(cxlp_exists(h, "gone", 4), 0);
	cr_assert_eq(cxlp_delete(h, "gone", 4), CXLP_E_NOTFOUND);
	st = stats_ok(h);
	cr_assert_eq(st.pages_registered, 0);
	cr_assert_eq(st.pages_free, PAGES_PER_REGION);
	cxlp_close(&h);
}

/* One thread stores keys, another deletes each as soon as it exists, on
 * one handler: a delete often lands after the server registered a key and
 * before its store settled the page. That page must end free, not stay
 * registered with no key (it did: a few pages in 3000 leaked until
 * close). */
#define RACE_KEYS 3000
#define RACE_AHEAD 8 /* keys stored and not yet deleted, at most */

struct race {
	struct cxlp_handler *h;
	int stored, deleted; /* atomic: keys done */
	int errors;          /* atomic */
};

static void *
race_storer(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < RACE_KEYS; i++) {
		char key[32];
		int n = snprintf(key, sizeof(key), "race-%d", i);
		cxlp_page_t pg;
		void *buf;
		bool stored = false;

		while (i - __atomic_load_n(&r->deleted, __ATOMIC_ACQUIRE) >
		    RACE_AHEAD) {
			sched_yield();
		}
		if (cxlp_alloc(r->h, &pg, &buf) != 0 ||
		    cxlp_store(r->h, key, (size_t)n, pg, 64, 0, &stored) != 0 ||
		    !stored) {
			__atomic_add_fetch(&r->errors, 1, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&r->stored, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *
race_deleter(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < RACE_KEYS; i++) {
		char key[32];
		int n = snprintf(key, sizeof(key), "race-%d", i), rc;

		while ((rc = cxlp_delete(r->h, key, (size_t)n)) ==
		    CXLP_E_NOTFOUND) {
			if (__atomic_load_n(&r->stored, __ATOMIC_ACQUIRE) > i) {
				continue; /* stored: this delete must find it */
			}
		}
		if (rc != 0) {
			__atomic_add_fetch(&r->errors, 1, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&r->deleted, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

Test(handler, a_delete_racing_the_store_of_its_key_leaks_no_page)
{
	struct race r = { .h = hfx_connect() };
	struct cxlp_stats st;
	pthread_t s, d;

	cr_assert_eq(pthread_create(&s, NULL, race_storer, &r), 0);
	cr_assert_eq(pthread_create(&d, NULL, race_deleter, &r), 0);
	pthread_join(s, NULL);
	pthread_join(d, NULL);
	cr_assert_eq(r.errors, 0);
	st = stats_ok(r.h);
	cr_assert_eq(st.keys, 0);
	cr_assert_eq(st.pages_registered, 0, "%llu pages registered with no "
	    "key", (unsigned long long)st.pages_registered);
	cr_assert_eq(st.pages_allocated, 0);
	cr_assert_eq(st.pages_free, st.pages_total);
	cxlp_close(&r.h);
}

Test(handler, a_pinned_key_refuses_delete_until_unpinned)
{
	struct cxlp_handler *h = hfx_connect();
	const void *keys[3] = {"p1", "missing", "p2"};
	size_t klens[3] = {2, 7, 2};
	size_t np = 99;

	cr_assert(put(h, "p1", NULL, 10, 0));
	cr_assert(put(h, "p2", NULL, 10, 0));
	cr_assert_eq(cxlp_pin(h, "p1", 2), 0);
	cr_assert_eq(cxlp_delete(h, "p1", 2), CXLP_E_PINNED);
	cr_assert_eq(cxlp_unpin(h, "p1", 2), 0);
	cr_assert_eq(cxlp_unpin(h, "p1", 2), CXLP_E_NOTPINNED);
	cr_assert_eq(cxlp_batch_pin(h, 3, keys, klens, &np),
	    CXLP_E_NOTFOUND);
	cr_assert_eq(np, 1);
	cr_assert_eq(cxlp_delete(h, "p2", 2), 0);
	cr_assert_eq(cxlp_delete(h, "p1", 2), CXLP_E_PINNED);
	cr_assert_eq(cxlp_unpin(h, "p1", 2), 0);
	cr_assert_eq(cxlp_delete(h, "p1", 2), 0);
	cxlp_close(&h);
}

Test(handler, another_handler_reads_my_bytes_through_a_readonly_map)
{
	struct cxlp_handler *w = hfx_connect(), *r = hfx_connect();
	const void *data;
	size_t len;
	int st[2];
	const void *keys[2] = {"shared", "absent"};
	size_t klens[2] = {6, 6}, lens[2];
	const void *datas[2];

	cr_assert(put(w, "shared", NULL, 3000, 9));
	cr_assert_eq(cxlp_retrieve(r, "shared", 6, 0, &data, &len), 0);
	cr_assert_eq(len, 3000);
	assert_bytes(data, len, 9);
	cr_assert_eq(stats_ok(r).foreign_maps, 1);
	cr_assert_eq(cxlp_batch_retrieve(r, 2, keys, klens, 0, datas, lens,
	    st), 0);
	cr_assert_eq(st[0], 0);
	cr_assert_eq(st[1], CXLP_E_NOTFOUND);
	cr_assert_eq(datas[0], data);
	cr_assert_eq(stats_ok(r).foreign_maps, 1);
	cr_assert_eq(cxlp_delete(r, "shared", 6), CXLP_E_PERM);
	cxlp_close(&r);
	cxlp_close(&w);
}

Test(handler, close_with_unregistered_pages_gives_the_region_back)
{
	struct cxlp_handler *h = hfx_connect(), *h2;
	struct cxlp_stats st;

	for (int i = 0; i < 3; i++) {
		alloc_ok(h, NULL);
	}
	cxlp_close(&h);
	h2 = hfx_connect();
	st = stats_ok(h2);
	cr_assert_eq(st.regions, 1);
	cr_assert_eq(st.sessions, 1);
	cxlp_close(&h2);
}

Test(handler, a_lost_register_reply_keeps_the_page_until_resolved)
{
	struct cxlp_handler *h;
	cxlp_page_t pg;
	bool stored = true;
	struct cxlp_stats st;
	void *buf;
	const void *data;
	size_t len;
	int rc;

	cr_assert_eq(cxlp_config_set_timeout_ms(cfg, 500), 0);
	cr_assert_eq(cxlp_config_set_retries(cfg, 1), 0);
	h = hfx_connect();
	pg = alloc_ok(h, &buf);
	memset(buf, 0x5a, 100);
	cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
	wait_stopped(srv.pid);
	rc = cxlp_store(h, "lost", 4, pg, 100, 0, &stored);
	cr_assert_eq(rc, CXLP_E_UNKNOWN, "store: %s (%s)", cxlp_strerror(rc),
	    cxlp_errormsg());
	cr_assert(!stored);
	cr_assert_eq(cxlp_free(h, pg), CXLP_E_BADPAGE);
	cr_assert_eq(kill(srv.pid, SIGCONT), 0);
	/* stats resolves the page after its round trip; the server may need
	 * a moment to wake up */
	for (int i = 0; i < 50 && cxlp_stats(h, &st) != 0; i++) {
		sleep_ms(100);
	}
	st = stats_ok(h);
	cr_assert_eq(st.pages_unresolved, 0);
	cr_assert_eq(cxlp_free(h, pg), CXLP_E_BADPAGE);
	if (cxlp_exists(h, "lost", 4) == 1) {
		cr_assert_eq(st.pages_registered, 1);
		cr_assert_eq(cxlp_retrieve(h, "lost", 4, 0, &data, &len), 0);
		cr_assert_eq(data, buf);
	} else {
		cr_assert_eq(st.pages_registered, 0);
		cr_assert_eq(st.pages_free, PAGES_PER_REGION);
	}
	cxlp_close(&h);
}

/* nng 1.5.2 wedges its reaper, and with it every later nng_close in the
 * process, when a socket is closed just as a message arrives on it
 * (handler/client.c, csock_retire). Late replies from a stalled server are
 * such messages: each round here lets calls time out against a stopped
 * server (one: the socket stays; two: the close redials), wakes it and
 * closes the handler at once, as the late replies come in. nng must still
 * close sockets in this process afterwards. */
Test(handler, closing_as_late_replies_arrive_leaves_nng_working)
{
	struct cxlp_stats st;

	cr_assert_eq(cxlp_config_set_timeout_ms(cfg, 100), 0);
	cr_assert_eq(cxlp_config_set_retries(cfg, 0), 0);
	for (int round = 0; round < 12; round++) {
		struct cxlp_handler *h = hfx_connect();

		cr_assert_eq(kill(srv.pid, SIGSTOP), 0);
		wait_stopped(srv.pid);
		for (int i = 0; i <= round % 2; i++) {
			cr_assert_eq(cxlp_stats(h, &st), CXLP_E_TIMEOUT);
		}
		cr_assert_eq(kill(srv.pid, SIGCONT), 0);
		cxlp_close(&h);
	}
	cr_assert_eq(raw_nng_usable(20000), 0, "nng cannot close sockets "
	    "in this process any more");
}

struct worker {
	struct cxlp_handler *h;
	int id;
	int fails;
};

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 50; i++) {
		char key[32];
		cxlp_page_t pg;
		void *buf;
		bool stored = false;
		const void *data;
		size_t len;

		snprintf(key, sizeof(key), "w%d-%d", w->id, i);
		if (cxlp_alloc(w->h, &pg, &buf) != 0) {
			w->fails++;
			continue;
		}
		memset(buf, w->id + i, 256);
		if (cxlp_store(w->h, key, strlen(key), pg, 256, 0,
			&stored) != 0 || !stored ||
		    cxlp_retrieve(w->h, key, strlen(key), 0, &data,
			&len) != 0 || len != 256 ||
		    ((const unsigned char *)data)[255] !=
			(unsigned char)(w->id + i)) {
			w->fails++;
		}
	}
	return NULL;
}

Test(handler, many_threads_share_one_handler)
{
	struct cxlp_handler *h = hfx_connect();
	pthread_t th[4];
	struct worker w[4];
	struct cxlp_stats st;

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){.h = h, .id = i};
		cr_assert_eq(pthread_create(&th[i], NULL, worker_main, &w[i]),
		    0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(w[i].fails, 0, "worker %d failed %d times", i,
		    w[i].fails);
	}
	st = stats_ok(h);
	cr_assert_eq(st.pages_registered, 200);
	cr_assert_eq(st.keys, 200);
	cr_assert_geq(st.own_regions, 7);
	cxlp_close(&h);
}

/* Threads sharing one handler, each storing, reading back, checking and
 * deleting batches of its own keys whose sizes change every round: the
 * batch calls' reusable memory (handler/scratch.c) is taken and grown by
 * many threads at once, and a request built in memory another thread also
 * uses would store or read the wrong keys or bytes. */
#define BT_THREADS 12
#define BT_ROUNDS 40
#define BT_MAX 150

struct bthread {
	struct cxlp_handler *h;
	int id;
	char why[160];
};

static size_t
bt_batch_size(int id, int round)
{
	return 20 + (size_t)(id * 37 + round * 53) % (BT_MAX - 19);
}

/* store n pages stamped (id, round, i); 0 or -1 with why */
static int
bt_store(struct bthread *t, int round, size_t n, const void **kp,
    const size_t *kl)
{
	cxlp_page_t pg[BT_MAX];
	size_t lens[BT_MAX];
	bool stored[BT_MAX];

	for (size_t i = 0; i < n; i++) {
		uint32_t stamp[3] = {(uint32_t)t->id, (uint32_t)round,
			(uint32_t)i};
		void *buf;

		if (cxlp_alloc(t->h, &pg[i], &buf) != 0) {
			snprintf(t->why, sizeof(t->why), "alloc: %s",
			    cxlp_errormsg());
			return -1;
		}
		memcpy(buf, stamp, sizeof(stamp));
		lens[i] = sizeof(stamp) + i;
	}
	if (cxlp_batch_store(t->h, n, kp, kl, pg, lens, 0, stored) != 0) {
		snprintf(t->why, sizeof(t->why), "store: %s", cxlp_errormsg());
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (!stored[i]) {
			snprintf(t->why, sizeof(t->why), "key %zu not stored",
			    i);
			return -1;
		}
	}
	return 0;
}

/* read every key back and check its stamp and length */
static int
bt_check(struct bthread *t, int round, size_t n, const void **kp,
    const size_t *kl)
{
	const void *data[BT_MAX];
	size_t lens[BT_MAX];
	int st[BT_MAX];
	bool ex[BT_MAX];

	if (cxlp_batch_retrieve(t->h, n, kp, kl, 0, data, lens, st) != 0 ||
	    cxlp_batch_exists(t->h, n, kp, kl, ex) != 0) {
		snprintf(t->why, sizeof(t->why), "read: %s", cxlp_errormsg());
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t want[3] = {(uint32_t)t->id, (uint32_t)round,
			(uint32_t)i};

		if (st[i] != 0 || !ex[i] || lens[i] != sizeof(want) + i ||
		    memcmp(data[i], want, sizeof(want)) != 0) {
			snprintf(t->why, sizeof(t->why), "round %d key %zu: "
			    "status %d, exists %d, %zu bytes, wrong stamp %d",
			    round, i, st[i], ex[i], lens[i], st[i] == 0 &&
			    memcmp(data[i], want, sizeof(want)) != 0);
			return -1;
		}
	}
	return 0;
}

static void *
bt_main(void *arg)
{
	struct bthread *t = arg;
	char keys[BT_MAX][40];
	const void *kp[BT_MAX];
	size_t kl[BT_MAX];
	int st[BT_MAX];

	for (int round = 0; round < BT_ROUNDS; round++) {
		size_t n = bt_batch_size(t->id, round);

		for (size_t i = 0; i < n; i++) {
			kl[i] = (size_t)snprintf(keys[i], sizeof(keys[i]),
			    "bt-%d-%d-%zu-%.*s", t->id, round, i,
			    (int)(i % 17), "padding-padding-p");
			kp[i] = keys[i];
		}
		if (bt_store(t, round, n, kp, kl) != 0 ||
		    bt_check(t, round, n, kp, kl) != 0) {
			return t;
		}
		if (cxlp_batch_delete(t->h, n, kp, kl, st) != 0) {
			snprintf(t->why, sizeof(t->why), "delete: %s",
			    cxlp_errormsg());
			return t;
		}
		for (size_t i = 0; i < n; i++) {
			if (st[i] != 0) {
				snprintf(t->why, sizeof(t->why), "delete key "
				    "%zu: %d", i, st[i]);
				return t;
			}
		}
	}
	return NULL;
}

Test(handler, threads_with_large_batches_never_mix_their_requests)
{
	struct cxlp_handler *h[2];
	struct bthread t[BT_THREADS];
	pthread_t th[BT_THREADS];
	struct cxlp_stats st;

	h[0] = hfx_connect(); /* direct reads */
	cr_assert_eq(cxlp_config_set_direct_reads(cfg, false), 0);
	h[1] = hfx_connect(); /* every lookup through the server */
	for (int i = 0; i < BT_THREADS; i++) {
		t[i] = (struct bthread){.h = h[i % 2], .id = i};
		cr_assert_eq(pthread_create(&th[i], NULL, bt_main, &t[i]), 0);
	}
	for (int i = 0; i < BT_THREADS; i++) {
		void *rv;

		pthread_join(th[i], &rv);
		cr_expect_null(rv, "thread %d: %s", i, t[i].why);
	}
	for (int k = 0; k < 2; k++) {
		st = stats_ok(h[k]);
		cr_assert_eq(st.pages_registered, 0);
		cr_assert_eq(st.pages_allocated, 0);
		cxlp_close(&h[k]);
	}
	st = (struct cxlp_stats){0};
	h[0] = hfx_connect();
	st = stats_ok(h[0]);
	cr_assert_eq(st.keys, 0, "%llu keys left", (unsigned long long)st.keys);
	cxlp_close(&h[0]);
}
