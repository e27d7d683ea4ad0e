/*
 * test_layout.c -- pool/layout.c: geometry planning, sealing, and every
 * way layout_validate refuses a superblock.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "coh.h"
#include "cxlpool.h"
#include "layout.h"

static struct pool_sb sb;
static char why[256];

static void
plan_default(void)
{
	cr_assert_eq(layout_plan(&sb, 64ull << 20, 0, 0, 0, why, sizeof(why)),
	    0, "%s", why);
	layout_seal(&sb);
}

TestSuite(layout, .init = plan_default);

Test(layout, default_1gib_pool_keeps_metadata_to_a_few_percent)
{
	const struct pool_area *a = sb.area;

	cr_assert_eq(layout_plan(&sb, 1ull << 30, 0, 0, 0, why, sizeof(why)),
	    0);
	cr_assert_eq(a[POOL_AREA_INDEX].count, 1u << 18);
	cr_assert_eq(a[POOL_AREA_SESSION].count, 1024);
	cr_assert_eq(a[POOL_AREA_DATA].off % (2u << 20), 0);
	cr_assert_lt(a[POOL_AREA_DATA].off, (1ull << 30) / 25,
	    "metadata %llu bytes", (unsigned long long)a[POOL_AREA_DATA].off);
	cr_assert_eq(a[POOL_AREA_DATA].off + a[POOL_AREA_DATA].len, 1ull << 30);
	cr_assert_geq(a[POOL_AREA_REGION].count, a[POOL_AREA_DATA].count);
}

Test(layout, areas_are_ordered_page_aligned_and_disjoint)
{
	uint64_t end = POOL_SB_SIZE;

	for (int i = 0; i < POOL_AREA_N; i++) {
		cr_assert_geq(sb.area[i].off, end);
		cr_assert_eq(sb.area[i].off % 4096, 0);
		end = sb.area[i].off + sb.area[i].len;
	}
	cr_assert_eq(end, sb.size);
}

Test(layout, params_override_slots_and_sessions)
{
	cr_assert_eq(layout_plan(&sb, 64ull << 20, 4u << 20, 1000, 7, why,
	    sizeof(why)), 0);
	cr_assert_eq(sb.area[POOL_AREA_INDEX].count, 1024);
	cr_assert_eq(sb.area[POOL_AREA_SESSION].count, 7);
	cr_assert_eq(sb.align, 4u << 20);
}

Test(layout, plan_rejects_impossible_geometry)
{
	cr_assert_eq(layout_plan(&sb, 3ull << 20, 0, 0, 0, why, 256), -EINVAL);
	cr_assert_eq(layout_plan(&sb, 64ull << 20, 3000, 0, 0, why, 256),
	    -EINVAL);
	cr_assert_eq(layout_plan(&sb, 2ull << 20, 0, 0, 0, why, 256), -EINVAL,
	    "a pool with no room for data");
	cr_assert(strstr(why, "no data area") != NULL, "%s", why);
}

/* The largest index the plan allows is one the pool can open: its key
 * heap's granules must stay below KH_NIL (2^32 - 1). A pool beyond 2 TiB
 * gets that index, not a larger one. */
Test(layout, the_largest_index_planned_validates)
{
	const uint64_t size = 8ull << 40; /* 8 TiB: sb only, no file */

	cr_assert_eq(layout_plan(&sb, size, 0, 0, 0, why, 256), 0, "%s", why);
	cr_assert_eq(sb.area[POOL_AREA_INDEX].count, POOL_SLOTS_MAX);
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, size, why, 256), 0, "%s", why);
	cr_assert_eq(layout_plan(&sb, size, 0, 2 * POOL_SLOTS_MAX, 0, why,
	    256), -EINVAL);
}

/* Fewer slots than any plan makes: the index code needs at least 4. */
Test(layout, an_index_below_the_minimum_is_corrupt)
{
	sb.area[POOL_AREA_INDEX].count = 2;
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), CXLP_E_CORRUPT);
	cr_assert(strstr(why, "index geometry") != NULL, "%s", why);
}

Test(layout, a_sealed_superblock_validates)
{
	cr_assert_eq(layout_validate(&sb, sb.size, why, sizeof(why)), 0, "%s",
	    why);
}

Test(layout, next_session_id_changes_without_breaking_the_checksum)
{
	sb.next_session_id = 12345;
	cr_assert_eq(layout_validate(&sb, sb.size, why, sizeof(why)), 0);
}

Test(layout, bad_magic_is_badmagic)
{
	sb.magic[0] = 'X';
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), CXLP_E_BADMAGIC);
}

