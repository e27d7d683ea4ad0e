/*
 * pool.c -- open, create, format and close a pool; its stats.
 *
 * Why this shape: opening is a pipeline of small steps, each of which can
 * refuse the pool with its own error (not a pool, another layout version,
 * a torn or flipped superblock, a truncated file, a volatile pool from an
 * earlier boot), then a rebuild of every DRAM cache from the media: free
 * extents (regtab.c), sessions (sesstab.c), key heap and index
 * (kvindex.c), key counts and page bitmaps (kv.c). Without POOL_RDONLY the
 * rebuild also repairs what a crash can leave behind (records caught
 * mid-write, an ORPHAN region whose last key was just deleted); with it,
 * nothing is written and damaged records are only skipped, so that
 * pool_check can report them.
 *
 * Which targets are formatted: a missing file is created and formatted
 * with POOL_CREATE [open_new]; an existing file or device is formatted
 * with POOL_REFORMAT always, and with POOL_CREATE only when its first
 * 4 KiB are all zero [head_blank] -- a fresh DAX device or a zero-filled
 * file -- or when it holds a superblock of ours that only lacks its magic
 * (a format cut short by a crash) [head_interrupted], and never when it
 * holds anything else, so that pointing the metaserver at the wrong
 * device cannot clobber it. An existing target is
 * formatted to its own size rounded down to the pool's align, which is at
 * least the media's mapping alignment (the devdax alignment, e.g. 2 MiB
 * or 1 GiB) [layout_fit]; an existing pool whose align is finer than its
 * media's is refused [layout_media_check].
 *
 * Ownership [pool_open_owned]: a server's open locks the target and
 * decides from its owner record whether it may serve it [owner_enter]
 * right after mapping, before a format or a recovery can write, and
 * claims the record [owner_claim] before attach repairs anything
 * (owner.c, owner_hold.c). pool_open owns nothing: pool-inspect and tests.
 *
 * Upgrade [pool_upgrade]: a writer's open of a pool of an older 2.x
 * layout brings it to this one in place, after validate and before the
 * owner claim (upgrade.c); a read-only open leaves it as it is.
 *
 * Format ordering [pool_format]: clear the magic (persisted), zero the
 * tables (persisted), write the superblock without its magic (persisted),
 * store the magic (one 8-byte store, persisted). A crash mid-format leaves
 * a file that reads as "not a pool", never as a half-made one; POOL_CREATE
 * formats it again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crashpt.h"
#include "devscan.h"
#include "err.h"
#include "log.h"
#include "owner.h"
#include "persist.h"
#include "pool_int.h"

/* the superblock for a new pool of size bytes */
static int
plan(struct pool_sb *sb, const char *path, uint64_t size,
    const struct pool_params *pp, enum pool_coh coh)
{
	char why[200];
	int rc;

	rc = layout_plan(sb, size, pp ? pp->align : 0,
	    pp ? pp->index_slots : 0, pp ? pp->max_sessions : 0, why,
	    sizeof(why));
	if (rc == 0 && (coh == POOL_COH_SW || coh == POOL_COH_SIM)) {
		/* no line of the access area written by two hosts */
		rc = layout_plan_hosts(sb, POOL_HOSTS_MAX, why, sizeof(why));
	}
	if (rc != 0) {
		return cxlp_fail(rc, "%s: cannot format: %s", path, why);
	}
	if (getrandom(sb->uuid, sizeof(sb->uuid), 0) != sizeof(sb->uuid)) {
		return cxlp_fail(-EIO, "%s: getrandom failed", path);
	}
	pool_boot_id(sb->boot_id);
	poolcoh_seal(sb, coh);
	return 0;
}

/* Contents lost at a reboot: tmpfs, and device DAX unless an NVDIMM
 * (pmem) region serves it (devscan.h: CXL RAM and soft-reserved memory
 * keep nothing; a devdax pmem namespace keeps everything, like fsdax). */
