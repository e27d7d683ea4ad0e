/*
 * crashpoints_workload.c -- the crash-point sweep's workload
 * (test_crashpoints.c): a fixed script of raw protocol requests from two
 * sessions, each kept in the model (crashpoints.h) only when the server
 * acknowledged it. A request whose connection drops with the server is
 * sent again, with the same request id, once the watcher has restarted
 * the server: the restarted server's answer is that request's outcome,
 * and what it could not settle is marked unsure. Two sockets serve every
 * run (nng leaks a socket closed while it redials), each run with new
 * sessions on them. The script's eviction steps are in
 * crashpoints_evict.c, on the requests this file exports.
 */
#include <criterion/criterion.h>
#include <nng/nng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "crashpoints.h"
#include "proc.h"

const char *const cp_names[NKEYS] = {
	"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9",
	"b0", "b1", "b2", "r0", "r1", "e0",
};

/* ---- requests ----------------------------------------------------------- */

/* cp_crash_op -- see crashpoints.h */
bool
cp_crash_op(const struct run *r)
{
	return !r->before && atomic_load(&cp_crashed);
}

static struct raw_client sockets[2];

static void
socket_opts(struct raw_client *c)
{
	nng_socket sock = *(nng_socket *)c->sock;

	nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, 5000);
	nng_socket_set_ms(sock, NNG_OPT_SENDTIMEO, 5000);
	nng_socket_set_ms(sock, NNG_OPT_RECONNMINT, 5);
	nng_socket_set_ms(sock, NNG_OPT_RECONNMAXT, 20);
}

/* redial -- replace client s's socket with a new one, keeping its session,
 * token and request ids (raw_redial); the new dial completes in the
 * background. */
static void
redial(struct run *r, int s)
{
	cr_assert_eq(raw_redial(&r->c[s], cp_srv.url), 0);
	socket_opts(&r->c[s]);
	sockets[s].sock = r->c[s].sock;
}

/* How long cp_xcall waits for each thing before it gives up: a run that
 * cannot get an answer fails with a message instead of outliving the
 * test's timeout (a CI run once did, on a loaded machine). */
#define NOTICE_MS 3000	 /* for the watcher to see a dropped server die */
#define RESTART_MS 40000 /* for the watcher's restart */
#define ANSWER_MS 40000	 /* for an answer from the restarted server */
#define OP_MS 60000	 /* for one op in all, whatever it waits for */

static bool
dropped(int rc) /* the connection broke: its server died */
{
	return rc == -NNG_ECONNRESET || rc == -NNG_ECLOSED ||
	    rc == -NNG_ECONNSHUT;
}

static bool
wait_flag(atomic_bool *flag, unsigned ms)
{
	for (unsigned t = 0; !atomic_load(flag) && t < ms; t += 5) {
		test_sleep_ms(5);
	}
	return atomic_load(flag);
}

static void
note(const struct raw_client *c, uint16_t op, const char *what, int rc)
{
	fprintf(stderr, "crashpoints: op %u (request %llu): %s (%d)\n", op,
	    (unsigned long long)c->next_id - 1, what, rc);
}

/* Send frame b again to the restarted server until it answers, for at
 * most ANSWER_MS: a dialer that does not reach it (seen once: every
 * attempt timed out on a socket whose pipe never came) is replaced from
 * the second attempt on. */
static int
resend_after_restart(struct run *r, int s, uint16_t op, const struct pbuf *b,
    uint8_t **rep, size_t *rep_len)
{
	struct raw_client *c = &r->c[s];
	uint64_t until = cxlp_now_ms() + ANSWER_MS;

	until = until < r->op_until ? until : r->op_until;
	int rc;

	for (int i = 0;; i++) {
		rc = raw_call(c, b->data, b->len, rep, rep_len);
		if (rc == 0 || cxlp_now_ms() >= until) {
			break;
		}
		note(c, op, "the restarted server did not answer", rc);
		test_sleep_ms(20);
		if (i > 0) {
			redial(r, s);
		}
	}
	if (rc != 0) {
		note(c, op, "giving up on the restarted server", rc);
	}
	return rc;
}

