/*
 * layout.c -- plan, seal and validate the pool's on-media format.
 *
 * A pool is: superblock (4 KiB), region table, session table, KV index,
 * key heap, pin table, each starting on a 4 KiB boundary, then the access
 * area (from layout 2.2) on its own align boundaries (in sw and sim pools
 * one page-aligned slice per host, layout 2.5), then the data area
 * from the first align boundary after them to the end. These functions are pure
 * (no I/O, no mapping) so that every rejection can be tested on a struct
 * in memory; pool.c reads the bytes and calls them. Checksums are XXH64
 * (records) and XXH3 (index slots, which are checked on every lookup).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "cxlpool.h"
#include "coh.h"
#include "layout.h"
#include "pool.h" /* enum pool_region_state */

static uint64_t
round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static bool
is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

static uint64_t
pow2_ceil(uint64_t v)
{
	uint64_t p = 1;

	while (p < v) {
		p <<= 1;
	}
	return p;
}

static uint64_t
default_slots(uint64_t size)
{
	uint64_t s = pow2_ceil(size / POOL_BYTES_PER_SLOT);

	if (s < POOL_SLOTS_MIN) {
		s = POOL_SLOTS_MIN;
	}
	return s < POOL_SLOTS_MAX ? s : POOL_SLOTS_MAX; /* pools > 2 TiB */
}

/* place one area of len bytes at *cursor; advance the cursor */
static void
place(struct pool_sb *sb, enum pool_area_id id, uint64_t *cursor,
    uint64_t len, uint64_t count)
{
	sb->area[id].off = *cursor;
	sb->area[id].len = round_up(len, POOL_AREA_ALIGN);
	sb->area[id].count = count;
	*cursor += sb->area[id].len;
}

static int
plan_args(uint64_t size, uint64_t align, uint64_t slots, char *why,
    size_t n)
{
	if (!is_pow2(align) || align < POOL_AREA_ALIGN) {
		snprintf(why, n, "align %llu is not a power of two >= 4096",
		    (unsigned long long)align);
		return -EINVAL;
	}
	if (size == 0 || size % align != 0) {
		snprintf(why, n, "size %llu is not a multiple of align %llu",
		    (unsigned long long)size, (unsigned long long)align);
		return -EINVAL;
	}
	if (slots > POOL_SLOTS_MAX) {
		snprintf(why, n, "index_slots %llu exceeds %llu",
		    (unsigned long long)slots,
		    (unsigned long long)POOL_SLOTS_MAX);
		return -EINVAL;
	}
	return 0;
}

/* layout_plan -- geometry for a new pool; see layout.h */
int
layout_plan(struct pool_sb *sb, uint64_t size, uint64_t align,
    uint64_t index_slots, uint32_t max_sessions, char *why, size_t n)
{
	uint64_t cur = POOL_SB_SIZE, slots, nreg, npins, data_off;
	int rc;

	align = align ? align : (2u << 20);
	slots = index_slots ? pow2_ceil(index_slots) : default_slots(size);
	if (slots < POOL_SLOTS_MIN) {
		slots = POOL_SLOTS_MIN;
	}
	max_sessions = max_sessions ? max_sessions : POOL_SESSIONS_DEFAULT;
	if ((rc = plan_args(size, align, slots, why, n)) != 0) {
		return rc;
	}
	memset(sb, 0, sizeof(*sb));
	memcpy(sb->magic, POOL_MAGIC, sizeof(sb->magic));
	sb->major = POOL_MAJOR;
	sb->minor = POOL_MINOR;
	sb->size = size;
	sb->align = align;
	sb->next_session_id = 1;
	sb->incompat = POOL_INCOMPAT_RMIRROR;
	nreg = size / align; /* never more regions than align units */
	place(sb, POOL_AREA_REGION, &cur, 2 * nreg * sizeof(struct pool_rrec),
	    nreg);
	place(sb, POOL_AREA_SESSION, &cur,
	    (uint64_t)max_sessions * sizeof(struct pool_srec), max_sessions);
	place(sb, POOL_AREA_INDEX, &cur, slots * sizeof(struct kv_slot),
	    slots);
	place(sb, POOL_AREA_HEAP, &cur, slots * POOL_HEAP_PER_SLOT,
	    slots * POOL_HEAP_PER_SLOT / KV_GRANULE);
	npins = slots / POOL_SLOTS_PER_PIN;
	npins = npins < POOL_PINS_MIN ? POOL_PINS_MIN : npins;
	place(sb, POOL_AREA_PIN, &cur, npins * sizeof(struct pool_pinrec),
	    npins);
	sb->compat |= POOL_COMPAT_ACCESS;
	sb->access.off = round_up(cur, align);
	sb->access.len = round_up(slots, align);
	sb->access.count = slots;
	data_off = sb->access.off + sb->access.len;
	if (data_off >= size) {
		snprintf(why, n, "size %llu leaves no data area after %llu "
		    "bytes of metadata", (unsigned long long)size,
		    (unsigned long long)data_off);
		return -EINVAL;
	}
	sb->area[POOL_AREA_DATA].off = data_off;
	sb->area[POOL_AREA_DATA].len = size - data_off;
	sb->area[POOL_AREA_DATA].count = (size - data_off) / align;
	return 0;
}

