/*
 * test_inspect.c -- tools/pool-inspect run as a program (CXLP_POOL_INSPECT)
 * on pools this test makes: summary names the right counts in text and
 * JSON, check exits 0 on a clean pool and 1 on a damaged one, and bad
 * paths or non-pool files give a message and a non-zero exit.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cxlpool.h"
#include "pool_int.h"
#include "pool_test.h"

static char path[256];
static char out[8192];

static void
setup(void)
{
	test_pool_path(path, sizeof(path), "/dev/shm");
}

static void
teardown(void)
{
	unlink(path);
}

TestSuite(inspect, .init = setup, .fini = teardown);

/* run pool-inspect with args (stderr folded in); returns exit status */
static int
run(const char *args)
{
	const char *exe = getenv("CXLP_POOL_INSPECT");
	char cmd[1024];
	size_t n;
	FILE *f;
	int st;

	if (exe == NULL) {
		cr_skip_test("CXLP_POOL_INSPECT unset (run via meson)");
	}
	snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", exe, args);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	st = pclose(f);
	cr_assert(WIFEXITED(st), "%s", cmd);
	return WEXITSTATUS(st);
}

static void
make_pool(int nkeys)
{
	struct pool_params pp = { .size = TEST_POOL_SIZE };
	struct pool_region r;
	struct pool_kv kv;
	struct pool *p;
	char key[32];
	bool ins;

	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0);
	cr_assert_eq(pool_region_alloc(p, 1, 2u << 20, 4096, &r), 0);
	for (int i = 0; i < nkeys; i++) {
		snprintf(key, sizeof(key), "model@0@%d", i);
		cr_assert_eq(pool_kv_insert(p, 1, key, strlen(key), r.id,
		    r.off + (uint64_t)i * 4096, 100, &kv, &ins), 0);
	}
	pool_close(&p);
}

Test(inspect, summary_reports_the_key_count)
{
	char args[512];

	make_pool(3);
	snprintf(args, sizeof(args), "summary %s", path);
	cr_assert_eq(run(args), 0, "%s", out);
	cr_assert(strstr(out, "\nkeys             3\n") != NULL, "%s", out);
	cr_assert(strstr(out, "\nregions          1 allocated\n") != NULL,
	    "%s", out);
	cr_assert(strstr(out, "\nvalue_bytes      300 bytes\n") != NULL, "%s",
	    out);
}

Test(inspect, summary_json_reports_the_key_count)
{
	char args[512];

	make_pool(5);
	snprintf(args, sizeof(args), "summary --json %s", path);
	cr_assert_eq(run(args), 0, "%s", out);
	cr_assert(strstr(out, "\"keys\": 5,") != NULL, "%s", out);
	cr_assert(out[0] == '{', "%s", out);
}

Test(inspect, check_exits_zero_on_clean_and_one_on_damage)
{
	struct pool *p;
	char args[512];

	make_pool(2);
	snprintf(args, sizeof(args), "check %s", path);
	cr_assert_eq(run(args), 0, "%s", out);
	cr_assert(strstr(out, "0 problems") != NULL, "%s", out);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0);
	p->rtab[0].len ^= 1u << 21; /* breaks its checksum */
	pool_close(&p);
	cr_assert_eq(run(args), 1, "%s", out);
	cr_assert(strstr(out, "problem: region 0") != NULL, "%s", out);
}

Test(inspect, a_missing_path_fails_with_a_message)
{
	cr_assert_eq(run("summary /nonexistent/pool"), 1, "%s", out);
	cr_assert(strstr(out, "/nonexistent/pool") != NULL, "%s", out);
}

Test(inspect, a_file_that_is_not_a_pool_fails_with_a_message)
{
	char args[512];
	FILE *f = fopen(path, "w");

	fputs("hello\n", f);
	fclose(f);
	cr_assert_eq(truncate(path, 1 << 20), 0);
	snprintf(args, sizeof(args), "summary %s", path);
	cr_assert_eq(run(args), 1, "%s", out);
	cr_assert(strstr(out, "not a cxlpool pool") != NULL, "%s", out);
}

Test(inspect, usage_errors_exit_two_and_help_lists_commands)
{
	cr_assert_eq(run("summary"), 2, "%s", out);
	cr_assert_eq(run("frobnicate x"), 2, "%s", out);
	cr_assert_eq(run("--help"), 0, "%s", out);
	cr_assert(strstr(out, "summary") && strstr(out, "check"), "%s", out);
}
