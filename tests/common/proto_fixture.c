/*
 * proto_fixture.c -- see proto_fixture.h. The builders write random but
 * valid frames (random headers, bodies within every bound); each decoder
 * takes a whole frame, header and body, as a peer would receive it.
 */
#include "proto_fixture.h"

/* ---- random contents ---- */

static uint64_t rng_state; /* xorshift64 */

void
rng_seed(uint64_t s)
{
	rng_state = s * 0x9e3779b97f4a7c15ULL + 1;
}

uint64_t
rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

uint32_t
rnd_below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

void
rnd_fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		p[i] = (uint8_t)rnd();
	}
}

uint8_t keybytes[CXLP_BATCH_MAX * 8 + CXLP_KEY_MAX];
uint16_t fx_version = PROTO_VERSION;

/* ---- frame builders, one per message type ---- */

static void
put_req(struct pbuf *b, unsigned op)
{
	struct proto_req_hdr h = { fx_version, (uint16_t)op, rnd(), rnd(),
		rnd(), 0 };

	proto_put_req_hdr(b, &h);
}

static void
put_rep(struct pbuf *b, unsigned op)
{
	struct proto_rep_hdr h = { fx_version, (uint16_t)op, rnd(), 0, NULL, 0,
		false, rnd(), 0 };

	proto_put_rep_hdr(b, &h);
}

void
rnd_loc(struct proto_loc *l)
{
	*l = (struct proto_loc){ (uint32_t)rnd(), (uint32_t)rnd(), rnd(),
		rnd(), rnd(), rnd() };
}

static void
build_hello(struct pbuf *b)
{
	struct proto_hello m = { (uint32_t)rnd(), rnd_below(2), rnd(), rnd(),
		(const char *)keybytes, (uint16_t)rnd_below(PROTO_HOST_MAX),
		keybytes, (uint16_t)rnd_below(PROTO_SECRET_MAX + 1), 0, 0, 0, 0,
		0 };

	put_req(b, PROTO_OP_HELLO);
	proto_put_hello(b, &m);
}

static void
build_welcome(struct pbuf *b)
{
	struct proto_welcome m = { rnd(), rnd(), rnd(), rnd(),
		(const char *)keybytes, (uint16_t)rnd_below(300), false,
		{ 0, 0, 0, 0 } };

	put_rep(b, PROTO_OP_HELLO);
	proto_put_welcome(b, &m);
}

static void
build_welcome_id(struct pbuf *b)
{
	struct proto_welcome m = { rnd(), rnd(), rnd(), rnd(),
		(const char *)keybytes, (uint16_t)rnd_below(300), true,
		{ rnd(), rnd(), rnd(), rnd() } };

	put_rep(b, PROTO_OP_HELLO);
	proto_put_welcome(b, &m);
}

static void
build_region_req(struct pbuf *b)
{
	put_req(b, PROTO_OP_REGION_ALLOC);
	proto_put_region_req(b, rnd(), rnd());
}

static void
build_region_free(struct pbuf *b)
{
	put_req(b, PROTO_OP_REGION_FREE);
	proto_put_region_free(b, (uint32_t)rnd(), (uint32_t)rnd());
}

static void
build_loc(struct pbuf *b)
{
	struct proto_loc l;

	rnd_loc(&l);
	put_rep(b, PROTO_OP_REGION_ALLOC);
	proto_put_loc(b, &l);
}

void
rnd_keys(size_t n, const void **k, size_t *len)
{
	for (size_t i = 0; i < n; i++) {
		len[i] = 1 + rnd_below(40);
		k[i] = keybytes + rnd_below(sizeof(keybytes) - CXLP_KEY_MAX);
	}
}

static void
build_keys(struct pbuf *b)
{
	const void *k[20];
	size_t len[20];
	size_t n = 1 + rnd_below(20);

	rnd_keys(n, k, len);
	put_req(b, PROTO_OP_LOOKUP + rnd_below(5));
	proto_put_keys(b, rnd_below(2), n, k, len);
}