/* layout_access_stride -- see layout.h */
uint64_t
layout_access_stride(const struct pool_sb *sb)
{
	return round_up(sb->access.count, POOL_AREA_ALIGN);
}

/* layout_plan_hosts -- see layout.h */
int
layout_plan_hosts(struct pool_sb *sb, uint32_t hosts, char *why, size_t n)
{
	uint64_t data_off;

	if (hosts == 0 || hosts > POOL_HOSTS_MAX) {
		snprintf(why, n, "%u access slices: 1 to %u", hosts,
		    POOL_HOSTS_MAX);
		return -EINVAL;
	}
	sb->access_hosts = hosts;
	sb->access.len = round_up(hosts * layout_access_stride(sb),
	    sb->align);
	data_off = sb->access.off + sb->access.len;
	if (data_off >= sb->size) {
		snprintf(why, n, "size %llu leaves no data area after %llu "
		    "bytes of metadata (%u access slices)",
		    (unsigned long long)sb->size,
		    (unsigned long long)data_off, hosts);
		return -EINVAL;
	}
	sb->area[POOL_AREA_DATA].off = data_off;
	sb->area[POOL_AREA_DATA].len = sb->size - data_off;
	sb->area[POOL_AREA_DATA].count = (sb->size - data_off) / sb->align;
	return 0;
}

/* layout_sb_checksum -- XXH64 of the superblock, next_session_id,
 * lease_until_ns, commit_seq, commit_done, the eviction totals,
 * open_nonce, the host table, term, the takeover and the owner record as 0 (so a 2.0 pool,
 * whose owner bytes are zero, keeps its checksum) */
static uint64_t
layout_sb_checksum(const struct pool_sb *sb)
{
	struct pool_sb tmp;

	memcpy(&tmp, sb, sizeof(tmp));
	tmp.next_session_id = 0;
	tmp.lease_until_ns = 0;
	tmp.commit_seq = 0;
	tmp.commit_done = 0;
	memset(tmp.evict_keys, 0, sizeof(tmp.evict_keys));
	memset(tmp.evict_bytes, 0, sizeof(tmp.evict_bytes));
	tmp.open_nonce = 0;
	memset(tmp.hosts, 0, sizeof(tmp.hosts));
	tmp.term = 0;
	tmp.takeover_ns = 0;
	tmp.takeover_ms = 0;
	tmp.takeover_from = 0;
	tmp.takeover_term = 0;
	memset(&tmp.owner, 0, sizeof(tmp.owner));
	return XXH64(&tmp, offsetof(struct pool_sb, checksum), 0);
}

/* layout_orec_checksum -- XXH64 of word and start_ns..reserved, read
 * through a copy (the record is live: beat changes under us) */
uint64_t
layout_orec_checksum(const struct pool_orec *o)
{
	struct pool_orec tmp;

	memcpy(&tmp, o, sizeof(tmp));
	tmp.beat = 0;
	tmp.beat_ns = 0;
	return XXH64(&tmp, offsetof(struct pool_orec, checksum), 0);
}

/* layout_seal -- store the superblock checksum */
void
layout_seal(struct pool_sb *sb)
{
	sb->checksum = layout_sb_checksum(sb);
}

/* layout_upgrade_torn -- see layout.h. On a sound superblock one
 * checksum; on another at most POOL_MINOR + 1. */
