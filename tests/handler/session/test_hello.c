/*
 * test_hello.c -- tests of the HELLO of handler/session/call.c: what a handler
 * tells the metaserver about its process.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlpool.h"
#include "handler_fixture.h"
#include "proc.h"

static void
setup(void)
{
	hfx_start(64u << 10, 4u << 20);
}

TestSuite(hello, .init = setup, .fini = hfx_stop, .timeout = 60);

/* Field 22 of /proc/self/stat, read the simple way (this program's comm
 * holds no spaces). */
static unsigned long long
my_start_time(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/proc/self/stat", "r");
	int field = 1, c;

	cr_assert_not_null(f);
	while (field < 22 && (c = fgetc(f)) != EOF) {
		field += c == ' ';
	}
	cr_assert_eq(fscanf(f, "%llu", &v), 1);
	fclose(f);
	return v;
}

Test(hello, the_session_carries_the_process_start_time)
{
	struct cxlp_handler *h = hfx_connect();
	const char *inspect = getenv("CXLP_POOL_INSPECT");
	char out[128], want[128];
	const char *argv[] = { "pool-inspect", "stats", "--server", srv.url,
		"--json", NULL };
	unsigned long long st = my_start_time();

	cr_assert_not_null(inspect, "CXLP_POOL_INSPECT is not set");
	cr_assert_neq(st, 0);
	snprintf(out, sizeof(out), "/tmp/cxlp_hello_%d.json", (int)getpid());
	cr_assert_eq(test_run_logged(inspect, argv, out), 0);
	snprintf(want, sizeof(want), "\"pid\": %d, ", (int)getpid());
	cr_assert(test_file_has(out, want), "no session of pid %d",
	    (int)getpid());
	snprintf(want, sizeof(want), "\"start_time\": %llu, ", st);
	cr_assert(test_file_has(out, want), "no session with start_time %llu "
	    "(see %s)", st, out);
	unlink(out);
	cxlp_close(&h);
}
