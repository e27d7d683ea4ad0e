/*
 * test_err.c -- tests of common/err.c: error names, the thread-local
 * message, and panics.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "err.h"

TestSuite(err);

Test(err, strerror_names_every_cxlp_code_distinctly)
{
	for (int a = CXLP_E_BADMAGIC; a >= CXLP_E_LAST; a--) {
		const char *s = cxlp_strerror(a);

		cr_assert_not_null(s, "code %d", a);
		cr_assert(strncmp(s, "CXLP_E_", 7) == 0, "code %d: %s", a, s);
		for (int b = a - 1; b >= CXLP_E_LAST; b--) {
			cr_assert_str_neq(s, cxlp_strerror(b), "%d vs %d", a,
			    b);
		}
	}
	cr_assert(strstr(cxlp_strerror(CXLP_E_PROTO), "PROTO") != NULL);
	cr_assert(strstr(cxlp_strerror(CXLP_E_UNKNOWN), "UNKNOWN") != NULL);
}

Test(err, strerror_maps_negative_errno_to_the_libc_text)
{
	cr_assert_str_eq(cxlp_strerror(-ENOMEM), strerror(ENOMEM));
	cr_assert_str_eq(cxlp_strerror(-EINVAL), strerror(EINVAL));
	cr_assert_str_eq(cxlp_strerror(0), "success");
}

Test(err, strerror_of_codes_outside_every_range_is_unknown_error)
{
	cr_assert_str_eq(cxlp_strerror(CXLP_E_LAST - 1), "unknown error");
	cr_assert_str_eq(cxlp_strerror(5), "unknown error");
	cr_assert_str_eq(cxlp_strerror(-100000), "unknown error");
}

Test(err, fail_sets_the_message_and_returns_the_code)
{
	cr_assert_eq(cxlp_fail(CXLP_E_NOSPACE, "pool %s is full (%d)", "p1",
	    7), CXLP_E_NOSPACE);
	cr_assert_str_eq(cxlp_errormsg(), "pool p1 is full (7)");
	cr_assert_eq(cxlp_fail(-EIO, "again"), -EIO);
	cr_assert_str_eq(cxlp_errormsg(), "again");
	cr_assert_eq(cxlp_fail_keep(CXLP_E_PERM), CXLP_E_PERM);
	cr_assert_str_eq(cxlp_errormsg(), "again", "keep leaves it alone");
	cxlp_errmsg_clear();
	cr_assert_str_eq(cxlp_errormsg(), "");
}

Test(err, a_long_message_is_truncated_not_overflowed)
{
	char big[1000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cxlp_fail(CXLP_E_CORRUPT, "%s", big);
	cr_assert_gt(strlen(cxlp_errormsg()), 100);
	cr_assert_lt(strlen(cxlp_errormsg()), sizeof(big) - 1);
}

static void *
other_thread(void *arg)
{
	char *seen = arg;

	strcpy(seen, cxlp_errormsg()); /* fresh thread: empty */
	cxlp_fail(CXLP_E_CONN, "from the other thread");
	return NULL;
}

Test(err, messages_are_per_thread)
{
	char seen[256] = "unset";
	pthread_t t;

	cxlp_fail(CXLP_E_BUSY, "from main");
	cr_assert_eq(pthread_create(&t, NULL, other_thread, seen), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_str_eq(seen, "");
	cr_assert_str_eq(cxlp_errormsg(), "from main");
}

Test(err, assert_aborts_on_a_broken_invariant, .signal = SIGABRT)
{
	int x = 1;

	cxlp_assert(x == 2);
}

Test(err, assert_eq_aborts_when_values_differ, .signal = SIGABRT)
{
	cxlp_assert_eq(3, 4);
}

Test(err, assert_passes_when_the_invariant_holds)
{
	cxlp_assert(1 + 1 == 2);
	cxlp_assert_eq(5, 5);
}

/* a failure that wraps the one before it passes cxlp_errormsg() to
 * cxlp_fail, the buffer cxlp_fail writes: the reason comes out whole */
Test(err, a_message_may_wrap_the_one_before_it)
{
	cxlp_fail(CXLP_E_BADMAGIC, "/dev/shm/p: not a pool");
	cxlp_fail(CXLP_E_BADMAGIC, "--elect: the pool's uuid is unknown "
	    "(%s)", cxlp_errormsg());
	cr_assert_str_eq(cxlp_errormsg(), "--elect: the pool's uuid is "
	    "unknown (/dev/shm/p: not a pool)");
}
