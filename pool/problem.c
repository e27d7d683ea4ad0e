/*
 * problem.c -- how a checker reports what it finds: counted, and said to
 * the caller's reporter. Every module's checker (check.c's pool_check,
 * pinidx.c's, the index's) reports through this one call, so it sits
 * below all of them and calls none.
 */
#include <stdarg.h>
#include <stdio.h>

#include "pool_int.h"

/* problem_vreport -- see pool_int.h */
void
problem_vreport(void (*report)(void *arg, const char *problem), void *arg,
    int *problems, const char *fmt, va_list ap)
{
	char msg[256];

	(*problems)++;
	if (report != NULL) {
		vsnprintf(msg, sizeof(msg), fmt, ap);
		report(arg, msg);
	}
}
