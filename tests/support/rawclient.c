/*
 * rawclient.c -- see rawclient.h. One nng req0 socket per client, with
 * nng's own resend turned off so a test sees each frame exactly once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#include "deadline.h"
#include "rawclient.h"

static int
open_dial(struct raw_client *c, const char *url, int flags)
{
	nng_socket *s = calloc(1, sizeof(*s));
	int rv;

	memset(c, 0, sizeof(*c));
	if (s == NULL) {
		return -ENOMEM;
	}
	if ((rv = nng_req0_open(s)) != 0) {
		free(s);
		return -rv;
	}
	nng_socket_set_ms(*s, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	nng_socket_set_ms(*s, NNG_OPT_RECVTIMEO, 10000);
	/* a send waits for a pipe: bounded, since nng 1.5's ipc dialer may
	 * never redial a restarted server (raw_redial) */
	nng_socket_set_ms(*s, NNG_OPT_SENDTIMEO, 10000);
	nng_socket_set_size(*s, NNG_OPT_RECVMAXSZ, PROTO_FRAME_MAX);
	if ((rv = nng_dial(*s, url, NULL, flags)) != 0) {
		nng_close(*s);
		free(s);
		return -rv;
	}
	c->sock = s;
	c->next_id = 1;
	return 0;
}

int
raw_open(struct raw_client *c, const char *url)
{
	return open_dial(c, url, 0);
}

int
raw_open_async(struct raw_client *c, const char *url)
{
	return open_dial(c, url, NNG_FLAG_NONBLOCK);
}

void
raw_close(struct raw_client *c)
{
	if (c->sock != NULL) {
		nng_close(*(nng_socket *)c->sock);
		free(c->sock);
		c->sock = NULL;
	}
}

/* Sockets raw_redial replaced, kept open to the end of the process: a
 * reply owed on one may still arrive, and nng 1.5.2 wedges every later
 * close in the process if a socket is closed as a message arrives
 * (handler/net/client.c, csock_retire). Their dialers are slowed down to one
 * attempt a minute, so that a test redialing many times does not keep
 * hundreds of connections reaching each server it restarts. */
static void **retired;
static size_t nretired, retired_cap;
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;

static void
retire(struct raw_client *c)
{
	nng_socket s = *(nng_socket *)c->sock;

	nng_socket_set_ms(s, NNG_OPT_RECONNMINT, 60000);
	nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, 60000);
	pthread_mutex_lock(&retired_lock);
	if (nretired == retired_cap) {
		size_t cap = retired_cap ? 2 * retired_cap : 64;
		void **grown = realloc(retired, cap * sizeof(*grown));

		if (grown != NULL) {
			retired = grown;
			retired_cap = cap;
		}
	}
	if (nretired < retired_cap) {
		retired[nretired++] = c->sock;
	}
	/* else leaked, still open: better than a wedge */
	pthread_mutex_unlock(&retired_lock);
	c->sock = NULL;
}

int
raw_redial(struct raw_client *c, const char *url)
{
	struct raw_client fresh;
	int rc = open_dial(&fresh, url, NNG_FLAG_NONBLOCK);

	if (rc != 0) {
		return rc;
	}
	retire(c);
	c->sock = fresh.sock;
	return 0;
}

int
raw_call(struct raw_client *c, const void *frame, size_t len, uint8_t **rep,
    size_t *rep_len)
{
	nng_socket s = *(nng_socket *)c->sock;
	void *buf = NULL;
	int rv;

	if ((rv = nng_send(s, (void *)frame, len, 0)) != 0) {
		return -rv;
	}
	if ((rv = nng_recv(s, &buf, rep_len, NNG_FLAG_ALLOC)) != 0) {
		return -rv;
	}
	*rep = malloc(*rep_len ? *rep_len : 1);
	if (*rep == NULL) {
		nng_free(buf, *rep_len);
		return -ENOMEM;
	}
	memcpy(*rep, buf, *rep_len);
	nng_free(buf, *rep_len);
	return 0;
}

