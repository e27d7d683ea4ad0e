/*
 * election.c -- the election's part of summary and stats: the leader
 * and the standbys as etcd has them (read by elect_etcd.c, which links
 * libcurl, or refused by elect_none.c in a build without the election:
 * pool-inspect needs no libcurl otherwise), and how to ask for them
 * when --elect was not given; and the pool's own part, for summary and
 * for stats where the pool is mapped here: the owner record (the
 * metaserver serving it, or the last one if it was killed; whether its
 * heartbeat still moves shows from one look to the next) and the last
 * takeover an elected leader recorded (pool/owner.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cxlpool.h"
#include "inspect.h"
#include "owner.h"
#include "pool.h"

static const char *const owner_state[] = {
	[0] = "recorded", /* pool_owner_get 0 */
	[1] = "none",     /* CXLP_E_NOTFOUND */
	[2] = "torn",     /* CXLP_E_CHECKSUM: a claim cut short or under way */
};

static int
owner_read(const struct pool *p, struct pool_owner *o)
{
	int rc = pool_owner_get(p, o);

	return rc == 0 ? 0 : rc == CXLP_E_NOTFOUND ? 1 : 2;
}

/* ms since the owner's last beat, by this host's clock (0 if ahead) */
static uint64_t
beat_age_ms(const struct pool_owner *o)
{
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return now > o->beat_ns ? (now - o->beat_ns) / 1000000ull : 0;
}

/* inspect_owner_text -- see inspect.h */
void
inspect_owner_text(const struct pool *p)
{
	struct pool_owner o;
	int st = owner_read(p, &o);

	if (st == 1) {
		printf("%-14s none\n", "owner");
		return;
	}
	printf("%-14s %spid %u on host %s (listen %s), heartbeat %.1f s ago "
	    "(beat %" PRIu64 ")\n", "owner", st == 2 ? "claim cut short: " :
	    "", o.pid, o.host[0] ? o.host : "?", o.listen[0] ? o.listen : "-",
	    beat_age_ms(&o) / 1000.0, o.beat);
	if (o.term != 0) {
		printf("%-14s %" PRIu64 "\n", "owner term", o.term);
	}
}

/* inspect_owner_json -- see inspect.h */
void
inspect_owner_json(struct jw *w, const struct pool *p)
{
	struct pool_owner o;
	int st = owner_read(p, &o);

	jw_obj(w, "owner");
	jw_str(w, "state", owner_state[st]);
	if (st != 1) {
		jw_u64(w, "pid", o.pid);
		jw_str(w, "host", o.host);
		jw_str(w, "boot_id", o.boot_id);
		jw_str(w, "listen", o.listen);
		jw_u64(w, "start_ns", o.start_ns);
		jw_u64(w, "beat", o.beat);
		jw_u64(w, "beat_ns", o.beat_ns);
		jw_u64(w, "beat_age_ms", beat_age_ms(&o));
		jw_u64(w, "term", o.term);
	}
	jw_close(w);
}

/* UTC time of ns since the epoch, as text */
static const char *
utc(char *buf, size_t n, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
	return buf;
}

/* inspect_takeover_text -- see inspect.h */
void
inspect_takeover_text(const struct pool *p)
{
	struct pool_takeover t;
	char when[40];

	pool_takeover_get(p, &t);
	if (t.at_ns == 0) {
		printf("%-14s none recorded\n", "takeover");
		return;
	}
	printf("%-14s %s: term %" PRIu64 " (was %" PRIu64 ") serving %.3f s "
	    "after the vacancy it saw\n", "takeover",
	    utc(when, sizeof(when), t.at_ns), t.term, t.from_term,
	    (double)t.ms / 1e3);
}

/* inspect_takeover_json -- see inspect.h */
void
inspect_takeover_json(struct jw *w, const struct pool *p)
{
	struct pool_takeover t;

	pool_takeover_get(p, &t);
	jw_obj(w, "takeover");
	jw_bool(w, "recorded", t.at_ns != 0);
	if (t.at_ns != 0) {
		jw_u64(w, "at_ns", t.at_ns);
		jw_u64(w, "ms", t.ms);
		jw_u64(w, "from_term", t.from_term);
		jw_u64(w, "to_term", t.term);
	}
	jw_close(w);
}


static void
standbys_text(const struct inspect_elect *e)
{
	printf("%-14s %" PRId64 "%s\n", "standbys", e->count, e->count == 0 ?
	    " (none registered: a takeover has no one to go to)" : "");
	for (unsigned i = 0; i < e->n; i++) {
		printf("%-14s %s: %s\n", "  standby", e->name[i], e->info[i]);
	}
	if ((int64_t)e->n < e->count) {
		printf("%-14s ... %" PRId64 " more\n", "", e->count -
		    (int64_t)e->n);
	}
}

/* inspect_elect_text -- see inspect.h */
void
inspect_elect_text(const struct inspect_elect *e)
{
	if (e->spec == NULL) {
		printf("%-14s not read: they are in etcd (add --elect "
		    "etcd://HOST:PORT, and --elect-key K if the servers were "
		    "given one)\n", "standbys");
		return;
	}
	if (e->rc != 0) {
		printf("%-14s etcd %s: %s\n", "election", e->spec, e->why);
		return;
	}
	if (e->leader) {
		printf("%-14s %s (term %" PRIu64 ", key %s)\n", "leader",
		    e->value, e->epoch, e->key);
	} else {
		printf("%-14s none: the key %s is free (a takeover is under "
		    "way, or no server campaigns)\n", "leader", e->key);
	}
	standbys_text(e);
}

/* inspect_elect_json -- see inspect.h */
void
inspect_elect_json(struct jw *w, const struct inspect_elect *e)
{
	jw_obj(w, "election");
	jw_str(w, "etcd", e->spec);
	if (e->spec == NULL || e->rc != 0) {
		jw_str(w, "error", e->spec == NULL ? "not asked: add --elect "
		    "etcd://HOST:PORT" : e->why);
		jw_close(w);
		return;
	}
	jw_str(w, "key", e->key);
	jw_bool(w, "leader_present", e->leader);
	if (e->leader) {
		jw_u64(w, "term", e->epoch);
		jw_str(w, "leader", e->value);
	}
	jw_i64(w, "standby_count", e->count);
	jw_arr(w, "standbys");
	for (unsigned i = 0; i < e->n; i++) {
		jw_obj(w, NULL);
		jw_str(w, "name", e->name[i]);
		jw_str(w, "record", e->info[i]);
		jw_close(w);
	}
	jw_close(w);
	jw_close(w);
}
