/*
 * test_procstat.c -- tests of common/procstat.c: the /proc/<pid>/stat
 * parser that the handler (its start time in HELLO) and the metaserver
 * (liveness) share.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procstat.h"

TestSuite(procstat);

/* A stat line with comm and every field from 3 on given: field n holds
 * n * 10 (state aside), so a parser one field off is caught. */
static void
stat_line(char *buf, size_t len, const char *comm, char state)
{
	int n = snprintf(buf, len, "4242 (%s) %c", comm, state);

	for (int field = 4; field <= 52; field++) {
		n += snprintf(buf + n, len - (size_t)n, " %d", field * 10);
	}
}

Test(procstat, start_time_is_field_22)
{
	char buf[1024], state = '?';
	uint64_t st = 0;

	stat_line(buf, sizeof(buf), "cat", 'S');
	cr_assert(procstat_parse(buf, &state, &st));
	cr_assert_eq(state, 'S');
	cr_assert_eq(st, 220, "start time %llu", (unsigned long long)st);
}

Test(procstat, a_comm_with_spaces_and_parentheses_is_skipped_whole)
{
	const char *comms[] = {"a b", "x) S 1 2 (y", ") )", "((", "p) Z 9"};
	char buf[1024], state;
	uint64_t st;

	for (size_t i = 0; i < sizeof(comms) / sizeof(comms[0]); i++) {
		state = '?';
		st = 0;
		stat_line(buf, sizeof(buf), comms[i], 'R');
		cr_assert(procstat_parse(buf, &state, &st), "%s", comms[i]);
		cr_assert_eq(state, 'R', "comm '%s': state %c", comms[i],
		    state);
		cr_assert_eq(st, 220, "comm '%s': start time %llu", comms[i],
		    (unsigned long long)st);
	}
}

Test(procstat, a_line_cut_short_does_not_parse)
{
	char buf[1024], state = '?';
	uint64_t st = 7;

	cr_assert_not(procstat_parse("4242 cat S 1 2 3", &state, &st));
	cr_assert_not(procstat_parse("4242 (cat)", &state, &st));
	stat_line(buf, sizeof(buf), "cat", 'S');
	buf[strlen(buf) / 3] = '\0'; /* before field 22 */
	cr_assert_not(procstat_parse(buf, &state, &st));
	cr_assert_eq(st, 7);
	cr_assert_eq(state, '?');
}

Test(procstat, self_and_own_pid_read_the_same_start_time)
{
	char s1 = '?', s2 = '?';
	uint64_t t1 = 0, t2 = 0;

	cr_assert(procstat_read(0, &s1, &t1));
	cr_assert(procstat_read((uint64_t)getpid(), &s2, &t2));
	cr_assert_neq(t1, 0);
	cr_assert_eq(t1, t2);
	cr_assert_eq(s1, 'R');
}

Test(procstat, a_pid_without_a_process_is_not_read)
{
	char state = '?';
	uint64_t st = 0;

	cr_assert_not(procstat_read(1ull << 40, &state, &st));
}

Test(procstat, a_simulated_host_has_a_boot_of_its_own)
{
	uint64_t real, b, c, zero;

	unsetenv("CXLP_SIM_HOST");
	real = procstat_boot_hash();
	setenv("CXLP_SIM_HOST", "B", 1);
	b = procstat_boot_hash();
	setenv("CXLP_SIM_HOST", "C", 1);
	c = procstat_boot_hash();
	setenv("CXLP_SIM_HOST", "0", 1);
	zero = procstat_boot_hash();
	unsetenv("CXLP_SIM_HOST");
	cr_assert_neq(real, 0);
	cr_assert_neq(b, real);
	cr_assert_neq(c, b);
	cr_assert_eq(zero, real, "host \"0\" is the real one");
	cr_assert_eq(procstat_boot_hash(), real);
}
