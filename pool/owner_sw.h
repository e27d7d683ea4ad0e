/*
 * owner_sw.h -- owner.c's record on pools that hosts share without
 * hardware coherence (coherence sw and sim, coh.h): the claim made of
 * plain reads and writes, and who "this host" is in the simulator.
 * owner_sw.c has the protocol and why it is enough. Internal to owner.c
 * and owner_hold.c.
 */
#ifndef CXLP_POOL_OWNER_SW_H
#define CXLP_POOL_OWNER_SW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

struct pool;

/* owner_sw -- p is mapped for sw or sim: no compare-and-swap across
 * hosts, every read of the record drops it first. */
bool owner_sw(const struct pool *p);

/* owner_sw_window_ms -- the claim window for a server beating every
 * beat_ms (owner_sw.c note 3). */
unsigned owner_sw_window_ms(unsigned beat_ms);

/* owner_sw_claim -- claim p's record for mine (a whole sealed record,
 * mine->word our token) if it still holds word0 and beat0, which owner.c
 * decided to take over (owner_hold.c note 1). Takes the claim window.
 * true: ours, and sealed; false: another server's (or the old owner beat
 * again). */
bool owner_sw_claim(struct pool *p, const struct pool_orec *mine,
    uint64_t word0, uint64_t beat0, unsigned window_ms);

/* owner_ident -- what this server's record says of its host: host name
 * and boot id; in sim, per simulated host (note 4). */
void owner_ident(const struct pool *p, char host[POOL_OREC_HOST_LEN],
    char boot[POOL_BOOT_ID_LEN]);

/* owner_lock_path -- the file whose flock excludes this host's other
 * servers: p's own path, or in sim one per simulated host (note 4), into
 * buf[n]. Returns the path (buf or p's), or NULL if it does not fit. */
const char *owner_lock_path(const struct pool *p, char *buf, size_t n);

#endif /* CXLP_POOL_OWNER_SW_H */