static void
build_regs(struct pbuf *b)
{
	struct proto_reg g[20];
	const void *k[20];
	size_t len[20];
	size_t n = 1 + rnd_below(20);

	rnd_keys(n, k, len);
	for (size_t i = 0; i < n; i++) {
		g[i] = (struct proto_reg){ { k[i], (uint16_t)len[i] },
			(uint32_t)rnd(), rnd(), rnd() };
	}
	put_req(b, PROTO_OP_REGISTER);
	proto_put_regs(b, rnd_below(2), n, g);
}

void
rnd_results(size_t n, struct proto_result *res)
{
	for (size_t i = 0; i < n; i++) {
		res[i].status =
		    rnd_below(3) == 0 ? -(int32_t)rnd_below(1100) : 0;
		res[i].flags = rnd_below(2);
		rnd_loc(&res[i].loc);
		if (res[i].status != 0) {
			memset(&res[i].loc, 0, sizeof(res[i].loc));
		}
	}
}

static void
build_results(struct pbuf *b)
{
	struct proto_result res[20];
	size_t n = rnd_below(20);

	rnd_results(n, res);
	put_rep(b, PROTO_OP_REGISTER + rnd_below(6));
	proto_put_results(b, n, res);
}

static void
build_stats(struct pbuf *b)
{
	uint64_t v[PROTO_STATS_MAX];
	size_t n = rnd_below(PROTO_STATS_MAX + 1);

	for (size_t i = 0; i < n; i++) {
		v[i] = rnd();
	}
	put_rep(b, PROTO_OP_STATS);
	proto_put_stats(b, n, v);
}

void
rnd_sessions(size_t n, struct proto_session_info *v)
{
	for (size_t i = 0; i < n; i++) {
		v[i] = (struct proto_session_info){ rnd(), (uint32_t)rnd(),
			rnd_below(4), rnd(), rnd(), (uint32_t)rnd(),
			(uint32_t)rnd(), (const char *)keybytes +
			rnd_below(1000), (uint16_t)rnd_below(
			PROTO_HOST_MAX + 1) };
	}
}

static void
build_sessions(struct pbuf *b)
{
	struct proto_session_info v[20];
	size_t n = rnd_below(20);

	rnd_sessions(n, v);
	put_rep(b, PROTO_OP_SESSIONS);
	proto_put_sessions(b, n, v);
}

static void
build_req_empty(struct pbuf *b)
{
	put_req(b, PROTO_OP_STATS + rnd_below(4)); /* STATS..SESSIONS */
}

static void
build_rep_empty(struct pbuf *b)
{
	struct proto_rep_hdr h = { fx_version, 1 + rnd_below(PROTO_OP_MAX),
		rnd(), -(int32_t)rnd_below(1100), NULL, 0, false, rnd(), 0 };

	proto_put_rep_hdr(b, &h);
}

/* ---- whole-frame decoders, one per message type ---- */

static int
decode_req(const uint8_t *f, size_t len, struct preader *body)
{
	struct proto_req_hdr h;

	return proto_get_req_hdr(f, len, &h, body);
}

static int
decode_rep(const uint8_t *f, size_t len, struct preader *body)
{
	struct proto_rep_hdr h;

	return proto_get_rep_hdr(f, len, &h, body);
}

static int
dec_hello(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_hello m;
	int rc = decode_req(f, len, &r);

	return rc != 0 ? rc : proto_get_hello(&r, &m);
}

static int
dec_welcome(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_welcome m;
	int rc = decode_rep(f, len, &r);

	return rc != 0 ? rc : proto_get_welcome(&r, &m);
}

static int
dec_welcome_id(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_welcome m;
	int rc = decode_rep(f, len, &r);

	return rc != 0 ? rc : proto_get_welcome_id(&r, &m);
}


static int
dec_region_req(const uint8_t *f, size_t len)
{
	struct preader r;
	uint64_t a, b;
	int rc = decode_req(f, len, &r);

	return rc != 0 ? rc : proto_get_region_req(&r, &a, &b);
}

static int
dec_region_free(const uint8_t *f, size_t len)
{
	struct preader r;
	uint32_t a, b;
	int rc = decode_req(f, len, &r);

	return rc != 0 ? rc : proto_get_region_free(&r, &a, &b);
}

static int
dec_loc(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_loc l;
	int rc = decode_rep(f, len, &r);

	return rc != 0 ? rc : proto_get_loc(&r, &l);
}

