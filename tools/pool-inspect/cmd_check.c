/*
 * cmd_check.c -- `pool-inspect check POOL [--json]`: run pool_check on a
 * read-only open (nothing is repaired) and name every problem, one line
 * each. A pool that cannot be opened at all (bad magic, torn superblock,
 * truncated file) is itself the problem reported. Exit 0 when clean, 1
 * on any problem. A request group's commit that a crash cut short is no
 * problem (the server's next start settles it: pool/kv.c note 2), so it
 * is a note: how many keys it holds, and whether the start completes it
 * or rolls it back.
 */
#include <stdio.h>

#include "cxlpool.h"
#include "err.h"
#include "inspect.h"
#include "pool.h"

struct sink {
	struct jw *w; /* NULL: text */
	int n;
};

static void
report(void *arg, const char *problem)
{
	struct sink *s = arg;

	if (s->w != NULL) {
		jw_str(s->w, NULL, problem);
	} else {
		printf("problem: %s\n", problem);
	}
	s->n++;
}

/* the note on a commit cut short, if the pool holds one */
static void
commit_note(const struct pool *p, struct jw *w)
{
	uint64_t keys;
	bool complete;

	if (!pool_commit_pending(p, &keys, &complete)) {
		return;
	}
	if (w != NULL) {
		jw_str(w, "commit_pending", complete ? "complete" : "roll_back");
		jw_u64(w, "commit_pending_keys", keys);
		return;
	}
	printf("note: a request group's commit was cut short with %llu keys "
	    "in, unseen: the metaserver's next start %s\n",
	    (unsigned long long)keys, complete ? "completes it (past its "
	    "commit point)" : "rolls it back (before its commit point)");
}

/* cmd_check -- see inspect.h */
int
cmd_check(int argc, char **argv)
{
	struct inspect_opts o;
	struct sink s = { NULL, 0 };
	struct pool *p = NULL;
	struct jw w;
	int rc;

	if ((rc = inspect_args(argc, argv, OPT_POOL, "POOL [--json]",
	    &o)) != 0) {
		return rc;
	}
	rc = pool_open(&p, o.path, POOL_RDONLY, NULL);
	if (o.json) {
		s.w = &w;
		jw_begin(&w, stdout, 0);
		jw_str(&w, "pool", o.path);
		jw_arr(&w, "problems_list");
	}
	if (rc != 0) {
		report(&s, cxlp_errormsg());
	} else {
		pool_check(p, report, &s);
	}
	if (o.json) {
		jw_close(&w);
		if (rc == 0) {
			commit_note(p, &w);
		}
		jw_u64(&w, "problems", (uint64_t)s.n);
		jw_bool(&w, "ok", s.n == 0);
		jw_end(&w);
	} else {
		if (rc == 0) {
			commit_note(p, NULL);
		}
		printf("%s: %d problem%s\n", o.path, s.n, s.n == 1 ? "" : "s");
	}
	pool_close(&p);
	return s.n == 0 ? 0 : 1;
}