/* cp_xcall -- see crashpoints.h. When the connection drops (the server
 * died), wait for the watcher's restart and send the same frame again:
 * same request id, as a handler retries. */
int
cp_xcall(struct run *r, int s, uint16_t op, const struct pbuf *body,
    uint8_t **rep, size_t *rep_len)
{
	struct raw_client *c = &r->c[s];
	struct pbuf b;
	int rc;

	r->op_until = cxlp_now_ms() + OP_MS;
	raw_frame(&b, c, PROTO_VERSION, op, c->token);
	if (body != NULL) {
		pbuf_put_bytes(&b, body->data, body->len);
	}
	rc = raw_call(c, b.data, b.len, rep, rep_len);
	if (rc != 0 && dropped(rc)) {
		(void)wait_flag(&cp_crashed, NOTICE_MS);
	}
	/* No crash, no reply: nng 1.5's ipc dialer sometimes never redials a
	 * restarted server, and the frame waits for a pipe that never comes.
	 * Dial afresh and resend it (same request id), as a handler would. */
	for (int i = 0; rc != 0 && !atomic_load(&cp_crashed) && i < 3 &&
	    cxlp_now_ms() < r->op_until; i++) {
		note(c, op, "no answer and no crash: dialing afresh", rc);
		redial(r, s);
		rc = raw_call(c, b.data, b.len, rep, rep_len);
		if (rc != 0 && dropped(rc)) {
			(void)wait_flag(&cp_crashed, NOTICE_MS);
		}
	}
	if (rc != 0 && atomic_load(&cp_crashed) &&
	    !wait_flag(&cp_restarted, RESTART_MS)) {
		note(c, op, "the watcher did not restart the server", rc);
	} else if (rc != 0 && atomic_load(&cp_crashed) && !cp_restart_ok) {
		note(c, op, "the restart failed", rc);
	} else if (rc != 0 && atomic_load(&cp_crashed)) {
		rc = resend_after_restart(r, s, op, &b, rep, rep_len);
	}
	pbuf_fini(&b);
	return rc;
}

/* op with a result list: 0 and res[0..*got), or an error */
static int
results_req(struct run *r, int s, uint16_t op, const struct pbuf *body,
    struct proto_result *res, uint32_t max, uint32_t *got)
{
	struct preader rd;
	uint8_t *rep = NULL;
	size_t len = 0;
	int rc = cp_xcall(r, s, op, body, &rep, &len);

	*got = 0;
	if (rc == 0) {
		rc = raw_reply(op, rep, len, &rd);
	}
	if (rc == 0 && res != NULL) {
		rc = proto_get_results(&rd, res, max, got);
	}
	free(rep);
	return rc;
}

static int
keys_req(struct run *r, int s, uint16_t op, uint32_t flags, const int *k,
    uint32_t n, struct proto_result *res, uint32_t *got)
{
	const void *kp[8];
	size_t kl[8];
	struct pbuf b;
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		kp[i] = cp_names[k[i]];
		kl[i] = strlen(cp_names[k[i]]);
	}
	pbuf_init(&b);
	proto_put_keys(&b, flags, n, kp, kl);
	rc = results_req(r, s, op, &b, res, n, got);
	pbuf_fini(&b);
	return rc;
}

static void
mark_unsure(struct run *r, const int *k, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		r->m.unsure[k[i]] = true;
	}
}

/* cp_not_acked -- see crashpoints.h */
void
cp_not_acked(struct run *r, const char *what, int rc)
{
	if (!cp_crash_op(r)) {
		fprintf(stderr, "crashpoints: %s failed (%d) with no crash\n",
		    what, rc);
		r->failed++;
	}
}

/* cp_reg_at -- see crashpoints.h */
struct proto_reg
cp_reg_at(int k, uint32_t region, uint64_t off)
{
	return (struct proto_reg){ { (const uint8_t *)cp_names[k],
	    (uint16_t)strlen(cp_names[k]) }, region, off, 100 + (uint64_t)k };
}

