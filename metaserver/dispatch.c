/*
 * dispatch.c -- one request frame in, one reply frame out, no sockets.
 *
 * ms_dispatch is the whole server as seen by a client: it decodes a frame
 * with the shared codec, checks the session, answers a retried request
 * from the reply cache, applies the op against the pool under the right
 * lock, and encodes the reply. It always encodes a reply: a frame that
 * cannot be decoded gets an error reply carrying whatever op and req_id
 * could be read (0 otherwise), and nothing a client sends can crash it or
 * leak (contract 7). That makes it the fuzz target's entry point.
 *
 * Each op is one row of a table: how its body decodes, which lock it
 * takes, whether it needs a session, which request flags it accepts, and
 * the function that applies it. Decoding happens before any lock is taken;
 * the apply functions run under ms->lock and write a complete success
 * reply, or return an error that the dispatcher turns into an error reply.
 *
 * Per-key rules (contracts 2, 3, 5, 7) live in the apply functions:
 * REGISTER decides existence inside pool_kv_insert under the write lock
 * (no check-then-act) and pins winners and losers in the same critical
 * section; DELETE refuses pinned keys and keys in another live session's
 * region.
 *
 * Replays across a restart. The reply cache is DRAM and dies with the
 * server, so a request whose reply was lost to a crash comes back, with
 * the same id, to a server that has never seen it. Every op is made safe
 * to apply again: REGISTER finds its key already at the caller's page and
 * answers with that location, which the handler takes as registered
 * (contract 4); REGION_ALLOC finds the region stamped with its request id
 * (pool_region_alloc_req); pin changes carry the request id into the pin
 * record and skip the changes the first run made (pool_pin_change,
 * occurrences); DELETE, REGION_FREE and BYE find their work done and
 * answer NOTFOUND, PERM or SESSION -- an answer changed, nothing applied
 * twice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "ms_int.h"
#include "pool.h"

struct req {
	struct ms *ms;
	uint64_t pipe;
	struct proto_req_hdr h;
	struct preader body;
	struct ms_sess *s;   /* NULL for HELLO */
	struct pbuf *reply;
	/* decoded body (pointers into the frame, arrays owned) */
	uint32_t flags;
	uint32_t n;
	struct proto_key *keys;
	struct proto_reg *regs;
	struct proto_hello hello;
	uint64_t len, page_size;
	uint32_t region, gen;
	/* per key, one allocation (batch_new) */
	struct proto_result *res;
	uint64_t *slots;     /* index slot of each key found (res[i] ok) */
	uint64_t *hash;      /* index hash of each key (pool_kv_hash) */
	struct occ *occ;     /* scratch for nth */
	unsigned *nth;       /* pin changes: occurrence number of each key */
};

struct occ {
	uint64_t slot;
	uint32_t i;
};

enum op_lock {
	LK_READ,
	LK_WRITE,
	LK_PINFLAG, /* write if the request asks for PROTO_F_PIN, else read */
};

struct op_def {
	int (*decode)(struct req *rq);
	int (*apply)(struct req *rq);
	bool needs_session;
	uint8_t lock;      /* enum op_lock */
	uint32_t flags_ok; /* request flag bits this op accepts */
	bool self_replay;  /* run again under its request id, it finds what
	                    * its first run did, so a retry whose reply was
	                    * evicted is run, not answered CXLP_E_UNKNOWN */
};

/* ---- reply helpers ------------------------------------------------------ */

static void
put_hdr(struct req *rq, int status)
{
	struct proto_rep_hdr h = {
		.version = PROTO_VERSION,
		.op = rq->h.op,
		.req_id = rq->h.req_id,
		.status = status,
	};

	proto_put_rep_hdr(rq->reply, &h);
}

static uint64_t
sess_id(const struct req *rq)
{
	return rq->s == NULL ? 0 : rq->s->id;
}

static void
kv_loc(const struct pool *p, const struct pool_kv *kv, struct proto_loc *loc)
{
	struct pool_region r;

	memset(loc, 0, sizeof(*loc));
	loc->region = kv->region;
	loc->gen = kv->gen;
	loc->off = kv->off;
	loc->len = kv->len;
	if (pool_region_get(p, kv->region, &r) == 0) {
		loc->region_off = r.off;
		loc->region_len = r.len;
	}
}