static bool
media_volatile(const struct pool *p)
{
	struct devscan_dev d;

	if (!pmap_is_volatile(p->map)) {
		return false;
	}
	return !pmap_is_devdax(p->map) || devscan_find(p->path, &d) != 0 ||
	    d.kind != DEVSCAN_DEVDAX || !d.persistent;
}

static void
pool_format(struct pool *p, struct pool_sb *sb, bool fresh)
{
	uint64_t magic;

	if (media_volatile(p)) {
		sb->flags |= POOL_SB_VOLATILE;
	}
	layout_seal(sb);
	pool_store8(p, (uint64_t *)(void *)p->base, 0);
	if (!fresh) {
		/* a new sparse file reads as zeros already; the index is
		 * kvindex_format's, the key heap is read only through it */
		const struct pool_area *pin = &sb->area[POOL_AREA_PIN];

		memset(p->base + POOL_SB_SIZE, 0,
		    sb->area[POOL_AREA_INDEX].off - POOL_SB_SIZE);
		pool_persist_cb(p, p->base + POOL_SB_SIZE,
		    sb->area[POOL_AREA_INDEX].off - POOL_SB_SIZE);
		memset(p->base + pin->off, 0, pin->len);
		pool_persist_cb(p, p->base + pin->off, pin->len);
		memset(p->base + sb->access.off, 0, sb->access.len);
		pool_persist_cb(p, p->base + sb->access.off, sb->access.len);
	}
	memcpy(p->base + 8, (uint8_t *)sb + 8, sizeof(*sb) - 8);
	pool_persist_cb(p, p->base, sizeof(*sb));
	memcpy(&magic, sb->magic, sizeof(magic));
	pool_store8(p, (uint64_t *)(void *)p->base, magic);
}

static int
check_stale(const struct pool *p)
{
	char boot[POOL_BOOT_ID_LEN];

	/* a pool several hosts attach lives on a device that outlives any
	 * one host's boot (coh.h): no host's boot dates it */
	if (!(p->sb->flags & POOL_SB_VOLATILE) ||
	    pool_coh_multi(pool_coherence(p))) {
		return 0;
	}
	pool_boot_id(boot);
	if (strncmp(boot, p->sb->boot_id, sizeof(boot)) != 0) {
		return cxlp_fail(CXLP_E_STALE, "%s: volatile pool formatted "
		    "in boot %s, this is boot %s: its contents are gone; "
		    "reformat it", p->path, p->sb->boot_id, boot);
	}
	return 0;
}

/* point at the areas */
static int
attach_areas(struct pool *p, bool fresh)
{
	const struct pool_sb *sb = p->sb;
	const struct pool_area *a = sb->area;
	int rc;

	p->align = sb->align;
	p->data_off = a[POOL_AREA_DATA].off;
	(void)pmap_advise_huge(p->map, 0, p->data_off); /* index + key heap */
	p->rtab = (void *)(p->base + a[POOL_AREA_REGION].off);
	p->nregions = (uint32_t)a[POOL_AREA_REGION].count;
	p->rprim = p->rtab;
	p->rmir = sb->incompat & POOL_INCOMPAT_RMIRROR ?
	    p->rtab + p->nregions : NULL;
	p->stab = (void *)(p->base + a[POOL_AREA_SESSION].off);
	p->nsess = (uint32_t)a[POOL_AREA_SESSION].count;
	p->ptab = (void *)(p->base + a[POOL_AREA_PIN].off);
	p->npins = (uint32_t)a[POOL_AREA_PIN].count;
	rc = keyheap_init(&p->heap, p->base + a[POOL_AREA_HEAP].off,
	    a[POOL_AREA_HEAP].count * KV_GRANULE);
	if (rc != 0) {
		return rc;
	}
	kvindex_init(&p->kv, (void *)(p->base + a[POOL_AREA_INDEX].off),
	    a[POOL_AREA_INDEX].count, &p->heap, pool_persist_cb, p);
	if (fresh) {
		kvindex_format(&p->kv);
	}
	return 0;
}

