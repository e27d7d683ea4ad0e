/*
 * err.h -- the one error convention every part shares: functions return 0
 * or a negative code (-errno or CXLP_E_*), and the failing line records why
 * in a thread-local message that cxlp_errormsg() returns.
 */
#ifndef CXLP_ERR_H
#define CXLP_ERR_H

#include <stdio.h>
#include <stdlib.h>

#include "cxlpool.h"

/* cxlp_fail -- record a formatted reason and return err (negative). */
int cxlp_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* cxlp_fail_keep -- return err without touching the message (to pass an
 * error up that the callee already explained). */
static inline int
cxlp_fail_keep(int err)
{
	return err;
}

/* cxlp_errmsg_clear -- empty this thread's message. */
void cxlp_errmsg_clear(void);

/* Bugs (broken invariants) abort with file and line; bad input never
 * reaches these. */
#define cxlp_assert(c)                                                     \
	do {                                                               \
		if (!(c)) {                                                \
			cxlp_panic(__FILE__, __LINE__, #c);                \
		}                                                          \
	} while (0)

#define cxlp_assert_eq(a, b)                                               \
	do {                                                               \
		unsigned long long a_ = (unsigned long long)(a);           \
		unsigned long long b_ = (unsigned long long)(b);           \
		if (a_ != b_) {                                            \
			cxlp_panic_eq(__FILE__, __LINE__, #a, #b, a_, b_); \
		}                                                          \
	} while (0)

/* cxlp_expensive_assert -- an assertion too costly for the hot path (a
 * second index probe, a full scan). Checked only in builds configured with
 * -Dexpensive_checks=true (the sanitizer run of scripts/test.sh). */
#ifdef CXLP_EXPENSIVE_CHECKS
#define CXLP_EXPENSIVE 1
#else
#define CXLP_EXPENSIVE 0
#endif
#define cxlp_expensive_assert(c)                                           \
	do {                                                               \
		if (CXLP_EXPENSIVE) {                                      \
			cxlp_assert(c);                                    \
		}                                                          \
	} while (0)

void cxlp_panic(const char *file, int line, const char *what)
    __attribute__((noreturn));
void cxlp_panic_eq(const char *file, int line, const char *a, const char *b,
    unsigned long long va, unsigned long long vb) __attribute__((noreturn));

#endif /* CXLP_ERR_H */