static void
res_ok(struct req *rq, uint32_t i, const struct pool_kv *kv, uint32_t flags)
{
	rq->slots[i] = kv->slot;
	rq->res[i].status = 0;
	rq->res[i].flags = flags;
	kv_loc(rq->ms->pool, kv, &rq->res[i].loc);
}

/* The per-key arrays of a batch of n keys, in one block (rq->res owns
 * it), and every key's index hash, computed here before any lock. */
static int
batch_new(struct req *rq, bool regs)
{
	size_t n = rq->n;
	size_t sz = n * (sizeof(*rq->res) + sizeof(*rq->slots) +
	    sizeof(*rq->hash) + sizeof(*rq->occ) + sizeof(*rq->nth));
	uint8_t *b = calloc(1, sz > 0 ? sz : 1);

	if (b == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for %u results", rq->n);
	}
	rq->res = (void *)b;
	rq->slots = (void *)(b += n * sizeof(*rq->res));
	rq->hash = (void *)(b += n * sizeof(*rq->slots));
	rq->occ = (void *)(b += n * sizeof(*rq->hash));
	rq->nth = (void *)(b + n * sizeof(*rq->occ));
	for (uint32_t i = 0; i < rq->n; i++) {
		const struct proto_key *k = regs ? &rq->regs[i].key :
		    &rq->keys[i];

		rq->hash[i] = pool_kv_hash(k->data, k->len);
	}
	return 0;
}

/* Under the op's lock, before its per-key loop: room for the pins it may
 * take, and the index warmed for its keys, so that the probes' cache and
 * TLB misses overlap instead of coming one at a time (pool_kv_prefetch).
 * insert: the keys are about to be registered. */
static int
results_new(struct req *rq, bool pin, bool insert)
{
	pool_kv_prefetch(rq->ms->pool, rq->hash, rq->n, insert);
	return pin ? ms_pins_reserve(rq->ms, rq->n) : 0;
}

static int
cmp_occ(const void *a, const void *b)
{
	const struct occ *x = a, *y = b;

	if (x->slot != y->slot) {
		return x->slot < y->slot ? -1 : 1;
	}
	return x->i < y->i ? -1 : x->i > y->i;
}

/* nth[i] = 1 + how many earlier keys of res[0..m) found the same slot
 * (the change number pool_pin_change needs to recognize a replay) */
static void
occurrences(struct req *rq, uint32_t m)
{
	struct occ *o = rq->occ;
	unsigned *nth = rq->nth;
	uint32_t k = 0;

	for (uint32_t i = 0; i < m; i++) {
		if (rq->res[i].status == 0) {
			o[k++] = (struct occ){ rq->slots[i], i };
		}
	}
	qsort(o, k, sizeof(*o), cmp_occ);
	for (uint32_t j = 0; j < k; j++) {
		nth[o[j].i] = j > 0 && o[j - 1].slot == o[j].slot ?
		    nth[o[j - 1].i] + 1 : 1;
	}
}

/* What pin_results does with a change pool_pin_change refuses (an unpin
 * without a pin, or a pin past PIN_COUNT_MAX on one key). */
enum refused {
	REFUSED_MARK, /* the key's result reports it; go on */
	REFUSED_STOP, /* the same, and stop there (PIN: in order) */
	REFUSED_KEEP, /* REGISTER: the key stays registered, unpinned, and
	               * is reported stored (its page must not be freed) */
};

/* Pin (delta +1) or unpin (-1) the key of every good result in res[0..m),
 * durably, in order. Room was reserved, so a pin is refused only at
 * PIN_COUNT_MAX. Returns how many results to reply with: m, or with
 * REFUSED_STOP one past the first refused change. */
static uint32_t
pin_results(struct req *rq, uint32_t m, int delta, enum refused on)
{
	uint32_t kept = 0;

	occurrences(rq, m);
	for (uint32_t i = 0; i < m; i++) {
		int prc;

		if (rq->res[i].status != 0) {
			continue;
		}
		prc = ms_pin_change(rq->ms, sess_id(rq), rq->slots[i], delta,
		    rq->h.req_id, rq->nth[i]);
		if (prc != 0 && on == REFUSED_KEEP) {
			kept++;
		} else if (prc != 0) {
			memset(&rq->res[i], 0, sizeof(rq->res[i]));
			rq->res[i].status = prc;
			if (on == REFUSED_STOP) {
				return i + 1;
			}
		}
	}
	if (kept > 0) {
		log_err("op=%s session=%llu refused=%u msg=\"keys stored "
		    "without their pin: %s\"", proto_op_name(rq->h.op),
		    (unsigned long long)sess_id(rq), kept, cxlp_errormsg());
	}
	return m;
}