/* cp_register -- see crashpoints.h */
void
cp_register(struct run *r, int s, const int *k,
    const struct proto_reg *regs, uint32_t n, bool pin)
{
	struct proto_result res[8];
	struct pbuf b;
	uint32_t got = 0;
	int rc;

	pbuf_init(&b);
	proto_put_regs(&b, pin ? PROTO_F_PIN : 0, n, regs);
	rc = results_req(r, s, PROTO_OP_REGISTER, &b, res, n, &got);
	pbuf_fini(&b);
	for (uint32_t i = 0; i < n; i++) {
		int st = rc != 0 ? rc : i < got ? res[i].status : CXLP_E_PROTO;

		if (st != 0) {
			cp_not_acked(r, "register", st);
			mark_unsure(r, &k[i], 1);
			continue;
		}
		r->m.present[k[i]] = true;
		r->m.region[k[i]] = res[i].loc.region;
		r->m.off[k[i]] = res[i].loc.off;
		r->m.pins[s][k[i]] += pin;
	}
}

/* keys k[0..n) at their own pages of s's first region (b keys from 0) */
static void
op_register(struct run *r, int s, const int *k, uint32_t n, bool pin)
{
	const struct proto_loc *reg = s == SA ? &r->ra1 : &r->rb1;
	struct proto_reg regs[8];

	for (uint32_t i = 0; i < n; i++) {
		uint32_t page = (uint32_t)(k[i] >= KB0 ? k[i] - KB0 : k[i]);

		regs[i] = cp_reg_at(k[i], reg->region, reg->region_off + page *
		    PAGE);
	}
	cp_register(r, s, k, regs, n, pin);
}

/* keys k[0..n) at pages 0..n of region g, whose pages are ps bytes */
static void
op_register_in(struct run *r, int s, const struct proto_loc *g,
    uint64_t ps, const int *k, uint32_t n)
{
	struct proto_reg regs[8];

	for (uint32_t i = 0; i < n; i++) {
		regs[i] = cp_reg_at(k[i], g->region, g->region_off + i * ps);
	}
	cp_register(r, s, k, regs, n, false);
}

/* PIN, LOOKUP+PIN (delta +1) or UNPIN (-1) */
static void
op_pins(struct run *r, int s, uint16_t op, const int *k, uint32_t n,
    int delta)
{
	struct proto_result res[8];
	uint32_t got = 0;
	int rc = keys_req(r, s, op, op == PROTO_OP_LOOKUP ? PROTO_F_PIN : 0,
	    k, n, res, &got);

	for (uint32_t i = 0; i < n; i++) {
		int st = rc != 0 ? rc : i < got ? res[i].status : CXLP_E_PROTO;

		if (st == CXLP_E_NOTPINNED && delta < 0) {
			/* across a crash too: the retry of an unpin is
			 * recognized even when it released the last pin
			 * (pool/pintab.c note 3) */
			fprintf(stderr, "crashpoints: an unpin retried across "
			    "a crash was refused as not pinned\n");
			r->failed++;
		}
		if (st != 0) {
			cp_not_acked(r, "pin/unpin", st);
			mark_unsure(r, &k[i], 1);
			continue;
		}
		r->m.pins[s][k[i]] += (uint32_t)delta;
	}
}

/* DELETE; want is the status every key must get without a crash */
static void
op_delete(struct run *r, int s, const int *k, uint32_t n, int want)
{
	struct proto_result res[8];
	uint32_t got = 0;
	int rc = keys_req(r, s, PROTO_OP_DELETE, 0, k, n, res, &got);

	for (uint32_t i = 0; i < n; i++) {
		int st = rc != 0 ? rc : i < got ? res[i].status : CXLP_E_PROTO;

		/* NOTFOUND: done by run 1, or evicted before */
		if (st == 0 || (st == CXLP_E_NOTFOUND && (cp_crash_op(r) ||
		    !r->m.present[k[i]]))) {
			r->m.present[k[i]] = false;
		} else if (st != want) {
			cp_not_acked(r, "delete", st);
			mark_unsure(r, &k[i], 1);
		}
	}
}