/* every DRAM cache from the media, each step reporting into p->damage;
 * with repair, what the steps drop or roll back is written too */
static int
rebuild(struct pool *p, bool repair)
{
	uint64_t reap;
	bool pending;
	int rc;

	memset(p->damage, 0, sizeof(*p->damage));
	/* a commit cut short (kv.c note 2): settled by repair, and its
	 * recovery's writes are crash points of CXLP_CRASH_COMMIT */
	pending = kv_commit_mode(p);
	p->damage->torn += pending;
	crashpt_scope(pending && repair);
	if ((rc = evlist_init(p)) != 0 ||
	    (rc = regtab_rebuild(p, repair)) != 0 ||
	    (rc = sesstab_rebuild(p, repair)) != 0 ||
	    (rc = damage_index_recover(p, repair)) != 0 ||
	    (rc = kv_rebuild(p, repair)) != 0 ||
	    (rc = pintab_rebuild(p, repair)) != 0) {
		crashpt_scope(0);
		return rc;
	}
	reap = regtab_reap(p, repair);
	p->damage->torn += reap;
	if (repair) {
		kv_commit_settle(p);
	}
	crashpt_scope(0);
	p->damage->dropped = repair && p->damage->nrec > 0;
	return 0;
}

/* the first damaged record, for the refusal's message */
static int
refuse(const struct pool *p)
{
	const struct pool_damage *d = p->damage;
	char what[200], b[32];

	pool_damage_describe(&d->rec[0], what, sizeof(what));
	return cxlp_fail(CXLP_E_CORRUPT, "%s: damaged: %s%s; dropping %s "
	    "loses %llu keys (%s)", p->path, what,
	    d->nrec > 1 ? " and more" : "", d->nrec > 1 ? "them" : "it",
	    (unsigned long long)d->keys,
	    pool_damage_bytes(d->bytes, b, sizeof(b)));
}

/* Recovery in two phases [attach]. The first rebuild writes nothing and
 * fills the damage report; it also counts every write the second would
 * make (torn records, damaged ones, reaped orphans, tidying). Read-only
 * opens stop there. Under POOL_NODROP, damage stops the open before
 * anything is written. If the first phase counted no write, the second
 * would make none and build the same DRAM state, so it is skipped (a
 * clean pool is scanned once); otherwise the DRAM state is thrown away
 * and rebuilt with repair, which writes the recovery back. */
static int
attach(struct pool *p, bool fresh, unsigned flags)
{
	const struct pool_damage *d = p->damage;
	int rc;

	if ((rc = attach_areas(p, fresh)) != 0 ||
	    (rc = rebuild(p, false)) != 0 || p->rdonly) {
		return rc;
	}
	if (d->nrec > 0 && (flags & POOL_NODROP)) {
		return refuse(p);
	}
	if (d->nrec == 0 && d->torn == 0 && d->tidy == 0 &&
	    d->restored == 0) {
		rmirror_fini(p); /* the DRAM table is the media's */
		return 0;
	}
	pintab_fini(p);
	regtab_fini(p);
	evlist_fini(p);
	lease_fini(p);
	return rebuild(p, true);
}

static int
open_args(const char *path, unsigned flags)
{
	if (path == NULL || path[0] == '\0') {
		return cxlp_fail(-EINVAL, "pool path is empty");
	}
	if ((flags & POOL_RDONLY) && (flags & (POOL_CREATE | POOL_REFORMAT))) {
		return cxlp_fail(-EINVAL, "%s: POOL_RDONLY excludes "
		    "POOL_CREATE and POOL_REFORMAT", path);
	}
	if (flags & ~(POOL_CREATE | POOL_RDONLY | POOL_REFORMAT |
	    POOL_NODROP)) {
		return cxlp_fail(-EINVAL, "%s: unknown flags 0x%x", path,
		    flags);
	}
	return 0;
}

