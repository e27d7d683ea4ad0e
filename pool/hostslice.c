/*
 * hostslice.c -- a host's readers in the per-host access slices (sw and
 * sim pools; hostslice.h; pool/evict.c note 8 has the design).
 *
 * Each line of a slice has one writing host, the slice's, so the readers
 * of that host never need to drop it (nobody else writes it) and only
 * write it back after a store; the metaserver only reads it. The host
 * table, in the superblock, has one writing host too: the metaserver's.
 */
#include "hostslice.h"
#include "persist.h"

/* hostslice_find -- see hostslice.h */
int
hostslice_find(const struct pmap *m, const struct pool_sb *sb,
    uint64_t host)
{
	pmap_fresh(m, sb->hosts, sizeof(sb->hosts)); /* then loads here */
	for (uint32_t i = 0; host != 0 && i < sb->access_hosts &&
	    i < POOL_HOSTS_MAX; i++) {
		if (pool_load8_here(&sb->hosts[i]) == host) {
			return (int)i;
		}
	}
	return -1;
}

/* hostslice_count -- see hostslice.h */
void
hostslice_count(const struct pmap *m, uint8_t *slice, uint64_t slot)
{
	uint8_t *c = &slice[slot];

	__atomic_store_n(c, (uint8_t)(__atomic_load_n(c, __ATOMIC_RELAXED) +
	    1), __ATOMIC_RELAXED);
	pmap_writeback_lines(m, c, 1);
}
