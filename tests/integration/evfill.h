/*
 * evfill.h -- helpers of the eviction and lease tests (test_evict.c,
 * test_lease.c): a metaserver on a 256 MiB pool, handlers with 64 KiB
 * pages in 4 MiB regions, batches that must all store, and a pool filled
 * to its last region.
 */
#ifndef CXLP_EVFILL_H
#define CXLP_EVFILL_H

#include "itest.h"

#define POOL (256 * MiB)
#define PAGE (64 * 1024)
#define REGION (4 * MiB)
#define VLEN 256 /* value bytes: the page, not the value, is the cost */
#define BATCH 64

/* ev_start -- srv on a POOL-byte pool with --evict-order order and no
 * background eviction (pool-inspect check reads the live pool without
 * the server's lock), plus extra (NULL-terminated, may be NULL). */
void ev_start(const char *order, const char *const extra[]);
/* ev_connect -- a handler with PAGE pages in REGION regions and the given
 * lease (0: the library's default). */
struct cxlp_handler *ev_connect(unsigned lease_ms);
/* ev_config -- ev_connect's config, to set more on; ev_connect_with
 * connects with it and deletes it. */
struct cxlp_config *ev_config(void);
struct cxlp_handler *ev_connect_with(struct cxlp_config *cfg);
/* ev_capacity -- pages the data area holds. */
uint64_t ev_capacity(struct cxlp_handler *h);
/* ev_store -- store keys [first, first + n) of prefix (n <= BATCH) in one
 * batch with flags; every one must report true. */
void ev_store(struct cxlp_handler *h, const char *prefix, uint32_t first,
    size_t n, unsigned flags);
/* ev_fill -- store keys of prefix until every region is taken and full;
 * returns how many. */
uint64_t ev_fill(struct cxlp_handler *h, const char *prefix, unsigned flags);

#endif