/* raw_frame -- see rawclient.h */
void
raw_frame(struct pbuf *b, struct raw_client *c, uint16_t version,
    uint16_t op, uint64_t token)
{
	struct proto_req_hdr h = { version, op, c->next_id++, c->session,
		token, 0 };

	pbuf_init(b);
	proto_put_req_hdr(b, &h);
}

/* raw_reply -- see rawclient.h */
int
raw_reply(uint16_t op, const uint8_t *rep, size_t len, struct preader *rd)
{
	struct proto_rep_hdr h;
	int rc = proto_get_rep_hdr(rep, len, &h, rd);

	if (rc != 0) {
		return rc;
	}
	return h.op != op ? CXLP_E_PROTO : h.status;
}

/* op with body under c's session; 0 and the reply in *rep (malloc'd,
 * the caller frees it), or a transport or encoding error */
static int
request(struct raw_client *c, uint16_t op, const struct pbuf *body,
    uint8_t **rep, size_t *rep_len)
{
	struct pbuf b;
	int rc;

	raw_frame(&b, c, c->version, op, c->token);
	if (body != NULL) {
		pbuf_put_bytes(&b, body->data, body->len);
	}
	rc = b.err ? b.err : raw_call(c, b.data, b.len, rep, rep_len);
	pbuf_fini(&b);
	return rc;
}

int
raw_request(struct raw_client *c, uint16_t op, const struct pbuf *body,
    struct proto_result *res, uint32_t max, uint32_t *n)
{
	struct preader r;
	uint8_t *rep = NULL;
	size_t rep_len = 0;
	int rc = request(c, op, body, &rep, &rep_len);

	if (rc == 0) {
		rc = raw_reply(op, rep, rep_len, &r);
	}
	if (rc == 0 && res != NULL) {
		rc = proto_get_results(&r, res, max, n);
	}
	free(rep);
	return rc;
}

/* raw_stats -- see rawclient.h */
int
raw_stats(struct raw_client *c, uint64_t *v, uint32_t max, uint32_t *n)
{
	struct preader r;
	uint8_t *rep = NULL;
	size_t rep_len = 0;
	int rc = request(c, PROTO_OP_STATS, NULL, &rep, &rep_len);

	if (rc == 0) {
		rc = raw_reply(PROTO_OP_STATS, rep, rep_len, &r);
	}
	if (rc == 0) {
		rc = proto_get_stats(&r, v, max, n);
	}
	free(rep);
	return rc;
}

static int
hello_reply(struct raw_client *c, const uint8_t *rep, size_t len)
{
	struct proto_rep_hdr h;
	struct proto_welcome w;
	struct preader r;
	int rc = proto_get_rep_hdr(rep, len, &h, &r);

	if (rc != 0 || h.status != 0) {
		return rc ? rc : h.status;
	}
	if ((rc = proto_get_welcome(&r, &w)) != 0) {
		return rc;
	}
	c->session = w.session;
	c->token = w.token;
	return 0;
}

int
raw_hello(struct raw_client *c)
{
	struct proto_req_hdr h = { c->version, PROTO_OP_HELLO,
		c->next_id++, 0, 0, 0 };
	struct proto_hello m = { (uint32_t)getpid(), 0, 0, 0, "rawclient",
		9, NULL, 0, 0, 0, 0, 0, 0 };
	struct pbuf b;
	uint8_t *rep = NULL;
	size_t rep_len;
	int rc;

	pbuf_init(&b);
	proto_put_req_hdr(&b, &h);
	proto_put_hello(&b, &m);
	rc = b.err ? b.err : raw_call(c, b.data, b.len, &rep, &rep_len);
	if (rc == 0) {
		rc = hello_reply(c, rep, rep_len);
	}
	free(rep);
	pbuf_fini(&b);
	return rc;
}

int
raw_region(struct raw_client *c, uint64_t len, uint64_t page_size,
    struct proto_loc *loc)
{
	struct preader r;
	struct pbuf b;
	uint8_t *rep = NULL;
	size_t rep_len;
	int rc;

