/*
 * test_regfit.c -- tests of handler/region/regfit.c: a connect whose first
 * region does not fit the pool says what the region asked, what the pool
 * has, and which region size or --size would fit.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cxlpool.h"
#include "server.h"

static struct test_server srv;

static void
setup(void)
{
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	cr_assert_eq(test_server_start(&srv, 64u << 20, NULL), 0,
	    "metaserver did not start");
}

static void
teardown(void)
{
	test_server_stop(&srv);
}

TestSuite(regfit, .init = setup, .fini = teardown, .timeout = 60);

/* connect with region_size bytes; returns its rc, message in msg */
static int
connect_with(size_t region_size, char *msg, size_t n)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;
	int rc;

	cr_assert_eq(cxlp_config_new(&cfg), 0);
	cr_assert_eq(cxlp_config_set_server(cfg, srv.url), 0);
	cr_assert_eq(cxlp_config_set_region_size(cfg, region_size), 0);
	rc = cxlp_connect(&h, cfg);
	snprintf(msg, n, "%s", cxlp_errormsg());
	cxlp_config_delete(&cfg);
	cr_assert_eq(rc == 0, h != NULL);
	cxlp_close(&h);
	return rc;
}

/* the number after needle in msg */
static unsigned long long
number_after(const char *msg, const char *needle)
{
	const char *p = strstr(msg, needle);
	unsigned long long v = 0;

	cr_assert_not_null(p, "no \"%s\" in: %s", needle, msg);
	cr_assert_eq(sscanf(p + strlen(needle), "%llu", &v), 1, "%s", msg);
	return v;
}

Test(regfit, a_default_region_in_a_64m_pool_says_what_would_fit)
{
	char msg[256];
	unsigned long long fit, size;
	int rc = connect_with(64u << 20, msg, sizeof(msg));

	cr_assert_eq(rc, CXLP_E_NOSPACE, "connect: %s", cxlp_strerror(rc));
	cr_assert_not_null(strstr(msg, "region of 64.0 MiB does not fit "
	    "the pool's 60.0 MiB data area (60.0 MiB free)"), "message: %s",
	    msg);
	fit = number_after(msg, "a region size of ");
	size = number_after(msg, "--size ");
	cr_assert(fit > 0 && fit < (64u << 20), "message: %s", msg);
	cr_assert(size > 64, "message: %s", msg);
	/* the region size it names does fit */
	rc = connect_with(fit, msg, sizeof(msg));
	cr_assert_eq(rc, 0, "connect with region size %llu: %s", fit, msg);
}

Test(regfit, the_size_it_names_holds_the_region)
{
	char msg[256];
	unsigned long long size;

	cr_assert_eq(connect_with(64u << 20, msg, sizeof(msg)),
	    CXLP_E_NOSPACE);
	size = number_after(msg, "--size ");
	test_server_stop(&srv);
	cr_assert_eq(test_server_start(&srv, size << 20, NULL), 0);
	cr_assert_eq(connect_with(64u << 20, msg, sizeof(msg)), 0,
	    "connect to a %lluM pool: %s", size, msg);
	test_server_stop(&srv);
	cr_assert_eq(test_server_start(&srv, (size - 2) << 20, NULL), 0);
	cr_assert_eq(connect_with(64u << 20, msg, sizeof(msg)),
	    CXLP_E_NOSPACE, "a %lluM pool is not the smallest", size);
}
