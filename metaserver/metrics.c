/*
 * metrics.c -- what an operator's Prometheus scrapes (http.c serves it):
 * the pool's gauges and the server's counters, in the text exposition
 * format, names and units as Prometheus has them (cxlpool_..._total,
 * _bytes, _seconds).
 *
 * Why this shape: the request counters sit on the hot path of every
 * worker, so they are plain arrays bumped with relaxed atomic adds, one
 * row per op, one column per result code (a fixed table: CXLP_E_* codes
 * are few and known), and a fixed latency histogram per op; no lock,
 * no allocation. The pool's own figures are read under ms->lock, as the
 * STATS op reads them, so a scrape and a `pool-inspect stats --server`
 * taken with nothing changing between them agree.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "elect.h"
#include "err.h"
#include "ms_int.h"
#include "owner.h"

/* upper bounds of the latency buckets, microseconds */
static const uint64_t bucket_us[MET_BUCKETS] = {
	50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
	250000, 500000, 1000000,
};

static unsigned
code_index(int rc)
{
	if (rc == 0) {
		return 0;
	}
	if (rc <= -1000 && rc >= CXLP_E_LAST) {
		return 1u + (unsigned)(-rc - 1000);
	}
	return MET_CODES - 1;
}

static void
add(uint64_t *c, uint64_t v)
{
	__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

static uint64_t
get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* ms_metrics_note -- see ms_int.h */
void
ms_metrics_note(struct ms *ms, unsigned op, int rc, uint64_t us,
    bool reattach)
{
	struct ms_metrics *m = &ms->metrics;
	unsigned b = 0;

	op = op <= PROTO_OP_MAX ? op : 0;
	while (b < MET_BUCKETS && us > bucket_us[b]) {
		b++;
	}
	add(&m->req[op][code_index(rc)], 1);
	add(&m->lat[op][b], 1);
	add(&m->lat_sum_us[op], us);
	if (reattach && rc == 0) {
		add(&m->reattaches, 1);
	}
}

/* ms_metrics_lookups -- see ms_int.h */
void
ms_metrics_lookups(struct ms *ms, uint32_t found, uint32_t missing)
{
	add(&ms->metrics.lookup_found, found);
	add(&ms->metrics.lookup_missing, missing);
}

/* ms_metrics_requests -- see ms_int.h */
uint64_t
ms_metrics_requests(const struct ms *ms, unsigned op)
{
	uint64_t n = 0;

	for (unsigned c = 0; op <= PROTO_OP_MAX && c < MET_CODES; c++) {
		n += get(&ms->metrics.req[op][c]);
	}
	return n;
}

/* ms_metrics_hit -- see ms_int.h */
void
ms_metrics_hit(struct ms *ms)
{
	add(&ms->metrics.rcache_hits, 1);
}

/* A metric's HELP and TYPE lines. */
static void
head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
one(FILE *f, const char *name, const char *type, const char *help,
    uint64_t v)
{
	head(f, name, type, help);
	fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

/* "CXLP_E_NOSPACE" of a result code index */
static void
code_name(unsigned c, char *out, size_t n)
{
	const char *s;

	if (c == 0) {
		snprintf(out, n, "ok");
		return;
	}
	if (c == MET_CODES - 1) {
		snprintf(out, n, "os_error");
		return;
	}
	s = cxlp_strerror(-(int)(c - 1) - 1000);
	snprintf(out, n, "%.*s", (int)strcspn(s, ":"), s);
}

static void
op_label(unsigned op, char *out, size_t n)
{
	const char *s = op == 0 ? "undecodable" : proto_op_name(op);
	size_t i;

	for (i = 0; s[i] != '\0' && i + 1 < n; i++) {
		out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' :
		    s[i]);
	}
	out[i] = '\0';
}

/* cxlpool_requests_total and the latency histogram */
static void
requests(FILE *f, const struct ms_metrics *m)
{
	char op[32], code[40];

	head(f, "cxlpool_requests_total", "counter",
	    "Requests answered, by operation and result code.");
	for (unsigned o = 0; o <= PROTO_OP_MAX; o++) {
		op_label(o, op, sizeof(op));
		for (unsigned c = 0; c < MET_CODES; c++) {
			uint64_t v = get(&m->req[o][c]);

			if (v == 0 && c != 0) {
				continue;
			}
			code_name(c, code, sizeof(code));
			fprintf(f, "cxlpool_requests_total{op=\"%s\",code=\"%s\"}"
			    " %llu\n", op, code, (unsigned long long)v);
		}
	}
	head(f, "cxlpool_request_duration_seconds", "histogram",
	    "Time from a request's arrival to its reply, by operation.");
	for (unsigned o = 0; o <= PROTO_OP_MAX; o++) {
		uint64_t cum = 0;

		op_label(o, op, sizeof(op));
		for (unsigned b = 0; b <= MET_BUCKETS; b++) {
			cum += get(&m->lat[o][b]);
			if (b < MET_BUCKETS) {
				fprintf(f, "cxlpool_request_duration_seconds_bucket"
				    "{op=\"%s\",le=\"%g\"} %llu\n", op,
				    (double)bucket_us[b] / 1e6,
				    (unsigned long long)cum);
			} else {
				fprintf(f, "cxlpool_request_duration_seconds_bucket"
				    "{op=\"%s\",le=\"+Inf\"} %llu\n", op,
				    (unsigned long long)cum);
			}
		}
		fprintf(f, "cxlpool_request_duration_seconds_sum{op=\"%s\"} "
		    "%.6f\n", op, (double)get(&m->lat_sum_us[o]) / 1e6);
		fprintf(f, "cxlpool_request_duration_seconds_count{op=\"%s\"} "
		    "%llu\n", op, (unsigned long long)cum);
	}
}

/* the eviction totals the pool keeps since format (pool/evict.c note
 * 7): gauges, since a counter resets only with the process and these
 * outlive it */
static void
since_format(FILE *f, const struct pool_evict_stats *ev)
{
	static const char *const cause[POOL_EVICT_CAUSES] = {
		[POOL_EVICT_PRESSURE] = "pressure",
		[POOL_EVICT_WATERMARK] = "watermark",
		[POOL_EVICT_ORPHAN] = "orphan",
	};

	head(f, "cxlpool_evictions_since_format", "gauge",
	    "Keys evicted since the pool was formatted, by cause (kept in "
	    "the pool, across restarts).");
	for (int c = 0; c < POOL_EVICT_CAUSES; c++) {
		fprintf(f, "cxlpool_evictions_since_format{cause=\"%s\"} "
		    "%llu\n", cause[c], (unsigned long long)ev->total_keys[c]);
	}
	head(f, "cxlpool_evicted_bytes_since_format", "gauge",
	    "Value bytes of the keys evicted since the pool was formatted, "
	    "by cause.");
	for (int c = 0; c < POOL_EVICT_CAUSES; c++) {
		fprintf(f, "cxlpool_evicted_bytes_since_format{cause=\"%s\"} "
		    "%llu\n", cause[c], (unsigned long long)ev->total_bytes[c]);
	}
}

/* the pool's figures, as STATS has them (op_report.c), under ms->lock */
static void
pool_figures(FILE *f, struct ms *ms)
{
	struct pool_evict_stats ev;
	struct pool_stats st;
	uint64_t leases, expired, ebytes = 0, term;
	unsigned groups, nfenced;

	ms_rdlock(ms);
	pool_stats(ms->pool, &st);
	term = pool_term(ms->pool);
	pool_evict_stats(ms->pool, &ev);
	pool_lease_stats(ms->pool, &leases, &expired);
	groups = ms->groups.n;
	nfenced = (unsigned)ms->nfenced;
	ms_unlock(ms);
	for (int c = 0; c < POOL_EVICT_CAUSES; c++) {
		ebytes += ev.bytes[c];
	}
	one(f, "cxlpool_pool_bytes", "gauge", "Size of the pool.", st.size);
	one(f, "cxlpool_data_bytes", "gauge", "Size of the data area.",
	    st.data_bytes);
	one(f, "cxlpool_free_bytes", "gauge", "Data area in no region.",
	    st.free_bytes);
	one(f, "cxlpool_largest_free_extent_bytes", "gauge",
	    "Largest free extent of the data area.", st.largest_free);
	head(f, "cxlpool_regions", "gauge", "Regions, by owner state.");
	fprintf(f, "cxlpool_regions{state=\"owned\"} %llu\n",
	    (unsigned long long)(st.regions - st.orphan_regions));
	fprintf(f, "cxlpool_regions{state=\"orphan\"} %llu\n",
	    (unsigned long long)st.orphan_regions);
	head(f, "cxlpool_pool_coherence", "gauge", "The coherence mode the "
	    "pool was formatted for (1 for its mode).");
	fprintf(f, "cxlpool_pool_coherence{mode=\"%s\"} 1\n",
	    pool_coh_name(pool_coherence(ms->pool)));
	/* only a server that serves answers: a standby listens on nothing */
	head(f, "cxlpool_role", "gauge", "This server's role (1 for it): "
	    "leader (elected, --elect) or single (no election).");
	fprintf(f, "cxlpool_role{role=\"%s\"} 1\n", ms->elect != NULL ?
	    "leader" : "single");
	one(f, "cxlpool_term", "gauge", "The highest election term (epoch) "
	    "the pool was served under; 0: none.", term);
	one(f, "cxlpool_keys", "gauge", "Keys registered.", st.keys);
	one(f, "cxlpool_value_bytes", "gauge", "Sum of the values' lengths.",
	    st.value_bytes);
	one(f, "cxlpool_sessions", "gauge", "Live sessions.",
	    st.sessions - nfenced);
	one(f, "cxlpool_pins", "gauge", "Pins held, all sessions.", st.pins);
	one(f, "cxlpool_leases", "gauge", "Leases held.", leases);
	one(f, "cxlpool_lease_expiries_total", "counter",
	    "Leases that ran out.", expired);
	one(f, "cxlpool_index_slots", "gauge", "Slots of the KV index.",
	    st.index_slots);
	one(f, "cxlpool_index_tombstones", "gauge",
	    "Index slots holding a tombstone.", st.index_tombs);
	head(f, "cxlpool_index_load_ratio", "gauge",
	    "Keys and tombstones over index slots.");
	fprintf(f, "cxlpool_index_load_ratio %.6f\n", st.index_slots == 0 ?
	    0.0 : (double)(st.keys + st.index_tombs) /
	    (double)st.index_slots);
	head(f, "cxlpool_evictions_total", "counter", "Keys evicted, by cause.");
	fprintf(f, "cxlpool_evictions_total{cause=\"pressure\"} %llu\n"
	    "cxlpool_evictions_total{cause=\"watermark\"} %llu\n"
	    "cxlpool_evictions_total{cause=\"orphan\"} %llu\n",
	    (unsigned long long)ev.keys[POOL_EVICT_PRESSURE],
	    (unsigned long long)ev.keys[POOL_EVICT_WATERMARK],
	    (unsigned long long)ev.keys[POOL_EVICT_ORPHAN]);
	one(f, "cxlpool_evicted_bytes_total", "counter",
	    "Value bytes of the keys evicted.", ebytes);
	since_format(f, &ev);
	one(f, "cxlpool_request_groups", "gauge", "Request groups open.",
	    groups);
	one(f, "cxlpool_pool_replaced", "gauge", "1: the pool's path names "
	    "another file or none; no new handlers are taken.",
	    __atomic_load_n(&ms->pool_replaced, __ATOMIC_ACQUIRE) ? 1 : 0);
}

/* v as a label value: backslash, quote and newline escaped, cut to n */
static void
label(FILE *f, const char *name, const char *v, size_t n)
{
	fprintf(f, "%s=\"", name);
	for (size_t i = 0; i < n && v[i] != '\0'; i++) {
		if (v[i] == '\\' || v[i] == '"') {
			fprintf(f, "\\%c", v[i]);
		} else if (v[i] == '\n') {
			fputs("\\n", f);
		} else {
			fputc(v[i], f);
		}
	}
	fputc('"', f);
}

/* the word after "name=" in a standby's record ("listen=... host=...
 * pid=...", standby.c leader_value) as a label */
static void
record_label(FILE *f, const char *rec, const char *name)
{
	char want[16];
	const char *at;

	snprintf(want, sizeof(want), "%s=", name);
	at = strstr(rec, want);
	at = at != NULL ? at + strlen(want) : "";
	label(f, name, at, strcspn(at, " "));
}

/* the standbys the leader listed (elect_reg.c) */
static void
standbys(FILE *f, struct ms *ms)
{
	struct elect_standby sb[ELECT_STANDBYS_MAX];
	struct elect_status st;
	unsigned n = elect_standbys(ms->elect, sb, ELECT_STANDBYS_MAX);

	elect_status(ms->elect, &st);
	one(f, "cxlpool_standbys", "gauge", "Standbys registered under the "
	    "election key at the leader's last look.",
	    st.standbys < 0 ? 0 : (uint64_t)st.standbys);
	head(f, "cxlpool_standby_info", "gauge", "One per standby (1): its "
	    "name (host), endpoints, host and pid.");
	for (unsigned i = 0; i < n; i++) {
		fputs("cxlpool_standby_info{", f);
		label(f, "name", sb[i].name, sizeof(sb[i].name));
		fputc(',', f);
		record_label(f, sb[i].value, "listen");
		fputc(',', f);
		record_label(f, sb[i].value, "host");
		fputc(',', f);
		record_label(f, sb[i].value, "pid");
		fputs("} 1\n", f);
	}
	head(f, "cxlpool_term_valid_seconds", "gauge", "How long this "
	    "leader may still write without another renewal (its fencing "
	    "deadline).");
	fprintf(f, "cxlpool_term_valid_seconds %.3f\n", st.valid_until_ms >
	    cxlp_clock_ms(CLOCK_BOOTTIME) ? (double)(st.valid_until_ms -
	    cxlp_clock_ms(CLOCK_BOOTTIME)) / 1e3 : 0.0);
}

/* the leader (the owner record) and the last takeover (the pool's) */
static void
election(FILE *f, struct ms *ms)
{
	struct pool_takeover t;
	struct pool_owner o;
	bool owned;

	ms_rdlock(ms);
	owned = pool_owner_get(ms->pool, &o) == 0;
	pool_takeover_get(ms->pool, &t);
	ms_unlock(ms);
	if (owned) {
		head(f, "cxlpool_leader_info", "gauge", "The server the owner "
		    "record names (1): host, endpoints, pid, term.");
		fputs("cxlpool_leader_info{", f);
		label(f, "host", o.host, sizeof(o.host));
		fputc(',', f);
		label(f, "listen", o.listen, sizeof(o.listen));
		fprintf(f, ",pid=\"%u\",term=\"%llu\"} 1\n", o.pid,
		    (unsigned long long)o.term);
	}
	if (ms->elect != NULL) {
		standbys(f, ms);
	}
	if (t.at_ns == 0) {
		return;
	}
	head(f, "cxlpool_takeover_timestamp_seconds", "gauge", "When the "
	    "last takeover's leader began to serve (Unix time).");
	fprintf(f, "cxlpool_takeover_timestamp_seconds %.3f\n",
	    (double)t.at_ns / 1e9);
	head(f, "cxlpool_takeover_duration_seconds", "gauge", "The last "
	    "takeover: from the vacancy its leader saw to serving.");
	fprintf(f, "cxlpool_takeover_duration_seconds %.3f\n",
	    (double)t.ms / 1e3);
	one(f, "cxlpool_takeover_from_term", "gauge", "The pool's term "
	    "before the last takeover.", t.from_term);
	one(f, "cxlpool_takeover_term", "gauge", "The term of the last "
	    "takeover.", t.term);
}

/* ms_metrics_text -- see ms_int.h */
int
ms_metrics_text(struct ms *ms, struct pbuf *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL) {
		return cxlp_fail(-ENOMEM, "metrics: no memory");
	}
	pool_figures(f, ms);
	election(f, ms);
	requests(f, &ms->metrics);
	one(f, "cxlpool_reply_cache_hits_total", "counter",
	    "Requests answered from the reply cache (a retry).",
	    get(&ms->metrics.rcache_hits));
	head(f, "cxlpool_lookup_keys_total", "counter",
	    "Keys of LOOKUPs and of request groups' skip_present the server "
	    "answered, by outcome (direct reads are counted by each "
	    "handler).");
	fprintf(f, "cxlpool_lookup_keys_total{result=\"found\"} %llu\n"
	    "cxlpool_lookup_keys_total{result=\"missing\"} %llu\n",
	    (unsigned long long)get(&ms->metrics.lookup_found),
	    (unsigned long long)get(&ms->metrics.lookup_missing));
	one(f, "cxlpool_reattaches_total", "counter",
	    "Sessions reattached (a handler back after a restart or a "
	    "dropped connection).", get(&ms->metrics.reattaches));
	head(f, "cxlpool_uptime_seconds", "gauge", "Time since the start.");
	fprintf(f, "cxlpool_uptime_seconds %.3f\n",
	    (double)(cxlp_now_ms() - ms->metrics.start_ms) / 1e3);
	if (fclose(f) != 0 || buf == NULL) {
		free(buf);
		return cxlp_fail(-ENOMEM, "metrics: no memory");
	}
	pbuf_put_bytes(out, buf, len);
	free(buf);
	return out->err;
}

/* ms_health_text -- see ms_int.h */
int
ms_health_text(struct ms *ms, struct pbuf *out)
{
	char line[160];
	bool closing;
	int n;

	ms_sess_lock(ms);
	closing = ms->closing;
	ms_sess_unlock(ms);
	n = snprintf(line, sizeof(line), "{\"status\": \"%s\", "
	    "\"uptime_seconds\": %.3f}\n", closing ? "stopping" : "ok",
	    (double)(cxlp_now_ms() - ms->metrics.start_ms) / 1e3);
	pbuf_put_bytes(out, line, (size_t)n);
	return closing ? 1 : 0;
}
