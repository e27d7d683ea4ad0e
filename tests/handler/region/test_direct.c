/*
 * test_direct.c -- tests of handler/region/direct.c: unpinned retrieve and exists
 * read the KV index from shared memory and send the metaserver nothing.
 *
 * A real metaserver (tests/support/server.h) sits behind the counting
 * proxy (tests/support/proxy.h); handlers connect to the proxy, so
 * proxy_requests() says which operations reached the server.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cxlpool.h"
#include "proto.h"
#include "proxy_fixture.h"

#define PAGE (64u << 10)
#define REGION (2u << 20)

static void
setup(void)
{
	pfx_start("direct", NULL);
}

TestSuite(direct, .init = setup, .fini = pfx_stop, .timeout = 100);

/* A handler on url; timeout_ms 0 keeps the library's timeout. */
static struct cxlp_handler *
connect_to(const char *url, bool direct, unsigned timeout_ms)
{
	struct cxlp_config *cfg = pfx_config(url, PAGE, REGION, direct);

	if (timeout_ms != 0) {
		cr_assert_eq(cxlp_config_set_timeout_ms(cfg, timeout_ms), 0);
		cr_assert_eq(cxlp_config_set_retries(cfg, 6), 0);
	}
	return pfx_connect(cfg);
}

/* store key -> len bytes of (fill + i) */
static void
store_ok(struct cxlp_handler *h, const char *key, size_t len, uint8_t fill)
{
	pfx_store_ok(h, key, len, fill, 1);
}

static void
retrieve_ok(struct cxlp_handler *h, const char *key, unsigned flags,
    size_t len, uint8_t fill)
{
	const void *data = NULL;
	size_t got = 0;
	int rc = cxlp_retrieve(h, key, strlen(key), flags, &data, &got);

	cr_assert_eq(rc, 0, "retrieve %s: %s (%s)", key, cxlp_strerror(rc),
	    cxlp_errormsg());
	cr_assert_eq(got, len);
	for (size_t i = 0; i < len; i++) {
		cr_assert_eq(((const uint8_t *)data)[i], (uint8_t)(fill + i),
		    "%s: byte %zu", key, i);
	}
}

Test(direct, unpinned_retrieve_and_exists_send_the_server_nothing)
{
	struct cxlp_handler *w = connect_to(px_url, true, 0), *r = connect_to(px_url, true, 0);
	const void *keys[3] = { "a@model@1", "absent", "b@model@1" };
	size_t klen[3] = { 9, 6, 9 }, lens[3];
	const void *data[3];
	int st[3];
	bool ex[3];

	store_ok(w, "a@model@1", 1000, 7);
	store_ok(w, "b@model@1", PAGE, 9);
	retrieve_ok(r, "a@model@1", 0, 1000, 7); /* another handler's page */
	retrieve_ok(w, "b@model@1", 0, PAGE, 9); /* my own page */
	cr_assert_eq(cxlp_retrieve(r, "absent", 6, 0, &data[0], &lens[0]),
	    CXLP_E_NOTFOUND);
	cr_assert_eq(cxlp_exists(r, "a@model@1", 9), 1);
	cr_assert_eq(cxlp_exists(r, "absent", 6), 0);
	cr_assert_eq(cxlp_batch_retrieve(r, 3, keys, klen, 0, data, lens, st),
	    0);
	cr_assert(st[0] == 0 && st[1] == CXLP_E_NOTFOUND && st[2] == 0);
	cr_assert(lens[0] == 1000 && lens[2] == PAGE);
	cr_assert_eq(((const uint8_t *)data[2])[5], 14);
	cr_assert_eq(cxlp_batch_exists(r, 3, keys, klen, ex), 0);
	cr_assert(ex[0] && !ex[1] && ex[2]);
	cr_assert_eq(proxy_requests(px, PROTO_OP_LOOKUP), 0);
	cr_assert_eq(proxy_requests(px, PROTO_OP_EXISTS), 0);
	/* a delete is seen by the next direct read */
	cr_assert_eq(cxlp_delete(w, "a@model@1", 9), 0);
	cr_assert_eq(cxlp_exists(r, "a@model@1", 9), 0);
	cr_assert_eq(proxy_requests(px, PROTO_OP_EXISTS), 0);
	cxlp_close(&r);
	cxlp_close(&w);
}

Test(direct, with_direct_reads_off_lookups_go_to_the_server)
{
	struct cxlp_handler *w = connect_to(px_url, false, 0), *r = connect_to(px_url, false, 0);
	const void *data;
	size_t len;

	store_ok(w, "k@model@2", 4096, 3);
	retrieve_ok(r, "k@model@2", 0, 4096, 3);
	cr_assert_eq(proxy_requests(px, PROTO_OP_LOOKUP), 1);
	cr_assert_eq(cxlp_retrieve(r, "nope", 4, 0, &data, &len),
	    CXLP_E_NOTFOUND);
	cr_assert_eq(proxy_requests(px, PROTO_OP_LOOKUP), 2);
	cr_assert_eq(cxlp_exists(r, "k@model@2", 9), 1);
	cr_assert_eq(proxy_requests(px, PROTO_OP_EXISTS), 1);
	cxlp_close(&r);
	cxlp_close(&w);
}