/* cp_region -- see crashpoints.h */
bool
cp_region(struct run *r, int s, struct proto_loc *loc, uint64_t len,
    uint64_t ps)
{
	struct preader rd;
	struct pbuf b;
	uint8_t *rep = NULL;
	size_t n = 0;
	int rc;

	pbuf_init(&b);
	proto_put_region_req(&b, len, ps);
	rc = cp_xcall(r, s, PROTO_OP_REGION_ALLOC, &b, &rep, &n);
	if (rc == 0) {
		rc = raw_reply(PROTO_OP_REGION_ALLOC, rep, n, &rd);
	}
	if (rc == 0) {
		rc = proto_get_loc(&rd, loc);
	}
	free(rep);
	pbuf_fini(&b);

	if (rc != 0) {
		cp_not_acked(r, "region_alloc", rc);
		r->m.runsure[s] = true;
		r->stop = true; /* nothing to register into */
		return false;
	}
	r->m.own[s][r->m.nown[s]++] = loc->region;
	return true;
}

static void
op_region_free(struct run *r, int s, const struct proto_loc *loc)
{
	struct pbuf b;
	uint32_t got;
	int rc;

	pbuf_init(&b);
	proto_put_region_free(&b, loc->region, loc->gen);
	rc = results_req(r, s, PROTO_OP_REGION_FREE, &b, NULL, 0, &got);
	pbuf_fini(&b);
	if (rc != 0) {
		cp_not_acked(r, "region_free", rc);
		r->m.runsure[s] = true;
		return;
	}
	for (unsigned i = 0; i < r->m.nown[s]; i++) {
		if (r->m.own[s][i] == loc->region) {
			r->m.own[s][i] = r->m.own[s][--r->m.nown[s]];
		}
	}
}

static void
op_hello(struct run *r, int s)
{
	struct proto_hello m = { (uint32_t)getpid(), 0, 0, 0, "crashtest",
		9, NULL, 0, 0, 0, 0, 0, 0 };
	struct proto_welcome w;
	struct preader rd;
	struct pbuf b;
	uint8_t *rep = NULL;
	size_t len = 0;
	int rc;

	pbuf_init(&b);
	proto_put_hello(&b, &m);
	rc = cp_xcall(r, s, PROTO_OP_HELLO, &b, &rep, &len);
	if (rc == 0) {
		rc = raw_reply(PROTO_OP_HELLO, rep, len, &rd);
	}
	if (rc == 0 && (rc = proto_get_welcome(&rd, &w)) == 0) {
		r->c[s].session = w.session;
		r->c[s].token = w.token;
	}
	free(rep);
	pbuf_fini(&b);

	if (rc != 0) {
		cp_not_acked(r, "hello", rc);
		r->stop = true;
		return;
	}
	r->m.sess[s] = r->c[s].session;
}

static void
op_bye(struct run *r, int s)
{
	uint32_t got;
	int rc = results_req(r, s, PROTO_OP_BYE, NULL, NULL, 0, &got);

	if (rc != 0 && !(rc == CXLP_E_SESSION && cp_crash_op(r))) {
		cp_not_acked(r, "bye", rc);
		r->m.runsure[s] = true;
		for (int k = 0; k < NKEYS; k++) {
			r->m.unsure[k] |= r->m.pins[s][k] > 0;
		}
		return;
	}
	r->m.ended[s] = true;
	r->m.nown[s] = 0;
	memset(r->m.pins[s], 0, sizeof(r->m.pins[s]));
}

/* ---- the workload -------------------------------------------------------- */