int
layout_upgrade_torn(const struct pool_sb *sb)
{
	struct pool_sb tmp;

	if (sb->major != POOL_MAJOR || sb->minor != POOL_MINOR ||
	    layout_sb_checksum(sb) == sb->checksum) {
		return -1; /* not this layout, or sound */
	}
	memcpy(&tmp, sb, sizeof(tmp));
	for (uint32_t m = 0; m < POOL_MINOR; m++) {
		tmp.minor = m;
		if (layout_sb_checksum(&tmp) == sb->checksum) {
			return (int)m;
		}
	}
	return -1;
}

static bool
all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		if (b[i] != 0) {
			return false;
		}
	}
	return true;
}

/* the record size and count each area must have */
static const uint64_t area_rec[POOL_AREA_N] = {
	[POOL_AREA_REGION] = sizeof(struct pool_rrec),
	[POOL_AREA_SESSION] = sizeof(struct pool_srec),
	[POOL_AREA_INDEX] = sizeof(struct kv_slot),
	[POOL_AREA_HEAP] = KV_GRANULE,
	[POOL_AREA_PIN] = sizeof(struct pool_pinrec),
	[POOL_AREA_DATA] = 0, /* align */
};

static int
check_area(const struct pool_sb *sb, int i, uint64_t *cursor, char *why,
    size_t n)
{
	const struct pool_area *a = &sb->area[i];
	uint64_t rec = area_rec[i] ? area_rec[i] : sb->align;

	if (a->off < *cursor || a->off % POOL_AREA_ALIGN != 0 ||
	    a->len > sb->size || a->off > sb->size - a->len) {
		snprintf(why, n, "area %d at %llu+%llu is out of place", i,
		    (unsigned long long)a->off, (unsigned long long)a->len);
		return -1;
	}
	if (a->count == 0 || a->count > a->len / rec) {
		snprintf(why, n, "area %d holds %llu records of %llu bytes in "
		    "%llu bytes", i, (unsigned long long)a->count,
		    (unsigned long long)rec, (unsigned long long)a->len);
		return -1;
	}
	*cursor = a->off + a->len;
	return 0;
}

static int
check_geometry(const struct pool_sb *sb, char *why, size_t n)
{
	const struct pool_area *d = &sb->area[POOL_AREA_DATA];
	uint64_t cur = POOL_SB_SIZE, slots = sb->area[POOL_AREA_INDEX].count;

	if (!is_pow2(sb->align) || sb->align < POOL_AREA_ALIGN ||
	    sb->size % sb->align != 0) {
		snprintf(why, n, "bad size %llu or align %llu",
		    (unsigned long long)sb->size,
		    (unsigned long long)sb->align);
		return -1;
	}
	for (int i = 0; i < POOL_AREA_N; i++) {
		if (check_area(sb, i, &cur, why, n) != 0) {
			return -1;
		}
	}
	/* the limits of the code that uses them: 32-bit record numbers,
	 * KH_NIL, a pin hash of at most 2^31 buckets */
	if (!is_pow2(slots) || slots < POOL_SLOTS_MIN ||
	    slots > POOL_SLOTS_MAX ||
	    sb->area[POOL_AREA_HEAP].count >= UINT32_MAX ||
	    sb->area[POOL_AREA_PIN].count > (1ull << 31) ||
	    sb->area[POOL_AREA_REGION].count > UINT32_MAX ||
	    ((sb->incompat & POOL_INCOMPAT_RMIRROR) &&
	    sb->area[POOL_AREA_REGION].count > sb->area[POOL_AREA_REGION].len /
	    (2 * sizeof(struct pool_rrec))) ||
	    sb->area[POOL_AREA_SESSION].count > UINT32_MAX) {
		snprintf(why, n, "bad index geometry (%llu slots)",
		    (unsigned long long)slots);
		return -1;
	}
	if (d->off % sb->align != 0 || d->off + d->len != sb->size ||
	    d->count != d->len / sb->align ||
	    sb->area[POOL_AREA_REGION].count < d->count) {
		snprintf(why, n, "data area %llu+%llu does not fit the pool",
		    (unsigned long long)d->off, (unsigned long long)d->len);
		return -1;
	}
	return 0;
}

/* the access slices: one per host in sw and sim pools (a byte every
 * host writes would be a cross-host read-modify-write of one line),
 * none elsewhere; table entries past them are zero */
