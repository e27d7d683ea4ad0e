/*
 * test_replaced.c -- the pool file replaced under a running metaserver
 * (issue 25, item 1). Its handlers map regions by path: after `rm P` and
 * a second metaserver on P, or `mv P away; cp away P`, a new mapping
 * would be of another file than the one the server serves, and a store
 * would land there. A handler checks each new mapping (handler/session/poolid.c)
 * and refuses it with CXLP_E_STALE; the server sees its path name
 * another file and takes no new handler; what was mapped before goes on.
 * A restart on the same file is no replacement: its new open nonce is
 * asked for and the handler goes on.
 */
#include <signal.h>
#include <stdlib.h>

#include "itest.h"
#include "proto.h"

TestSuite(replaced, .timeout = 120);

#define PAGE (1 * MiB)
#define REGION (2 * MiB) /* two pages: the third alloc maps a region */

static struct test_server a, b;
static struct proxy *far;
static char far_url[160], away[160];

static void
stop_all(void)
{
	proxy_stop(&far);
	unlink(far_url + strlen("ipc://"));
	if (away[0] != '\0') {
		unlink(away);
	}
	if (b.pid > 0) {
		(void)test_server_stop(&b);
	}
	if (a.pid > 0) {
		kill(a.pid, SIGCONT); /* a_read_mid_restart_... stops it */
		(void)test_server_stop(&a);
	}
}

static struct cxlp_handler *
connect_to(const struct test_server *s)
{
	struct cxlp_handler *h = kv_connect(s->url, PAGE, REGION, true);

	cr_assert_not_null(h, "connect to %s: %s", s->url, cxlp_errormsg());
	return h;
}

/* store the two keys that fill h's first region */
static void
fill_first_region(struct cxlp_handler *h, const char *prefix, uint32_t w)
{
	for (uint32_t i = 0; i < 2; i++) {
		char k[64];
		size_t kl = kv_key(k, sizeof(k), prefix, i);
		cxlp_page_t pg;
		void *buf;
		bool ok = false;

		cr_assert_rc(cxlp_alloc(h, &pg, &buf), 0);
		kv_fill(buf, PAGE, w, i);
		cr_assert_rc(cxlp_store(h, k, kl, pg, PAGE, 0, &ok), 0);
		cr_assert(ok);
	}
}

static void
check_keys(struct cxlp_handler *h, const char *prefix, uint32_t w, int n)
{
	for (int i = 0; i < n; i++) {
		char k[64];
		size_t kl = kv_key(k, sizeof(k), prefix, (unsigned)i);
		const void *data = NULL;
		size_t len = 0;
		uint32_t writer = 0;

		cr_assert_rc(cxlp_retrieve(h, k, kl, 0, &data, &len), 0);
		cr_assert(kv_check(data, len, (uint32_t)i, &writer) &&
		    writer == w, "%s-%d: bytes of writer %u, want %u", prefix,
		    i, writer, w);
	}
}

/* the server's watch saw its path change (it runs on the reaper's tick,
 * every 250 ms at most) */
static void
wait_watch(const struct test_server *s)
{
	for (int i = 0; i < 1500; i++) {
		if (test_server_log_has(s, "op=pool_watch")) {
			return;
		}
		test_sleep_ms(10);
	}
	cr_assert_fail("no op=pool_watch line in %s", s->log);
}

static void
assert_refused(const struct test_server *s)
{
	struct cxlp_handler *h = kv_connect(s->url, PAGE, REGION, true);

	cr_assert_null(h, "a new handler was taken");
	cr_assert(test_server_log_has(s, "not the pool this metaserver "
	    "serves"), "log %s", s->log);
}

/* h's server restarted on another file than h's mappings are of: no
 * store of prefix reports true (the one whose reattach found it: status
 * CXLP_E_STALE, its page freed; then every call: CXLP_E_STALE naming the
 * path), and a retrieve says so too */
static void
assert_switched(struct cxlp_handler *h, const char *path, const char *prefix)
{
	for (uint32_t i = 0; i < 2; i++) {
		char k[64];
		const void *key = k;
		size_t kl = kv_key(k, sizeof(k), prefix, i), len = PAGE;
		cxlp_page_t pg;
		void *buf = NULL;
		bool ok = true;
		int st = 0, rc = cxlp_alloc(h, &pg, &buf);

		if (rc == 0) {
			kv_fill(buf, PAGE, 9, i);
			rc = cxlp_batch_store_status(h, 1, &key, &kl, &pg,
			    &len, 0, &ok, &st);
			cr_assert(rc == CXLP_E_STALE || (rc == 0 && !ok &&
			    st == CXLP_E_STALE), "store %s after the switch: "
			    "rc %d ok %d status %d (%s)", k, rc, ok, st,
			    cxlp_errormsg());
			continue;
		}
		cr_assert_eq(rc, CXLP_E_STALE, "alloc = %d (%s)", rc,
		    cxlp_errormsg());
		cr_assert(strstr(cxlp_errormsg(), path) != NULL &&
		    strstr(cxlp_errormsg(), "reconnect") != NULL, "%s",
		    cxlp_errormsg());
	}
	{
		char k[64];
		size_t kl = kv_key(k, sizeof(k), prefix, 0), len = 0;
		const void *data = NULL;

		cr_assert_rc(cxlp_retrieve(h, k, kl, 0, &data, &len),
		    CXLP_E_STALE);
	}
}

