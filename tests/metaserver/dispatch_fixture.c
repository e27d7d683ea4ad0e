/*
 * dispatch_fixture.c -- see dispatch_fixture.h.
 */
#include "dispatch_fixture.h"

/* Under ASan, leaks crash the test that made them (LSan at exit would not
 * fail a Criterion test, and asserts in .fini are not counted). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define LEAK_CHECK()                                                       \
	do {                                                               \
		if (__lsan_do_recoverable_leak_check() != 0) {             \
			abort();                                           \
		}                                                          \
	} while (0)
#else
#define LEAK_CHECK()                                                       \
	do {                                                               \
	} while (0)
#endif

struct ms dfx_ms;
char dfx_pool_file[96];


void
dfx_ms_open(void)
{
	struct ms_config cfg;

	ms_config_defaults(&cfg);
	cfg.pool_path = dfx_pool_file;
	cfg.size = POOL_SIZE;
	cfg.grace_ms = GRACE_MS;
	cr_assert_eq(ms_init(&dfx_ms, &cfg), 0, "ms_init: %s", cxlp_errormsg());
}

void
dfx_setup(void)
{
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	snprintf(dfx_pool_file, sizeof(dfx_pool_file),
	    "/dev/shm/cxlp-ms-dispatch-%d", (int)getpid());
	unlink(dfx_pool_file);
	dfx_ms_open();
}

void
dfx_teardown(void)
{
	ms_fini(&dfx_ms);
	unlink(dfx_pool_file);
	LEAK_CHECK();
}


/* ---- frame helpers ------------------------------------------------------ */

/* Dispatch a raw frame; returns the reply's status (reply kept in *rep,
 * *body positioned after its header). */
int
dfx_send_raw(uint64_t pipe, const struct pbuf *frame, struct pbuf *rep,
    struct proto_rep_hdr *h, struct preader *body)
{
	cr_assert_eq(ms_dispatch(&dfx_ms, pipe, frame->data, frame->len, rep),
	    0);
	cr_assert_eq(proto_get_rep_hdr(rep->data, rep->len, h, body), 0,
	    "reply does not decode: %s", cxlp_errormsg());
	return h->status;
}

void
dfx_put_req(struct pbuf *b, const struct dfx_cl *c, uint16_t op,
    uint64_t req_id)
{
	struct proto_req_hdr h = { c == NULL ? 0 : c->version, op, req_id,
		c == NULL ? 0 : c->session, c == NULL ? 0 : c->token, 0 };

	proto_put_req_hdr(b, &h);
}

/* Send op with a body under c's session with an explicit req_id; the
 * reply frame stays in *rep (caller's pbuf). Returns the status. */
int
dfx_call_id(struct dfx_cl *c, uint16_t op, uint64_t req_id,
    const struct pbuf *body,
    struct pbuf *rep, struct proto_result *res, uint32_t *n)
{
	struct proto_rep_hdr h;
	struct preader r;
	struct pbuf f;
	int st;

	pbuf_init(&f);
	dfx_put_req(&f, c, op, req_id);
	if (body != NULL) {
		pbuf_put_bytes(&f, body->data, body->len);
	}
	st = dfx_send_raw(c->pipe, &f, rep, &h, &r);
	pbuf_fini(&f);
	cr_assert_eq(h.op, op);
	cr_assert_eq(h.req_id, req_id);
	if (st == 0 && res != NULL) {
		cr_assert_eq(proto_get_results(&r, res, CXLP_BATCH_MAX, n), 0);
	}
	return st;
}

int
dfx_call(struct dfx_cl *c, uint16_t op, const struct pbuf *body,
    struct proto_result *res, uint32_t *n)
{
	struct pbuf rep;
	int st;

	pbuf_init(&rep);
	st = dfx_call_id(c, op, ++c->next_id, body, &rep, res, n);
	pbuf_fini(&rep);
	return st;
}

int
dfx_hello_flags(struct dfx_cl *c, uint64_t pipe, uint32_t flags, uint32_t pid,
    uint64_t start_time)
{
	return dfx_hello_from(c, pipe, flags, pid, start_time, "testhost");
}

int
dfx_hello_from(struct dfx_cl *c, uint64_t pipe, uint32_t flags, uint32_t pid,
    uint64_t start_time, const char *host)
{
	struct proto_hello m = { pid, flags, start_time, 7, host,
		(uint16_t)strlen(host), NULL, 0, 0, 0, 0, 0, 0 };
	struct proto_rep_hdr h;
	struct proto_welcome w;
	struct preader r;
	struct pbuf f, rep;
	int st;

	pbuf_init(&f);
	pbuf_init(&rep);
	dfx_put_req(&f, c, PROTO_OP_HELLO, 1);
	proto_put_hello(&f, &m);
	c->pipe = pipe;
	st = dfx_send_raw(pipe, &f, &rep, &h, &r);
	if (st == 0) {
		cr_assert_eq(proto_get_welcome(&r, &w), 0);
		c->session = w.session;
		c->token = w.token;
		cr_assert_eq(w.pool_size, POOL_SIZE);
		cr_assert_eq(w.align, pool_align(dfx_ms.pool));
		cr_assert_eq(w.path_len, strlen(dfx_pool_file));
		cr_assert(memcmp(w.path, dfx_pool_file, w.path_len) == 0);
	}
	pbuf_fini(&f);
	pbuf_fini(&rep);
	return st;
}