static int
check_slices(const struct pool_sb *sb, char *why, size_t n)
{
	bool per_host = sb->coherence == POOL_COH_SW ||
	    sb->coherence == POOL_COH_SIM;
	const struct pool_area *a = &sb->access;

	if (sb->access_reserved != 0 || sb->access_hosts > POOL_HOSTS_MAX ||
	    per_host != (sb->access_hosts != 0) ||
	    (per_host && !(sb->compat & POOL_COMPAT_ACCESS))) {
		snprintf(why, n, "%u access slices in a pool of coherence %s",
		    sb->access_hosts, pool_coh_name(sb->coherence));
		return -1;
	}
	for (uint32_t i = per_host ? sb->access_hosts : 0; i < POOL_HOSTS_MAX;
	    i++) {
		if (sb->hosts[i] != 0) {
			snprintf(why, n, "host table entry %u is not zero", i);
			return -1;
		}
	}
	if (per_host && (a->len / layout_access_stride(sb) <
	    sb->access_hosts)) {
		snprintf(why, n, "access area of %llu bytes holds fewer than "
		    "%u slices", (unsigned long long)a->len, sb->access_hosts);
		return -1;
	}
	return 0;
}

/* the access area, if the pool has one: aligned, after the pin table,
 * before the data area, one byte per index slot (per host: check_slices) */
static int
check_access(const struct pool_sb *sb, char *why, size_t n)
{
	const struct pool_area *a = &sb->access;
	const struct pool_area *pin = &sb->area[POOL_AREA_PIN];

	if (!(sb->compat & POOL_COMPAT_ACCESS)) {
		if (all_zero(a, sizeof(*a))) {
			return check_slices(sb, why, n);
		}
		snprintf(why, n, "superblock reserved fields are not zero");
		return -1;
	}
	if (a->off % sb->align != 0 || a->len % sb->align != 0 ||
	    a->off < pin->off + pin->len || a->len > sb->size ||
	    a->off + a->len > sb->area[POOL_AREA_DATA].off ||
	    a->count != sb->area[POOL_AREA_INDEX].count || a->count > a->len) {
		snprintf(why, n, "access area %llu+%llu is out of place",
		    (unsigned long long)a->off, (unsigned long long)a->len);
		return -1;
	}
	return check_slices(sb, why, n);
}

/* the coherence mode is one this code knows, flagged as incompat iff it
 * is not host (coh.c note 1) */
static int
check_coherence(const struct pool_sb *sb, char *why, size_t n)
{
	bool flagged = (sb->incompat & POOL_INCOMPAT_COHERENCE) != 0;

	if (sb->coherence > POOL_COH_SIM || sb->coh_reserved != 0 ||
	    flagged != (sb->coherence != POOL_COH_HOST)) {
		snprintf(why, n, "coherence mode %u (incompat 0x%llx) is not "
		    "one this build knows", sb->coherence,
		    (unsigned long long)sb->incompat);
		return -1;
	}
	return 0;
}

/* layout_validate -- magic, version, checksum (or the one an interrupted
 * upgrade left: pool/upgrade.c note 2), reserved, geometry, size */
int
layout_validate(const struct pool_sb *sb, uint64_t file_size, char *why,
    size_t n)
{
	if (memcmp(sb->magic, POOL_MAGIC, sizeof(sb->magic)) != 0) {
		snprintf(why, n, "bad magic, not a cxlpool pool");
		return CXLP_E_BADMAGIC;
	}
	if (sb->major != POOL_MAJOR || (sb->incompat & ~POOL_INCOMPAT_KNOWN)) {
		snprintf(why, n, "layout %u.%u (incompat 0x%llx), this build "
		    "reads %u.x (incompat 0x%llx)", sb->major, sb->minor,
		    (unsigned long long)sb->incompat, POOL_MAJOR,
		    (unsigned long long)POOL_INCOMPAT_KNOWN);
		return CXLP_E_VERSION;
	}
	if (layout_sb_checksum(sb) != sb->checksum &&
	    layout_upgrade_torn(sb) < 0) {
		snprintf(why, n, "superblock checksum mismatch");
		return CXLP_E_CHECKSUM;
	}
	if (!all_zero(sb->reserved, sizeof(sb->reserved)) ||
	    sb->next_session_id == 0 ||
	    sb->boot_id[POOL_BOOT_ID_LEN - 1] != '\0') {
		snprintf(why, n, "superblock reserved fields are not zero");
		return CXLP_E_CORRUPT;
	}
	if (check_geometry(sb, why, n) != 0 ||
	    check_coherence(sb, why, n) != 0 || check_access(sb, why, n) != 0) {
		return CXLP_E_CORRUPT;
	}
	if (file_size < sb->size) {
		snprintf(why, n, "truncated: %llu bytes, superblock says %llu",
		    (unsigned long long)file_size,
		    (unsigned long long)sb->size);
		return CXLP_E_CORRUPT;
	}
	return 0;
}

