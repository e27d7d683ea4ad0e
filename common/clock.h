/*
 * clock.h -- monotonic time in milliseconds, for the handler and the
 * metaserver alike (one definition, where each side once had its own).
 *
 * Two clocks, as the two sides always used: the metaserver's deadlines
 * (grace, silence, reply-cache and log windows) read CLOCK_MONOTONIC;
 * the handler's checks on its hot paths (the keeper's period, the last
 * reply, direct reads' pool-file recheck) read CLOCK_MONOTONIC_COARSE,
 * which costs no more than a memory read and is good to a few ms. Both
 * count from the same origin; compare a value only with values of the
 * same clock.
 */
#ifndef CXLP_CLOCK_H
#define CXLP_CLOCK_H

#include <stdint.h>
#include <time.h>

/* cxlp_clock_ms -- clock clk in ms. */
static inline uint64_t
cxlp_clock_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* cxlp_now_ms -- CLOCK_MONOTONIC in ms. */
static inline uint64_t
cxlp_now_ms(void)
{
	return cxlp_clock_ms(CLOCK_MONOTONIC);
}

/* cxlp_now_coarse_ms -- CLOCK_MONOTONIC_COARSE in ms (a few ms coarse). */
static inline uint64_t
cxlp_now_coarse_ms(void)
{
	return cxlp_clock_ms(CLOCK_MONOTONIC_COARSE);
}

/* cxlp_now_us -- CLOCK_MONOTONIC in us. */
static inline uint64_t
cxlp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* cxlp_now_real_ns -- CLOCK_REALTIME in ns. */
static inline uint64_t
cxlp_now_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* cxlp_sleep_ms -- sleep ms milliseconds (a signal may cut it short). */
static inline void
cxlp_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000u, (long)(ms % 1000u) * 1000000L };

	nanosleep(&ts, NULL);
}

#endif /* CXLP_CLOCK_H */
