/*
 * test_restart.c -- a metaserver killed -9 mid-load on host A and
 * started again on host E (issue 27 section 4): writers on hosts B and C
 * store all along and carry on once it is back; then every key whose
 * store returned true is found, with its writer's bytes, by readers on
 * hosts C and D that were attached from the start (their views of the
 * pool are older than every store), with direct reads and with the
 * server's lookups. The new server on E reads only the device (what A
 * wrote back), never A's cache.
 *
 * Nothing may be evicted, or the readers miss keys that were rightly
 * acknowledged: so each writer stores at most LEG keys before the kill
 * and LEG more after it (mh.h, writer's LEG), whatever the timing. The
 * writers come back from the kill seconds apart (each when its socket
 * reaches E), and unbounded ones stored on while the test waited for a
 * slower one: 11,168 keys in 5,376 free pages, and the server evicted
 * 6,224 acknowledged keys (first rb1-0), which every reader missed.
 */
#include <assert.h>

#include "mhtest.h"

TestSuite(restart, .fini = itest_stop, .timeout = 180);

#define POOL (96 * MiB)
#define WRITERS 3
#define STEP 64 /* keys each writer stores before the kill, and after */
#define LEG 512 /* keys a writer may store before the kill, and after */

/* a key takes a page (values of up to MH_PAGE bytes): the writers' pages
 * are at most half the pool, so no store finds it full (metadata, the
 * readers' regions and the writers' part-used ones fit in the rest) */
static_assert(WRITERS * 2ull * LEG * MH_PAGE <= POOL / 2,
    "the writers' keys fit the pool with room to spare");
static_assert(LEG >= 2 * STEP, "a writer has STEP keys left after the kill");

static const struct {
	const char *host, *prefix;
	uint32_t writer;
} W[WRITERS] = {
	{ "B", "rb1", 31 }, { "B", "rb2", 32 }, { "C", "rc1", 41 },
};

Test(restart, every_acknowledged_key_survives_a_server_moved_to_host_e)
{
	const char *const hosts[] = { "C", "D", "D" };
	const char *const modes[] = { "d", "d", "s" };
	struct test_child w[WRITERS], r[3];
	static struct mh_acks acks[WRITERS];
	static struct mh_spec spec[WRITERS * 64];
	uint32_t ns = 0, must = 0, before[WRITERS];

	mh_start(POOL, NULL);
	for (unsigned i = 0; i < WRITERS; i++) {
		char arg[64];

		snprintf(arg, sizeof(arg), "%s:%u:0:%u", W[i].prefix,
		    W[i].writer, LEG);
		mh_spawn(&w[i], W[i].host, "writer", arg);
	}
	for (unsigned i = 0; i < 3; i++) {
		mh_spawn(&r[i], hosts[i], "reader", modes[i]);
	}
	for (unsigned i = 0; i < WRITERS; i++) {
		mh_say(&w[i], 'g');
	}
	for (unsigned i = 0; i < WRITERS; i++) {
		cr_assert(mh_read_acks(&w[i], &acks[i], STEP), "writer %s "
		    "ended (exit %d)", W[i].prefix, itest_wait(&w[i]));
	}
	test_server_kill(&srv, SIGKILL); /* mid-load: they store on */
	mh_restart_on("E");
	for (unsigned i = 0; i < WRITERS; i++) {
		mh_say(&w[i], MH_MORE); /* LEG keys more after the restart */
	}
	for (unsigned i = 0; i < WRITERS; i++) {
		before[i] = acks[i].count;
		cr_assert(mh_read_acks(&w[i], &acks[i], before[i] + STEP),
		    "writer %s did not carry on after the restart (exit %d)",
		    W[i].prefix, itest_wait(&w[i]));
		mh_say(&w[i], 'q');
	}
	for (unsigned i = 0; i < WRITERS; i++) {
		cr_assert(mh_read_acks(&w[i], &acks[i], 0));
		cr_assert(acks[i].ended, "writer %s: no end", W[i].prefix);
		cr_assert_leq(acks[i].top, 2 * LEG, "writer %s stored key %u, "
		    "past the %u it may", W[i].prefix, acks[i].top - 1,
		    2 * LEG);
		mh_wait_ok(&w[i], W[i].prefix);
		ns += mh_ack_specs(&acks[i], W[i].prefix, W[i].writer,
		    spec + ns, (uint32_t)(sizeof(spec) / sizeof(spec[0])) - ns);
		must += acks[i].count;
		cr_log_info("writer %s: %u keys acknowledged, %u before the "
		    "restart was seen", W[i].prefix, acks[i].count, before[i]);
	}
	mh_readers_last_pass(r, 3, hosts, modes, spec, ns, must);
	itest_assert_pool_checks();
}
