/*
 * proxy_fixture.c -- see proxy_fixture.h.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "leak.h"
#include "proxy_fixture.h"

struct test_server srv;
struct proxy *px;
char px_url[160];

void
pfx_start(const char *name, proxy_hook hook)
{
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	cr_assert_eq(test_server_start(&srv, 128u << 20, NULL), 0,
	    "metaserver did not start");
	snprintf(px_url, sizeof(px_url), "ipc:///tmp/cxlp-%s-%d.sock", name,
	    getpid());
	cr_assert_eq(proxy_start(&px, px_url, srv.url, hook, NULL), 0);
}

void
pfx_stop(void)
{
	proxy_stop(&px);
	unlink(px_url + strlen("ipc://"));
	test_server_stop(&srv);
	cr_assert_eq(leak_check(), 0, "leaks (see stderr)");
}

struct cxlp_config *
pfx_config(const char *url, size_t page_size, size_t region_size,
    bool direct)
{
	struct cxlp_config *cfg = NULL;

	cr_assert_eq(cxlp_config_new(&cfg), 0);
	cr_assert_eq(cxlp_config_set_server(cfg, url), 0);
	cr_assert_eq(cxlp_config_set_region_size(cfg, region_size), 0);
	cr_assert_eq(cxlp_config_set_page_size(cfg, page_size), 0);
	cr_assert_eq(cxlp_config_set_direct_reads(cfg, direct), 0);
	return cfg;
}

struct cxlp_handler *
pfx_connect(struct cxlp_config *cfg)
{
	struct cxlp_handler *h = NULL;
	int rc = cxlp_connect(&h, cfg);

	cxlp_config_delete(&cfg);
	cr_assert_eq(rc, 0, "connect: %s (%s)", cxlp_strerror(rc),
	    cxlp_errormsg());
	return h;
}

void
pfx_store_ok(struct cxlp_handler *h, const char *key, size_t len,
    uint8_t fill, uint8_t step)
{
	cxlp_page_t pg;
	void *buf;
	bool stored = false;
	int rc;

	cr_assert_eq(cxlp_alloc(h, &pg, &buf), 0);
	for (size_t i = 0; i < len; i++) {
		((uint8_t *)buf)[i] = (uint8_t)(fill + i * step);
	}
	rc = cxlp_store(h, key, strlen(key), pg, len, 0, &stored);
	cr_assert(rc == 0 && stored, "store %s: %s", key, cxlp_strerror(rc));
}