/* layout_fit -- see layout.h */
int
layout_fit(uint64_t target_size, uint64_t want_align, uint64_t media_align,
    uint64_t *size, uint64_t *align, char *why, size_t n)
{
	uint64_t a = want_align ? want_align : (2u << 20);

	if (!is_pow2(a) || a < POOL_AREA_ALIGN || !is_pow2(media_align)) {
		snprintf(why, n, "align %llu or media alignment %llu is not a "
		    "power of two >= 4096", (unsigned long long)a,
		    (unsigned long long)media_align);
		return -EINVAL;
	}
	a = a > media_align ? a : media_align;
	if (target_size / a < 2) {
		snprintf(why, n, "%llu bytes hold fewer than two units of "
		    "the alignment %llu", (unsigned long long)target_size,
		    (unsigned long long)a);
		return -EINVAL;
	}
	*align = a;
	*size = target_size / a * a;
	return 0;
}

/* layout_media_check -- see layout.h */
int
layout_media_check(const struct pool_sb *sb, uint64_t media_align,
    char *why, size_t n)
{
	if (media_align == 0 || sb->align % media_align != 0) {
		snprintf(why, n, "pool align %llu is not a multiple of the "
		    "media's alignment %llu: regions could not be mapped; "
		    "reformat it", (unsigned long long)sb->align,
		    (unsigned long long)media_align);
		return CXLP_E_CORRUPT;
	}
	return 0;
}

/* layout_rrec_checksum -- XXH64 of a region record, state bits as 0 */
uint64_t
layout_rrec_checksum(const struct pool_rrec *r)
{
	struct pool_rrec tmp = *r;

	tmp.word = rrec_word(0, rrec_gen(r->word));
	return XXH64(&tmp, offsetof(struct pool_rrec, checksum), 0);
}

/* layout_rrec_problem -- see layout.h */
const char *
layout_rrec_problem(const struct pool_sb *sb, uint64_t align,
    const struct pool_rrec *r)
{
	uint32_t st = rrec_state(r->word);
	const struct pool_area *d = &sb->area[POOL_AREA_DATA];

	if (st != POOL_REGION_OWNED && st != POOL_REGION_ORPHAN) {
		return "bad state";
	}
	if (layout_rrec_checksum(r) != r->checksum) {
		return "checksum mismatch";
	}
	if (r->off < d->off || r->off % align != 0 || r->len == 0 ||
	    r->len % align != 0 || r->len > d->len ||
	    r->off - d->off > d->len - r->len) {
		return "extent outside the data area or unaligned";
	}
	if (r->page_size < POOL_PAGE_MIN || r->page_size > r->len ||
	    r->page_size > UINT32_MAX || r->len / r->page_size > UINT32_MAX) {
		return "bad page size";
	}
	if (r->owner == 0 || r->reserved != 0) {
		return "no owner or nonzero reserved field";
	}
	return NULL;
}

/* layout_srec_checksum -- XXH64 of a session record */
uint64_t
layout_srec_checksum(const struct pool_srec *s)
{
	return XXH64(s, offsetof(struct pool_srec, checksum), 0);
}

/* layout_pinrec_checksum -- XXH64 of a pin record's session and slot */
uint64_t
layout_pinrec_checksum(uint64_t session, uint64_t slot)
{
	uint64_t v[2] = { session, slot };

	return XXH64(v, sizeof(v), 0x70696e73u);
}

/* layout_slot_checksum -- 32-bit XXH3 of a slot body, seeded by index */
uint32_t
layout_slot_checksum(const struct kv_slot *s, uint64_t i)
{
	/* the body after word, seeded by the slot's index so a record
	 * copied to the wrong slot does not validate */
	return (uint32_t)XXH3_64bits_withSeed(&s->tag,
	    sizeof(*s) - offsetof(struct kv_slot, tag), i);
}