/* no key of prefix in h's pool: never another's bytes under it */
static void
assert_absent(struct cxlp_handler *h, const char *prefix)
{
	for (uint32_t i = 0; i < 2; i++) {
		char k[64];
		size_t kl = kv_key(k, sizeof(k), prefix, i), len = 0;
		const void *data = NULL;

		cr_assert_rc(cxlp_retrieve(h, k, kl, 0, &data, &len),
		    CXLP_E_NOTFOUND);
	}
}

/* an alloc that needs a new region: refused, the page not handed out */
static void
assert_new_region_refused(struct cxlp_handler *h)
{
	cxlp_page_t pg;
	void *buf = NULL;
	int rc = cxlp_alloc(h, &pg, &buf);

	cr_assert_eq(rc, CXLP_E_STALE, "alloc = %d (%s), want CXLP_E_STALE",
	    rc, cxlp_errormsg());
	cr_assert_null(buf);
}

Test(replaced, a_second_server_on_a_recreated_path_gets_no_bytes_of_the_first, .fini = stop_all)
{
	const char *const size[] = { "--size", "268435456", NULL };
	struct cxlp_handler *h1, *hb;

	cr_assert_eq(test_server_start(&a, 256 * MiB, NULL), 0);
	h1 = connect_to(&a);
	fill_first_region(h1, "a", 1);
	cr_assert_eq(unlink(a.pool), 0); /* an operator "resets" the pool */
	b = a;
	snprintf(b.url, sizeof(b.url), "ipc:///tmp/cxlp-test-b%d.sock",
	    (int)getpid());
	snprintf(b.log, sizeof(b.log), "/tmp/cxlp-test-b%d.log",
	    (int)getpid());
	cr_assert_eq(test_server_restart(&b, size), 0, "second server");
	hb = connect_to(&b);
	fill_first_region(hb, "b", 2);
	fill_first_region(hb, "b2", 3); /* its second region */
	assert_new_region_refused(h1);
	check_keys(hb, "b", 2, 2);
	check_keys(hb, "b2", 3, 2);
	check_keys(h1, "a", 1, 2); /* mapped before: the first file's */
	wait_watch(&a);
	assert_refused(&a);
	cxlp_close(&hb);
	cxlp_close(&h1);
}

Test(replaced, a_copy_in_place_of_the_served_file_takes_no_store, .fini = stop_all)
{
	char cmd[400];
	struct cxlp_handler *h1, *other;

	cr_assert_eq(test_server_start(&a, 256 * MiB, NULL), 0);
	h1 = connect_to(&a);
	fill_first_region(h1, "a", 1);
	snprintf(away, sizeof(away), "%s.away", a.pool);
	cr_assert_eq(rename(a.pool, away), 0);
	snprintf(cmd, sizeof(cmd), "cp %s %s", away, a.pool);
	cr_assert_eq(system(cmd), 0);
	assert_new_region_refused(h1);
	check_keys(h1, "a", 1, 2);
	wait_watch(&a);
	assert_refused(&a);
	/* the server restarted on the copy (its path's file now): the
	 * copy is its pool, and the handler, whose regions are of the old
	 * file, must reconnect */
	test_server_kill(&a, SIGKILL);
	unlink(away);
	cr_assert_eq(test_server_restart(&a, NULL), 0);
	assert_switched(h1, a.pool, "c");
	other = connect_to(&a);
	check_keys(other, "a", 1, 2);
	assert_absent(other, "c");
	cxlp_close(&other);
	cxlp_close(&h1);
}

/* The same with regions of 8 pages: after the copy and the restart the
 * handler's next stores would fit in the free pages of the region it
 * mapped before, of the old file, and need no new mapping to check
 * (the review's reproduction: reported stored, read back as zeros). */
