/*
 * handler_fixture.c -- see handler_fixture.h.
 */
#include <criterion/criterion.h>

#include "handler_fixture.h"
#include "leak.h"

struct test_server srv;
struct cxlp_config *cfg;

void
hfx_start(size_t page_size, size_t region_size)
{
	hfx_start_with(page_size, region_size, NULL);
}

void
hfx_start_with(size_t page_size, size_t region_size,
    const char *const args[])
{
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	cr_assert_eq(test_server_start(&srv, 256u << 20, args), 0,
	    "metaserver did not start");
	cr_assert_eq(cxlp_config_new(&cfg), 0);
	cr_assert_eq(cxlp_config_set_server(cfg, srv.url), 0);
	cr_assert_eq(cxlp_config_set_region_size(cfg, region_size), 0);
	cr_assert_eq(cxlp_config_set_page_size(cfg, page_size), 0);
}

void
hfx_stop(void)
{
	cxlp_config_delete(&cfg);
	test_server_stop(&srv);
	cr_assert_eq(leak_check(), 0, "leaks (see stderr)");
}

struct cxlp_handler *
hfx_connect(void)
{
	struct cxlp_handler *h = NULL;
	int rc = cxlp_connect(&h, cfg);

	cr_assert_eq(rc, 0, "connect: %s (%s)", cxlp_strerror(rc),
	    cxlp_errormsg());
	cr_assert_not_null(h);
	return h;
}

/* hfx_stats_ok -- see handler_fixture.h */
struct cxlp_stats
hfx_stats_ok(struct cxlp_handler *h)
{
	struct cxlp_stats st;
	int rc = cxlp_stats(h, &st);

	cr_assert_eq(rc, 0, "stats: %s (%s)", cxlp_strerror(rc),
	    cxlp_errormsg());
	cr_assert_eq(st.pages_free + st.pages_allocated +
	    st.pages_registered + st.pages_unresolved, st.pages_total);
	return st;
}
