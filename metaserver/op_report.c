/*
 * op_report.c -- the report ops: STATS and SESSIONS, what pool-inspect
 * stats --server shows.
 *
 * Both only read (ms->lock shared). STATS is the pool's counters, with
 * fenced sessions not counted as sessions (they have ended). SESSIONS
 * lists every session record (at most PROTO_SESSIONS_MAX), sorted by id,
 * with the regions each owns (one pass over the region table), the pins
 * it holds (pool_pin_session_total: a walk of its records in the pool's
 * pin index) and whether it is attached, detached or fenced (session.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "op.h"

/* op_stats -- STATS: the pool's counters. */
int
op_stats(struct req *rq)
{
	struct pool_evict_stats ev;
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
	v[PROTO_STAT_PINS] = st.pins;
	v[PROTO_STAT_INDEX_SLOTS] = st.index_slots;
	v[PROTO_STAT_LARGEST_FREE] = st.largest_free;
	pool_evict_stats(rq->ms->pool, &ev);
	v[PROTO_STAT_EVICT_PRESSURE] = ev.keys[POOL_EVICT_PRESSURE];
	v[PROTO_STAT_EVICT_WATERMARK] = ev.keys[POOL_EVICT_WATERMARK];
	v[PROTO_STAT_EVICT_ORPHAN] = ev.keys[POOL_EVICT_ORPHAN];
	for (int c = 0; c < POOL_EVICT_CAUSES; c++) {
		v[PROTO_STAT_EVICT_BYTES] += ev.bytes[c];
	}
	v[PROTO_STAT_EVICT_SWEEPS] = ev.sweeps;
	pool_lease_stats(rq->ms->pool, &v[PROTO_STAT_LEASES],
	    &v[PROTO_STAT_LEASE_EXPIRED]);
	v[PROTO_STAT_LOOKUP_FOUND] = __atomic_load_n(
	    &rq->ms->metrics.lookup_found, __ATOMIC_RELAXED);
	v[PROTO_STAT_LOOKUP_MISSING] = __atomic_load_n(
	    &rq->ms->metrics.lookup_missing, __ATOMIC_RELAXED);
	for (unsigned op = 1; op <= PROTO_OP_MAX; op++) {
		v[PROTO_STAT_REQUESTS + op - 1] = ms_metrics_requests(rq->ms,
		    op);
	}
	op_put_hdr(rq, 0);
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

/* Pins each listed session holds. */
static void
count_pins(struct pool *p, struct sess_list *l)
{
	for (uint32_t i = 0; i < l->n; i++) {
		l->v[i].pins = add_sat32(0, pool_pin_session_total(p,
		    l->v[i].id));
	}
}

/* op_sessions -- SESSIONS: every session record, with what it owns and
 * holds. */
int
op_sessions(struct req *rq)
{
	struct sess_list l = { 0 };
	int rc = list_sessions(rq->ms->pool, &l);

	if (rc == 0) {
		count_regions(rq->ms->pool, &l);
		count_pins(rq->ms->pool, &l);
		sess_list_flags(rq->ms, l.v, l.n);
		op_put_hdr(rq, 0);
		proto_put_sessions(rq->reply, l.n, l.v);
	}
	log_dbg("op=sessions session=%llu n=%u rc=%d",
	    (unsigned long long)op_sess_id(rq), l.n, rc);
	free(l.v);
	free(l.rec);
	return rc;
}