Test(layout, other_major_is_version)
{
	sb.major = POOL_MAJOR + 1;
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), CXLP_E_VERSION);
}

Test(layout, unknown_incompat_bit_is_version)
{
	sb.incompat = 1ull << 40;
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), CXLP_E_VERSION);
}

Test(layout, unknown_compat_bit_is_accepted)
{
	sb.compat |= 1ull << 40;
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), 0);
}

Test(layout, access_area_sits_alone_on_align_boundaries_before_data)
{
	const struct pool_area *a = &sb.access;

	cr_assert(sb.compat & POOL_COMPAT_ACCESS);
	cr_assert_eq(a->count, sb.area[POOL_AREA_INDEX].count);
	cr_assert_eq(a->off % sb.align, 0);
	cr_assert_eq(a->len % sb.align, 0);
	cr_assert_geq(a->len, a->count);
	cr_assert_geq(a->off, sb.area[POOL_AREA_PIN].off +
	    sb.area[POOL_AREA_PIN].len);
	cr_assert_eq(a->off + a->len, sb.area[POOL_AREA_DATA].off);
}

Test(layout, a_pool_without_the_access_area_still_validates)
{
	/* a 2.1 pool: no compat bit, its bytes were reserved (zero) */
	sb.compat &= ~POOL_COMPAT_ACCESS;
	sb.minor = 1;
	memset(&sb.access, 0, sizeof(sb.access));
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), 0, "%s", why);
	sb.access.len = 1; /* reserved bytes that are not zero */
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), CXLP_E_CORRUPT);
}

Test(layout, an_access_area_out_of_place_is_corrupt)
{
	struct pool_sb b = sb;

	b.access.off += 4096; /* not on an align boundary */
	layout_seal(&b);
	cr_assert_eq(layout_validate(&b, b.size, why, 256), CXLP_E_CORRUPT);
	cr_assert(strstr(why, "access area") != NULL, "%s", why);
	b = sb;
	b.access.count /= 2; /* not one byte per slot */
	layout_seal(&b);
	cr_assert_eq(layout_validate(&b, b.size, why, 256), CXLP_E_CORRUPT);
	b = sb;
	b.access.off += b.align; /* runs into the data area */
	layout_seal(&b);
	cr_assert_eq(layout_validate(&b, b.size, why, 256), CXLP_E_CORRUPT);
}

/* an sw pool as pool.c plans one: a page-aligned slice per host */
static void
plan_sw(struct pool_sb *b)
{
	*b = sb;
	b->coherence = POOL_COH_SW;
	b->incompat |= POOL_INCOMPAT_COHERENCE;
	cr_assert_eq(layout_plan_hosts(b, POOL_HOSTS_MAX, why, sizeof(why)),
	    0, "%s", why);
	layout_seal(b);
}

Test(layout, an_sw_pool_has_a_page_aligned_slice_per_host)
{
	struct pool_sb b;
	uint64_t stride;

	plan_sw(&b);
	stride = layout_access_stride(&b);
	cr_assert_eq(stride % 4096, 0);
	cr_assert_geq(stride, b.access.count);
	cr_assert_geq(b.access.len, POOL_HOSTS_MAX * stride);
	cr_assert_eq(b.access.len % b.align, 0);
	cr_assert_eq(b.access.off + b.access.len, b.area[POOL_AREA_DATA].off);
	cr_assert_eq(b.area[POOL_AREA_DATA].off + b.area[POOL_AREA_DATA].len,
	    b.size);
	cr_assert_eq(layout_validate(&b, b.size, why, 256), 0, "%s", why);
	/* the host table changes after format, outside the checksum */
	b.hosts[3] = 0x1234;
	cr_assert_eq(layout_validate(&b, b.size, why, 256), 0, "%s", why);
	cr_assert_eq(layout_plan_hosts(&b, POOL_HOSTS_MAX + 1, why, 256),
	    -EINVAL);
}

Test(layout, slices_that_do_not_match_the_mode_are_corrupt)
{
	struct pool_sb b;

	plan_sw(&b);
	b.access_hosts = 0; /* every host writing one slice: refused */
	layout_seal(&b);
	cr_assert_eq(layout_validate(&b, b.size, why, 256), CXLP_E_CORRUPT);
	cr_assert(strstr(why, "access slices") != NULL, "%s", why);
	b = sb;
	b.access_hosts = 2; /* slices in a host pool */
	layout_seal(&b);
	cr_assert_eq(layout_validate(&b, b.size, why, 256), CXLP_E_CORRUPT);
	b = sb;
	b.hosts[0] = 1; /* a table entry without its slice */
	cr_assert_eq(layout_validate(&b, b.size, why, 256), CXLP_E_CORRUPT);
	cr_assert(strstr(why, "host table") != NULL, "%s", why);
}

