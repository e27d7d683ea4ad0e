/*
 * test_ratelimit.c -- tests of metaserver/ratelimit.c, the per-pipe
 * budget for complaint lines: the burst, the window, the summaries, and
 * that every line asked about is written or counted exactly once
 * (design note 1), against a naive model under random traffic.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "ratelimit.h"

TestSuite(ratelimit);

Test(ratelimit, a_burst_passes_then_lines_are_counted_until_the_window_ends)
{
	static struct ratelimit rl;
	struct rl_report rep;

	for (int i = 0; i < RL_BURST; i++) {
		cr_assert(rl_admit(&rl, 7, 5000, &rep));
		cr_assert_eq(rep.n, 0);
	}
	for (int i = 0; i < 1000; i++) {
		cr_assert_not(rl_admit(&rl, 7, 5000 + i % RL_WINDOW_MS, &rep));
		cr_assert_eq(rep.n, 0);
	}
	cr_assert(rl_pending(&rl));
	cr_assert(rl_admit(&rl, 7, 5000 + RL_WINDOW_MS, &rep),
	    "a new window opens");
	cr_assert_eq(rep.pipe, 7);
	cr_assert_eq(rep.n, 1000, "the summary counts every line held back");
	cr_assert_not(rl_pending(&rl));
}

Test(ratelimit, pipes_have_budgets_of_their_own)
{
	static struct ratelimit rl;
	struct rl_report rep;

	for (int i = 0; i < RL_BURST + 5; i++) {
		(void)rl_admit(&rl, 1, 100, &rep);
	}
	cr_assert_not(rl_admit(&rl, 1, 100, &rep));
	cr_assert(rl_admit(&rl, 2, 100, &rep), "pipe 2 is not pipe 1");
	cr_assert_eq(rep.n, 0);
}

Test(ratelimit, an_ended_window_is_reported_without_another_line)
{
	static struct ratelimit rl;
	struct rl_report rep;

	for (int i = 0; i < RL_BURST + 3; i++) {
		(void)rl_admit(&rl, 9, 0, &rep);
	}
	cr_assert_not(rl_take_expired(&rl, RL_WINDOW_MS - 1, &rep),
	    "the window is still open");
	cr_assert(rl_take_expired(&rl, RL_WINDOW_MS, &rep));
	cr_assert_eq(rep.pipe, 9);
	cr_assert_eq(rep.n, 3);
	cr_assert_not(rl_take_expired(&rl, 5 * RL_WINDOW_MS, &rep),
	    "reported once");
	cr_assert_not(rl_pending(&rl));
}

Test(ratelimit, a_pipe_taking_over_a_slot_reports_the_old_pipes_count)
{
	static struct ratelimit rl;
	struct rl_report rep;

	/* pipes 3, 3 + RL_SLOTS, ... fill pipe 3's probe slots */
	for (uint64_t k = 0; k < RL_PROBE; k++) {
		uint64_t pipe = 3 + k;

		for (int i = 0; i < RL_BURST + 4; i++) {
			(void)rl_admit(&rl, pipe, 10 + k, &rep);
		}
	}
	cr_assert(rl_admit(&rl, 3 + RL_SLOTS, 20, &rep));
	cr_assert_eq(rep.pipe, 3, "the oldest window is taken over");
	cr_assert_eq(rep.n, 4);
	for (int i = 0; i < RL_BURST - 1; i++) {
		cr_assert(rl_admit(&rl, 3 + RL_SLOTS, 20, &rep));
	}
	cr_assert_not(rl_admit(&rl, 3 + RL_SLOTS, 20, &rep));
	cr_assert_not(rl_admit(&rl, 4, 20, &rep), "pipe 4 keeps its slot");
}

Test(ratelimit, every_line_is_written_or_counted_once)
{
	static struct ratelimit rl;
	uint64_t asked = 0, written = 0, reported = 0, now = 1;
	struct rl_report rep;

	srand(15);
	for (int i = 0; i < 200000; i++) {
		/* 80 pipes, ids up to 4 * RL_SLOTS: some start at one slot */
		uint64_t pipe = (uint64_t)(rand() % 80) * 13;

		now += (uint64_t)(rand() % 16 == 0);
		asked++;
		written += rl_admit(&rl, pipe, now, &rep);
		reported += rep.n;
		if (rand() % 512 == 0) {
			while (rl_take_expired(&rl, now, &rep)) {
				reported += rep.n;
			}
		}
	}
	now += RL_WINDOW_MS;
	while (rl_take_expired(&rl, now, &rep)) {
		reported += rep.n;
	}
	cr_assert_not(rl_pending(&rl));
	cr_assert_eq(written + reported, asked, "%llu written + %llu "
	    "suppressed != %llu lines", (unsigned long long)written,
	    (unsigned long long)reported, (unsigned long long)asked);
	cr_assert_lt(written, asked / 4, "the limit let most lines through");
}
