/*
 * test_proxy.c -- tests of tests/support/proxy.c, the fault-injection
 * proxy, against a tiny echo REP server started in the test (no
 * metaserver). The echo server answers a key batch with one result per
 * key (loc.region = index) and anything else with an empty reply, and
 * counts what it saw.
 *
 * No test depends on timing: a test that expects silence first waits for
 * the hook to report that it made its decision, then lets the client's
 * receive time out; a lost frame can then never arrive late.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "err.h"
#include "proto.h"
#include "proxy.h"

#define LONG_MS 20000 /* a bound that only a broken proxy reaches */
#define SHORT_MS 300  /* used only once the frame is known to be lost */

/* ---- echo server ---- */

struct echo {
	nng_socket s;
	pthread_t thread;
	atomic_uint requests;
};

static uint32_t
batch_size(const struct proto_req_hdr *h, struct preader *body)
{
	struct proto_key *k = NULL;
	struct proto_reg *g = NULL;
	uint32_t flags, n = 0;

	if (h->op == PROTO_OP_REGISTER) {
		proto_get_regs(body, &flags, &g, &n);
	} else if (h->op > PROTO_OP_REGISTER && h->op <= PROTO_OP_DELETE) {
		proto_get_keys(body, &flags, &k, &n);
	}
	free(k);
	free(g);
	return n;
}

static void
echo_answer(struct echo *e, nng_msg *m, struct pbuf *b)
{
	struct proto_req_hdr h;
	struct proto_rep_hdr rh = { 0 };
	struct proto_result res[64] = { { 0 } };
	struct preader body;
	uint32_t n;

	pbuf_reset(b);
	atomic_fetch_add(&e->requests, 1);
	rh.status = proto_get_req_hdr(nng_msg_body(m), nng_msg_len(m), &h,
	    &body);
	rh.op = h.op;
	rh.req_id = h.req_id;
	proto_put_rep_hdr(b, &rh);
	n = rh.status == 0 ? batch_size(&h, &body) : 0;
	if (n > 0 && n <= 64) {
		for (uint32_t i = 0; i < n; i++) {
			res[i].loc = (struct proto_loc){ i, 1, 0, 4096, i, 8 };
		}
		proto_put_results(b, n, res);
	}
}

static void *
echo_main(void *arg)
{
	struct echo *e = arg;
	struct pbuf b;
	nng_msg *m;

	pbuf_init(&b);
	while (nng_recvmsg(e->s, &m, 0) == 0) {
		echo_answer(e, m, &b);
		nng_msg_clear(m);
		nng_msg_append(m, b.data, b.len);
		if (nng_sendmsg(e->s, m, 0) != 0) {
			nng_msg_free(m);
		}
	}
	pbuf_fini(&b);
	return NULL;
}

static void
echo_start(struct echo *e, const char *url)
{
	atomic_init(&e->requests, 0);
	cr_assert_eq(nng_rep0_open(&e->s), 0);
	cr_assert_eq(nng_listen(e->s, url, NULL, 0), 0, "listen %s", url);
	cr_assert_eq(pthread_create(&e->thread, NULL, echo_main, e), 0);
}

static void
echo_stop(struct echo *e)
{
	nng_close(e->s);
	pthread_join(e->thread, NULL);
}

/* ---- client ---- */

static nng_socket
client_open(const char *url, int recv_ms)
{
	nng_socket s;

	cr_assert_eq(nng_req0_open(&s), 0);
	cr_assert_eq(nng_socket_set_ms(s, NNG_OPT_REQ_RESENDTIME,
	    NNG_DURATION_INFINITE), 0);
	cr_assert_eq(nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, recv_ms), 0);
	cr_assert_eq(nng_dial(s, url, NULL, 0), 0, "dial %s", url);
	return s;
}

