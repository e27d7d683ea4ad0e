/*
 * hostslice.h -- a reader's side of the per-host access slices of sw and
 * sim pools (pool/evict.c note 8): which slice the host table gives this
 * host, and a hit counted in it. The handler's direct reads use it
 * (handler/region/direct.c), and so do the tests that play a host.
 */
#ifndef CXLP_POOL_HOSTSLICE_H
#define CXLP_POOL_HOSTSLICE_H

#include <stdint.h>

#include "layout.h"
#include "map.h"

/* hostslice_find -- the slice the host table of the mapped superblock
 * sb (in m) gives host (coh_host_hash()), its lines dropped first, as
 * the metaserver of another host writes them; -1 when it gives none
 * (a full table, or a server that was not told of the host). */
int hostslice_find(const struct pmap *m, const struct pool_sb *sb,
    uint64_t host);

/* hostslice_count -- a hit on slot, counted in slice (this host's, in
 * the writable mapping m): its counter goes one up (a plain load and
 * store: another process of this host may lose one, harmlessly) and
 * its line is written back to the device, where the metaserver reads
 * it; the read does not wait for that write-back (pmap_writeback_lines:
 * a count that reaches the device a little later costs nothing, a fence
 * on every hit costs each read a wait). */
void hostslice_count(const struct pmap *m, uint8_t *slice, uint64_t slot);

#endif /* CXLP_POOL_HOSTSLICE_H */
