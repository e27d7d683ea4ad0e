/*
 * test_endpoints.c -- which metaserver a handler dials, and the move to
 * another when its own stops answering (handler/net/endpoints.c, with
 * the owner record's finder of handler/session/leader.c):
 *   - connect takes the first configured endpoint that answers;
 *   - with the pool configured, connect finds the server through the
 *     pool's owner record when no configured endpoint answers;
 *   - a server killed -9 and started again on another endpoint (as a
 *     standby taking over would be) is followed by a handler configured
 *     with the pool (its owner record names the new endpoint) and by one
 *     configured with both endpoints, their calls succeeding with the
 *     same session and pins, while one configured with the old endpoint
 *     alone gets no answer;
 *   - a reply CXLP_E_CONN (a metaserver that lost its term; here a proxy
 *     that says so) moves the call to the next endpoint, where it is
 *     answered once, not applied twice.
 * One pool, one host: the multi-host takeover is tests/multihost/
 * test_follow.c.
 */
#include <stdatomic.h>

#include "itest.h"
#include "proto.h"

#define TIMEOUT_MS 300
#define RETRIES 6
#define LEN 1000

TestSuite(endpoints, .init = itest_start, .fini = itest_stop,
    .timeout = 60);

static char nobody[128]; /* an ipc:// endpoint nothing listens on */

static void
nobody_url(void)
{
	snprintf(nobody, sizeof(nobody), "ipc:///tmp/cxlp-ep-nobody-%d.sock",
	    (int)getpid());
	unlink(nobody + strlen("ipc://"));
}

/* a handler on server (one URL or a list), with the pool path pool (NULL:
 * none); NULL when the connect fails (its rc in *rc) */
static struct cxlp_handler *
connect_to(const char *server, const char *pool, int *rc)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, server), 0);
	cr_assert_rc(cxlp_config_set_pool(cfg, pool), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, 4096), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, 4 * MiB), 0);
	cr_assert_rc(cxlp_config_set_timeout_ms(cfg, TIMEOUT_MS), 0);
	cr_assert_rc(cxlp_config_set_retries(cfg, RETRIES), 0);
	/* every lookup goes to the server, so that a read proves it answers */
	cr_assert_rc(cxlp_config_set_direct_reads(cfg, false), 0);
	*rc = cxlp_connect(&h, cfg);
	cxlp_config_delete(&cfg);
	return h;
}

static struct cxlp_handler *
must_connect(const char *server, const char *pool)
{
	int rc;
	struct cxlp_handler *h = connect_to(server, pool, &rc);

	cr_assert_not_null(h, "connect to %s (pool %s): %s (%s)", server,
	    pool != NULL ? pool : "-", cxlp_strerror(rc), cxlp_errormsg());
	return h;
}

static void
list_of(char *buf, size_t n, const char *a, const char *b)
{
	cr_assert_lt((size_t)snprintf(buf, n, "%s,%s", a, b), n);
}

Test(endpoints, connect_takes_the_first_endpoint_that_answers)
{
	struct cxlp_handler *h;
	char list[400];
	int rc;

	nobody_url();
	list_of(list, sizeof(list), nobody, srv.url);
	h = must_connect(list, NULL);
	itest_put(h, "first", 1, 0, LEN);
	cr_assert_eq(itest_get_check(h, "first", 0), 1);
	cxlp_close(&h);
	cr_assert_null(connect_to(nobody, NULL, &rc));
	cr_assert_rc(rc, CXLP_E_CONN);
	cr_assert_null(connect_to("ipc:///a,,ipc:///b", NULL, &rc));
	cr_assert_rc(rc, -EINVAL, "an empty endpoint in the list");
}

Test(endpoints, connect_finds_the_server_through_the_owner_record)
{
	struct cxlp_handler *h;

	nobody_url();
	h = must_connect(nobody, srv.pool); /* the record names srv.url */
	itest_put(h, "owner", 2, 0, LEN);
	cr_assert_eq(itest_get_check(h, "owner", 0), 2);
	cxlp_close(&h);
}

/* srv killed -9 and started again on the pool, listening on a new URL
 * (the old one's socket file removed: nothing answers there) */
static void
move_server(void)
{
	char old[sizeof(srv.url)];

	snprintf(old, sizeof(old), "%s", srv.url);
	test_server_kill(&srv, SIGKILL);
	unlink(old + strlen("ipc://"));
	snprintf(srv.url, sizeof(srv.url), "ipc:///tmp/cxlp-ep-moved-%d.sock",
	    (int)getpid());
	cr_assert_eq(test_server_restart(&srv, NULL), 0, "restart on %s",
	    srv.url);
}

