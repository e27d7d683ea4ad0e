/*
 * test_values.c -- issue 27 section 4, the first row: the metaserver on
 * host A, writers on hosts B and C (two processes each), readers on B, C
 * and D, all at once. Every value a reader finds is its writer's bytes
 * (kv_fill's pattern names writer, key and length, and every byte
 * follows from them), while the writers write and in a last pass after
 * every store was acknowledged, where every key must be found: with
 * direct reads (the default), with versions (retrieve_v, a copy,
 * validate after it), and with the server's lookups (direct reads off).
 * Each host's view of the pool is taken before the first store, so a
 * line that a writer does not write back, or a reader does not drop,
 * is read stale.
 */
#include "mhtest.h"

TestSuite(values, .fini = itest_stop, .timeout = 120);

#define KEYS 768 /* per writer */
#define WRITERS 4
#define POOL (96 * MiB)

static const struct {
	const char *host, *prefix;
	uint32_t writer;
} W[WRITERS] = {
	{ "B", "b1", 11 }, { "B", "b2", 12 }, { "C", "c1", 21 },
	{ "C", "c2", 22 },
};

/* writers as W says, readers[i] on hosts[i] in modes[i]; everything at
 * once, then the readers' last pass once every key is acknowledged */
static void
run(const char *const hosts[], const char *const modes[], unsigned nr)
{
	struct test_child w[WRITERS], r[8];
	struct mh_spec spec[WRITERS];
	static struct mh_acks acks[WRITERS];
	unsigned bad = 0;

	mh_start(POOL, NULL);
	for (unsigned i = 0; i < WRITERS; i++) {
		char arg[64];

		snprintf(arg, sizeof(arg), "%s:%u:%u", W[i].prefix,
		    W[i].writer, KEYS);
		mh_spawn(&w[i], W[i].host, "writer", arg);
		spec[i] = (struct mh_spec){ .writer = W[i].writer, .first = 0,
			.n = KEYS, .must = 1 };
		snprintf(spec[i].prefix, sizeof(spec[i].prefix), "%s",
		    W[i].prefix);
	}
	for (unsigned i = 0; i < nr; i++) {
		mh_spawn(&r[i], hosts[i], "reader", modes[i]);
	}
	for (unsigned i = 0; i < WRITERS; i++) {
		mh_say(&w[i], 'g');
	}
	for (unsigned i = 0; i < nr; i++) {
		mh_specs(&r[i], spec, WRITERS);
	}
	for (unsigned i = 0; i < WRITERS; i++) {
		memset(&acks[i], 0, sizeof(acks[i]));
		cr_assert(mh_read_acks(&w[i], &acks[i], 0));
		cr_assert(acks[i].ended && acks[i].count == KEYS, "writer %s "
		    "acknowledged %u keys", W[i].prefix, acks[i].count);
		mh_wait_ok(&w[i], W[i].prefix);
	}
	for (unsigned i = 0; i < nr; i++) {
		mh_say(&r[i], 'd');
	}
	for (unsigned i = 0; i < nr; i++) {
		char what[64];
		struct mh_result res = mh_result(&r[i]);

		snprintf(what, sizeof(what), "reader %u on host %s, mode %s",
		    i, hosts[i], modes[i]);
		bad += !mh_expect_clean(&res, what, WRITERS * KEYS);
		mh_wait_ok(&r[i], what);
	}
	cr_assert_eq(bad, 0, "%u of %u readers read wrong (above)", bad, nr);
	itest_assert_pool_checks();
}

Test(values, direct_reads_on_every_host_see_the_writers_bytes)
{
	const char *hosts[] = { "B", "C", "D", "D" };
	const char *modes[] = { "d", "d", "d", "d" };

	run(hosts, modes, 4);
}

Test(values, validated_copies_on_every_host_are_the_writers_bytes)
{
	const char *hosts[] = { "B", "C", "D", "D" };
	const char *modes[] = { "v", "v", "v", "v" };

	run(hosts, modes, 4);
}

Test(values, the_servers_lookups_on_every_host_see_the_writers_bytes)
{
	const char *hosts[] = { "B", "C", "D", "D" };
	const char *modes[] = { "s", "s", "s", "s" };

	run(hosts, modes, 4);
}