/* the length to map: whole file, or its 4 KiB-aligned head */
static int
map_len(const char *path, const struct stat *st, uint64_t *len)
{
	*len = 0; /* a device: all of it */
	if (!S_ISREG(st->st_mode)) {
		return 0;
	}
	if ((uint64_t)st->st_size < POOL_SB_SIZE) {
		return cxlp_fail(CXLP_E_BADMAGIC, "%s: %lld bytes, too small "
		    "to be a cxlpool pool", path, (long long)st->st_size);
	}
	*len = (uint64_t)st->st_size & ~(uint64_t)(POOL_SB_SIZE - 1);
	return 0;
}

/* blank: the first 4 KiB are all zero, as on a fresh device or a file of
 * zeros; such a target holds neither a pool nor anything else */
static bool
head_blank(const uint8_t *base)
{
	static const uint8_t zero[POOL_SB_SIZE];

	return memcmp(base, zero, sizeof(zero)) == 0;
}

/* format the mapped target, fitted to its size and its media alignment */
static int
format_existing(struct pool *p, const struct pool_params *pp)
{
	struct pool_params fit = { 0 };
	struct pool_sb sb;
	uint64_t size;
	char why[200];
	int rc;

	enum pool_coh coh = poolcoh_want(p->path, pp);

	if (pp != NULL) {
		fit = *pp;
	}
	if ((rc = poolcoh_format(p, 0, coh)) != 0) {
		return rc;
	}
	rc = layout_fit(pmap_len(p->map), fit.align, pmap_alignment(p->map),
	    &size, &fit.align, why, sizeof(why));
	if (rc != 0) {
		return cxlp_fail(rc, "%s: cannot format: %s", p->path, why);
	}
	if ((rc = plan(&sb, p->path, size, &fit, coh)) != 0) {
		return rc;
	}
	pool_format(p, &sb, false);
	return 0;
}

/* validate the superblock of an existing pool against its media */
static int
validate(struct pool *p)
{
	char why[200];
	int rc;

	rc = layout_validate(p->sb, pmap_file_size(p->map), why, sizeof(why));
	if (rc == 0) {
		rc = layout_media_check(p->sb, pmap_alignment(p->map), why,
		    sizeof(why));
	}
	if (rc != 0) {
		return cxlp_fail(rc, "%s: %s", p->path, why);
	}
	if ((rc = poolcoh_attach(p)) != 0) {
		return rc;
	}
	return check_stale(p);
}

/* The head is a superblock this code wrote whose format a crash cut
 * short: all but its magic, which pool_format clears first and stores
 * last. Whatever the target held before, a format had begun to replace
 * it, so POOL_CREATE may format it again (it would otherwise be refused
 * as "not a pool" on every start). */
static bool
head_interrupted(const struct pool *p)
{
	struct pool_sb sb;
	uint64_t magic;
	char why[8];

	memcpy(&sb, p->base, sizeof(sb));
	memcpy(&magic, sb.magic, sizeof(magic));
	if (magic != 0) {
		return false;
	}
	memcpy(sb.magic, POOL_MAGIC, sizeof(sb.magic));
	return layout_validate(&sb, pmap_file_size(p->map), why,
	    sizeof(why)) == 0;
}

/* map an existing target; validate its pool, or format it when told to
 * (POOL_REFORMAT) or when POOL_CREATE is set and it is blank or holds a
 * format a crash cut short */