static void
put_results(struct req *rq, uint32_t n)
{
	put_hdr(rq, 0);
	proto_put_results(rq->reply, n, rq->res);
}

/* ---- body decoders (no lock held) -------------------------------------- */

static int
dec_none(struct req *rq)
{
	return 0;
}

static int
dec_hello(struct req *rq)
{
	int rc = proto_get_hello(&rq->body, &rq->hello);

	rq->flags = rq->hello.flags;
	return rc;
}

static int
dec_region(struct req *rq)
{
	return proto_get_region_req(&rq->body, &rq->len, &rq->page_size);
}

static int
dec_region_free(struct req *rq)
{
	return proto_get_region_free(&rq->body, &rq->region, &rq->gen);
}

static int
dec_regs(struct req *rq)
{
	int rc = proto_get_regs(&rq->body, &rq->flags, &rq->regs, &rq->n);

	return rc != 0 ? rc : batch_new(rq, true);
}

static int
dec_keys(struct req *rq)
{
	int rc = proto_get_keys(&rq->body, &rq->flags, &rq->keys, &rq->n);

	return rc != 0 ? rc : batch_new(rq, false);
}

/* ---- apply functions (ms->lock held) ----------------------------------- */

static int
ap_hello(struct req *rq)
{
	struct pool *p = rq->ms->pool;
	const char *path = pool_path(p);
	struct proto_welcome w = { 0 };
	struct ms_sess *s;
	size_t plen = strlen(path);
	int rc = sess_hello(rq->ms, &rq->h, &rq->hello, rq->pipe, &s);

	log_info("op=hello session=%llu pid=%u reattach=%d rc=%d",
	    (unsigned long long)(s == NULL ? 0 : s->id), rq->hello.pid,
	    (rq->hello.flags & PROTO_HELLO_REATTACH) != 0, rc);
	if (rc != 0) {
		return rc;
	}
	w.session = s->id;
	w.token = s->token;
	w.pool_size = pool_size(p);
	w.align = pool_align(p);
	w.path = path;
	w.path_len = (uint16_t)(plen < PROTO_PATH_MAX ? plen : PROTO_PATH_MAX);
	put_hdr(rq, 0);
	proto_put_welcome(rq->reply, &w);
	return 0;
}

static int
ap_region_alloc(struct req *rq)
{
	struct pool_region r = { 0 };
	struct proto_loc loc = { 0 };
	bool found = false;
	int rc = pool_region_alloc_req(rq->ms->pool, sess_id(rq),
	    rq->h.req_id, rq->len, rq->page_size, &r, &found);

	log_info("op=region_alloc session=%llu region=%u len=%llu "
	    "page_size=%llu replay=%d rc=%d", (unsigned long long)sess_id(rq),
	    r.id, (unsigned long long)r.len,
	    (unsigned long long)rq->page_size, found, rc);
	if (rc != 0) {
		return rc;
	}
	loc.region = r.id;
	loc.gen = r.gen;
	loc.region_off = r.off;
	loc.region_len = r.len;
	put_hdr(rq, 0);
	proto_put_loc(rq->reply, &loc);
	return 0;
}

static int
ap_region_free(struct req *rq)
{
	struct pool_region r;
	int rc = pool_region_get(rq->ms->pool, rq->region, &r);

	if (rc != 0 || r.gen != rq->gen || r.state != POOL_REGION_OWNED ||
	    r.owner != sess_id(rq)) {
		rc = cxlp_fail(CXLP_E_PERM, "region %u gen %u is not owned "
		    "by session %llu", rq->region, rq->gen,
		    (unsigned long long)sess_id(rq));
	} else {
		rc = pool_region_disown(rq->ms->pool, rq->region);
	}
	log_info("op=region_free session=%llu region=%u gen=%u rc=%d",
	    (unsigned long long)sess_id(rq), rq->region, rq->gen, rc);
	if (rc != 0) {
		return rc;
	}
	put_hdr(rq, 0);
	return 0;
}