static void
step(struct run *r, int i)
{
	static const int k05[] = { 0, 1, 2, 3, 4, 5 }, k6[] = { 6 },
	    k780[] = { 7, 8, 0 }, kb[] = { 10, 11, 12 },
	    k11b0[] = { 1, 1, 10 }, k23[] = { 2, 3 }, k0[] = { 0 },
	    k4[] = { 4 }, k9[] = { 9 }, k1[] = { 1 }, kb01[] = { 10, 11 },
	    kr[] = { KR0, KR0 + 1 };

	switch (i) {
	case 0: op_hello(r, SA); break;
	case 1: cp_region(r, SA, &r->ra1, 2 * MiB, PAGE); break;
	case 2: op_register(r, SA, k05, 6, false); break;
	case 3: op_register(r, SA, k6, 1, true); break;
	case 4: op_register(r, SA, k780, 3, true); break;
	case 5: op_hello(r, SB); break;
	case 6: cp_region(r, SB, &r->rb1, 2 * MiB, PAGE); break;
	case 7: op_register(r, SB, kb, 3, false); break;
	case 8: op_pins(r, SB, PROTO_OP_PIN, k11b0, 3, +1); break;
	case 9: op_pins(r, SA, PROTO_OP_UNPIN, k6, 1, -1); break;
	case 10: op_delete(r, SA, k23, 2, 0); break;
	case 11: op_delete(r, SA, k0, 1, CXLP_E_PINNED); break;
	case 12: op_pins(r, SA, PROTO_OP_LOOKUP, k4, 1, +1); break;
	case 13: cp_region(r, SA, &r->ra2, 2 * MiB, PAGE); break;
	case 14: op_region_free(r, SA, &r->ra2); break;
	case 15: op_register(r, SA, k9, 1, false); break;
	case 16: op_pins(r, SB, PROTO_OP_UNPIN, k1, 1, -1); break;
	case 17: op_bye(r, SB); break;
	case 18: op_delete(r, SA, kb01, 2, 0); break; /* b2 holds rb1 */
	case 19: cp_region(r, SA, &r->ra3, 8 * MiB, PAGE); break; /* all */
	case 20: cp_region_orphan(r, SA, &r->ra4); break;
	case 21: op_register_in(r, SA, &r->ra4, BIG, kr, 2); break;
	case 22: cp_reclaim(r, SA, 2); break;
	case 23: cp_register_back(r, SA, KE0); break;
	case 24: op_region_free(r, SA, &r->ra1); break;
	case 25: op_delete(r, SA, k1, 1, 0); break;
	case 26: op_region_free(r, SA, &r->ra4); break;
	case 27: op_delete(r, SA, kr, 2, 0); break; /* frees the orphan */
	default: r->stop = true; break;
	}
}

/* Two sockets for the whole test, redialing each server in turn (nng
 * leaks a socket closed while it redials, so they are closed once, with
 * a server up). Each run starts new sessions on them. */
static void
open_clients(struct run *r)
{
	for (int s = 0; s < 2; s++) {
		if (sockets[s].sock == NULL) {
			cr_assert_eq(raw_open(&sockets[s], cp_srv.url), 0);
			socket_opts(&sockets[s]);
		}
		r->c[s] = sockets[s];
		r->c[s].session = r->c[s].token = 0;
	}
}

/* cp_clients_close -- see crashpoints.h */
void
cp_clients_close(void)
{
	struct run r;

	memset(&r, 0, sizeof(r));
	open_clients(&r);
	op_hello(&r, SA); /* both connected: no redial in progress */
	op_hello(&r, SB);
	raw_close(&sockets[0]);
	raw_close(&sockets[1]);
}

/* cp_workload -- see crashpoints.h */
void
cp_workload(struct run *r)
{
	memset(r, 0, sizeof(*r));
	open_clients(r);
	for (int i = 0; !r->stop; i++) {
		r->before = atomic_load(&cp_crashed);
		step(r, i);
		r->stop |= r->before != atomic_load(&cp_crashed);
	}
	sockets[0].next_id = r->c[0].next_id;
	sockets[1].next_id = r->c[1].next_id;
}

