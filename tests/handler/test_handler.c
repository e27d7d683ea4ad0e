/*
 * test_handler.c -- tests of libcxlpool (handler.c, call.c, regions.c,
 * store.c, ops.c, client.c) against a real cxlpool-metaserver process, one
 * calling thread at a time; the tests of the same suite with many
 * threads are in test_handler_threads.c.
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
#include "proc.h"
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
	cr_assert(test_wait_stopped(pid, 5000), "metaserver did not stop");
}

static void
setup(void)
{
	hfx_start(PAGE, REGION);
}

TestSuite(handler, .init = setup, .fini = hfx_stop, .timeout = 100);

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
	struct cxlp_stats st = hfx_stats_ok(h);

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
	st = hfx_stats_ok(h);
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
	cr_assert_eq(hfx_stats_ok(h).own_regions, 1);
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
	cr_assert_eq(hfx_stats_ok(h).own_regions, 2);
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
	cr_assert_eq(hfx_stats_ok(h).pages_free, PAGES_PER_REGION);
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
	st = hfx_stats_ok(h);
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
	st = hfx_stats_ok(h);
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
	st = hfx_stats_ok(h);
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
	cr_assert_eq(hfx_stats_ok(h).pages_allocated, 2);
	cr_assert_eq(hfx_stats_ok(h).keys, 0);
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
	st = hfx_stats_ok(h);
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
	st = hfx_stats_ok(h);
	cr_assert_eq(st.pages_registered, 0);
	cr_assert_eq(st.pages_free, PAGES_PER_REGION);
	cxlp_close(&h);
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
	cr_assert_eq(hfx_stats_ok(r).foreign_maps, 1);
	cr_assert_eq(cxlp_batch_retrieve(r, 2, keys, klens, 0, datas, lens,
	    st), 0);
	cr_assert_eq(st[0], 0);
	cr_assert_eq(st[1], CXLP_E_NOTFOUND);
	cr_assert_eq(datas[0], data);
	cr_assert_eq(hfx_stats_ok(r).foreign_maps, 1);
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
	st = hfx_stats_ok(h2);
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
	st = hfx_stats_ok(h);
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
 * (handler/net/client.c, csock_retire). Late replies from a stalled server are
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
