/*
 * test_log.c -- common/log.c's rate-limited call sites (log_rl_*, issue
 * 25 item 7): N identical events write CXLP_LOG_BURST lines per window
 * and one count of the rest, at every level; the count comes with the
 * site's next line after its window or from cxlp_log_flush, exactly once;
 * sites do not share a budget; lines the level filters are not counted;
 * cxlp_log_flush_all writes counts whose window has not ended; a count of
 * a level lowered since is not written; a forked child has no counts.
 * The log's clock is the test's (cxlp_log_set_clock): nothing here
 * depends on how fast the machine is.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

#define MAXLINES 64

static struct {
	int n;
	long overflow; /* lines past MAXLINES: a flood */
	int level[MAXLINES];
	char line[MAXLINES][640];
} got;

static uint64_t clock_now;

static uint64_t
fake_now(void)
{
	return clock_now;
}

static void
capture(int level, const char *msg, void *arg)
{
	(void)arg;
	if (got.n == MAXLINES) {
		got.overflow++; /* no assert here: the log's lock is held */
		return;
	}
	got.level[got.n] = level;
	snprintf(got.line[got.n], sizeof(got.line[0]), "%s", msg);
	got.n++;
}

static void
setup(void)
{
	memset(&got, 0, sizeof(got));
	clock_now = 1000000;
	cxlp_log_set_clock(fake_now);
	cxlp_set_log_fn(capture, NULL, CXLP_LOG_INFO);
}

static void
teardown(void)
{
	cxlp_log_flush(); /* no count left for the next test */
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_ERR);
	cxlp_log_set_clock(NULL);
}

TestSuite(log, .init = setup, .fini = teardown);

/* n events of one call site (one per event kind below) */
static void
pass_err(int n)
{
	for (int i = 0; i < n; i++) {
		log_rl_err("op=pipe_add pipe=%d", i);
	}
}

static void
pass_info(int n)
{
	for (int i = 0; i < n; i++) {
		log_rl_info("op=evict cause=orphan region=%d keys=3", i);
	}
}

/* lines written so far (failing on a flood) */
static int
nlines(void)
{
	cr_assert_eq(got.overflow, 0, "the log was flooded: %ld lines past "
	    "%d", got.overflow, MAXLINES);
	return got.n;
}

static unsigned long long
count_in(const char *line)
{
	const char *c = strstr(line, " (");
	unsigned long long n = 0;

	cr_assert_not_null(c, "no count in \"%s\"", line);
	cr_assert_eq(sscanf(c, " (%llu similar lines suppressed)", &n), 1,
	    "no count in \"%s\"", line);
	return n;
}

Test(log, a_flood_writes_a_burst_then_one_count_from_the_flush)
{
	pass_info(100000);
	cr_assert_eq(nlines(), CXLP_LOG_BURST);
	cxlp_log_flush(); /* the window has not ended: nothing yet */
	cr_assert_eq(nlines(), CXLP_LOG_BURST);
	clock_now += CXLP_LOG_WINDOW_MS;
	cxlp_log_flush();
	cr_assert_eq(nlines(), CXLP_LOG_BURST + 1);
	/* the last line suppressed, and the count of the others */
	cr_assert_eq(count_in(got.line[CXLP_LOG_BURST]),
	    100000 - CXLP_LOG_BURST - 1);
	cr_assert(strncmp(got.line[CXLP_LOG_BURST],
	    "op=evict cause=orphan region=99999 keys=3 (", 43) == 0, "%s",
	    got.line[CXLP_LOG_BURST]);
	cr_assert_eq(got.level[CXLP_LOG_BURST], CXLP_LOG_INFO);
	cxlp_log_flush(); /* counted once */
	clock_now += 10 * CXLP_LOG_WINDOW_MS;
	cxlp_log_flush();
	cr_assert_eq(nlines(), CXLP_LOG_BURST + 1);
}

Test(log, the_count_comes_with_the_sites_next_line_after_its_window)
{
	pass_err(25);
	cr_assert_eq(nlines(), CXLP_LOG_BURST);
	clock_now += CXLP_LOG_WINDOW_MS;
	pass_err(1);
	cr_assert_eq(nlines(), CXLP_LOG_BURST + 1);
	cr_assert_eq(count_in(got.line[CXLP_LOG_BURST]), 25 - CXLP_LOG_BURST);
	cr_assert(strncmp(got.line[CXLP_LOG_BURST], "op=pipe_add pipe=0 (",
	    20) == 0, "%s", got.line[CXLP_LOG_BURST]);
	cr_assert_eq(got.level[CXLP_LOG_BURST], CXLP_LOG_ERR);
	cxlp_log_flush(); /* already reported */
	clock_now += CXLP_LOG_WINDOW_MS;
	cxlp_log_flush();
	cr_assert_eq(nlines(), CXLP_LOG_BURST + 1);
}