void
dfx_hello(struct dfx_cl *c, uint64_t pipe)
{
	dfx_hello_v(c, pipe, 0);
}

void
dfx_hello_v(struct dfx_cl *c, uint64_t pipe, uint16_t version)
{
	memset(c, 0, sizeof(*c));
	c->version = version;
	cr_assert_eq(dfx_hello_flags(c, pipe, 0, (uint32_t)getpid(), 0), 0);
	cr_assert_neq(c->session, 0);
}

int
dfx_region_alloc(struct dfx_cl *c, uint64_t len, uint64_t page,
    struct proto_loc *loc)
{
	struct proto_rep_hdr h;
	struct preader r;
	struct pbuf f, rep;
	int st;

	pbuf_init(&f);
	pbuf_init(&rep);
	dfx_put_req(&f, c, PROTO_OP_REGION_ALLOC, ++c->next_id);
	proto_put_region_req(&f, len, page);
	st = dfx_send_raw(c->pipe, &f, &rep, &h, &r);
	if (st == 0) {
		cr_assert_eq(proto_get_loc(&r, loc), 0);
	}
	pbuf_fini(&f);
	pbuf_fini(&rep);
	return st;
}

/* A client with a session and one region of REGION_LEN, PAGE pages. */
void
dfx_client(struct dfx_cl *c, uint64_t pipe)
{
	dfx_hello(c, pipe);
	cr_assert_eq(dfx_region_alloc(c, REGION_LEN, PAGE, &c->region), 0);
}

uint64_t
dfx_page_off(const struct dfx_cl *c, unsigned page)
{
	return c->region.region_off + page * PAGE;
}

/* REGISTER one key at page `page` of c's region. */
int
dfx_reg1(struct dfx_cl *c, uint32_t flags, const char *key, uint32_t region,
    uint64_t off, uint64_t len, struct proto_result *res)
{
	struct proto_reg g = { { (const uint8_t *)key, (uint16_t)strlen(key) },
		region, off, len };
	struct pbuf b;
	uint32_t n = 0;
	int st;

	pbuf_init(&b);
	proto_put_regs(&b, flags, 1, &g);
	st = dfx_call(c, PROTO_OP_REGISTER, &b, res, &n);
	pbuf_fini(&b);
	if (st == 0) {
		cr_assert_eq(n, 1);
	}
	return st;
}

int
dfx_reg_page(struct dfx_cl *c, uint32_t flags, const char *key, unsigned page,
    struct proto_result *res)
{
	return dfx_reg1(c, flags, key, c->region.region, dfx_page_off(c, page),
	    100, res);
}

void
dfx_put_keys(struct pbuf *b, uint32_t flags, size_t n, const char *const *keys)
{
	const void **k = calloc(n, sizeof(*k)); /* worker threads call it */
	size_t *l = calloc(n, sizeof(*l));

	cr_assert(k != NULL && l != NULL);
	for (size_t i = 0; i < n; i++) {
		k[i] = keys[i];
		l[i] = strlen(keys[i]);
	}
	proto_put_keys(b, flags, n, k, l);
	free(k);
	free(l);
}

/* A key op over n keys; returns the request status, results in res. */
int
dfx_keyop(struct dfx_cl *c, uint16_t op, uint32_t flags, size_t n,
    const char *const *keys, struct proto_result *res, uint32_t *m)
{
	struct pbuf b;
	int st;

	pbuf_init(&b);
	dfx_put_keys(&b, flags, n, keys);
	st = dfx_call(c, op, &b, res, m);
	pbuf_fini(&b);
	return st;
}

/* Status of op on a single key. */
int
dfx_key1(struct dfx_cl *c, uint16_t op, uint32_t flags, const char *key)
{
	struct proto_result res[1];
	uint32_t m = 0;
	int st = dfx_keyop(c, op, flags, 1, &key, res, &m);

	cr_assert_eq(st, 0, "%s request failed: %d", proto_op_name(op), st);
	cr_assert_eq(m, 1);
	return res[0].status;
}

uint64_t
dfx_stat_of(struct dfx_cl *c, enum proto_stat which)
{
	uint64_t v[PROTO_STATS_MAX];
	struct proto_rep_hdr h;
	struct preader r;
	struct pbuf f, rep;
	uint32_t n = 0;

	pbuf_init(&f);
	pbuf_init(&rep);
	dfx_put_req(&f, c, PROTO_OP_STATS, ++c->next_id);
	cr_assert_eq(dfx_send_raw(c->pipe, &f, &rep, &h, &r), 0);
	cr_assert_eq(proto_get_stats(&r, v, PROTO_STATS_MAX, &n), 0);
	cr_assert_eq(n, PROTO_STAT_COUNT);
	pbuf_fini(&f);
	pbuf_fini(&rep);
	return v[which];
}