static int
dec_keys(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_key *k = NULL;
	uint32_t flags, n;
	int rc = decode_req(f, len, &r);

	if (rc == 0) {
		rc = proto_get_keys(&r, &flags, &k, &n);
	}
	free(k);
	return rc;
}

static int
dec_regs(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_reg *g = NULL;
	uint32_t flags, n;
	int rc = decode_req(f, len, &r);

	if (rc == 0) {
		rc = proto_get_regs(&r, &flags, &g, &n);
	}
	free(g);
	return rc;
}

static int
dec_results(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_result res[20];
	uint32_t n;
	int rc = decode_rep(f, len, &r);

	return rc != 0 ? rc : proto_get_results(&r, res, 20, &n);
}

static int
dec_stats(const uint8_t *f, size_t len)
{
	struct preader r;
	uint64_t v[PROTO_STATS_MAX];
	uint32_t n;
	int rc = decode_rep(f, len, &r);

	return rc != 0 ? rc : proto_get_stats(&r, v, PROTO_STATS_MAX, &n);
}

static int
dec_sessions(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_session_info *v = NULL;
	uint32_t n;
	int rc = decode_rep(f, len, &r);

	if (rc == 0) {
		rc = proto_get_sessions(&r, &v, &n);
	}
	free(v);
	return rc;
}

static int
dec_req_empty(const uint8_t *f, size_t len)
{
	struct preader r;
	int rc = decode_req(f, len, &r);

	return rc != 0 ? rc : preader_end(&r);
}

static void
build_reclaim_req(struct pbuf *b)
{
	put_req(b, PROTO_OP_RECLAIM);
	proto_put_reclaim_req(b, rnd(), rnd(), 1 + rnd_below(PROTO_RECLAIM_MAX),
	    (uint32_t)rnd());
}

static int
dec_reclaim_req(const uint8_t *f, size_t len)
{
	struct preader r;
	uint64_t a, b;
	uint32_t w, ms;
	int rc = decode_req(f, len, &r);

	return rc != 0 ? rc : proto_get_reclaim_req(&r, &a, &b, &w, &ms);
}

/* a RECLAIM reply: half of them a region, half pages */
static void
build_reclaimed(struct pbuf *b)
{
	struct proto_page pages[40];
	struct proto_reclaimed m = { .kind = PROTO_RECLAIM_PAGES,
		.n = 1 + rnd_below(40), .pages = pages };

	put_rep(b, PROTO_OP_RECLAIM);
	if (rnd_below(2) == 0) {
		m.kind = PROTO_RECLAIM_REGION;
		rnd_loc(&m.loc);
	}
	for (uint32_t i = 0; i < m.n; i++) {
		pages[i] = (struct proto_page){ (uint32_t)rnd(),
			(uint32_t)rnd(), (uint32_t)rnd() };
	}
	proto_put_reclaimed(b, &m);
}

static int
dec_reclaimed(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_reclaimed m = { 0 };
	int rc = decode_rep(f, len, &r);

	if (rc == 0) {
		rc = proto_get_reclaimed(&r, &m);
	}
	free(m.pages);
	return rc;
}

static void
build_asks(struct pbuf *b)
{
	struct proto_region_ref v[PROTO_ASKS_MAX];
	uint32_t n = rnd_below(PROTO_ASKS_MAX + 1);

	for (uint32_t i = 0; i < n; i++) {
		v[i] = (struct proto_region_ref){ (uint32_t)rnd(),
			(uint32_t)rnd() };
	}
	put_rep(b, PROTO_OP_HEARTBEAT);
	proto_put_asks(b, n, v);
}

static int
dec_asks(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_region_ref v[PROTO_ASKS_MAX];
	uint32_t n;
	int rc = decode_rep(f, len, &r);

	return rc != 0 ? rc : proto_get_asks(&r, v, &n);
}

static void
build_lease_req(struct pbuf *b)
{
	const void *k[20];
	size_t len[20];
	size_t n = 1 + rnd_below(20);

	rnd_keys(n, k, len);
	put_req(b, PROTO_OP_LEASE);
	proto_put_lease_req(b, (uint32_t)rnd(), n, k, len);
}