Test(replaced, a_restart_on_a_copy_takes_no_store_in_old_regions, .fini = stop_all)
{
	char cmd[400];
	struct cxlp_handler *h1, *other;

	cr_assert_eq(test_server_start(&a, 256 * MiB, NULL), 0);
	h1 = kv_connect(a.url, PAGE, 8 * PAGE, true);
	cr_assert_not_null(h1, "connect: %s", cxlp_errormsg());
	fill_first_region(h1, "a", 1); /* 2 of its 8 pages */
	snprintf(away, sizeof(away), "%s.away", a.pool);
	cr_assert_eq(rename(a.pool, away), 0);
	snprintf(cmd, sizeof(cmd), "cp %s %s", away, a.pool);
	cr_assert_eq(system(cmd), 0);
	test_server_kill(&a, SIGKILL);
	cr_assert_eq(test_server_restart(&a, NULL), 0);
	assert_switched(h1, a.pool, "c");
	other = connect_to(&a);
	check_keys(other, "a", 1, 2);
	assert_absent(other, "c");
	cxlp_close(&other);
	cxlp_close(&h1);
}

Test(replaced, a_restart_on_the_same_file_is_no_replacement, .fini = stop_all)
{
	struct cxlp_handler *h1, *other;

	cr_assert_eq(test_server_start(&a, 256 * MiB, NULL), 0);
	h1 = connect_to(&a);
	fill_first_region(h1, "a", 1);
	test_server_kill(&a, SIGKILL);
	cr_assert_eq(test_server_restart(&a, NULL), 0);
	fill_first_region(h1, "n", 5); /* a new region, a new open nonce */
	other = connect_to(&a);
	check_keys(other, "n", 5, 2);
	cxlp_close(&other);
	cxlp_close(&h1);
}

/* A server restarted on the same file writes its new open nonce at
 * open, and may take seconds (recovery) before it answers. A direct
 * read that maps a region in that time finds the nonce changed; the
 * device and inode say it is the served file, so it reads without
 * asking (a reattaching HELLO would time out: the server is stopped). */
Test(replaced, a_read_mid_restart_on_the_same_file_needs_no_hello, .fini = stop_all)
{
	struct cxlp_handler *h1, *h2;

	cr_assert_eq(test_server_start(&a, 256 * MiB, NULL), 0);
	h1 = kv_connect_secret(a.url, PAGE, REGION, 500, 0, NULL);
	cr_assert_not_null(h1, "connect: %s", cxlp_errormsg());
	h2 = connect_to(&a);
	fill_first_region(h2, "f", 6); /* a region h1 has not mapped */
	test_server_kill(&a, SIGKILL);
	cr_assert_eq(test_server_restart(&a, NULL), 0);
	cr_assert_eq(kill(a.pid, SIGSTOP), 0); /* as if in recovery */
	check_keys(h1, "f", 6, 2);
	cr_assert_eq(kill(a.pid, SIGCONT), 0);
	cxlp_close(&h2);
	cxlp_close(&h1);
}

/* The WELCOME of a server on another host, as far as the handler can
 * tell: another boot hash (0: none), so dev and ino say nothing and only
 * the open nonce in the file can. */
static enum proxy_action
far_host(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	size_t path_at = PROTO_REP_HDR_LEN_V3 + 32, plen;

	(void)arg, (void)req_id, (void)delay_ms;
	if (reply == NULL || op != PROTO_OP_HELLO || *reply_len < path_at + 2) {
		return PROXY_PASS;
	}
	path_at = proto_rep_hdr_len(reply[4]) + 32; /* u16 version, < 256 */
	plen = (size_t)(reply[path_at] | reply[path_at + 1] << 8);
	if (*reply_len == path_at + 2 + plen + 32) {
		memset(reply + path_at + 2 + plen + 8, 0, 8); /* boot */
	}
	return PROXY_PASS;
}

Test(replaced, a_handler_on_another_host_tells_a_second_server_by_its_nonce, .fini = stop_all)
{
	const char *const size[] = { "--size", "268435456", NULL };
	struct cxlp_handler *h1, *hb;

	cr_assert_eq(test_server_start(&a, 256 * MiB, NULL), 0);
	snprintf(far_url, sizeof(far_url), "ipc:///tmp/cxlp-far-%d.sock",
	    (int)getpid());
	cr_assert_eq(proxy_start(&far, far_url, a.url, far_host, NULL), 0);
	h1 = kv_connect(far_url, PAGE, REGION, true);
	cr_assert_not_null(h1);
	fill_first_region(h1, "a", 1);
	cr_assert_eq(unlink(a.pool), 0);
	b = a;
	snprintf(b.url, sizeof(b.url), "ipc:///tmp/cxlp-test-b%d.sock",
	    (int)getpid());
	snprintf(b.log, sizeof(b.log), "/tmp/cxlp-test-b%d.log",
	    (int)getpid());
	cr_assert_eq(test_server_restart(&b, size), 0, "second server");
	hb = connect_to(&b);
	fill_first_region(hb, "b", 2);
	fill_first_region(hb, "b2", 3);
	assert_new_region_refused(h1);
	cr_assert(strstr(cxlp_errormsg(), "open nonce") != NULL, "%s",
	    cxlp_errormsg());
	check_keys(hb, "b2", 3, 2);
	cxlp_close(&hb);
	cxlp_close(&h1);
}
