/*
 * kvtest.h -- helpers shared by the integration tests: connecting a handler
 * with a given page size, filling pages with a pattern that names its writer
 * and key, and checking it back. No Criterion calls: usable in forked
 * children, which report through their exit status.
 */
#ifndef CXLP_TEST_KVTEST_H
#define CXLP_TEST_KVTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cxlpool.h"

/* kv_connect -- a handler on url with page_size pages in regions of
 * region_size bytes; NULL (reason on stderr) on failure. */
struct cxlp_handler *kv_connect(const char *url, size_t page_size,
    size_t region_size, bool auto_expand);
/* kv_connect_timeout -- kv_connect with 4 KiB pages in 4 MiB regions and
 * the given request timeout and retries. */
struct cxlp_handler *kv_connect_timeout(const char *url, unsigned timeout_ms,
    unsigned retries);
/* kv_connect_secret -- a handler with the given geometry, request timeout
 * (0: the library's) and retries, presenting secret (NULL: none). */
struct cxlp_handler *kv_connect_secret(const char *url, size_t page_size,
    size_t region_size, unsigned timeout_ms, unsigned retries,
    const char *secret);

/* kv_fill -- write a pattern that encodes (writer, key) into buf. */
void kv_fill(void *buf, size_t len, uint32_t writer, uint32_t key);

/* kv_check -- buf holds an intact pattern for key; *writer says whose. */
bool kv_check(const void *buf, size_t len, uint32_t key, uint32_t *writer);

/* kv_key -- format "prefix-<i>" into out. */
size_t kv_key(char *out, size_t n, const char *prefix, unsigned i);

/* kv_stats -- cxlp_stats or a zeroed struct (reason on stderr). */
struct cxlp_stats kv_stats(struct cxlp_handler *h);

/* kv_wait_child -- reap pid; its exit code, or 128 + signal. */
int kv_wait_child(int pid);

#endif /* CXLP_TEST_KVTEST_H */