static int
ap_register(struct req *rq)
{
	bool pin = (rq->flags & PROTO_F_PIN) != 0;
	unsigned added = 0, failed = 0;
	char why[128] = "";
	int rc = results_new(rq, pin, true);

	if (rc != 0) {
		return rc;
	}
	for (uint32_t i = 0; i < rq->n; i++) {
		const struct proto_reg *g = &rq->regs[i];
		struct pool_kv kv;
		bool ins = false;

		rc = pool_kv_insert(rq->ms->pool, sess_id(rq), g->key.data,
		    g->key.len, g->region, g->off, g->len, &kv, &ins);
		if (rc != 0) {
			rq->res[i].status = rc;
			if (failed++ == 0) {
				snprintf(why, sizeof(why), "%s",
				    cxlp_errormsg());
			}
			continue;
		}
		res_ok(rq, i, &kv, ins ? PROTO_R_NEW : 0);
		added += ins;
	}
	/* winners and losers pinned in the same critical section */
	if (pin) {
		(void)pin_results(rq, rq->n, +1, REFUSED_KEEP);
	}
	log_info("op=register session=%llu n=%u new=%u existing=%u "
	    "failed=%u pin=%d rc=0%s%s%s", (unsigned long long)sess_id(rq),
	    rq->n, added, rq->n - added - failed, failed, pin,
	    failed ? " first_failure=\"" : "", why, failed ? "\"" : "");
	put_results(rq, rq->n);
	return 0;
}

/* lookup_keys -- fill rq->res with each key's location or error, in
 * order; with stop_at_miss, stop after the first missing key. Returns how
 * many entries were filled. */
static uint32_t
lookup_keys(struct req *rq, bool stop_at_miss)
{
	uint32_t m = 0;

	while (m < rq->n) {
		struct pool_kv kv;
		int rc = pool_kv_lookup(rq->ms->pool, rq->keys[m].data,
		    rq->keys[m].len, &kv);

		if (rc != 0) {
			rq->res[m++].status = rc;
			if (stop_at_miss) {
				break;
			}
			continue;
		}
		res_ok(rq, m++, &kv, 0);
	}
	return m;
}

/* LOOKUP (optionally pinning what it finds) and EXISTS. */
static int
ap_lookup(struct req *rq)
{
	bool pin = (rq->flags & PROTO_F_PIN) != 0;
	int rc = results_new(rq, pin, false);

	if (rc != 0) {
		return rc;
	}
	lookup_keys(rq, false);
	if (pin) {
		(void)pin_results(rq, rq->n, +1, REFUSED_MARK);
	}
	put_results(rq, rq->n);
	return 0;
}

/* PIN: stops after the first key that is missing or cannot take one
 * more pin. */
static int
ap_pin(struct req *rq)
{
	uint32_t m;
	int rc = results_new(rq, true, false);

	if (rc != 0) {
		return rc;
	}
	m = pin_results(rq, lookup_keys(rq, true), +1, REFUSED_STOP);
	log_dbg("op=pin session=%llu n=%u done=%u",
	    (unsigned long long)sess_id(rq), rq->n, m);
	put_results(rq, m);
	return 0;
}

/* UNPIN: releases one of the caller's pins on each key found. */
static int
ap_unpin(struct req *rq)
{
	int rc = results_new(rq, false, false);

	if (rc != 0) {
		return rc;
	}
	lookup_keys(rq, false);
	(void)pin_results(rq, rq->n, -1, REFUSED_MARK);
	put_results(rq, rq->n);
	return 0;
}

/* Delete one key: refused while pinned by anyone, or while its region is
 * owned by another live session (eviction is the owner's). A fenced
 * owner (silence.c) has ended: its keys are anyone's, though its record
 * keeps the region out of use. */
static int
delete_one(struct req *rq, uint32_t i)
{
	struct pool *p = rq->ms->pool;
	const struct proto_key *k = &rq->keys[i];
	struct pool_region r;
	struct pool_kv kv;
	int rc = pool_kv_lookup(p, k->data, k->len, &kv);

	if (rc != 0) {
		return rc;
	}
	if (pins_total(&rq->ms->pins, kv.slot) > 0) {
		return cxlp_fail(CXLP_E_PINNED, "key is pinned");
	}
	if (pool_region_get(p, kv.region, &r) == 0 &&
	    r.state == POOL_REGION_OWNED && r.owner != sess_id(rq) &&
	    !ms_sess_fenced_id(rq->ms, r.owner)) {
		return cxlp_fail(CXLP_E_PERM, "key belongs to live session "
		    "%llu", (unsigned long long)r.owner);
	}
	kv_loc(p, &kv, &rq->res[i].loc); /* before the region may go */
	return pool_kv_remove(p, k->data, k->len, &kv);
}

