/*
 * proxy_fixture.h -- what the handler tests that count requests share
 * (test_direct.c, test_version.c): a real metaserver on a fresh 128 MiB
 * pool behind the counting proxy (tests/support/proxy.h), a config for
 * either with the suite's page and region sizes, connect-or-fail, a store
 * that must succeed, and a leak check at the end (ASan builds). Not
 * linked with handler_fixture.c, whose tests need no proxy.
 */
#ifndef CXLP_PROXY_FIXTURE_H
#define CXLP_PROXY_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cxlpool.h"
#include "proxy.h"
#include "server.h"

extern struct test_server srv;
extern struct proxy *px;
extern char px_url[160]; /* the proxy's ipc:// url */

/* pfx_start -- start srv, and px in front of it at
 * ipc:///tmp/cxlp-<name>-<pid>.sock with hook (NULL: pass everything);
 * library logging off; asserts. Call from the suite's .init. */
void pfx_start(const char *name, proxy_hook hook);
/* pfx_stop -- stop px and srv, assert no leaks. The suite's .fini. */
void pfx_stop(void);
/* pfx_config -- a new config for url, page_size pages in region_size
 * regions, direct reads on or off (caller owns; pfx_connect frees it). */
struct cxlp_config *pfx_config(const char *url, size_t page_size,
    size_t region_size, bool direct);
/* pfx_connect -- cxlp_connect with cfg, which it frees; asserts it
 * worked. */
struct cxlp_handler *pfx_connect(struct cxlp_config *cfg);
/* pfx_store_ok -- store key -> len bytes, byte i (fill + i * step);
 * asserts the key is in the pool. */
void pfx_store_ok(struct cxlp_handler *h, const char *key, size_t len,
    uint8_t fill, uint8_t step);

#endif /* CXLP_PROXY_FIXTURE_H */
