/*
 * test_outage.c -- sessions that outlive their handler (issue 15, item
 * 4), with a real metaserver and real handlers in this process, which
 * keeps running throughout:
 *   - a handler that pins a key and closes while the metaserver is
 *     stopped (its BYE fails), the server then restarted: the session
 *     ends soon past --grace-ms by the keepalive promise (pins released,
 *     the key deletable by another), or at once when the process
 *     connects again (its kept BYE);
 *   - a connect whose HELLO replies, or whose first REGION_ALLOC reply
 *     and BYE, are lost leaves no live session for long;
 *   - a live idle handler with keepalive on keeps its session and region
 *     through a restart and through a stall of the server itself;
 *   - one process is refused past --max-sessions-per-process with a
 *     message naming that limit, and another process still connects.
 * The observer is a raw client (rawclient.h): it shares no handler state
 * (kept BYEs) with the handlers under test. Waits are bounded
 * generously; only outcomes are asserted.
 */
#include <pthread.h>
#include <time.h>

#include "itest.h"
#include "proto.h"
#include "rawclient.h"

TestSuite(outage, .fini = itest_stop, .timeout = 120);

#define GRACE "300"
#define KA_MS 250 /* silence limit 5 * 250 ms: a restarted server must
		   * hear a live handler within it, also on a loaded machine */
static const char *const short_grace[] = { "--grace-ms", GRACE, NULL };
static const char *const long_grace[] = { "--grace-ms", "60000", NULL };

static void
start(const char *const *args)
{
	cr_assert_eq(test_server_start(&srv, 256 * MiB, args), 0,
	    "metaserver did not start");
}

/* A handler on url: 4 KiB pages, 4 MiB regions, short timeouts. */
static struct cxlp_handler *
connect_ka(const char *url, unsigned keepalive_ms, int *rc)
{
	struct cxlp_config *cfg;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, url), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, 4096), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, 4 * MiB), 0);
	cr_assert_rc(cxlp_config_set_timeout_ms(cfg, 300), 0);
	cr_assert_rc(cxlp_config_set_retries(cfg, 2), 0);
	cr_assert_rc(cxlp_config_set_keepalive_ms(cfg, keepalive_ms), 0);
	*rc = cxlp_connect(&h, cfg);
	cxlp_config_delete(&cfg);
	return h;
}

static struct cxlp_handler *
must_connect(const char *url, unsigned keepalive_ms)
{
	int rc;
	struct cxlp_handler *h = connect_ka(url, keepalive_ms, &rc);

	cr_assert_eq(rc, 0, "connect: %s", cxlp_errormsg());
	return h;
}

static void
observer(struct raw_client *c)
{
	cr_assert_eq(raw_open(c, srv.url), 0);
	cr_assert_eq(raw_hello(c), 0);
}

/* The observer deletes key "pinned-1": the status. */
static int
raw_delete(struct raw_client *c)
{
	char k[32];
	size_t kl = kv_key(k, sizeof(k), "pinned", 1);
	const void *kp[1] = { k };
	struct proto_result res;
	struct pbuf b;
	uint32_t n = 0;
	int rc;

	pbuf_init(&b);
	proto_put_keys(&b, 0, 1, kp, &kl);
	rc = raw_request(c, PROTO_OP_DELETE, &b, &res, 1, &n);
	pbuf_fini(&b);
	return rc != 0 ? rc : n == 1 ? res.status : CXLP_E_PROTO;
}

/* A STATS value, as the observer sees it. */
static uint64_t
raw_stat(struct raw_client *c, enum proto_stat which)
{
	uint64_t v[PROTO_STATS_MAX] = { 0 };
	uint32_t n = 0;

	cr_assert_rc(raw_stats(c, v, PROTO_STATS_MAX, &n), 0);
	return v[which];
}

/* SIGSTOP the server and wait until it is stopped (kill returns before
 * a thread running on another CPU has stopped). */
static void
stop_server(void)
{
	kill(srv.pid, SIGSTOP);
	cr_assert(test_wait_stopped(srv.pid, 5000), "the metaserver did not "
	    "stop");
}

/* A handler with keepalive on stores and pins "pinned-1", then closes
 * while the metaserver is stopped: its BYE times out. The server is
 * killed there and started again with args. */
static void
close_during_outage(const char *const *args)
{
	struct cxlp_handler *h = must_connect(srv.url, KA_MS);
	char k[32];
	size_t kl = kv_key(k, sizeof(k), "pinned", 1);

	itest_put(h, "pinned", 1, 1, 64);
	cr_assert_rc(cxlp_pin(h, k, kl), 0);
	stop_server();
	cxlp_close(&h); /* BYE sent once; no answer */
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, args), 0);
}

