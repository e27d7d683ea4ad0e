/*
 * pool_ext.h -- additions to pool.h for crash recovery (pool layout 2):
 * pins kept in the pool's metadata area, and request stamps that let a
 * request replayed after a metaserver restart find what its first run
 * already did instead of doing it again.
 *
 * Same rules as pool.h: not locked internally; calls that change the pool
 * need exclusive access.
 */
#ifndef CXLP_POOL_EXT_H
#define CXLP_POOL_EXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

/* ---- pins ---------------------------------------------------------------- */

struct pool_pin {
	uint64_t session; /* who holds them */
	uint64_t slot;    /* index slot of the key (pool_kv.slot) */
	uint32_t count;   /* pins held, > 0 */
};

/* pool_pin_reserve -- at least n pin records are free, so that n later
 * pool_pin_change(+1) calls cannot fail for want of a record; if too few
 * are, the retired ones (records of released pins, kept to recognize
 * replays: pintab.c note 2) are freed first. Returns 0, or
 * CXLP_E_NOSPACE. Changes no pin. */
int pool_pin_reserve(struct pool *p, size_t n);
/* pool_pin_change -- session takes (delta +1) or releases (delta -1) one
 * pin on slot, durably, on behalf of request req; nth counts this slot's
 * occurrences in the request so far (1 for the first). If the record
 * shows req already made its nth change (a replay after a restart), it
 * changes nothing: 0 with *applied false. req 0 is never a replay.
 * Returns 0 with *applied true, CXLP_E_NOTPINNED (release without a pin),
 * CXLP_E_NOSPACE (no free record, or PIN_COUNT_MAX pins), or -EINVAL
 * (session 0, delta not +-1, slot not a live key). */
int pool_pin_change(struct pool *p, uint64_t session, uint64_t slot,
    int delta, uint64_t req, unsigned nth, bool *applied);
/* pool_pin_held -- pins session holds on slot. */
uint32_t pool_pin_held(const struct pool *p, uint64_t session,
    uint64_t slot);
/* pool_pin_release_session -- drop every pin session holds, durably;
 * returns how many pins that was. */
uint64_t pool_pin_release_session(struct pool *p, uint64_t session);
/* pool_pin_next -- iterate the records that hold pins (not the retired
 * ones): *cursor = 0 first; 1 per record, 0 at the end. */
int pool_pin_next(const struct pool *p, uint64_t *cursor,
    struct pool_pin *out);
/* pool_pin_max -- size of the pin table (records). */
uint32_t pool_pin_max(const struct pool *p);

/* ---- request-stamped regions -------------------------------------------- */

/* pool_region_alloc_req -- pool_region_alloc stamped with the request id
 * req (0: no stamp). If owner already owns a region stamped req (the
 * request's first run got that far before a restart), returns that one
 * and sets *found; else allocates as pool_region_alloc. */
int pool_region_alloc_req(struct pool *p, uint64_t owner, uint64_t req,
    uint64_t len, uint64_t page_size, struct pool_region *out,
    bool *found);

#endif /* CXLP_POOL_EXT_H */