/* send_request -- op with n keys (n == 0: an empty body). */
static void
send_request(nng_socket s, uint16_t op, uint64_t id, size_t n)
{
	static const char *const k[8] = { "a", "bb", "ccc", "d", "e", "f",
		"g", "h" };
	static const size_t kl[8] = { 1, 2, 3, 1, 1, 1, 1, 1 };
	struct proto_req_hdr h = { PROTO_VERSION, op, id, 1, 2, 0 };
	struct proto_reg g[8];
	struct pbuf b;

	pbuf_init(&b);
	proto_put_req_hdr(&b, &h);
	if (op == PROTO_OP_REGISTER) {
		for (size_t i = 0; i < n; i++) {
			g[i] = (struct proto_reg){ { (const uint8_t *)k[i],
				(uint16_t)kl[i] }, 1, 4096 * i, 8 };
		}
		proto_put_regs(&b, 0, n, g);
	} else if (n > 0) {
		proto_put_keys(&b, 0, n, (const void *const *)k, kl);
	}
	cr_assert_eq(b.err, 0);
	cr_assert_eq(nng_send(s, b.data, b.len, 0), 0);
	pbuf_fini(&b);
}

/* recv_results -- receive a reply for id; returns its result count. */
static uint32_t
recv_results(nng_socket s, uint64_t id)
{
	struct proto_result res[64];
	struct proto_rep_hdr h;
	struct preader body;
	nng_msg *m;
	uint32_t n = 0;

	cr_assert_eq(nng_recvmsg(s, &m, 0), 0, "no reply for %llu",
	    (unsigned long long)id);
	cr_assert_eq(proto_get_rep_hdr(nng_msg_body(m), nng_msg_len(m), &h,
	    &body), 0, "%s", cxlp_errormsg());
	cr_assert_eq(h.req_id, id);
	cr_assert_eq(h.status, 0);
	if (body.left != 0) {
		cr_assert_eq(proto_get_results(&body, res, 64, &n), 0);
		for (uint32_t i = 0; i < n; i++) {
			cr_assert_eq(res[i].loc.region, i);
		}
	}
	nng_msg_free(m);
	return n;
}

/* ---- fixture: echo server + proxy in front of it ---- */

static char srv_url[128], proxy_url[128];
static struct echo echo;

static void
make_urls(void)
{
	snprintf(srv_url, sizeof(srv_url), "ipc:///tmp/cxlp-test-echo-%d",
	    (int)getpid());
	snprintf(proxy_url, sizeof(proxy_url),
	    "ipc:///tmp/cxlp-test-proxy-%d", (int)getpid());
	echo_start(&echo, srv_url);
}

static void
teardown(void)
{
	echo_stop(&echo);
}

TestSuite(proxy, .init = make_urls, .fini = teardown);

/* A hook driven by a small script, reporting its decisions. */
struct script {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum proxy_action request_action; /* for the first request only */
	enum proxy_action reply_action;   /* for the first reply only */
	uint32_t keep;                    /* truncate to this, if set */
	unsigned delay_ms;
	int request_calls;
	int reply_calls;
};

#define SCRIPT_INIT                                                         \
	{ PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PROXY_PASS,  \
	  PROXY_PASS, 0, 0, 0, 0 }