/* Until the observer's delete of "pinned-1" stops being refused, at most
 * max_ms; returns the last status. */
static int
delete_within(struct raw_client *c, unsigned max_ms)
{
	int rc = CXLP_E_PINNED;

	for (unsigned t = 0; t < max_ms && rc != 0; t += 50) {
		rc = raw_delete(c);
		if (rc != 0) {
			test_sleep_ms(50);
		}
	}
	return rc;
}

Test(outage, a_handler_closed_while_the_server_was_down_ends_by_silence)
{
	struct raw_client o;

	start(short_grace);
	close_during_outage(short_grace);
	observer(&o);
	cr_assert_rc(raw_delete(&o), CXLP_E_PINNED, "too early to tell");
	cr_assert_rc(delete_within(&o, 15000), 0, "the closed handler's "
	    "session kept its pin (see %s)", srv.log);
	cr_assert_eq(raw_stat(&o, PROTO_STAT_PINS), 0);
	cr_assert_eq(raw_stat(&o, PROTO_STAT_SESSIONS), 1);
	cr_assert(test_server_log_has(&srv, "op=session_fence"));
	raw_close(&o);
}

/* Its process connects again: the kept BYE goes first, and the session
 * ends at once, region and all, long before any silence counts. */
Test(outage, the_next_connect_of_the_process_sends_the_failed_bye)
{
	struct raw_client o;
	struct cxlp_handler *h2;

	start(long_grace);
	close_during_outage(long_grace);
	observer(&o);
	cr_assert_rc(raw_delete(&o), CXLP_E_PINNED);
	h2 = must_connect(srv.url, KA_MS);
	cr_assert_rc(raw_delete(&o), 0, "the late BYE did not end it");
	cr_assert_eq(raw_stat(&o, PROTO_STAT_REGIONS), 1, "only the new "
	    "handler's region is left");
	cr_assert(test_server_log_has(&srv, "why=bye"));
	cxlp_close(&h2);
	raw_close(&o);
}

/* ---- lost replies at connect ------------------------------------------ */

static struct {
	pthread_mutex_t lock;
	uint16_t drop_reply_of, drop_request_of;
} lossy = { PTHREAD_MUTEX_INITIALIZER, 0, 0 };

static enum proxy_action
lose(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	enum proxy_action a = PROXY_PASS;

	pthread_mutex_lock(&lossy.lock);
	if (reply != NULL && op == lossy.drop_reply_of) {
		a = PROXY_DROP_REPLY;
	} else if (reply == NULL && op == lossy.drop_request_of) {
		a = PROXY_DROP_REQUEST;
	}
	pthread_mutex_unlock(&lossy.lock);
	return a;
}

/* Connect through a proxy that loses what lossy says: the connect
 * fails; the observer then sees the session count fall back to 1 (its
 * own) within a bound. */
static void
lossy_connect(uint16_t drop_reply_of, uint16_t drop_request_of)
{
	struct raw_client o;
	uint64_t n = 0;
	int rc;

	start(short_grace);
	lossy.drop_reply_of = drop_reply_of;
	lossy.drop_request_of = drop_request_of;
	snprintf(px_url, sizeof(px_url), "ipc:///tmp/cxlp-outage-%d.sock",
	    getpid());
	cr_assert_eq(proxy_start(&px, px_url, srv.url, lose, NULL), 0);
	cr_assert_null(connect_ka(px_url, KA_MS, &rc));
	cr_assert_neq(rc, 0);
	cr_assert_geq(proxy_requests(px, drop_reply_of), 1);
	cr_assert(test_server_log_has(&srv, "op=hello session=1 "), "no "
	    "session was made: the fault never happened");
	observer(&o);
	n = raw_stat(&o, PROTO_STAT_SESSIONS);
	for (int i = 0; i < 300 && n != 1; i++) {
		test_sleep_ms(50);
		n = raw_stat(&o, PROTO_STAT_SESSIONS);
	}
	cr_assert_eq(n, 1, "the failed connect's session lives on");
	cr_assert_eq(raw_stat(&o, PROTO_STAT_PINS), 0);
	raw_close(&o);
	proxy_stop(&px);
	unlink(px_url + strlen("ipc://"));
}

Test(outage, a_connect_whose_hello_replies_are_lost_leaves_no_session)
{
	lossy_connect(PROTO_OP_HELLO, 0);
}

/* Its BYE is lost too; the region it was granted, but never mapped,
 * stays out of use while this process runs (fenced). */