Test(log, a_long_flood_costs_a_burst_and_a_count_per_window)
{
	for (int w = 0; w < 50; w++) {
		pass_info(1000);
		clock_now += CXLP_LOG_WINDOW_MS;
		if (got.n > MAXLINES - 2 * CXLP_LOG_BURST) {
			got.n = 0;
		}
	}
	cxlp_log_flush();
	/* the window of the last pass: its burst, and the flush's count */
	cr_assert_eq(count_in(got.line[got.n - 1]), 1000 - CXLP_LOG_BURST - 1);
}

Test(log, a_flush_of_one_suppressed_line_writes_it_without_a_count)
{
	pass_err(CXLP_LOG_BURST + 1);
	clock_now += CXLP_LOG_WINDOW_MS;
	cxlp_log_flush();
	cr_assert_eq(nlines(), CXLP_LOG_BURST + 1);
	cr_assert_str_eq(got.line[CXLP_LOG_BURST], "op=pipe_add pipe=10");
}

Test(log, call_sites_do_not_share_a_budget)
{
	pass_info(1000);
	pass_err(3);
	cr_assert_eq(nlines(), CXLP_LOG_BURST + 3);
	for (int i = 0; i < 3; i++) {
		cr_assert(strncmp(got.line[CXLP_LOG_BURST + i], "op=pipe_add",
		    11) == 0);
	}
}

Test(log, lines_the_level_filters_are_neither_written_nor_counted)
{
	cxlp_set_log_fn(capture, NULL, CXLP_LOG_ERR);
	pass_info(1000);
	clock_now += CXLP_LOG_WINDOW_MS;
	cxlp_log_flush();
	cr_assert_eq(nlines(), 0);
	cxlp_set_log_fn(capture, NULL, CXLP_LOG_INFO);
	pass_info(1);
	cr_assert_eq(nlines(), 1);
	cr_assert_null(strstr(got.line[0], "suppressed"), "%s", got.line[0]);
}

Test(log, plain_lines_are_not_limited)
{
	for (int i = 0; i < 3 * CXLP_LOG_BURST; i++) {
		log_err("op=x i=%d", i);
	}
	cr_assert_eq(nlines(), 3 * CXLP_LOG_BURST);
}

/* A stop within a second of a flood: cxlp_log_flush_all writes the
 * count whatever the window, once. */
Test(log, the_flush_at_a_stop_writes_a_count_whose_window_has_not_ended)
{
	pass_info(100);
	cxlp_log_flush(); /* the window has not ended */
	cr_assert_eq(nlines(), CXLP_LOG_BURST);
	cxlp_log_flush_all();
	cr_assert_eq(nlines(), CXLP_LOG_BURST + 1);
	cr_assert_eq(count_in(got.line[CXLP_LOG_BURST]),
	    100 - CXLP_LOG_BURST - 1);
	cxlp_log_flush_all();
	clock_now += CXLP_LOG_WINDOW_MS;
	cxlp_log_flush();
	cr_assert_eq(nlines(), CXLP_LOG_BURST + 1, "counted once");
}

/* The level lowered after a flood: the flush writes no count at the
 * level that no longer passes, now or later. */
Test(log, a_count_of_a_level_lowered_since_is_not_written)
{
	pass_info(100);
	cr_assert_eq(nlines(), CXLP_LOG_BURST);
	cxlp_set_log_fn(capture, NULL, CXLP_LOG_ERR);
	clock_now += CXLP_LOG_WINDOW_MS;
	cxlp_log_flush();
	cxlp_log_flush_all();
	cr_assert_eq(nlines(), CXLP_LOG_BURST, "%s", got.line[got.n - 1]);
	cxlp_set_log_fn(capture, NULL, CXLP_LOG_INFO);
	cxlp_log_flush_all();
	cr_assert_eq(nlines(), CXLP_LOG_BURST);
}

/* A child of fork does not report its parent's counts again; the parent
 * still does. */
Test(log, a_forked_child_does_not_report_the_parents_counts)
{
	int status = 0;
	pid_t pid;

	pass_info(100);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		cxlp_log_atfork_child();
		cxlp_log_flush_all();
		_exit(got.n == CXLP_LOG_BURST && got.overflow == 0 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "the child wrote the parent's count");
	cxlp_log_flush_all();
	cr_assert_eq(nlines(), CXLP_LOG_BURST + 1);
	cr_assert_eq(count_in(got.line[CXLP_LOG_BURST]),
	    100 - CXLP_LOG_BURST - 1);
}