static int
dec_lease_req(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_key *k = NULL;
	uint32_t ms, flags, n;
	int rc = decode_req(f, len, &r);

	if (rc == 0) {
		rc = proto_get_lease_req(&r, &ms, &flags, &k, &n);
	}
	free(k);
	return rc;
}

static void
rnd_group(struct proto_group *g, uint32_t cmd)
{
	const void *k[1];
	size_t len[1];

	rnd_keys(1, k, len);
	*g = (struct proto_group){ cmd, k[0], (uint16_t)len[0],
		cmd == PROTO_GROUP_OPEN ? rnd_below(PROTO_GROUP_TOTAL_MAX + 1) :
		0, cmd == PROTO_GROUP_OPEN ? rnd_below(2) * PROTO_GF_PIN : 0 };
}

static void
build_group(struct pbuf *b)
{
	struct proto_group g;

	rnd_group(&g, PROTO_GROUP_OPEN + rnd_below(4));
	put_req(b, PROTO_OP_GROUP);
	proto_put_group(b, &g);
}

static int
dec_group(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_group g;
	int rc = decode_req(f, len, &r);

	return rc != 0 ? rc : proto_get_group(&r, &g);
}

/* GROUP_REGISTER: the group id, then a REGISTER body (from build_regs) */
static void
build_group_regs(struct pbuf *b)
{
	struct pbuf regs;
	struct proto_group g;

	rnd_group(&g, PROTO_GROUP_OPEN);
	pbuf_init(&regs);
	build_regs(&regs);
	put_req(b, PROTO_OP_GROUP_REGISTER);
	proto_put_group_id(b, g.id, g.id_len);
	pbuf_put_bytes(b, regs.data + proto_req_hdr_len(fx_version),
	    regs.len - proto_req_hdr_len(fx_version));
	pbuf_fini(&regs);
}

static int
dec_group_regs(const uint8_t *f, size_t len)
{
	struct preader r;
	struct proto_reg *g = NULL;
	const uint8_t *id;
	uint16_t id_len;
	uint32_t flags, n;
	int rc = decode_req(f, len, &r);

	if (rc == 0 && (rc = proto_get_group_id(&r, &id, &id_len)) == 0) {
		rc = proto_get_regs(&r, &flags, &g, &n);
	}
	free(g);
	return rc;
}

static int
dec_rep_empty(const uint8_t *f, size_t len)
{
	struct preader r;
	int rc = decode_rep(f, len, &r);

	return rc != 0 ? rc : preader_end(&r);
}

const struct msg_type msg_types[] = {
	{ "hello", true, build_hello, dec_hello },
	{ "welcome", false, build_welcome, dec_welcome },
	{ "welcome_id", false, build_welcome_id, dec_welcome_id },
	{ "region_req", true, build_region_req, dec_region_req },
	{ "region_free", true, build_region_free, dec_region_free },
	{ "loc", false, build_loc, dec_loc },
	{ "keys", true, build_keys, dec_keys },
	{ "regs", true, build_regs, dec_regs },
	{ "results", false, build_results, dec_results },
	{ "stats", false, build_stats, dec_stats },
	{ "sessions", false, build_sessions, dec_sessions },
	{ "empty request", true, build_req_empty, dec_req_empty },
	{ "error reply", false, build_rep_empty, dec_rep_empty },
	{ "reclaim_req", true, build_reclaim_req, dec_reclaim_req },
	{ "reclaimed", false, build_reclaimed, dec_reclaimed },
	{ "asks", false, build_asks, dec_asks },
	{ "lease_req", true, build_lease_req, dec_lease_req },
	{ "group", true, build_group, dec_group },
	{ "group_regs", true, build_group_regs, dec_group_regs },
};

int
decode_exact(const struct msg_type *t, const uint8_t *f, size_t len)
{
	uint8_t *copy = malloc(len != 0 ? len : 1);
	int rc;

	cr_assert_not_null(copy);
	memcpy(copy, f, len);
	rc = t->decode(copy, len);
	free(copy);
	return rc;
}

void
setup(void)
{
	fx_version = PROTO_VERSION;
	rng_seed(1);
	rnd_fill(keybytes, sizeof(keybytes));
}
