/*
 * persist.h -- the pool's publish and shared-read primitives: every write
 * the metaserver makes to the metadata area reaches other processes (and
 * media) through here, and every read of a word another host may write.
 * persist.c says why they are kept apart.
 *
 * Callers hold what the pool's calls need (pool.h: exclusive access for
 * writes); these functions take no lock.
 */
#ifndef CXLP_POOL_PERSIST_H
#define CXLP_POOL_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pool;

/* pool_persist_cb -- make [addr, addr + len) of p's mapping visible and
 * durable after plain stores to it (a crash point; ctx = p, the shape of
 * kvindex_init's persist callback). */
void pool_persist_cb(void *ctx, const void *addr, size_t len);
/* pool_store8 -- publish: one aligned 8-byte release store of v at dst in
 * p's mapping, then persist it (a crash point). p must be writable. */
void pool_store8(struct pool *p, uint64_t *dst, uint64_t v);

/* The owner record's words (owner.c, owner_hold.c): written from a
 * timer, not by the workload a crash test counts, so they pass no crash
 * point (owner_hold.c note 4), and read while a server on another host
 * may write them. */
/* pool_persist_quiet -- pool_persist_cb without the crash point. */
void pool_persist_quiet(struct pool *p, const void *addr, size_t len);
/* pool_set8 -- one aligned 8-byte release store of v at dst, not yet
 * persisted (the caller persists it with its neighbours). */
void pool_set8(uint64_t *dst, uint64_t v);
/* pool_cas8 -- compare-and-swap *dst from *expect to v (acquire-release);
 * true if it swapped, else false with *expect = what *dst held. */
bool pool_cas8(uint64_t *dst, uint64_t *expect, uint64_t v);
/* pool_load8 -- one aligned 8-byte acquire load of a word another
 * process or host may be writing: in sw and sim its line is dropped
 * first (pool_fresh), so the load reads what the device holds, not this
 * host's cached copy. The caller must not be storing to that line from
 * another thread meanwhile (sim.c note 3). */
uint64_t pool_load8(const struct pool *p, const uint64_t *src);
/* pool_load8_here -- the same load without the drop: for a word only
 * this host writes (the metaserver's own totals), or one whose line the
 * caller has just dropped. */
uint64_t pool_load8_here(const uint64_t *src);

#endif /* CXLP_POOL_PERSIST_H */
