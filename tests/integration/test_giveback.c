/*
 * test_giveback.c -- issue 17 over a real metaserver: a live handler
 * that deleted all its keys holds no more than its reserve of empty
 * regions (handler/region/giveback.c), and a handler connects to a full pool
 * and gets space once another gives some back. The threads of one
 * handler churning regions are in test_giveback_threads.c.
 *
 * Each test has its own 64 MiB pool: a data area of 62 MiB, 15 regions
 * of 4 MiB and 2 MiB that hold none.
 */
#include <stdlib.h>
#include <sys/wait.h>

#include "itest.h"
#include "proto.h"

#define PAGE (256u << 10)
#define REGION (4u << 20)
#define PER_REGION (REGION / PAGE)
#define WAIT_MS 20000 /* a give-back's bound here: a loaded machine */

/* eviction off: these fill the pool to CXLP_E_NOSPACE and watch regions
 * come back as keys are deleted (test_evict.c has the pool that evicts) */
static void
start(void)
{
	const char *args[] = { "--evict", "off", NULL };

	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	cr_assert_eq(test_server_start(&srv, 64 * MiB, args), 0,
	    "metaserver did not start");
}

TestSuite(giveback, .init = start, .fini = itest_stop, .timeout = 120);

/* A handler on url with PAGE pages in REGION regions and this reserve. */
static struct cxlp_handler *
connect_reserve(const char *url, unsigned reserve, bool auto_expand)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, url), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, PAGE), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, REGION), 0);
	cr_assert_rc(cxlp_config_set_auto_expand(cfg, auto_expand), 0);
	cr_assert_rc(cxlp_config_set_reserve_regions(cfg, reserve), 0);
	cr_assert_rc(cxlp_connect(&h, cfg), 0);
	cxlp_config_delete(&cfg);
	return h;
}

/* Store keys prefix-0, prefix-1 ... until the pool is full; how many. */
static uint32_t
fill(struct cxlp_handler *h, const char *prefix, uint32_t writer)
{
	uint32_t n = 0;

	for (;;) {
		char k[32];
		size_t kl = kv_key(k, sizeof(k), prefix, n);
		cxlp_page_t pg;
		void *buf;
		bool ok = false;
		int rc = cxlp_alloc(h, &pg, &buf);

		if (rc == CXLP_E_NOSPACE) {
			return n;
		}
		cr_assert_rc(rc, 0);
		kv_fill(buf, PAGE, writer, n);
		cr_assert_rc(cxlp_store(h, k, kl, pg, PAGE, 0, &ok), 0);
		cr_assert(ok, "store of %s reported false", k);
		n++;
	}
}

static void
delete_all(struct cxlp_handler *h, const char *prefix, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		char k[32];
		size_t kl = kv_key(k, sizeof(k), prefix, i);

		cr_assert_rc(cxlp_delete(h, k, kl), 0);
	}
}

/* Poll until h owns `own` regions and the pool has `pool` in all; false
 * after WAIT_MS. (A handler stops counting a region as its own before
 * the region is unreachable and its REGION_FREE lands, which the pool's
 * count shows.) */
static bool
wait_regions(struct cxlp_handler *h, uint64_t own, uint64_t pool)
{
	for (unsigned ms = 0; ms < WAIT_MS; ms += 20) {
		struct cxlp_stats st = kv_stats(h);

		if (st.own_regions == own && st.regions == pool) {
			return true;
		}
		test_sleep_ms(20);
	}
	return false;
}

/* wait_regions for a handler alone in the pool */
static bool
wait_own(struct cxlp_handler *h, uint64_t own)
{
	return wait_regions(h, own, own);
}

/* Poll cxlp_alloc until it gives a page; 0 or its last error. */
static int
wait_alloc(struct cxlp_handler *h, cxlp_page_t *pg)
{
	void *buf;
	int rc = CXLP_E_NOSPACE;

	for (unsigned ms = 0; ms < WAIT_MS && rc == CXLP_E_NOSPACE;
	    ms += 20) {
		if ((rc = cxlp_alloc(h, pg, &buf)) == CXLP_E_NOSPACE) {
			test_sleep_ms(20);
		}
	}
	return rc;
}

/* A fills the pool; B connects all the same, cannot alloc, reads A's
 * keys; A deletes them all; B then gets space, A keeps `reserve` empty
 * regions and the pool has the rest free. */
static void
full_pool_round(unsigned reserve)
{
	struct cxlp_handler *a = connect_reserve(srv.url, reserve, true);
	struct cxlp_handler *b;
	struct cxlp_stats st;
	uint32_t n = fill(a, "a", 1);
	cxlp_page_t pg;
	void *buf;

	cr_assert_eq(n, 15 * PER_REGION, "A stored %u keys", n);
	b = connect_reserve(srv.url, 1, true);
	cr_assert_eq(kv_stats(b).own_regions, 0, "B has a region of a full "
	    "pool");
	cr_assert_rc(cxlp_alloc(b, &pg, &buf), CXLP_E_NOSPACE);
	cr_assert_not_null(strstr(cxlp_errormsg(), "no free extent"),
	    "message: %s", cxlp_errormsg());
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(itest_get_check(b, "a", i), 1);
	}
	delete_all(a, "a", n);
	cr_assert_rc(wait_alloc(b, &pg), 0, "B found no space");
	cr_assert(wait_regions(a, reserve, reserve + 1), "A holds %llu "
	    "regions, reserve %u; the pool has %llu",
	    (unsigned long long)kv_stats(a).own_regions, reserve,
	    (unsigned long long)kv_stats(a).regions);
	st = kv_stats(a);
	cr_assert_eq(st.pages_total, reserve * PER_REGION);
	cr_assert_eq(st.pages_free, st.pages_total);
	cr_assert_eq(st.free_bytes, st.data_bytes - (reserve + 1) * REGION,
	    "free %llu of %llu", (unsigned long long)st.free_bytes,
	    (unsigned long long)st.data_bytes);
	/* a handler that gave regions back takes new ones as it needs */
	for (uint32_t i = 0; i < PER_REGION + 1; i++) {
		itest_put(a, "again", 2, i, 100);
	}
	cr_assert_eq(itest_get_check(b, "again", PER_REGION), 2);
	cxlp_close(&b);
	cxlp_close(&a);
	itest_assert_pool_checks();
}