Test(direct, pinned_retrieve_still_pins_through_the_server)
{
	struct cxlp_handler *w = connect_to(px_url, true, 0), *r = connect_to(px_url, true, 0);

	store_ok(w, "p@model@3", 100, 1);
	retrieve_ok(r, "p@model@3", CXLP_RETRIEVE_PIN, 100, 1);
	cr_assert_eq(proxy_requests(px, PROTO_OP_LOOKUP), 1);
	cr_assert_eq(cxlp_delete(w, "p@model@3", 9), CXLP_E_PINNED);
	retrieve_ok(r, "p@model@3", 0, 100, 1);
	cr_assert_eq(proxy_requests(px, PROTO_OP_LOOKUP), 1);
	cr_assert_eq(cxlp_unpin(r, "p@model@3", 9), 0);
	cr_assert_eq(cxlp_delete(w, "p@model@3", 9), 0);
	cr_assert_eq(cxlp_exists(r, "p@model@3", 9), 0);
	cxlp_close(&r);
	cxlp_close(&w);
}

/* ---- a writer handler churns keys while reader threads read directly -- */

#define NKEYS 8
#define ROUNDS 300

struct churn {
	struct cxlp_handler *r;
	int done;      /* atomic */
	uint64_t bad;  /* atomic */
	uint64_t hits; /* atomic */
};

static void *
churn_reader(void *arg)
{
	struct churn *c = arg;
	unsigned i = 0;
	char key[32];

	while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
		const void *data = NULL;
		size_t len = 0;
		int rc;

		snprintf(key, sizeof(key), "c%u@model", i++ % NKEYS);
		rc = cxlp_retrieve(c->r, key, strlen(key), 0, &data, &len);
		/* every version's length is 1 mod 64, at most a page */
		if (rc == 0 && (data == NULL || len % 64 != 1 || len > PAGE)) {
			__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
		} else if (rc != 0 && rc != CXLP_E_NOTFOUND) {
			__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
		}
		__atomic_fetch_add(&c->hits, rc == 0, __ATOMIC_RELAXED);
	}
	return NULL;
}

Test(direct, readers_see_whole_values_while_another_handler_churns_keys)
{
	struct cxlp_handler *w = connect_to(px_url, true, 0);
	struct churn c = { connect_to(px_url, true, 0), 0, 0, 0 };
	pthread_t t[2];
	char key[32];

	for (int k = 0; k < 2; k++) {
		cr_assert_eq(pthread_create(&t[k], NULL, churn_reader, &c), 0);
	}
	for (unsigned n = 0; n < ROUNDS; n++) {
		snprintf(key, sizeof(key), "c%u@model", n % NKEYS);
		if (n >= NKEYS) {
			cr_assert_eq(cxlp_delete(w, key, strlen(key)), 0);
		}
		store_ok(w, key, 64 * (n % 1000 % (PAGE / 64)) + 1,
		    (uint8_t)n);
	}
	__atomic_store_n(&c.done, 1, __ATOMIC_RELEASE);
	for (int k = 0; k < 2; k++) {
		pthread_join(t[k], NULL);
	}
	/* no assertion on LOOKUP requests: a reader that meets a write the
	 * preempted server has not finished asks the server, rightly */
	cr_assert_eq(c.bad, 0, "%llu bad reads",
	    (unsigned long long)c.bad);
	cxlp_close(&c.r);
	cxlp_close(&w);
}

/* Long enough for the next lookup to look at the pool path again. */
static void
past_recheck(void)
{
	usleep(300 * 1000);
}

Test(direct, a_pool_created_anew_under_the_path_is_not_read_through_the_old_one)
{
	const char *size_args[] = {"--size", "128M", NULL};
	struct cxlp_handler *h = connect_to(srv.url, true, 500);
	const void *data = NULL;
	size_t len = 0;
	int rc;

	store_ok(h, "old", 100, 7);
	/* the same pool file behind a restarted server: still read directly */
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, NULL), 0);
	past_recheck();
	retrieve_ok(h, "old", 0, 100, 7);
	/* a new pool file under the same path: the old key is gone */
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(unlink(srv.pool), 0);
	cr_assert_eq(test_server_restart(&srv, size_args), 0);
	past_recheck();
	rc = cxlp_retrieve(h, "old", 3, 0, &data, &len);
	cr_assert_eq(rc, CXLP_E_SESSION, "retrieve from a replaced pool: %s "
	    "(%s)", cxlp_strerror(rc), cxlp_errormsg());
	cr_assert_eq(cxlp_exists(h, "old", 3), CXLP_E_SESSION);
	cxlp_close(&h);
}