Test(endpoints, handlers_follow_a_server_that_moved_to_another_endpoint)
{
	struct cxlp_handler *byrec, *bylist, *alone;
	char old[sizeof(srv.url)], list[400];
	const void *data;
	size_t len;

	snprintf(old, sizeof(old), "%s", srv.url);
	snprintf(list, sizeof(list), "%s,ipc:///tmp/cxlp-ep-moved-%d.sock",
	    old, (int)getpid());
	byrec = must_connect(old, srv.pool);
	bylist = must_connect(list, NULL);
	alone = must_connect(old, NULL);
	itest_put(byrec, "rec", 3, 0, LEN);
	itest_put(bylist, "list", 4, 0, LEN);
	cr_assert_rc(cxlp_pin(byrec, "rec-0", 5), 0);
	move_server();
	/* the next calls succeed, without a new connect */
	cr_assert_eq(itest_get_check(byrec, "rec", 0), 3);
	cr_assert_eq(itest_get_check(bylist, "list", 0), 4);
	itest_put(byrec, "rec", 3, 1, LEN);
	itest_put(bylist, "list", 4, 1, LEN);
	cr_assert_eq(itest_get_check(bylist, "rec", 1), 3);
	cr_assert_eq(kv_stats(byrec).endpoint_switches, 1);
	cr_assert_eq(kv_stats(bylist).endpoint_switches, 1);
	/* the session and its pin were carried: one unpin, not two */
	cr_assert_rc(cxlp_unpin(byrec, "rec-0", 5), 0);
	cr_assert_rc(cxlp_unpin(byrec, "rec-0", 5), CXLP_E_NOTPINNED);
	/* configured with the old endpoint alone, it is not moved */
	cr_assert_neq(cxlp_retrieve(alone, "rec-0", 5, 0, &data, &len), 0,
	    "a handler with neither the pool nor the new endpoint followed "
	    "the server");
	cxlp_close(&alone);
	cxlp_close(&bylist);
	cxlp_close(&byrec);
}

/* ---- a server that lost its term: a proxy that says so ---------------- */

static atomic_bool deposed;
static atomic_uint refused;

/* reply phase: once deposed, every reply becomes CXLP_E_CONN, with no
 * message and no body, as metaserver/dispatch.c sends it */
static enum proxy_action
lost_term(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	struct proto_rep_hdr hdr;
	struct preader body;
	struct pbuf b;

	(void)arg, (void)op, (void)req_id, (void)delay_ms;
	if (reply == NULL || !atomic_load(&deposed) ||
	    proto_get_rep_hdr(reply, *reply_len, &hdr, &body) != 0) {
		return PROXY_PASS;
	}
	hdr.status = CXLP_E_CONN;
	hdr.msg_len = 0;
	hdr.msg = NULL;
	pbuf_init(&b);
	proto_put_rep_hdr(&b, &hdr);
	if (b.err == 0 && b.len <= *reply_len) {
		memcpy(reply, b.data, b.len);
		*reply_len = b.len;
		atomic_fetch_add(&refused, 1);
	}
	pbuf_fini(&b);
	return PROXY_PASS;
}

TestSuite(deposed, .fini = itest_proxy_stop, .timeout = 60);

Test(deposed, a_reply_of_lost_term_moves_the_call_to_the_next_endpoint)
{
	struct cxlp_handler *h;
	struct cxlp_stats st;
	char list[400];

	itest_proxy_start(lost_term);
	list_of(list, sizeof(list), px_url, srv.url);
	h = must_connect(list, NULL);
	itest_put(h, "before", 5, 0, LEN);
	atomic_store(&deposed, true);
	/* applied by the server behind the proxy, refused by the proxy, then
	 * resent to srv under its id: answered from the reply cache */
	itest_put(h, "after", 6, 0, LEN);
	cr_assert_geq(atomic_load(&refused), 1, "the proxy refused nothing");
	cr_assert_eq(itest_get_check(h, "after", 0), 6);
	cr_assert_eq(itest_get_check(h, "before", 0), 5);
	st = kv_stats(h);
	cr_assert_eq(st.keys, 2);
	cr_assert_eq(st.sessions, 1);
	cr_assert_eq(st.pages_registered, 2);
	cr_assert_eq(st.pages_unresolved, 0);
	cr_assert_eq(st.endpoint_switches, 1);
	cxlp_close(&h);
}