	pbuf_init(&b);
	proto_put_region_req(&b, len, page_size);
	rc = b.err ? b.err : request(c, PROTO_OP_REGION_ALLOC, &b, &rep,
	    &rep_len);
	if (rc == 0) {
		rc = raw_reply(PROTO_OP_REGION_ALLOC, rep, rep_len, &r);
	}
	if (rc == 0) {
		rc = proto_get_loc(&r, loc);
	}
	free(rep);
	pbuf_fini(&b);
	return rc;
}

int
raw_register(struct raw_client *c, const char *key, uint32_t region,
    uint64_t off, uint64_t len, struct proto_result *res)
{
	struct proto_reg reg = { { (const uint8_t *)key,
		(uint16_t)strlen(key) }, region, off, len };
	struct pbuf b;
	uint32_t n = 0;
	int rc;

	pbuf_init(&b);
	proto_put_regs(&b, 0, 1, &reg);
	rc = raw_request(c, PROTO_OP_REGISTER, &b, res, 1, &n);
	pbuf_fini(&b);
	if (rc == 0 && n != 1) {
		rc = CXLP_E_PROTO;
	}
	return rc;
}

struct probe {
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	int rc;
	bool done;
};

/* One inproc round trip, then close both ends: the closes wait for nng's
 * reaper to destroy the pipe between them. */
static int
probe_round_trip(void)
{
	static unsigned seq;
	char url[64], buf[16];
	nng_socket rep, req;
	size_t len = sizeof(buf);
	int rv;

	snprintf(url, sizeof(url), "inproc://raw-nng-usable-%d-%u",
	    (int)getpid(), __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	if ((rv = nng_rep0_open(&rep)) != 0) {
		return -rv;
	}
	if ((rv = nng_req0_open(&req)) != 0) {
		nng_close(rep);
		return -rv;
	}
	nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 5000);
	nng_socket_set_ms(rep, NNG_OPT_RECVTIMEO, 5000);
	if ((rv = nng_listen(rep, url, NULL, 0)) == 0 &&
	    (rv = nng_dial(req, url, NULL, 0)) == 0 &&
	    (rv = nng_send(req, "ping", 4, 0)) == 0 &&
	    (rv = nng_recv(rep, buf, &len, 0)) == 0 &&
	    (rv = nng_send(rep, buf, len, 0)) == 0) {
		len = sizeof(buf);
		rv = nng_recv(req, buf, &len, 0);
	}
	nng_close(req);
	nng_close(rep);
	return -rv;
}

static void *
probe_main(void *arg)
{
	struct probe *pr = arg;
	int rc = probe_round_trip();

	pthread_mutex_lock(&pr->lock);
	pr->rc = rc;
	pr->done = true;
	pthread_cond_signal(&pr->done_cond);
	pthread_mutex_unlock(&pr->lock);
	return NULL;
}

int
raw_nng_usable(unsigned deadline_ms)
{
	/* static: a wedged probe thread may outlive this call */
	static struct probe pr = { PTHREAD_MUTEX_INITIALIZER,
		PTHREAD_COND_INITIALIZER, 0, false };
	struct timespec until;
	pthread_t t;
	int rc = 0;

	pthread_mutex_lock(&pr.lock);
	pr.done = false;
	pthread_mutex_unlock(&pr.lock);
	if (pthread_create(&t, NULL, probe_main, &pr) != 0) {
		return -EAGAIN;
	}
	until = cxlp_deadline(CLOCK_REALTIME, deadline_ms);
	pthread_mutex_lock(&pr.lock);
	while (!pr.done && rc == 0) {
		rc = pthread_cond_timedwait(&pr.done_cond, &pr.lock, &until);
	}
	rc = pr.done ? pr.rc : -ETIMEDOUT;
	pthread_mutex_unlock(&pr.lock);
	if (rc != -ETIMEDOUT) {
		pthread_join(t, NULL);
	} else {
		pthread_detach(t);
	}
	return rc;
}