Test(outage, a_connect_whose_first_region_reply_is_lost_leaves_no_session)
{
	lossy_connect(PROTO_OP_REGION_ALLOC, PROTO_OP_BYE);
	cr_assert(test_server_log_has(&srv, "op=session_fence session=1 "));
}

/* ---- live handlers keep what they have -------------------------------- */

/* h (keepalive on) stored and pinned "pinned-1"; it still holds the
 * pin and its region, and no session was ended for silence. */
static void
assert_kept(struct cxlp_handler *h, struct raw_client *o)
{
	cr_assert_rc(raw_delete(o), CXLP_E_PINNED, "a live handler lost "
	    "its pin");
	itest_put(h, "after", 1, 2, 64); /* its region is still its own */
	cr_assert_eq(itest_get_check(h, "after", 2), 1);
	cr_assert_not(test_server_log_has(&srv, "op=session_fence"));
	cr_assert_not(test_server_log_has(&srv, "why=silent"));
}

static struct cxlp_handler *
pinning_handler(unsigned timeout_ms)
{
	struct cxlp_handler *h;
	char k[32];
	size_t kl = kv_key(k, sizeof(k), "pinned", 1);
	int rc;

	h = connect_ka(srv.url, KA_MS, &rc);
	cr_assert_eq(rc, 0);
	if (timeout_ms != 0) { /* reconnect with a longer timeout */
		cxlp_close(&h);
		h = NULL;
	}
	if (h == NULL) {
		struct cxlp_config *cfg;

		cr_assert_rc(cxlp_config_new(&cfg), 0);
		cr_assert_rc(cxlp_config_set_server(cfg, srv.url), 0);
		cr_assert_rc(cxlp_config_set_page_size(cfg, 4096), 0);
		cr_assert_rc(cxlp_config_set_region_size(cfg, 4 * MiB), 0);
		cr_assert_rc(cxlp_config_set_timeout_ms(cfg, timeout_ms), 0);
		cr_assert_rc(cxlp_config_set_keepalive_ms(cfg, KA_MS), 0);
		cr_assert_rc(cxlp_connect(&h, cfg), 0);
		cxlp_config_delete(&cfg);
	}
	itest_put(h, "pinned", 1, 1, 64);
	cr_assert_rc(cxlp_pin(h, k, kl), 0);
	return h;
}

/* An idle handler with keepalive on, across a restart and then many
 * silence limits: its heartbeats reattach and keep it. */
Test(outage, a_live_idle_handler_keeps_its_session_through_a_restart)
{
	struct cxlp_handler *h;
	struct raw_client o;

	start(short_grace);
	h = pinning_handler(0);
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, short_grace), 0);
	test_sleep_ms(3000); /* ten grace periods, over two silence limits */
	observer(&o);
	assert_kept(h, &o);
	raw_close(&o);
	cxlp_close(&h);
}

/* The server itself stopped for over two silence limits: nobody's fault
 * but its own. (The handler's timeout outlasts the stall, so it does not
 * redial meanwhile: this tests the silence rule, not the redial, which
 * test_probes.c covers.) */
Test(outage, a_live_idle_handler_keeps_its_session_through_a_server_stall)
{
	struct cxlp_handler *h;
	struct raw_client o;

	start(short_grace);
	h = pinning_handler(10000);
	observer(&o);
	stop_server();
	test_sleep_ms(3000);
	kill(srv.pid, SIGCONT);
	test_sleep_ms(1500);
	assert_kept(h, &o);
	raw_close(&o);
	cxlp_close(&h);
}

/* ---- the per-process bound -------------------------------------------- */

Test(outage, one_process_past_its_session_bound_is_told_which_limit)
{
	const char *const bound[] = { "--max-sessions-per-process", "3",
		NULL };
	struct cxlp_handler *h[3];
	struct test_child c;
	int rc;

	start(bound);
	for (int i = 0; i < 3; i++) {
		h[i] = must_connect(srv.url, KA_MS);
	}
	cr_assert_null(connect_ka(srv.url, KA_MS, &rc));
	cr_assert_rc(rc, CXLP_E_NOSPACE);
	cr_assert(strstr(cxlp_errormsg(), "--max-sessions-per-process") !=
	    NULL && strstr(cxlp_errormsg(), "this process already has 3") !=
	    NULL, "message: %s", cxlp_errormsg());
	itest_spawn(&c, "reader", "0"); /* another process: connect, close */
	itest_go(&c);
	cr_assert_eq(itest_wait(&c), 0, "another process could not connect");
	cxlp_close(&h[0]);
	h[0] = must_connect(srv.url, KA_MS);
	for (int i = 0; i < 3; i++) {
		cxlp_close(&h[i]);
	}
}
