/*
 * upgrade.c -- bring a pool of an older 2.x layout to this one's
 * (POOL_MINOR) in place, when a writer opens it.
 *
 * Why in place and why so small: a minor layout change only gives
 * meaning to bytes an older pool holds as zero (layout.h's version
 * comment), so an older pool is already a valid pool of this layout
 * whose new fields hold their defaults. What the upgrade changes is
 * what the pool says it is, so that a reader (pool-inspect, a later
 * release) knows which fields it may trust, and it must never leave a
 * superblock that no release opens.
 *
 * DESIGN NOTES
 *
 * 1. When [pool_upgrade, from open_existing in pool.c]: an open without
 *    POOL_RDONLY of an existing pool, after layout_validate and
 *    owner_enter (this server may write the pool, as a format may) and
 *    before owner_claim and the recovery, so that nothing of this
 *    layout (the owner record's term) is written into a pool whose
 *    version still says an older one. A read-only open (pool-inspect)
 *    writes nothing: it shows the pool as it is.
 *
 * 2. Order, each step persisted before the next:
 *      a. the fields each minor after the pool's added, given the value
 *         an older pool means [step[]]: none for 2.5 (coherence,
 *         coh_host, access_hosts, hosts[], term and the owner record's
 *         term read as zero in an older pool, and zero is their value
 *         there: a host pool, one access slice for all hosts, never
 *         served by an elected leader);
 *      b. the version: major and minor are one aligned 8-byte word,
 *         stored at once [store_version];
 *      c. the checksum, one 8-byte store [store_checksum].
 *    Where a kill -9 (or a power cut: pool/crashpt.h's tear) leaves it:
 *    before b, the old pool as it was: both releases open it, this one
 *    upgrades it. Between b and c: minor POOL_MINOR under the old
 *    minor's checksum. The previous release refuses that (checksum
 *    mismatch): its checksum covers the minor, so no order of writes to
 *    its superblock avoids this one window, and a copy elsewhere would
 *    help only this release, which needs none. This release recognizes
 *    it (layout_upgrade_torn: the checksum matches the same bytes with
 *    an older minor), reads it, and its next writer finishes with c.
 *    After c: a pool of this layout, which the previous release opens
 *    too (it reads every 2.x and checks only that the bytes it does not
 *    know are zero), so a metaserver can be rolled back: unless an
 *    elected leader wrote term, or the pool is sw or sim (which only
 *    this layout formats, and marks incompat).
 *
 * 3. For the next minor: a field written in step a must be outside the
 *    checksum (a checksummed one breaks the old checksum before the
 *    version is stored: extend layout_upgrade_torn first), and a field
 *    that an older release must not ignore needs an incompat bit (its
 *    reserved check would refuse the pool as corrupt, naming no
 *    version), as POOL_INCOMPAT_COHERENCE does.
 */
#include <stddef.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "persist.h"
#include "pool_int.h"

static_assert(offsetof(struct pool_sb, major) == 8 &&
    offsetof(struct pool_sb, minor) == 12,
    "major and minor are one aligned 8-byte word");

/* note 2a: what minor m added, as a pool formatted before it must hold
 * it; NULL where zero (the older pool's bytes) is that value */
static int (*const step[POOL_MINOR + 1])(struct pool *p) = {
	[5] = NULL, /* coherence host, no host table, term 0 */
};

static int
store_fields(struct pool *p, uint32_t from)
{
	int rc;

	for (uint32_t m = from + 1; m <= POOL_MINOR; m++) {
		if (step[m] != NULL && (rc = step[m](p)) != 0) {
			return rc;
		}
	}
	return 0;
}

/* note 2b: major and minor in one store */
static void
store_version(struct pool *p)
{
	uint64_t *w = (uint64_t *)(void *)&p->sb->major;

	pool_store8(p, w, (uint64_t)POOL_MINOR << 32 | POOL_MAJOR);
}

/* note 2c */
static void
store_checksum(struct pool *p)
{
	struct pool_sb sb;

	memcpy(&sb, p->sb, sizeof(sb));
	layout_seal(&sb);
	pool_store8(p, &p->sb->checksum, sb.checksum);
}

/* pool_upgrade -- see pool_int.h */
int
pool_upgrade(struct pool *p)
{
	int torn = layout_upgrade_torn(p->sb);
	uint32_t from = torn >= 0 ? (uint32_t)torn : p->sb->minor;
	int rc;

	if (torn < 0 && p->sb->minor >= POOL_MINOR) {
		return 0; /* this layout, or a newer minor: not ours to touch */
	}
	if (torn >= 0) {
		log_info("%s: its upgrade from layout %u.%u to %u.%u was cut "
		    "short; finishing it", p->path, POOL_MAJOR, from,
		    POOL_MAJOR, POOL_MINOR);
	} else {
		log_info("%s: layout %u.%u; upgrading it to %u.%u in place",
		    p->path, POOL_MAJOR, from, POOL_MAJOR, POOL_MINOR);
		if ((rc = store_fields(p, from)) != 0) {
			return rc;
		}
		store_version(p);
	}
	store_checksum(p);
	return 0;
}

/* pool_layout -- see pool.h */
void
pool_layout(const struct pool *p, uint32_t *major, uint32_t *minor,
    int *cut_from)
{
	*major = p->sb->major;
	*minor = p->sb->minor;
	*cut_from = layout_upgrade_torn(p->sb);
}
