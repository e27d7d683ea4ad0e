/*
 * inspect_fixture.c -- what the pool-inspect tests share: a pool path per
 * test, pool-inspect run as a program (CXLP_POOL_INSPECT) with its output
 * in out[], and a pool made through pool/ for it to read.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cxlpool.h"
#include "inspect_fixture.h"
#include "json_check.h"
#include "pool_test.h"

char path[256];
char out[65536];
uint64_t sid;
struct pool_region r1, r2;

/* inspect_setup -- see inspect_fixture.h */
void
inspect_setup(void)
{
	test_pool_path(path, sizeof(path), "/dev/shm");
}

/* inspect_teardown -- see inspect_fixture.h */
void
inspect_teardown(void)
{
	unlink(path);
}

/* run_to -- see inspect_fixture.h */
int
run_to(const char *args, bool json)
{
	const char *exe = getenv("CXLP_POOL_INSPECT");
	char cmd[1024];
	size_t n;
	FILE *f;
	int st;

	if (exe == NULL) {
		cr_skip_test("CXLP_POOL_INSPECT unset (run via meson)");
	}
	snprintf(cmd, sizeof(cmd), "'%s' %s %s", exe, args,
	    json ? "2>/dev/null" : "2>&1");
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	st = pclose(f);
	cr_assert(WIFEXITED(st), "%s", cmd);
	return WEXITSTATUS(st);
}

/* run -- see inspect_fixture.h */
int
run(const char *fmt, const char *arg)
{
	char args[1024];

	snprintf(args, sizeof(args), fmt, arg);
	return run_to(args, false);
}

/* run_json -- see inspect_fixture.h */
int
run_json(const char *fmt, const char *arg)
{
	char args[1024];
	int rc;

	snprintf(args, sizeof(args), fmt, arg);
	strcat(args, " --json");
	rc = run_to(args, true);
	cr_assert(json_valid(out), "not JSON: %s", out);
	return rc;
}

/* has -- see inspect_fixture.h */
void
has(const char *s)
{
	cr_assert(strstr(out, s) != NULL, "no \"%s\" in:\n%s", s, out);
}

/* insert -- see inspect_fixture.h */
void
insert(struct pool *p, const void *key, size_t klen,
    const struct pool_region *r, uint64_t page, uint64_t len)
{
	struct pool_kv kv;
	bool ins;

	cr_assert_eq(pool_kv_insert(p, sid, key, klen, r->id,
	    r->off + page * r->page_size, len, &kv, &ins), 0, "%s",
	    cxlp_errormsg());
}

/* make_pool -- see inspect_fixture.h */
void
make_pool(int nkeys)
{
	struct pool_params pp = { .size = TEST_POOL_SIZE };
	struct pool_session s = { .pid = 4242, .instance = 7 };
	struct pool *p;
	char key[32];

	strcpy(s.host, "inspect-host");
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0);
	cr_assert_eq(pool_session_add(p, &s), 0);
	sid = s.id;
	cr_assert_eq(pool_region_alloc(p, sid, 2u << 20, 4096, &r1), 0);
	cr_assert_eq(pool_region_alloc(p, sid, 4u << 20, 8192, &r2), 0);
	for (int i = 0; i < nkeys; i++) {
		snprintf(key, sizeof(key), "model@0@%d", i);
		insert(p, key, strlen(key), &r1, (uint64_t)i, 100);
	}
	insert(p, "other", 5, &r2, 1, 5000);
	pool_close(&p);
}