static int
ap_delete(struct req *rq)
{
	unsigned failed = 0;
	int rc = results_new(rq, false, false);

	if (rc != 0) {
		return rc;
	}
	for (uint32_t i = 0; i < rq->n; i++) {
		rc = delete_one(rq, i);
		if (rc != 0) {
			memset(&rq->res[i], 0, sizeof(rq->res[i]));
			rq->res[i].status = rc;
			failed++;
		}
	}
	log_info("op=delete session=%llu n=%u failed=%u rc=0",
	    (unsigned long long)sess_id(rq), rq->n, failed);
	put_results(rq, rq->n);
	return 0;
}

static int
ap_stats(struct req *rq)
{
	struct pool_stats st;
	uint64_t v[PROTO_STAT_COUNT] = { 0 };

	pool_stats(rq->ms->pool, &st);
	v[PROTO_STAT_POOL_BYTES] = st.size;
	v[PROTO_STAT_DATA_BYTES] = st.data_bytes;
	v[PROTO_STAT_FREE_BYTES] = st.free_bytes;
	v[PROTO_STAT_REGIONS] = st.regions;
	v[PROTO_STAT_ORPHAN_REGIONS] = st.orphan_regions;
	v[PROTO_STAT_KEYS] = st.keys;
	v[PROTO_STAT_VALUE_BYTES] = st.value_bytes;
	v[PROTO_STAT_SESSIONS] = st.sessions - rq->ms->nfenced; /* ended */
	v[PROTO_STAT_PINS] = rq->ms->pins.count;
	v[PROTO_STAT_INDEX_SLOTS] = st.index_slots;
	put_hdr(rq, 0);
	proto_put_stats(rq->reply, PROTO_STAT_COUNT, v);
	return 0;
}

/* ---- SESSIONS: every recorded session, with what it owns and holds ---- */

struct sess_list {
	struct pool_session *rec;     /* the pool's records (hosts) */
	struct proto_session_info *v; /* sorted by id; hosts into rec */
	uint32_t n;
};

