/*
 * test_kill.c -- writers killed -9 mid-batch (issue 27 section 4): on
 * hosts B and C, writers batch_store in a loop and are killed, three
 * incarnations each, at whatever point of a batch they are; then
 * readers on hosts C and D, attached from the start, find every key
 * whose store returned true with its writer's bytes, and of the keys in
 * flight at the kill each one absent or whole: no key is seen with
 * partial bytes on another host.
 */
#include "mhtest.h"

TestSuite(kill, .fini = itest_stop, .timeout = 180);

#define POOL (96 * MiB)
#define LIVES 3
#define HOSTS 2
#define STEP 40 /* keys acknowledged before the kill */

Test(kill, no_acknowledged_key_is_lost_and_none_is_seen_in_part)
{
	const char *wh[HOSTS] = { "B", "C" };
	const char *const hosts[] = { "C", "D", "D" };
	const char *const modes[] = { "d", "v", "s" };
	struct test_child r[3];
	static struct mh_acks acks;
	static struct mh_spec spec[HOSTS * LIVES * 64];
	uint32_t ns = 0, must = 0;

	mh_start(POOL, NULL);
	for (unsigned i = 0; i < 3; i++) {
		mh_spawn(&r[i], hosts[i], "reader", modes[i]);
	}
	for (unsigned life = 0; life < LIVES; life++) {
		for (unsigned h = 0; h < HOSTS; h++) {
			struct test_child w;
			char prefix[16], arg[64];
			uint32_t writer = 50 + life * HOSTS + h;
			int st;

			snprintf(prefix, sizeof(prefix), "k%s%u", wh[h], life);
			snprintf(arg, sizeof(arg), "%s:%u:0", prefix, writer);
			mh_spawn(&w, wh[h], "writer", arg);
			mh_say(&w, 'g');
			memset(&acks, 0, sizeof(acks));
			cr_assert(mh_read_acks(&w, &acks, STEP));
			kill(w.pid, SIGKILL);
			cr_assert(mh_read_acks(&w, &acks, 0)); /* to EOF */
			st = itest_wait(&w);
			cr_assert_eq(st, 128 + SIGKILL, "writer %s exited %d",
			    prefix, st);
			ns += mh_ack_specs(&acks, prefix, writer, spec + ns,
			    (uint32_t)(sizeof(spec) / sizeof(spec[0])) - ns);
			must += acks.count;
		}
	}
	mh_readers_last_pass(r, 3, hosts, modes, spec, ns, must);
	itest_assert_pool_checks();
}