static int
open_existing(struct pool *p, unsigned flags,
    const struct pool_params *pp, const struct pool_own *own, bool *fresh)
{
	struct stat st;
	uint64_t len;
	int rc;

	if (stat(p->path, &st) != 0) {
		return cxlp_fail(-errno, "%s: %s", p->path, strerror(errno));
	}
	if ((rc = map_len(p->path, &st, &len)) != 0 ||
	    (rc = poolcoh_map(p, len)) != 0) {
		return rc;
	}
	if (own != NULL && (rc = owner_enter(p, own)) != 0) {
		return rc; /* another server has it: write nothing */
	}
	if ((flags & POOL_CREATE) && !(flags & POOL_REFORMAT) &&
	    head_interrupted(p)) {
		log_info("%s: its format was cut short; formatting it again",
		    p->path);
		flags |= POOL_REFORMAT;
	}
	if ((flags & POOL_REFORMAT) ||
	    ((flags & POOL_CREATE) && head_blank(p->base))) {
		*fresh = true;
		return format_existing(p, pp);
	}
	if ((rc = validate(p)) != 0) {
		return rc;
	}
	return (flags & POOL_RDONLY) ? 0 : pool_upgrade(p);
}

/* create path as a sparse file and format it */
static int
open_new(struct pool *p, const struct pool_params *pp)
{
	uint64_t size = pp && pp->size ? pp->size : POOL_SIZE_DEFAULT;
	enum pool_coh coh = poolcoh_want(p->path, pp);
	struct pool_sb sb;
	int rc;

	if ((rc = plan(&sb, p->path, size, pp, coh)) != 0 ||
	    (rc = pmap_file_create(p->path, size)) != 0) {
		return rc;
	}
	if ((rc = poolcoh_format(p, size, coh)) != 0) {
		unlink(p->path);
		return rc;
	}
	pool_format(p, &sb, true);
	return 0;
}

/* pool_open -- see pool.h */
/* A new open_nonce for this open by a writer (layout.h): which open of
 * which file the handlers of this server map. */
static int
open_nonce_new(struct pool *p)
{
	uint64_t v = 0;

	while (v == 0) {
		if (getrandom(&v, sizeof(v), 0) != sizeof(v)) {
			return cxlp_fail(-EIO, "%s: getrandom failed", p->path);
		}
	}
	/* a quiet store, as the owner record's: no state to recover, so no
	 * crash point (tests/crash counts those from the first request) */
	pool_set8(&p->sb->open_nonce, v);
	pool_persist_quiet(p, &p->sb->open_nonce, sizeof(v));
	return 0;
}

/* pool_open_nonce -- see pool.h */
uint64_t
pool_open_nonce(const struct pool *p)
{
	return p->sb->open_nonce;
}

/* pool_file_id -- see pool.h */
void
pool_file_id(const struct pool *p, uint64_t *dev, uint64_t *ino)
{
	pmap_file_id(p->map, dev, ino);
}

/* pool_path_changed -- see pool.h */
bool
pool_path_changed(const struct pool *p, const char **what)
{
	uint64_t dev, ino, now_dev, now_ino;
	struct stat st;

	if (stat(p->path, &st) != 0) {
		*what = "no file";
		return true;
	}
	pmap_file_id(p->map, &dev, &ino);
	pmap_stat_id(&st, &now_dev, &now_ino);
	*what = "another file";
	return now_dev != dev || now_ino != ino;
}

int
pool_open(struct pool **out, const char *path, unsigned flags,
    const struct pool_params *params)
{
	return pool_open_owned(out, path, flags, params, NULL, NULL);
}

/* pool_open_report -- see damage.h */
int
pool_open_report(struct pool **out, const char *path, unsigned flags,
    const struct pool_params *params, struct pool_damage *dmg)
{
	return pool_open_owned(out, path, flags, params, NULL, dmg);
}

/* pool_open_owned -- see owner.h; own NULL: pool_open_report */
int
pool_open_owned(struct pool **out, const char *path, unsigned flags,
    const struct pool_params *params, const struct pool_own *own,
    struct pool_damage *dmg)
{
	struct pool_damage local;
	struct pool *p;
	bool fresh = false;
	int rc;

