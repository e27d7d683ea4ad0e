/*
 * handler_fixture.h -- what the handler tests that need a live metaserver
 * share: a metaserver on a fresh 256 MiB pool, a config pointing at it
 * with the suite's page and region sizes, connect-or-fail, stats whose
 * page counts add up, and a leak check at the end (ASan builds).
 */
#ifndef CXLP_HANDLER_FIXTURE_H
#define CXLP_HANDLER_FIXTURE_H

#include <stddef.h>

#include "cxlpool.h"
#include "server.h"

extern struct test_server srv;
extern struct cxlp_config *cfg;

/* hfx_start -- start srv and fill cfg (page_size pages in region_size
 * regions); asserts. Call from the suite's .init. */
void hfx_start(size_t page_size, size_t region_size);
/* hfx_start_with -- hfx_start with extra metaserver flags (NULL-ended). */
void hfx_start_with(size_t page_size, size_t region_size,
    const char *const args[]);
/* hfx_stop -- free cfg, stop srv, assert no leaks. The suite's .fini. */
void hfx_stop(void);
/* hfx_connect -- cxlp_connect with cfg; asserts it worked. */
struct cxlp_handler *hfx_connect(void);
/* hfx_stats_ok -- h's stats; asserts the call worked and the page
 * counts add up to pages_total. */
struct cxlp_stats hfx_stats_ok(struct cxlp_handler *h);

#endif /* CXLP_HANDLER_FIXTURE_H */
