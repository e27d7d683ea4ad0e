/*
 * test_protover.c -- peers of other protocol versions (common/proto.h,
 * "Versions" and "Negotiation"), through sockets: a version-2 handler
 * (its frozen frames, below) is served at 2 with replies that hold no
 * byte of version 3; a version-3 HELLO gets 3; a version-1 or -4 peer is
 * refused naming both ranges; a frame of another version than its
 * session's is refused. This handler against a version-2 metaserver (a
 * proxy that answers every version-3 frame as one does: CXLP_E_VERSION in
 * a version-2 header) falls back to 2 once and stays there, and follows
 * its metaserver when one of version 2 takes over; a reply of
 * an older term than the handler has seen (the proxy rewrites it) is
 * dropped and the call still succeeds from the genuine reply, unless
 * the pool's superblock names that term (a term reset: the handler
 * accepts it, and its newest term moves down to it; a term below that
 * is dropped again).
 */
#include <dlfcn.h> /* RTLD_NEXT: _GNU_SOURCE, from the build */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "itest.h"
#include "layout.h"
#include "rawclient.h"

/* the HELLO a version-1 handler sent first: header (magic "CXLP",
 * version 1, op HELLO, request id 1, no session, no token, no flags) and
 * an empty body; written out byte by byte, as that encoder wrote it */
static const uint8_t v1_hello[PROTO_REQ_HDR_LEN] = {
	0x43, 0x58, 0x4c, 0x50, 0x01, 0x00, 0x01, 0x00, /* magic, ver, op */
	0x01, 0, 0, 0, 0, 0, 0, 0,                      /* req_id */
	0, 0, 0, 0, 0, 0, 0, 0,                         /* session */
	0, 0, 0, 0, 0, 0, 0, 0,                         /* token */
};

/* the HELLO a version-2 handler sends: its header (version 2, request
 * id 1, no session, token: its nonce 0x77) and its body (pid 1, flags
 * 0, start time 0, instance 0, hostname "v2", no secret) */
static const uint8_t v2_hello[PROTO_REQ_HDR_LEN + 30] = {
	0x43, 0x58, 0x4c, 0x50, 0x02, 0x00, 0x01, 0x00, /* magic, ver, op */
	0x01, 0, 0, 0, 0, 0, 0, 0,                      /* req_id */
	0, 0, 0, 0, 0, 0, 0, 0,                         /* session */
	0x77, 0, 0, 0, 0, 0, 0, 0,                      /* token (nonce) */
	1, 0, 0, 0, 0, 0, 0, 0,                         /* pid, flags */
	0, 0, 0, 0, 0, 0, 0, 0,                         /* start_time */
	0, 0, 0, 0, 0, 0, 0, 0,                         /* instance_id */
	2, 0, 'v', '2', 0, 0,                           /* host, secret */
};

TestSuite(protover, .fini = itest_proxy_stop, .timeout = 60);

static uint16_t
wire_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

Test(protover, a_handler_of_version_1_is_refused_naming_both)
{
	struct raw_client c;
	struct cxlp_handler *ok;
	struct preader body;
	uint8_t *rep = NULL;
	size_t len = 0;

	itest_proxy_start(NULL);
	cr_assert_eq(raw_open(&c, srv.url), 0);
	cr_assert_eq(raw_call(&c, v1_hello, sizeof(v1_hello), &rep, &len), 0,
	    "no reply to an old HELLO");
	cr_assert_eq(raw_reply(PROTO_OP_HELLO, rep, len, &body),
	    CXLP_E_VERSION);
	cr_assert_eq(wire_u16(rep + 4), 2, "answered at the nearest version");
	free(rep);
	raw_close(&c);
	cr_assert(test_file_has(srv.log, "version: 1, this side speaks 2..3"),
	    "the server's log does not name both");
	ok = itest_connect(); /* and it goes on serving its own version */
	cxlp_close(&ok);
}

/* A version-2 handler's frames, and the replies byte by byte: version-2
 * headers (24 bytes: no term), a version-2 WELCOME body. */