	*out = NULL;
	if (dmg != NULL) {
		memset(dmg, 0, sizeof(*dmg));
	}
	if ((rc = open_args(path, flags)) != 0) {
		return rc;
	}
	if (own != NULL && (flags & POOL_RDONLY)) {
		return cxlp_fail(-EINVAL, "%s: a read-only open owns nothing",
		    path);
	}
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (p->path = strdup(path)) == NULL) {
		free(p);
		return cxlp_fail(-ENOMEM, "%s: no memory", path);
	}
	p->rdonly = flags & POOL_RDONLY;
	if (access(path, F_OK) != 0 && errno == ENOENT &&
	    (flags & POOL_CREATE)) {
		rc = open_new(p, params);
		fresh = true;
	} else {
		rc = open_existing(p, flags, params, own, &fresh);
	}
	if (rc == 0 && own != NULL) {
		rc = owner_claim(p, own, fresh); /* before recovery writes */
	}
	if (rc == 0) {
		p->damage = dmg != NULL ? dmg : &local;
		rc = attach(p, fresh, flags);
		p->damage = NULL;
	}
	if (rc == 0 && !p->rdonly) {
		rc = open_nonce_new(p);
	}
	if (rc != 0) {
		pool_close(&p);
		return rc;
	}
	*out = p;
	return 0;
}

/* pool_close -- see pool.h */
void
pool_close(struct pool **pp)
{
	struct pool *p;

	if (pp == NULL || *pp == NULL) {
		return;
	}
	p = *pp;
	owner_release(p);
	pintab_fini(p);
	regtab_fini(p);
	evlist_fini(p);
	lease_fini(p);
	keyheap_fini(&p->heap);
	pmap_close(&p->map);
	coh_close(&p->coh);
	free(p->path);
	free(p);
	*pp = NULL;
}

/* pool_path -- the path the pool was opened with */
const char *
pool_path(const struct pool *p)
{
	return p->path;
}

/* pool_size -- whole pool, bytes */
uint64_t
pool_size(const struct pool *p)
{
	return p->sb->size;
}

/* pool_align -- region alignment, bytes */
uint64_t
pool_align(const struct pool *p)
{
	return p->sb->align;
}

/* pool_uuid_hex -- see pool.h */
void
pool_uuid_hex(const struct pool *p, char out[33])
{
	for (size_t i = 0; i < sizeof(p->sb->uuid); i++) {
		snprintf(out + 2 * i, 3, "%02x", p->sb->uuid[i]);
	}
}

/* pool_media -- see pool.h */
void
pool_media(const struct pool *p, struct pool_media *m)
{
	m->devdax = pmap_is_devdax(p->map);
	m->is_volatile = media_volatile(p);
	m->align = pmap_alignment(p->map);
	m->granularity = pmap_gran_name(pmap_granularity(p->map));
}

/* pool_stats -- a snapshot of the DRAM counters and the geometry */
void
pool_stats(const struct pool *p, struct pool_stats *st)
{
	const struct pool_area *a = p->sb->area;

	memset(st, 0, sizeof(*st));
	st->size = p->sb->size;
	st->align = p->align;
	st->meta_bytes = a[POOL_AREA_DATA].off;
	st->data_bytes = a[POOL_AREA_DATA].len;
	st->free_bytes = p->alloc.free_units * p->align;
	st->largest_free = alloc_largest(&p->alloc) * p->align;
	st->regions = p->regions;
	st->orphan_regions = p->orphans;
	st->region_slots = p->nregions;
	st->keys = p->keys;
	st->value_bytes = p->value_bytes;
	st->key_bytes = p->key_bytes;
	st->index_slots = a[POOL_AREA_INDEX].count;
	st->key_heap_bytes = a[POOL_AREA_HEAP].len;
	st->sessions = p->sessions;
	st->pins = p->pin.pins;
	st->index_tombs = p->kv.tombs;
}
