/*
 * test_lease.c -- leases with real processes: a key leased by a store or
 * a retrieve is no victim until its lease runs out, and then it is; its
 * delete is refused meanwhile; a session's end takes its leases with it;
 * a metaserver killed with leases out evicts nothing after its restart
 * until they could have run out.
 */
#include <time.h>

#include "evfill.h"

TestSuite(lease, .fini = itest_stop, .timeout = 120);

#define LEASE_MS 1500u

static uint64_t
ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* alloc until it succeeds (polling), within limit_ms; returns the ms it
 * took, or fails the test */
static uint64_t
alloc_when_room(struct cxlp_handler *h, uint64_t limit_ms, int *first_rc)
{
	uint64_t t0 = ms_now();
	cxlp_page_t pg;
	void *buf;
	int rc;

	*first_rc = 1;
	while ((rc = cxlp_alloc(h, &pg, &buf)) != 0) {
		if (*first_rc == 1) {
			*first_rc = rc;
		}
		cr_assert(rc == CXLP_E_NOSPACE || rc == CXLP_E_BUSY,
		    "alloc: %s (%s)", cxlp_strerror(rc), cxlp_errormsg());
		cr_assert_lt(ms_now() - t0, limit_ms, "no room after %llu ms: "
		    "%s", (unsigned long long)(ms_now() - t0), cxlp_errormsg());
		usleep(50 * 1000);
	}
	if (*first_rc == 1) {
		*first_rc = 0;
	}
	cr_assert_rc(cxlp_free(h, pg), 0);
	return ms_now() - t0;
}

/* lease keys [0, n) of prefix for ms, a batch at a time */
static void
lease_all(struct cxlp_handler *h, const char *prefix, uint64_t n,
    unsigned ms)
{
	for (uint64_t k = 0; k < n; k += BATCH) {
		char kb[BATCH][32];
		const void *keys[BATCH];
		size_t lens[BATCH];
		int st[BATCH];
		size_t m = n - k < BATCH ? n - k : BATCH;

		for (size_t i = 0; i < m; i++) {
			lens[i] = kv_key(kb[i], sizeof(kb[i]), prefix,
			    (unsigned)(k + i));
			keys[i] = kb[i];
		}
		cr_assert_rc(cxlp_batch_lease(h, m, keys, lens, ms, st), 0);
		for (size_t i = 0; i < m; i++) {
			cr_assert_rc(st[i], 0, "lease of %s", kb[i]);
		}
	}
}

Test(lease, a_leased_pool_is_full_until_its_leases_run_out)
{
	struct cxlp_handler *h;
	uint64_t t0, n;
	struct cxlp_stats st;
	int first;

	ev_start("clock", NULL);
	h = ev_connect(60000);
	n = ev_fill(h, "l", 0);
	t0 = ms_now();
	lease_all(h, "l", n, LEASE_MS);
	st = kv_stats(h);
	cr_assert_eq(st.leases, n);
	(void)alloc_when_room(h, 20000, &first);
	cr_assert_rc(first, CXLP_E_NOSPACE, "nothing leased was free");
	cr_assert_geq(ms_now() - t0 + 50, LEASE_MS, "room after %llu ms: "
	    "before the leases ran out", (unsigned long long)(ms_now() - t0));
	st = kv_stats(h);
	cr_assert_gt(st.evicted_pressure, 0);
	itest_assert_pool_checks();
	cxlp_close(&h);
}

Test(lease, a_leased_key_cannot_be_deleted_until_released)
{
	struct cxlp_handler *a, *b;
	const void *data;
	size_t len;

	ev_start("clock", NULL);
	a = ev_connect(0);
	b = ev_connect(60000);
	ev_store(a, "k", 0, 1, 0);
	ev_store(b, "s", 0, 1, CXLP_STORE_LEASE); /* the store's form */
	cr_assert_rc(cxlp_delete(b, "s-0", 3), CXLP_E_PINNED);
	cr_assert_rc(cxlp_retrieve(b, "k-0", 3, CXLP_RETRIEVE_LEASE, &data,
	    &len), 0);
	cr_assert_rc(cxlp_delete(a, "k-0", 3), CXLP_E_PINNED);
	cr_assert_eq(kv_stats(a).pins, 0, "a lease, not a pin, refused it");
	cr_assert_rc(cxlp_lease(a, "k-0", 3, 0), CXLP_E_NOTPINNED,
	    "a's release freed b's lease");
	cr_assert_rc(cxlp_lease(b, "k-0", 3, 0), 0);
	cr_assert_rc(cxlp_lease(b, "k-0", 3, 0), CXLP_E_NOTPINNED);
	cr_assert_rc(cxlp_delete(a, "k-0", 3), 0);
	cr_assert_rc(cxlp_lease(b, "k-0", 3, 100), CXLP_E_NOTFOUND);
	cxlp_close(&a);
	cxlp_close(&b);
}

Test(lease, a_sessions_end_takes_its_leases)
{
	struct cxlp_handler *a, *b;
	const void *keys[2] = { "k-0", "k-1" };
	size_t lens[2] = { 3, 3 };
	int st[2];

	ev_start("clock", NULL);
	a = ev_connect(0);
	b = ev_connect(0);
	ev_store(a, "k", 0, 2, 0);
	cr_assert_rc(cxlp_batch_lease(b, 2, keys, lens, 60000, st), 0);
	cr_assert(st[0] == 0 && st[1] == 0);
	cr_assert_eq(kv_stats(a).leases, 2);
	cxlp_close(&b);
	cr_assert_eq(kv_stats(a).leases, 0);
	cr_assert_rc(cxlp_delete(a, "k-0", 3), 0);
	cxlp_close(&a);
}

Test(lease, a_restarted_server_evicts_nothing_while_old_leases_may_run)
{
	struct cxlp_handler *h;
	uint64_t t0;
	int first;

	ev_start("clock", NULL);
	h = ev_connect(0);
	(void)ev_fill(h, "r", 0);
	/* one key is leased: the lease is gone with the server, but its
	 * successor must keep the promise */
	cr_assert_rc(cxlp_lease(h, "r-0", 3, 6000), 0);
	t0 = ms_now();
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, (const char *const[]){
	    "--evict-free", "0", NULL }), 0);
	/* the alloc waits (CXLP_E_BUSY, retried within its timeout) and
	 * gets room only once the lease could have run out */
	(void)alloc_when_room(h, 30000, &first);
	cr_assert_geq(ms_now() - t0 + 50, 6000, "evicted while a lease could "
	    "run");
	itest_assert_pool_checks();
	cxlp_close(&h);
}