static int
cmp_info(const void *a, const void *b)
{
	const struct proto_session_info *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct proto_session_info *
find_info(struct sess_list *l, uint64_t id)
{
	struct proto_session_info key = { .id = id };

	return l->n == 0 ? NULL : bsearch(&key, l->v, l->n, sizeof(*l->v),
	    cmp_info);
}

static uint32_t
add_sat32(uint32_t a, uint64_t b)
{
	return b >= UINT32_MAX - a ? UINT32_MAX : (uint32_t)(a + b);
}

static void
count_pins(void *arg, uint64_t sess, uint64_t count)
{
	struct proto_session_info *e = find_info(arg, sess);

	if (e != NULL) {
		e->pins = add_sat32(e->pins, count);
	}
}

/* Fill l from the pool's session table (at most PROTO_SESSIONS_MAX). */
static int
list_sessions(struct pool *p, struct sess_list *l)
{
	struct pool_session r;
	uint64_t cursor = 0;
	uint32_t cap = 0;

	while (cap < PROTO_SESSIONS_MAX &&
	    pool_session_next(p, &cursor, &r) == 1) {
		cap++;
	}
	l->rec = calloc(cap + 1, sizeof(*l->rec));
	l->v = calloc(cap + 1, sizeof(*l->v));
	if (l->rec == NULL || l->v == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for %u sessions", cap);
	}
	cursor = 0;
	while (l->n < cap &&
	    pool_session_next(p, &cursor, &l->rec[l->n]) == 1) {
		struct pool_session *s = &l->rec[l->n];

		l->v[l->n++] = (struct proto_session_info){ .id = s->id,
			.pid = s->pid, .start_time = s->start_time,
			.instance = s->instance, .host = s->host,
			.host_len = (uint16_t)strnlen(s->host,
			sizeof(s->host)) };
	}
	qsort(l->v, l->n, sizeof(*l->v), cmp_info);
	return 0;
}

/* Regions each listed session owns: one pass over the region table. */
static void
count_regions(struct pool *p, struct sess_list *l)
{
	uint32_t max = pool_region_max(p);

	for (uint32_t id = 0; id < max; id++) {
		struct proto_session_info *e;
		struct pool_region r;

		if (pool_region_get(p, id, &r) == 0 &&
		    r.state == POOL_REGION_OWNED &&
		    (e = find_info(l, r.owner)) != NULL) {
			e->regions = add_sat32(e->regions, 1);
		}
	}
}

static int
ap_sessions(struct req *rq)
{
	struct sess_list l = { 0 };
	int rc = list_sessions(rq->ms->pool, &l);

	if (rc == 0) {
		count_regions(rq->ms->pool, &l);
		pins_each_held(&rq->ms->pins, count_pins, &l);
		sess_list_flags(rq->ms, l.v, l.n);
		put_hdr(rq, 0);
		proto_put_sessions(rq->reply, l.n, l.v);
	}
	log_dbg("op=sessions session=%llu n=%u rc=%d",
	    (unsigned long long)sess_id(rq), l.n, rc);
	free(l.v);
	free(l.rec);
	return rc;
}

static int
ap_heartbeat(struct req *rq)
{
	put_hdr(rq, 0);
	return 0;
}

static int
ap_bye(struct req *rq)
{
	ms_sess_lock(rq->ms);
	sess_end_locked(rq->ms, rq->s, "bye");
	ms_sess_unlock(rq->ms);
	put_hdr(rq, 0);
	return 0;
}

static const struct op_def ops[PROTO_OP_MAX + 1] = {
	[PROTO_OP_HELLO] = { dec_hello, ap_hello, false, LK_WRITE,
	    PROTO_HELLO_FLAGS },
	[PROTO_OP_REGION_ALLOC] = { dec_region, ap_region_alloc, true,
	    LK_WRITE, 0, true }, /* the region carries the request id */
	[PROTO_OP_REGION_FREE] = { dec_region_free, ap_region_free, true,
	    LK_WRITE, 0 },
	[PROTO_OP_REGISTER] = { dec_regs, ap_register, true, LK_WRITE,
	    PROTO_F_PIN },
	[PROTO_OP_LOOKUP] = { dec_keys, ap_lookup, true, LK_PINFLAG,
	    PROTO_F_PIN },
	[PROTO_OP_EXISTS] = { dec_keys, ap_lookup, true, LK_READ, 0 },
	[PROTO_OP_PIN] = { dec_keys, ap_pin, true, LK_WRITE, 0 },
	[PROTO_OP_UNPIN] = { dec_keys, ap_unpin, true, LK_WRITE, 0 },
	[PROTO_OP_DELETE] = { dec_keys, ap_delete, true, LK_WRITE, 0 },
	[PROTO_OP_STATS] = { dec_none, ap_stats, true, LK_READ, 0 },
	[PROTO_OP_HEARTBEAT] = { dec_none, ap_heartbeat, true, LK_READ, 0 },
	[PROTO_OP_BYE] = { dec_none, ap_bye, true, LK_WRITE, 0 },
	[PROTO_OP_SESSIONS] = { dec_none, ap_sessions, true, LK_READ, 0 },
};

/* ---- the dispatcher ---------------------------------------------------- */

/* Best effort op and req_id of a frame the codec refused, so the error
 * reply can still be matched by the client: req_id when the fixed part of
 * the header is readable, op only when it is a known op (0 otherwise). */
static void
peek_hdr(const void *frame, size_t len, struct proto_req_hdr *h)
{
	struct preader r;
	uint32_t magic = 0;
	uint16_t version, op;
	uint64_t req_id;

	memset(h, 0, sizeof(*h));
	preader_init(&r, frame, len);
	if (preader_u32(&r, &magic) && magic == PROTO_MAGIC &&
	    preader_u16(&r, &version) && preader_u16(&r, &op) &&
	    preader_u64(&r, &req_id)) {
		op &= (uint16_t)~PROTO_REPLY;
		h->op = op <= PROTO_OP_MAX ? op : 0; /* known ops only */
		h->req_id = req_id;
	}
}

static int
parse_hdr(struct req *rq, const void *frame, size_t len,
    const struct op_def **def)
{
	int rc;

	*def = NULL;
	if (len > PROTO_FRAME_MAX) {
		peek_hdr(frame, len, &rq->h);
		return cxlp_fail(CXLP_E_PROTO, "frame of %zu bytes, max %zu",
		    len, (size_t)PROTO_FRAME_MAX);
	}
	rc = proto_get_req_hdr(frame, len, &rq->h, &rq->body);
	if (rc != 0) {
		peek_hdr(frame, len, &rq->h);
		return rc;
	}
	if (rq->h.op > PROTO_OP_MAX || ops[rq->h.op].apply == NULL) {
		rc = cxlp_fail(CXLP_E_BADOP, "unknown op %u", rq->h.op);
		rq->h.op = 0;
		return rc;
	}
	*def = &ops[rq->h.op];
	return 0;
}

static int
decode_body(struct req *rq, const struct op_def *def)
{
	int rc = def->decode(rq);

	if (rc == 0 && preader_end(&rq->body) != 0) {
		rc = cxlp_fail(CXLP_E_PROTO, "%s: trailing bytes",
		    proto_op_name(rq->h.op));
	}
	if (rc == 0 && (rq->flags & ~def->flags_ok) != 0) {
		rc = cxlp_fail(CXLP_E_PROTO, "%s: unknown flags 0x%x",
		    proto_op_name(rq->h.op), rq->flags);
	}
	return rc;
}

static int
apply_locked(struct req *rq, const struct op_def *def)
{
	bool wr = def->lock == LK_WRITE ||
	    (def->lock == LK_PINFLAG && (rq->flags & PROTO_F_PIN));
	int rc;

	if (wr) {
		ms_wrlock(rq->ms);
	} else {
		ms_rdlock(rq->ms);
	}
	if (rq->s != NULL && !sess_usable(rq->ms, rq->s, rq->h.op)) {
		rc = cxlp_fail(CXLP_E_SESSION, "session %llu has ended",
		    (unsigned long long)rq->s->id);
	} else {
		rc = def->apply(rq);
	}
	ms_unlock(rq->ms);
	return rc;
}

/* The error reply; a HELLO that asked for it (PROTO_HELLO_ERRMSG) also
 * gets the reason, so that the handler's cxlp_errormsg() says which
 * limit refused it. */
static void
put_error(struct req *rq, int rc)
{
	const char *why = cxlp_errormsg();
	struct proto_rep_hdr h = { .version = PROTO_VERSION, .op = rq->h.op,
		.req_id = rq->h.req_id, .status = rc };

	if (ms_errlog_admit(rq->ms, rq->pipe)) { /* a flood is cut short */
		log_err("op=%s session=%llu req=%llu rc=%d msg=\"%s\"",
		    proto_op_name(rq->h.op), (unsigned long long)rq->h.session,
		    (unsigned long long)rq->h.req_id, rc, why);
	}
	if (rq->h.op == PROTO_OP_HELLO &&
	    (rq->hello.flags & PROTO_HELLO_ERRMSG) && why[0] != '\0') {
		h.msg = why;
		h.msg_len = (uint16_t)strnlen(why, PROTO_ERRMSG_MAX);
	}
	pbuf_reset(rq->reply);
	proto_put_rep_hdr(rq->reply, &h);
}

/* ms_dispatch -- handle one request frame received on pipe_id and encode
 * its reply into reply (reset first). Always encodes a reply; returns 0,
 * or -ENOMEM when the reply could not be built (send nothing then). */
int
ms_dispatch(struct ms *ms, uint64_t pipe_id, const void *frame, size_t len,
    struct pbuf *reply)
{
	struct req rq = { .ms = ms, .pipe = pipe_id, .reply = reply };
	const struct op_def *def;
	int rc;

	pbuf_reset(reply);
	ms_errlog_flush(ms);
	cxlp_errmsg_clear();
	rc = parse_hdr(&rq, frame, len, &def);
	if (rc == 0 && def->needs_session) {
		rc = sess_enter(ms, &rq.h, pipe_id, !def->self_replay, reply,
		    &rq.s);
		if (rc == RC_HIT) {
			return reply->err; /* answered from the cache */
		}
	}
	if (rc == 0) {
		rc = decode_body(&rq, def);
	}
	if (rc == 0) {
		rc = apply_locked(&rq, def);
	}
	if (rc != 0) {
		put_error(&rq, rc);
	}
	if (rq.s != NULL) {
		sess_leave(ms, rq.s, rq.h.req_id, reply);
	}
	free(rq.keys);
	free(rq.regs);
	free(rq.res); /* and the other per-key arrays (batch_new) */
	return reply->err;
}
