/*
 * test_relay.c -- a handler that reaches the metaserver through a relay
 * on the ipc socket (a socat-like byte forwarder, tests/support/relay.h):
 * the server's peer on the pipe is the relay, a process of its own per
 * connection, that exits with its connection. The session must not be
 * tied to the relay's life: it survives the relay's exits and metaserver
 * restarts, its pins with it (issue 25, item 4). And the other half of
 * that item: what a HELLO claims does not make a process another one --
 * a client forging a start time per HELLO is still one process, bound by
 * --max-sessions-per-process.
 */
#include <stdlib.h>

#include "itest.h"
#include "rawclient.h"
#include "relay.h"

#define RESTARTS 4

static char relay_path[108];
static pid_t relay_pid;

static void
relay_fini(void)
{
	relay_kill(relay_pid, relay_path);
	itest_stop();
}

TestSuite(relay, .fini = relay_fini, .timeout = 120);

static void
relay_up(void)
{
	snprintf(relay_path, sizeof(relay_path), "/tmp/cxlp-relay-%d.sock",
	    (int)getpid());
	relay_pid = relay_spawn(relay_path, srv.url + strlen("ipc://"));
	cr_assert_gt(relay_pid, 0, "relay: %s", strerror(errno));
}

Test(relay, a_relayed_handler_keeps_its_session_and_pins_across_restarts)
{
	char url[160], k[64];
	size_t kl = kv_key(k, sizeof(k), "relayed", 1);
	struct cxlp_handler *h, *other;

	itest_start();
	relay_up();
	snprintf(url, sizeof(url), "ipc://%s", relay_path);
	h = kv_connect(url, 4096, 4 * MiB, true);
	cr_assert_not_null(h, "connect through the relay failed");
	itest_put(h, "relayed", 1, 1, 4096);
	cr_assert_rc(cxlp_pin(h, k, kl), 0);
	for (int i = 0; i < RESTARTS; i++) {
		relay_kill(relay_pid, relay_path);
		test_server_kill(&srv, SIGKILL);
		cr_assert_eq(test_server_restart(&srv, NULL), 0);
		/* the relay comes back only after a reaper pass (every 250
		 * ms at most), so the handler cannot speak before it: a
		 * session taken for its relay's would end in it. Passing
		 * does not depend on this wait. */
		test_sleep_ms(1000);
		relay_up();
		cr_assert_eq(cxlp_exists(h, k, kl), 1, "restart %d: %s", i,
		    cxlp_errormsg());
	}
	cr_assert(!test_server_log_has(&srv, "why=peer_exited"),
	    "the session was ended as its relay's: see %s", srv.log);
	other = itest_connect();
	cr_assert_rc(cxlp_delete(other, k, kl), CXLP_E_PINNED, "its pin went");
	cr_assert_rc(cxlp_unpin(h, k, kl), 0);
	cr_assert_eq(itest_get_check(other, "relayed", 1), 1);
	cxlp_close(&other);
	cxlp_close(&h);
}

/* A HELLO on c claiming start time start and a host of its own, with
 * no nonce (each one a new session): its status. */
static int
forged_hello(struct raw_client *c, uint64_t start)
{
	struct proto_req_hdr h = { PROTO_VERSION, PROTO_OP_HELLO,
		c->next_id++, 0, 0, 0 };
	char host[32];
	struct proto_hello m = { (uint32_t)getpid(), 0, start, 0, host, 0,
		NULL, 0, 0, 0, 0, 0, 0 };
	struct proto_rep_hdr rh;
	struct preader r;
	struct pbuf b;
	uint8_t *rep = NULL;
	size_t rep_len = 0;
	int rc;

	m.host_len = (uint16_t)snprintf(host, sizeof(host), "forged%llu",
	    (unsigned long long)start);
	pbuf_init(&b);
	proto_put_req_hdr(&b, &h);
	proto_put_hello(&b, &m);
	rc = b.err ? b.err : raw_call(c, b.data, b.len, &rep, &rep_len);
	if (rc == 0) {
		rc = proto_get_rep_hdr(rep, rep_len, &rh, &r);
		rc = rc != 0 ? rc : rh.status;
	}
	free(rep);
	pbuf_fini(&b);
	return rc;
}

Test(relay, a_client_forging_start_times_is_one_process_under_the_bound)
{
	const char *const bound[] = { "--max-sessions-per-process", "4",
		NULL };
	struct raw_client c;
	struct test_child other;
	int admitted = 0, rc = 0;

	cr_assert_eq(test_server_start(&srv, 256 * MiB, bound), 0);
	cr_assert_eq(raw_open(&c, srv.url), 0);
	for (uint64_t i = 1; i <= 40 && rc == 0; i++) {
		if ((rc = forged_hello(&c, 1000 * i)) == 0) {
			admitted++;
		}
	}
	cr_assert_eq(rc, CXLP_E_NOSPACE, "hello: %d", rc);
	cr_assert_eq(admitted, 4, "one process took %d sessions", admitted);
	itest_spawn(&other, "reader", "0"); /* another process: connects */
	itest_go(&other);
	cr_assert_eq(itest_wait(&other), 0, "another process was refused");
	raw_close(&c);
}