Test(protover, a_v2_hello_is_served_at_v2_with_no_byte_of_v3)
{
	struct raw_client c;
	struct proto_welcome w;
	struct preader body;
	uint64_t v[PROTO_STATS_MAX];
	uint8_t *rep = NULL;
	size_t len = 0;
	uint32_t n;
	struct pbuf b;

	itest_proxy_start(NULL);
	cr_assert_eq(raw_open(&c, srv.url), 0);
	cr_assert_eq(raw_call(&c, v2_hello, sizeof(v2_hello), &rep, &len), 0);
	cr_assert_eq(raw_reply(PROTO_OP_HELLO, rep, len, &body), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(wire_u16(rep + 4), 2);
	cr_assert_eq(proto_get_welcome(&body, &w), 0);
	cr_assert_eq(len, PROTO_REP_HDR_LEN + 34 + w.path_len,
	    "a version-2 WELCOME, nothing else");
	c.session = w.session;
	c.token = w.token;
	c.next_id = 2;
	c.version = 2;
	free(rep);
	raw_frame(&b, &c, 2, PROTO_OP_HEARTBEAT, c.token);
	cr_assert_eq(raw_call(&c, b.data, b.len, &rep, &len), 0);
	pbuf_fini(&b);
	cr_assert_eq(len, PROTO_REP_HDR_LEN, "a version-2 empty reply");
	cr_assert_eq(wire_u16(rep + 4), 2);
	cr_assert_eq(rep[16] | rep[17] | rep[18] | rep[19], 0, "status 0");
	free(rep);
	cr_assert_eq(raw_stats(&c, v, PROTO_STATS_MAX, &n), 0);
	cr_assert_geq(v[PROTO_STAT_SESSIONS], 1);
	/* a version-3 frame in this version-2 session is refused */
	c.version = 3;
	cr_assert_eq(raw_request(&c, PROTO_OP_HEARTBEAT, NULL, NULL, 0, NULL),
	    CXLP_E_VERSION);
	raw_close(&c);
	cr_assert(test_file_has(srv.log, "request.version: 3, but session"),
	    "the server's log does not name both versions");
}

Test(protover, a_v3_hello_gets_v3_and_the_term)
{
	struct raw_client c;
	struct proto_rep_hdr h;
	struct preader body;
	uint8_t *rep = NULL;
	size_t len = 0;
	struct pbuf b;

	itest_proxy_start(NULL);
	cr_assert_eq(raw_open(&c, srv.url), 0);
	cr_assert_eq(raw_hello(&c), 0);
	raw_frame(&b, &c, 3, PROTO_OP_HEARTBEAT, c.token);
	cr_assert_eq(raw_call(&c, b.data, b.len, &rep, &len), 0);
	pbuf_fini(&b);
	cr_assert_eq(len, PROTO_REP_HDR_LEN_V3);
	cr_assert_eq(proto_get_rep_hdr(rep, len, &h, &body), 0);
	cr_assert_eq(h.version, 3);
	cr_assert_eq(h.term, 0, "a server without --elect: term 0");
	free(rep);
	/* a version-2 frame in this version-3 session is refused */
	c.version = 2;
	cr_assert_eq(raw_request(&c, PROTO_OP_HEARTBEAT, NULL, NULL, 0, NULL),
	    CXLP_E_VERSION);
	c.version = 4; /* and one of a version no side speaks */
	cr_assert_eq(raw_request(&c, PROTO_OP_HEARTBEAT, NULL, NULL, 0, NULL),
	    CXLP_E_VERSION);
	c.version = 3;
	cr_assert_eq(raw_request(&c, PROTO_OP_HEARTBEAT, NULL, NULL, 0, NULL),
	    0, "the session goes on at its version");
	raw_close(&c);
}

/* ---- this handler against a version-2 metaserver ---- */

static atomic_uint v2_replies;

/* a proxy that answers every version-3 frame as a version-2 metaserver
 * does (proxy_refuse_version: CXLP_E_VERSION in a version-2 header, not
 * forwarded) and passes version-2 ones to this one, which serves them as
 * a version-2 server would */
static enum proxy_action
count_v2(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	(void)arg, (void)op, (void)req_id, (void)delay_ms;
	if (reply != NULL && *reply_len >= 6 && wire_u16(reply + 4) == 2) {
		atomic_fetch_add(&v2_replies, 1);
	}
	return PROXY_PASS;
}

Test(protover, a_handler_falls_back_to_v2_against_a_v2_metaserver)
{
	struct cxlp_handler *h;
	struct cxlp_stats st;

	itest_proxy_start(count_v2);
	(void)proxy_refuse_version(px, 3);
	h = itest_connect_via_proxy(2000, 1);
	cr_assert_eq(proxy_refuse_version(px, 3), 1, "one HELLO at 3");
	(void)itest_put(h, "old", 1, 0, 64);
	cr_assert_eq(itest_get_check(h, "old", 0), 1);
	cr_assert_rc(cxlp_stats(h, &st), 0);
	cr_assert_rc(cxlp_healthcheck(h), 0);
	cr_assert_eq(proxy_refuse_version(px, 3), 1, "then only version 2");
	cr_assert_geq(atomic_load(&v2_replies), 4);
	cxlp_close(&h);
}

/* A metaserver of version 2 takes over from one of 3 (a restart on an
 * older release, a standby not yet upgraded): the handler's next call is
 * refused for its version, so it HELLOs again, at 2, and the call goes
 * through; what it stored before is still there. */
Test(protover, a_handler_follows_its_metaserver_down_to_v2)
{
	struct cxlp_handler *h;

	itest_proxy_start(count_v2);
	h = itest_connect_via_proxy(2000, 1);
	(void)itest_put(h, "before", 1, 0, 64);
	cr_assert_eq(atomic_load(&v2_replies), 0, "a version-3 session");
	(void)proxy_refuse_version(px, 3);
	(void)itest_put(h, "after", 1, 0, 64);
	cr_assert_eq(itest_get_check(h, "after", 0), 1);
	cr_assert_eq(itest_get_check(h, "before", 0), 1);
	cr_assert_geq(proxy_refuse_version(px, 3), 2, "the call and a HELLO "
	    "refused at 3");
	cr_assert_geq(atomic_load(&v2_replies), 2, "its HELLO and REGISTER");
	cxlp_close(&h);
}

/* ---- a reply of an older term ---- */

/* The pool's term, as the superblock of srv's pool file holds it. */
static uint64_t
pool_term(void)
{
	uint64_t term = 0;
	int fd = open(srv.pool, O_RDONLY);

	cr_assert_geq(fd, 0, "%s", srv.pool);
	cr_assert_eq(pread(fd, &term, sizeof(term),
	    offsetof(struct pool_sb, term)), (ssize_t)sizeof(term));
	close(fd);
	return term;
}

/* the pool's term set to term, as a leader's claim after a term reset
 * writes it (8 bytes, not under the checksum; a server without --elect
 * never writes it) */
static void
pool_term_set(uint64_t term)
{
	int fd = open(srv.pool, O_WRONLY);

	cr_assert_geq(fd, 0, "%s", srv.pool);
	cr_assert_eq(pwrite(fd, &term, sizeof(term),
	    offsetof(struct pool_sb, term)), (ssize_t)sizeof(term));
	close(fd);
}

static atomic_uint register_replies;

/* every version-3 reply as from a leader of term 10, but the first reply
 * to a REGISTER as from a deposed one of term 9 */
static enum proxy_action
stale_term(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	(void)arg, (void)req_id, (void)delay_ms;
	if (reply == NULL) {
		return PROXY_PASS;
	}
	if (op == PROTO_OP_REGISTER &&
	    atomic_fetch_add(&register_replies, 1) == 0) {
		(void)proxy_set_term(reply, *reply_len, 9);
	} else {
		(void)proxy_set_term(reply, *reply_len, 10);
	}
	return PROXY_PASS;
}

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_seen[2048]; /* the lines on terms, one after another */

static void
keep_log(int level, const char *msg, void *arg)
{
	size_t n;

	(void)level, (void)arg;
	pthread_mutex_lock(&log_lock);
	n = strlen(log_seen);
	if (strstr(msg, "metaserver term") != NULL) {
		snprintf(log_seen + n, sizeof(log_seen) - n, "%s\n", msg);
	}
	pthread_mutex_unlock(&log_lock);
}

/* The library's cxlp_set_log_fn: this test links common/ (log.c) too,
 * whose copy of it is this executable's own, and the next one is
 * libcxlpool's. */
static void
lib_set_log_fn(cxlp_log_fn fn)
{
	void (*set)(cxlp_log_fn, void *, int);

	*(void **)&set = dlsym(RTLD_NEXT, "cxlp_set_log_fn");
	cr_assert_not_null(set, "%s", dlerror());
	set(fn, NULL, CXLP_LOG_ERR);
}

/* a handler through a proxy that rewrites terms with hook, its log's
 * lines on terms kept in log_seen */
static struct cxlp_handler *
term_handler(enum proxy_action (*hook)(void *, uint16_t, uint64_t,
    uint8_t *, size_t *, unsigned *))
{
	log_seen[0] = '\0';
	lib_set_log_fn(keep_log);
	itest_proxy_start(hook);
	return itest_connect_via_proxy(2000, 2);
}

Test(protover, a_reply_of_an_older_term_is_dropped_and_the_call_succeeds)
{
	struct cxlp_counters ctr;
	struct cxlp_handler *h;

	h = term_handler(stale_term);
	cr_assert_eq(pool_term(), 0, "the pool names a term (a server "
	    "without --elect): term 9 must not be the pool's");
	(void)itest_put(h, "term", 1, 0, 64);
	cr_assert_eq(proxy_requests(px, PROTO_OP_REGISTER), 2,
	    "the REGISTER was sent again after its term-9 reply");
	cr_assert(strstr(log_seen, "term 9, older than term 10") != NULL,
	    "no log line of the drop: \"%s\"", log_seen);
	cr_assert_rc(cxlp_counters(h, &ctr, sizeof(ctr)), 0);
	cr_assert_eq(ctr.stale_replies, 1, "not counted");
	cr_assert_eq(ctr.term_resets, 0, "the pool's term is not 9");
	cr_assert_eq(itest_get_check(h, "term", 0), 1, "the key's bytes");
	cxlp_close(&h);
	lib_set_log_fn(NULL);
}

/* ---- a term reset (etcd rebuilt, --elect-term-reset) ---- */

static atomic_uint reset_term;     /* 0: replies of term 10; else it */
static atomic_uint reset_replies;  /* REGISTER replies since the reset */

/* every version-3 reply as from a leader of term 10 until the test sets
 * reset_term: from then on as from the reset leader's, but the second
 * REGISTER reply after the reset as from one of term reset_term - 1, a
 * term the pool does not name */
static enum proxy_action
reset_terms(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	unsigned t = atomic_load(&reset_term);

	(void)arg, (void)req_id, (void)delay_ms;
	if (reply == NULL) {
		return PROXY_PASS;
	}
	if (t != 0 && op == PROTO_OP_REGISTER &&
	    atomic_fetch_add(&reset_replies, 1) == 1) {
		t--;
	}
	(void)proxy_set_term(reply, *reply_len, t != 0 ? t : 10);
	return PROXY_PASS;
}

Test(protover, a_lower_term_the_pool_names_is_accepted_and_becomes_the_newest)
{
	struct cxlp_counters ctr;
	struct cxlp_handler *h;

	h = term_handler(reset_terms);
	(void)itest_put(h, "before", 1, 0, 64); /* term 10 seen */
	pool_term_set(4);
	atomic_store(&reset_term, 4);
	(void)itest_put(h, "after", 1, 0, 64);
	cr_assert_eq(proxy_requests(px, PROTO_OP_REGISTER), 2, "the term-4 "
	    "reply of the reset leader was dropped");
	cr_assert(strstr(log_seen, "metaserver term 4 is the pool's (term "
	    "reset from 10): accepted") != NULL, "no log line of the accept: "
	    "\"%s\"", log_seen);
	/* term 3 is older than 4, which is now the newest, and not the
	 * pool's: dropped, and the REGISTER sent again */
	(void)itest_put(h, "older", 1, 0, 64);
	cr_assert_eq(proxy_requests(px, PROTO_OP_REGISTER), 4);
	cr_assert(strstr(log_seen, "term 3, older than term 4 seen") != NULL,
	    "no log line of the drop: \"%s\"", log_seen);
	for (unsigned i = 0; i < 3; i++) {
		(void)itest_put(h, "more", 1, i, 64);
	}
	cr_assert_rc(cxlp_counters(h, &ctr, sizeof(ctr)), 0);
	cr_assert_eq(ctr.term_resets, 1, "the newest term did not stay 4");
	cr_assert_eq(ctr.stale_replies, 1, "only term 3's reply is dropped");
	cr_assert_eq(itest_get_check(h, "before", 0), 1, "the key's bytes");
	cr_assert_eq(itest_get_check(h, "after", 0), 1, "the key's bytes");
	cr_assert_eq(itest_get_check(h, "older", 0), 1, "the key's bytes");
	cxlp_close(&h);
	lib_set_log_fn(NULL);
}

/* A metaserver of this version that predates request groups answers
 * their op CXLP_E_BADOP (as for any op it does not know): the proxy
 * plays one. The handler says so, holds nothing, and every other call
 * goes on working. */
static enum proxy_action
pre_group_server(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	struct pbuf b;
	struct proto_rep_hdr h = { .version = PROTO_VERSION, .op = op,
		.req_id = req_id, .status = CXLP_E_BADOP };

	(void)arg, (void)delay_ms;
	if (reply != NULL && op == PROTO_OP_GROUP) {
		pbuf_init(&b);
		proto_put_rep_hdr(&b, &h);
		memcpy(reply, b.data, b.len);
		*reply_len = b.len;
		pbuf_fini(&b);
	}
	return PROXY_PASS;
}

Test(protover, a_metaserver_without_request_groups_is_named_as_such)
{
	struct cxlp_handler *h;
	struct cxlp_group *g = NULL;
	struct cxlp_stats st;

	itest_proxy_start(pre_group_server);
	h = itest_connect_via_proxy(2000, 1);
	cr_assert_rc(cxlp_group_open(h, "g", 1, 4, 0, 0, &g), CXLP_E_BADOP);
	cr_assert(strstr(cxlp_errormsg(), "predates request groups") != NULL,
	    "message: %s", cxlp_errormsg());
	cr_assert_null(g);
	cr_assert_rc(cxlp_stats(h, &st), 0);
	cr_assert_eq(st.pages_reserved, 0, "the admission's pages are held");
	cr_assert_eq(st.pages_allocated, 0);
	(void)itest_put(h, "plain", 1, 0, 64); /* the rest works */
	cr_assert_eq(itest_get_check(h, "plain", 0), 1);
	cxlp_close(&h);
}
