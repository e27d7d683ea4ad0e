/*
 * cmd_check.c -- `pool-inspect check POOL [--json]`: run pool_check on a
 * read-only open (nothing is repaired) and print one line per problem.
 * Exit 0 when clean, 1 on damage or when the pool cannot be opened.
 */
#include <stdio.h>

#include "inspect.h"
#include "pool.h"

struct sink {
	bool json;
	int n;
};

static void
report(void *arg, const char *problem)
{
	struct sink *s = arg;

	if (s->json) {
		printf("%s", s->n ? ", " : "");
		inspect_json_str(stdout, problem);
	} else {
		printf("problem: %s\n", problem);
	}
	s->n++;
}

/* cmd_check -- see inspect.h */
int
cmd_check(int argc, char **argv)
{
	struct inspect_opts o;
	struct sink s = { false, 0 };
	struct pool *p;
	int rc, n;

	if ((rc = inspect_args(argc, argv, "POOL [--json]", &o)) != 0 ||
	    (rc = inspect_open(o.path, &p)) != 0) {
		return rc;
	}
	s.json = o.json;
	if (o.json) {
		printf("{\"pool\": ");
		inspect_json_str(stdout, o.path);
		printf(", \"problems_list\": [");
	}
	n = pool_check(p, report, &s);
	if (o.json) {
		printf("], \"problems\": %d}\n", n);
	} else {
		printf("%s: %d problem%s\n", o.path, n, n == 1 ? "" : "s");
	}
	pool_close(&p);
	return n == 0 ? 0 : 1;
}
