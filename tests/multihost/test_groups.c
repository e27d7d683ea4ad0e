/*
 * test_groups.c -- request groups across hosts (issue 27 section 4,
 * cxlpool.h's request groups): group writers on hosts B and C commit
 * groups of MH_GROUP chunks one after the other, each staged in two
 * stores; readers on hosts C and D poll every group all along
 * (batch_retrieve, direct reads) and see each one all or none, every
 * chunk with its writer's bytes, and at the end every group whole.
 */
#include "mhtest.h"

TestSuite(groups, .fini = itest_stop, .timeout = 120);

#define POOL (96 * MiB)
#define GROUPS 24 /* per writer */

Test(groups, a_group_stored_on_one_host_is_seen_all_or_none_on_another)
{
	const char *wh[2] = { "B", "C" }, *wp[2] = { "gB", "gC" };
	const char *hosts[] = { "C", "D" };
	struct test_child w[2], r[2];
	static struct mh_spec spec[2 * GROUPS];
	unsigned bad = 0;

	mh_start(POOL, NULL);
	for (unsigned i = 0; i < 2; i++) {
		char arg[64];

		snprintf(arg, sizeof(arg), "%s:%u:%u", wp[i], 60 + i, GROUPS);
		mh_spawn(&w[i], wh[i], "group-writer", arg);
		for (uint32_t j = 0; j < GROUPS; j++) {
			struct mh_spec *s = &spec[i * GROUPS + j];

			*s = (struct mh_spec){ .writer = 60 + i, .n = MH_GROUP,
				.must = 1 };
			snprintf(s->prefix, sizeof(s->prefix), "%s%u", wp[i],
			    j);
		}
	}
	for (unsigned i = 0; i < 2; i++) {
		mh_spawn(&r[i], hosts[i], "reader", "g");
	}
	for (unsigned i = 0; i < 2; i++) {
		mh_say(&w[i], 'g');
	}
	for (unsigned i = 0; i < 2; i++) {
		mh_specs(&r[i], spec, 2 * GROUPS);
	}
	for (unsigned i = 0; i < 2; i++) {
		static struct mh_acks acks;

		memset(&acks, 0, sizeof(acks));
		cr_assert(mh_read_acks(&w[i], &acks, 0));
		cr_assert(acks.ended && acks.count == GROUPS, "writer on %s "
		    "committed %u groups", wh[i], acks.count);
		mh_wait_ok(&w[i], wh[i]);
	}
	for (unsigned i = 0; i < 2; i++) {
		mh_say(&r[i], 'd');
	}
	for (unsigned i = 0; i < 2; i++) {
		char what[64];
		struct mh_result res = mh_result(&r[i]);

		snprintf(what, sizeof(what), "group reader on host %s",
		    hosts[i]);
		bad += !mh_expect_clean(&res, what, 2 * GROUPS * MH_GROUP);
		mh_wait_ok(&r[i], what);
	}
	cr_assert_eq(bad, 0, "%u of 2 readers read wrong (above)", bad);
	itest_assert_pool_checks();
}