static enum proxy_action
script_hook(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	struct script *s = arg;
	enum proxy_action a;

	pthread_mutex_lock(&s->lock);
	if (reply == NULL) {
		a = s->request_calls++ == 0 ? s->request_action : PROXY_PASS;
	} else {
		a = s->reply_calls++ == 0 ? s->reply_action : PROXY_PASS;
		if (s->keep != 0) {
			cxlp_assert(proxy_truncate_results(reply, reply_len,
			    s->keep) == 0);
		}
		*delay_ms = s->delay_ms;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return a;
}

static void
wait_calls(struct script *s, int requests, int replies)
{
	pthread_mutex_lock(&s->lock);
	while (s->request_calls < requests || s->reply_calls < replies) {
		pthread_cond_wait(&s->cond, &s->lock);
	}
	pthread_mutex_unlock(&s->lock);
}

Test(proxy, passes_requests_and_replies_through_unchanged)
{
	struct proxy *p;
	nng_socket c;

	cr_assert_eq(proxy_start(&p, proxy_url, srv_url, NULL, NULL), 0,
	    "%s", cxlp_errormsg());
	c = client_open(proxy_url, LONG_MS);
	send_request(c, PROTO_OP_LOOKUP, 77, 5);
	cr_assert_eq(recv_results(c, 77), 5);
	send_request(c, PROTO_OP_HEARTBEAT, 78, 0);
	cr_assert_eq(recv_results(c, 78), 0);
	cr_assert_eq(atomic_load(&echo.requests), 2);
	cr_assert_eq(proxy_requests(p, PROTO_OP_LOOKUP), 1);
	cr_assert_eq(proxy_requests(p, PROTO_OP_HEARTBEAT), 1);
	cr_assert_eq(proxy_requests(p, PROTO_OP_REGISTER), 0);
	cr_assert_eq(proxy_forwarded(p), 2);
	nng_close(c);
	proxy_stop(&p);
	cr_assert_null(p);
}

Test(proxy, truncates_a_register_reply_to_its_first_results)
{
	struct script s = SCRIPT_INIT;
	struct proxy *p;
	nng_socket c;

	s.keep = 2;
	cr_assert_eq(proxy_start(&p, proxy_url, srv_url, script_hook, &s), 0);
	c = client_open(proxy_url, LONG_MS);
	send_request(c, PROTO_OP_REGISTER, 5, 6);
	cr_assert_eq(recv_results(c, 5), 2);
	nng_close(c);
	proxy_stop(&p);
}

Test(proxy, a_dropped_reply_leaves_the_client_waiting)
{
	struct script s = SCRIPT_INIT;
	struct proxy *p;
	nng_socket c;
	nng_msg *m;

	s.reply_action = PROXY_DROP_REPLY;
	cr_assert_eq(proxy_start(&p, proxy_url, srv_url, script_hook, &s), 0);
	c = client_open(proxy_url, SHORT_MS);
	send_request(c, PROTO_OP_LOOKUP, 1, 3);
	wait_calls(&s, 1, 1);
	cr_assert_eq(nng_recvmsg(c, &m, 0), NNG_ETIMEDOUT);
	cr_assert_eq(atomic_load(&echo.requests), 1, "it was forwarded");
	cr_assert_eq(nng_socket_set_ms(c, NNG_OPT_RECVTIMEO, LONG_MS), 0);
	send_request(c, PROTO_OP_LOOKUP, 2, 3);
	cr_assert_eq(recv_results(c, 2), 3, "the next request passes");
	nng_close(c);
	proxy_stop(&p);
}

Test(proxy, a_dropped_request_never_reaches_the_server)
{
	struct script s = SCRIPT_INIT;
	struct proxy *p;
	nng_socket c;
	nng_msg *m;

	s.request_action = PROXY_DROP_REQUEST;
	cr_assert_eq(proxy_start(&p, proxy_url, srv_url, script_hook, &s), 0);
	c = client_open(proxy_url, SHORT_MS);
	send_request(c, PROTO_OP_DELETE, 1, 1);
	wait_calls(&s, 1, 0);
	cr_assert_eq(nng_recvmsg(c, &m, 0), NNG_ETIMEDOUT);
	cr_assert_eq(atomic_load(&echo.requests), 0);
	cr_assert_eq(proxy_requests(p, PROTO_OP_DELETE), 1);
	cr_assert_eq(proxy_forwarded(p), 0);
	cr_assert_eq(s.reply_calls, 0, "no reply phase for a dropped request");
	nng_close(c);
	proxy_stop(&p);
}

Test(proxy, a_duplicated_request_reaches_the_server_twice)
{
	struct script s = SCRIPT_INIT;
	struct proxy *p;
	nng_socket c;

	s.request_action = PROXY_DUP_REQUEST;
	cr_assert_eq(proxy_start(&p, proxy_url, srv_url, script_hook, &s), 0);
	c = client_open(proxy_url, LONG_MS);
	send_request(c, PROTO_OP_REGISTER, 9, 4);
	cr_assert_eq(recv_results(c, 9), 4);
	cr_assert_eq(atomic_load(&echo.requests), 2);
	cr_assert_eq(proxy_forwarded(p), 2);
	cr_assert_eq(proxy_requests(p, PROTO_OP_REGISTER), 1);
	cr_assert_eq(s.reply_calls, 1, "the hook sees one (the last) reply");
	nng_close(c);
	proxy_stop(&p);
}

Test(proxy, a_delayed_reply_still_arrives_intact)
{
	struct script s = SCRIPT_INIT;
	struct proxy *p;
	nng_socket c;

	s.reply_action = PROXY_DELAY_REPLY;
	s.delay_ms = 50;
	cr_assert_eq(proxy_start(&p, proxy_url, srv_url, script_hook, &s), 0);
	c = client_open(proxy_url, LONG_MS);
	send_request(c, PROTO_OP_PIN, 3, 2);
	cr_assert_eq(recv_results(c, 3), 2);
	nng_close(c);
	proxy_stop(&p);
}

/* busy_client -- 20 round trips; runs off the test thread, so it
 * reports failures by count instead of asserting. */
static void *
busy_client(void *arg)
{
	uintptr_t base = (uintptr_t)arg * 1000, failures = 0;
	struct proto_rep_hdr h;
	struct preader body;
	struct pbuf b;
	nng_socket c;
	nng_msg *m;

	if (nng_req0_open(&c) != 0 ||
	    nng_socket_set_ms(c, NNG_OPT_RECVTIMEO, LONG_MS) != 0 ||
	    nng_dial(c, proxy_url, NULL, 0) != 0) {
		return (void *)(uintptr_t)100;
	}
	pbuf_init(&b);
	for (uint64_t i = 0; i < 20; i++) {
		struct proto_req_hdr rh = { PROTO_VERSION, PROTO_OP_HEARTBEAT,
			base + i, 0, 0, 0 };

		pbuf_reset(&b);
		proto_put_req_hdr(&b, &rh);
		if (nng_send(c, b.data, b.len, 0) != 0 ||
		    nng_recvmsg(c, &m, 0) != 0) {
			failures++;
			continue;
		}
		if (proto_get_rep_hdr(nng_msg_body(m), nng_msg_len(m), &h,
		    &body) != 0 || h.req_id != base + i) {
			failures++;
		}
		nng_msg_free(m);
	}
	pbuf_fini(&b);
	nng_close(c);
	return (void *)failures;
}

Test(proxy, serves_many_clients_at_once)
{
	pthread_t t[PROXY_WORKERS + 2];
	struct proxy *p;

	cr_assert_eq(proxy_start(&p, proxy_url, srv_url, NULL, NULL), 0);
	for (uintptr_t i = 0; i < PROXY_WORKERS + 2; i++) {
		cr_assert_eq(pthread_create(&t[i], NULL, busy_client,
		    (void *)i), 0);
	}
	for (int i = 0; i < PROXY_WORKERS + 2; i++) {
		void *failures;

		pthread_join(t[i], &failures);
		cr_assert_null(failures, "client %d: %zu failures", i,
		    (size_t)(uintptr_t)failures);
	}
	cr_assert_eq(proxy_requests(p, PROTO_OP_HEARTBEAT),
	    20 * (PROXY_WORKERS + 2));
	cr_assert_eq(atomic_load(&echo.requests), 20 * (PROXY_WORKERS + 2));
	proxy_stop(&p);
}

Test(proxy, start_fails_cleanly_on_a_bad_url)
{
	struct proxy *p = (struct proxy *)&p;

	cr_assert_lt(proxy_start(&p, "nosuch://x", srv_url, NULL, NULL), 0);
	cr_assert_null(p);
	cr_assert(strstr(cxlp_errormsg(), "listen") != NULL, "%s",
	    cxlp_errormsg());
	proxy_stop(&p); /* NULL-safe */
}

Test(proxy, truncate_results_keeps_short_lists_and_refuses_other_frames)
{
	struct proto_rep_hdr h = { PROTO_VERSION, PROTO_OP_LOOKUP, 1, 0, NULL, 0,
		false, 0, 0 };
	struct proto_result res[3] = { { 0 } };
	struct pbuf b;
	size_t len;

	pbuf_init(&b);
	proto_put_rep_hdr(&b, &h);
	proto_put_results(&b, 3, res);
	len = b.len;
	cr_assert_eq(proxy_truncate_results(b.data, &len, 3), 0);
	cr_assert_eq(len, b.len, "keep >= n changes nothing");
	cr_assert_eq(proxy_truncate_results(b.data, &len, 0), 0);
	cr_assert_eq(len, PROTO_REP_HDR_LEN_V3 + 4 + 2); /* n, rec */
	pbuf_reset(&b);
	h.op = PROTO_OP_STATS;
	proto_put_rep_hdr(&b, &h);
	proto_put_stats(&b, 0, NULL);
	len = b.len;
	cr_assert_eq(proxy_truncate_results(b.data, &len, 0), CXLP_E_PROTO);
	pbuf_fini(&b);
}