Test(layout, any_flipped_byte_is_checksum)
{
	/* from compat on: magic and version fields are judged first */
	size_t end = offsetof(struct pool_sb, next_session_id);

	for (size_t off = offsetof(struct pool_sb, compat); off < end;
	    off += 7) {
		struct pool_sb b = sb;

		((uint8_t *)&b)[off] ^= 0x10;
		cr_assert_eq(layout_validate(&b, b.size, why, 256),
		    CXLP_E_CHECKSUM, "byte %zu", off);
	}
}

Test(layout, nonzero_reserved_is_corrupt)
{
	sb.reserved[100] = 1;
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), CXLP_E_CORRUPT);
}

/* The owner record has its own checksum and changes while the pool is
 * served: the superblock's checksum and reserved check leave it out. */
Test(layout, an_owner_record_changes_neither_checksum_nor_validity)
{
	uint64_t sum = sb.checksum;

	sb.owner.word = 0x1234;
	sb.owner.beat = 7;
	sb.owner.pid = 42;
	strcpy(sb.owner.host, "h1");
	sb.owner.checksum = layout_orec_checksum(&sb.owner);
	layout_seal(&sb);
	cr_assert_eq(sb.checksum, sum);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), 0, "%s", why);
}

Test(layout, owner_record_checksum_covers_its_body_not_its_beat)
{
	uint64_t sum;

	sb.owner.word = 1;
	sb.owner.pid = 42;
	sum = layout_orec_checksum(&sb.owner);
	sb.owner.beat = 99;
	sb.owner.beat_ns = 12345;
	cr_assert_eq(layout_orec_checksum(&sb.owner), sum);
	sb.owner.pid = 43;
	cr_assert_neq(layout_orec_checksum(&sb.owner), sum);
	sb.owner.pid = 42;
	sb.owner.word = 2;
	cr_assert_neq(layout_orec_checksum(&sb.owner), sum);
}

/* A layout 2.0 superblock (minor 0, owner bytes zero) is read as one
 * with no owner. */
Test(layout, a_minor_0_superblock_is_accepted)
{
	sb.minor = 0;
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), 0, "%s", why);
}

Test(layout, file_shorter_than_the_pool_is_corrupt)
{
	cr_assert_eq(layout_validate(&sb, sb.size - 4096, why, 256),
	    CXLP_E_CORRUPT);
	cr_assert(strstr(why, "truncated") != NULL, "%s", why);
}

Test(layout, overlapping_areas_are_corrupt)
{
	sb.area[POOL_AREA_INDEX].off = sb.area[POOL_AREA_SESSION].off;
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), CXLP_E_CORRUPT);
}

Test(layout, unaligned_data_area_is_corrupt)
{
	sb.area[POOL_AREA_DATA].off += 4096;
	sb.area[POOL_AREA_DATA].len -= 4096;
	layout_seal(&sb);
	cr_assert_eq(layout_validate(&sb, sb.size, why, 256), CXLP_E_CORRUPT);
}

Test(layout, region_checksum_ignores_state_but_not_gen)
{
	struct pool_rrec r = { .word = rrec_word(1, 5), .owner = 9,
		.off = 4096, .len = 8192, .page_size = 4096 };
	uint64_t sum = layout_rrec_checksum(&r);

	r.word = rrec_word(2, 5);
	cr_assert_eq(layout_rrec_checksum(&r), sum);
	r.word = rrec_word(2, 6);
	cr_assert_neq(layout_rrec_checksum(&r), sum);
}

Test(layout, slot_checksum_depends_on_body_and_index)
{
	struct kv_slot s = { .tag = 1, .key = 2, .region = 3, .page = 4 };
	uint32_t sum = layout_slot_checksum(&s, 10);

	cr_assert_neq(layout_slot_checksum(&s, 11), sum);
	s.len = 1;
	cr_assert_neq(layout_slot_checksum(&s, 10), sum);
	s.len = 0;
	s.word = kv_word(7, KV_LIVE, 99);
	cr_assert_eq(layout_slot_checksum(&s, 10), sum, "word not covered");
}

Test(layout, slot_word_packs_seq_state_and_sum)
{
	uint64_t w = kv_word(0x123457, KV_TOMB, 0xdeadbeef);

	cr_assert_eq(kv_seq(w), 0x123457);
	cr_assert_eq(kv_state(w), KV_TOMB);
	cr_assert_eq(kv_sum(w), 0xdeadbeef);
	cr_assert_eq(kv_seq(kv_word(0xffffff + 1, KV_LIVE, 0)), 0, "wraps");
}
