/*
 * deadline.h -- an absolute time some milliseconds from now, on a given
 * clock, for pthread_cond_timedwait (whose condvar uses that clock).
 */
#ifndef CXLP_DEADLINE_H
#define CXLP_DEADLINE_H

#include <stdint.h>
#include <time.h>

static inline struct timespec
cxlp_deadline(clockid_t clk, uint64_t ms)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#endif /* CXLP_DEADLINE_H */