Test(giveback, a_full_pool_takes_a_new_handler_and_gives_it_space_reserve_1)
{
	full_pool_round(1);
}

Test(giveback, a_full_pool_takes_a_new_handler_and_gives_it_space_reserve_0)
{
	full_pool_round(0);
}

Test(giveback, a_full_pool_takes_a_new_handler_and_gives_it_space_reserve_2)
{
	full_pool_round(2);
}

/* A region larger than the whole data area can never be had: connect
 * still fails, saying so (tests/handler/region/test_regfit.c has the numbers). */
Test(giveback, a_region_larger_than_the_data_area_still_fails_connect)
{
	struct cxlp_handler *h = kv_connect(srv.url, PAGE, 64 * MiB, true);

	cr_assert_null(h);
}

/* With auto-expand off a handler keeps to one region, and asks for it
 * again after giving it back. */
Test(giveback, without_auto_expand_the_one_region_comes_back_at_the_next_alloc)
{
	struct cxlp_handler *h = connect_reserve(srv.url, 0, false);
	cxlp_page_t pg[PER_REGION + 1];
	void *buf;

	cr_assert_rc(cxlp_alloc(h, &pg[0], &buf), 0);
	cr_assert_rc(cxlp_free(h, pg[0]), 0);
	cr_assert(wait_own(h, 0), "the empty region was not given back");
	for (uint32_t i = 0; i < PER_REGION; i++) {
		cr_assert_rc(cxlp_alloc(h, &pg[i], &buf), 0);
	}
	cr_assert_eq(kv_stats(h).own_regions, 1);
	cr_assert_rc(cxlp_alloc(h, &pg[PER_REGION], &buf), CXLP_E_NOSPACE);
	cr_assert_not_null(strstr(cxlp_errormsg(), "auto-expand is off"),
	    "message: %s", cxlp_errormsg());
	cxlp_close(&h);
}

/* Pages in use keep their region, whatever the reserve. */
Test(giveback, a_region_with_a_page_allocated_or_registered_stays)
{
	struct cxlp_handler *h = connect_reserve(srv.url, 0, true);
	cxlp_page_t pg[2 * PER_REGION];
	void *buf;

	for (uint32_t i = 0; i < 2 * PER_REGION; i++) {
		cr_assert_rc(cxlp_alloc(h, &pg[i], &buf), 0);
	}
	itest_put(h, "k", 3, 0, 100); /* a third region, registered */
	for (uint32_t i = 1; i < 2 * PER_REGION; i++) {
		cr_assert_rc(cxlp_free(h, pg[i]), 0);
	}
	/* the second region went back; the first keeps pg[0] */
	cr_assert(wait_own(h, 2), "own regions %llu, want 2",
	    (unsigned long long)kv_stats(h).own_regions);
	cr_assert_rc(cxlp_free(h, pg[0]), 0);
	cr_assert(wait_own(h, 1), "the first region was not given back");
	cr_assert_eq(itest_get_check(h, "k", 0), 3);
	cr_assert_rc(cxlp_delete(h, "k-0", 3), 0);
	cr_assert(wait_own(h, 0), "the last region was not given back");
	cxlp_close(&h);
	itest_assert_pool_checks();
}

/* A region given back is out of this handler's reach for writes: a
 * stale buffer pointer faults (in a child, which does nothing else), a
 * stale retrieve pointer still reads; the next alloc maps the region
 * again, writable. */
Test(giveback, a_region_given_back_faults_a_stale_write_and_still_reads)
{
	struct cxlp_handler *h = connect_reserve(srv.url, 0, true);
	const void *data;
	size_t len;
	uint32_t writer = 0;
	cxlp_page_t pg;
	void *buf;
	int st;
	pid_t pid;

	itest_put(h, "s", 7, 1, 1000);
	cr_assert_rc(cxlp_retrieve(h, "s-1", 3, 0, &data, &len), 0);
	cr_assert_rc(cxlp_alloc(h, &pg, &buf), 0);
	cr_assert_rc(cxlp_free(h, pg), 0);
	cr_assert_rc(cxlp_delete(h, "s-1", 3), 0);
	cr_assert(wait_own(h, 0), "the empty region was not given back");
	cr_assert(kv_check(data, 1000, 1, &writer) && writer == 7,
	    "stale bytes changed");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL); /* sanitizers install their own */
		*(volatile uint8_t *)buf = 0xff;
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
	    "a write into a region given back did not fault (status %#x)",
	    st);
	itest_put(h, "s", 7, 2, PAGE);
	cr_assert_eq(itest_get_check(h, "s", 2), 7);
	cxlp_close(&h);
}
