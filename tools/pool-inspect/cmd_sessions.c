/*
 * cmd_sessions.c -- `pool-inspect sessions POOL [--json]`: the session
 * table as the pool records it (pool_session_next): id, pid, host,
 * instance id, process start time, and how many regions each owns. The
 * token is a secret and is never printed. This is the pool's view: a
 * session whose process died stays recorded until a metaserver reaps it.
 * (A running server's live sessions: `pool-inspect stats --server URL`.)
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"
#include "pool.h"

static uint64_t
regions_of(const struct pool *p, uint64_t id)
{
	struct pool_region r;
	uint64_t n = 0;

	for (uint32_t i = 0; i < pool_region_max(p); i++) {
		if (pool_region_get(p, i, &r) == 0 &&
		    r.state == POOL_REGION_OWNED && r.owner == id) {
			n++;
		}
	}
	return n;
}

static void
row(struct jw *w, const struct pool *p, const struct pool_session *s)
{
	char host[sizeof(s->host) * 4 + 4];
	uint64_t nreg = regions_of(p, s->id);

	if (w == NULL) {
		printf("%8" PRIu64 "  %8u  %-24s  %#18" PRIx64 "  %12" PRIu64
		    "  %7" PRIu64 "\n", s->id, s->pid, fmt_key(host,
		    sizeof(host), s->host, strnlen(s->host, sizeof(s->host)),
		    24), s->instance, s->start_time, nreg);
		return;
	}
	jw_obj(w, NULL);
	jw_u64(w, "id", s->id);
	jw_u64(w, "pid", s->pid);
	jw_bytes(w, "host", s->host, strnlen(s->host, sizeof(s->host)));
	jw_u64(w, "instance", s->instance);
	jw_u64(w, "start_time", s->start_time);
	jw_u64(w, "regions", nreg);
	jw_close(w);
}

/* cmd_sessions -- see inspect.h */
int
cmd_sessions(int argc, char **argv)
{
	struct inspect_opts o;
	struct pool_session s;
	uint64_t cursor = 0, n = 0;
	struct pool *p;
	struct jw w;
	int rc;

	if ((rc = inspect_args(argc, argv, OPT_POOL, "POOL [--json]",
	    &o)) != 0 || (rc = inspect_open(o.path, &p)) != 0) {
		return rc;
	}
	if (o.json) {
		jw_begin(&w, stdout, 0);
		jw_str(&w, "pool", o.path);
		jw_arr(&w, "sessions");
	} else {
		printf("%8s  %8s  %-24s  %18s  %12s  %7s\n", "ID", "PID",
		    "HOST", "INSTANCE", "START TICKS", "REGIONS");
	}
	while (pool_session_next(p, &cursor, &s) == 1) {
		row(o.json ? &w : NULL, p, &s);
		n++;
	}
	if (o.json) {
		jw_close(&w);
		jw_u64(&w, "count", n);
		jw_end(&w);
	} else {
		printf("%" PRIu64 " session%s recorded\n", n,
		    n == 1 ? "" : "s");
	}
	pool_close(&p);
	return 0;
}
