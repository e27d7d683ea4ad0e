/*
 * test_config.c -- tests of handler/core/config.c: the documented defaults and
 * the range of every setter; a refused value leaves the config as it was.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "handler.h"

static struct cxlp_config *cfg;

static void
setup(void)
{
	cr_assert_eq(cxlp_config_new(&cfg), 0);
	cr_assert_not_null(cfg);
}

static void
teardown(void)
{
	cxlp_config_delete(&cfg);
	cr_assert_null(cfg);
}

TestSuite(config, .init = setup, .fini = teardown);

Test(config, new_config_holds_the_documented_defaults)
{
	cr_assert_str_eq(cfg->server, "ipc:///tmp/cxlpool.sock");
	cr_assert_eq(cfg->page_size, 64u << 10);
	cr_assert_eq(cfg->region_size, 64u << 20);
	cr_assert(cfg->auto_expand);
	cr_assert_eq(cfg->max_regions, 0);
	cr_assert_eq(cfg->timeout_ms, 5000);
	cr_assert_eq(cfg->retries, 3);
	cr_assert_eq(cfg->instance_id, 0);
	cr_assert_eq(cfg->keepalive_ms, 1000);
	cr_assert_eq(cfg->reserve_regions, 1);
}

Test(config, new_with_null_out_is_einval_and_delete_is_null_safe)
{
	struct cxlp_config *none = NULL;

	cr_assert_eq(cxlp_config_new(NULL), -EINVAL);
	cxlp_config_delete(NULL);
	cxlp_config_delete(&none);
	cr_assert_null(none);
}

Test(config, page_size_is_at_least_one_cache_line_and_any_size_above)
{
	static const size_t bad[] = {0, 1, 32, 63};
	static const size_t good[] = {64, 100, 1024, 4095, 4096 + 64, 12287,
	    3 * 4096};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(cxlp_config_set_page_size(cfg, bad[i]), -EINVAL,
		    "%zu", bad[i]);
		cr_assert_eq(cfg->page_size, 64u << 10);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_assert_eq(cxlp_config_set_page_size(cfg, good[i]), 0,
		    "%zu", good[i]);
		cr_assert_eq(cfg->page_size, good[i]);
	}
}

Test(config, page_size_may_not_exceed_the_region_size)
{
	cr_assert_eq(cxlp_config_set_page_size(cfg, (64u << 20) + 4096),
	    -EINVAL);
	cr_assert_eq(cfg->page_size, 64u << 10);
	cr_assert_eq(cxlp_config_set_page_size(cfg, 64u << 20), 0);
	cr_assert_eq(cfg->page_size, 64u << 20);
}

Test(config, region_size_must_hold_at_least_one_page)
{
	cr_assert_eq(cxlp_config_set_region_size(cfg, (64u << 10) - 4096),
	    -EINVAL);
	cr_assert_eq(cxlp_config_set_region_size(cfg, 0), -EINVAL);
	cr_assert_eq(cfg->region_size, 64u << 20);
	cr_assert_eq(cxlp_config_set_region_size(cfg, 64u << 10), 0);
	cr_assert_eq(cfg->region_size, 64u << 10);
	cr_assert_eq(cxlp_config_set_region_size(cfg, (2u << 20) + 4096), 0);
}

Test(config, region_size_above_one_tib_is_refused)
{
	cr_assert_eq(cxlp_config_set_region_size(cfg,
	    (size_t)CFG_REGION_MAX + 4096), -EINVAL);
	cr_assert_eq(cfg->region_size, 64u << 20);
	cr_assert_eq(cxlp_config_set_region_size(cfg,
	    (size_t)CFG_REGION_MAX), 0);
}

Test(config, timeout_must_be_above_zero)
{
	cr_assert_eq(cxlp_config_set_timeout_ms(cfg, 0), -EINVAL);
	cr_assert_eq(cfg->timeout_ms, 5000);
	cr_assert_eq(cxlp_config_set_timeout_ms(cfg, 1), 0);
	cr_assert_eq(cfg->timeout_ms, 1);
	cr_assert_eq(cxlp_config_set_timeout_ms(cfg, 600000), 0);
	cr_assert_eq(cfg->timeout_ms, 600000);
}

Test(config, server_url_must_be_non_empty_and_fit)
{
	char long_url[CFG_SERVER_MAX + 1];

	memset(long_url, 'x', sizeof(long_url) - 1);
	long_url[sizeof(long_url) - 1] = '\0';
	cr_assert_eq(cxlp_config_set_server(cfg, NULL), -EINVAL);
	cr_assert_eq(cxlp_config_set_server(cfg, ""), -EINVAL);
	cr_assert_eq(cxlp_config_set_server(cfg, long_url), -EINVAL);
	cr_assert_str_eq(cfg->server, "ipc:///tmp/cxlpool.sock");
	long_url[CFG_SERVER_MAX - 1] = '\0';
	cr_assert_eq(cxlp_config_set_server(cfg, long_url), 0);
	cr_assert_eq(cxlp_config_set_server(cfg, "tcp://127.0.0.1:7000"), 0);
	cr_assert_str_eq(cfg->server, "tcp://127.0.0.1:7000");
}

Test(config, unbounded_setters_take_any_value)
{
	cr_assert_eq(cxlp_config_set_auto_expand(cfg, false), 0);
	cr_assert(!cfg->auto_expand);
	cr_assert_eq(cxlp_config_set_max_regions(cfg, 0), 0);
	cr_assert_eq(cxlp_config_set_max_regions(cfg, 7), 0);
	cr_assert_eq(cfg->max_regions, 7);
	cr_assert_eq(cxlp_config_set_retries(cfg, 0), 0);
	cr_assert_eq(cfg->retries, 0);
	cr_assert_eq(cxlp_config_set_instance_id(cfg, UINT64_MAX), 0);
	cr_assert_eq(cfg->instance_id, UINT64_MAX);
	cr_assert_eq(cxlp_config_set_keepalive_ms(cfg, 0), 0);
	cr_assert_eq(cfg->keepalive_ms, 0);
	cr_assert_eq(cxlp_config_set_keepalive_ms(cfg, 250), 0);
	cr_assert_eq(cfg->keepalive_ms, 250);
	cr_assert_eq(cxlp_config_set_reserve_regions(cfg, 0), 0);
	cr_assert_eq(cfg->reserve_regions, 0);
	cr_assert_eq(cxlp_config_set_reserve_regions(cfg, UINT32_MAX), 0);
	cr_assert_eq(cfg->reserve_regions, UINT32_MAX);
}

Test(config, every_setter_refuses_a_null_config)
{
	cr_assert_eq(cxlp_config_set_server(NULL, "ipc:///x"), -EINVAL);
	cr_assert_eq(cxlp_config_set_page_size(NULL, 4096), -EINVAL);
	cr_assert_eq(cxlp_config_set_region_size(NULL, 1 << 20), -EINVAL);
	cr_assert_eq(cxlp_config_set_auto_expand(NULL, true), -EINVAL);
	cr_assert_eq(cxlp_config_set_max_regions(NULL, 1), -EINVAL);
	cr_assert_eq(cxlp_config_set_timeout_ms(NULL, 1), -EINVAL);
	cr_assert_eq(cxlp_config_set_retries(NULL, 1), -EINVAL);
	cr_assert_eq(cxlp_config_set_instance_id(NULL, 1), -EINVAL);
	cr_assert_eq(cxlp_config_set_keepalive_ms(NULL, 1), -EINVAL);
	cr_assert_eq(cxlp_config_set_reserve_regions(NULL, 1), -EINVAL);
}

Test(config, connect_with_null_out_is_einval)
{
	cr_assert_eq(cxlp_connect(NULL, cfg), -EINVAL);
}

Test(config, connect_to_no_server_fails_with_conn_and_null_handler)
{
	struct cxlp_handler *h = (struct cxlp_handler *)cfg;

	cr_assert_eq(cxlp_config_set_server(cfg,
	    "ipc:///tmp/cxlp-test-config-nobody.sock"), 0);
	cr_assert_eq(cxlp_connect(&h, cfg), CXLP_E_CONN);
	cr_assert_null(h);
	cr_assert_str_neq(cxlp_errormsg(), "");
}

Test(config, a_chunk_below_a_cache_line_is_refused_saying_why)
{
	cr_assert_eq(cxlp_config_set_page_size(cfg, 32), -EINVAL);
	cr_assert(strstr(cxlp_errormsg(), "32 is below 64 bytes") != NULL,
	    "%s", cxlp_errormsg());
	cr_assert(strstr(cxlp_errormsg(), "cache line") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_eq(cfg->page_size, 64u << 10);
}

Test(config, a_page_over_64_mib_fits_once_the_region_is_larger)
{
	size_t page = 80u << 20; /* a 256-token chunk of a 70B model */

	cr_assert_eq(cxlp_config_set_page_size(cfg, page), -EINVAL);
	cr_assert(strstr(cxlp_errormsg(), "larger than the region size") !=
	    NULL, "%s", cxlp_errormsg());
	cr_assert_eq(cxlp_config_set_region_size(cfg, 4 * page), 0);
	cr_assert_eq(cxlp_config_set_page_size(cfg, page), 0);
	cr_assert_eq(cfg->page_size, page);
	cr_assert_eq(cfg->region_size, 4 * page);
}
