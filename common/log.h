/*
 * log.h -- leveled logging through a host-settable callback (ndctl's
 * log_fn). Library code logs; it never prints on its own.
 *
 * Lines that an outside event can repeat without bound (a connection
 * opened, an eviction pass) go through log_rl_*: each call site may
 * write CXLP_LOG_BURST lines per CXLP_LOG_WINDOW_MS; the lines past that
 * are counted, and the count comes with the site's next line after its
 * window, or from cxlp_log_flush (with the last line suppressed), as
 * "... (N similar lines suppressed)": each line is written or counted.
 * The budget is the site's, whatever the level.
 */
#ifndef CXLP_LOG_H
#define CXLP_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "cxlpool.h"

#define CXLP_LOG_BURST 10        /* lines per call site per window */
#define CXLP_LOG_WINDOW_MS 1000u /* ms */
#define CXLP_LOG_SITE_LINE 160   /* bytes of a site's last line kept */

/* One call site's budget (log_rl_* define one per call; all zeros is a
 * valid empty one). Guarded by the log's lock. */
struct cxlp_log_site {
	uint64_t start_ms;       /* start of the current window */
	uint32_t lines;          /* lines written in it */
	uint64_t suppressed;     /* lines counted since the last written */
	int level;               /* of the last line suppressed */
	char last[CXLP_LOG_SITE_LINE]; /* the last line suppressed */
	bool listed;             /* on the list cxlp_log_flush walks */
	struct cxlp_log_site *next;
};

void cxlp_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* cxlp_log_rl -- cxlp_log within site's budget (above). */
void cxlp_log_rl(struct cxlp_log_site *site, int level, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));
/* cxlp_log_flush -- write the count of every site whose window has
 * ended with lines suppressed (a periodic call; cheap when none has). */
void cxlp_log_flush(void);
/* cxlp_log_flush_all -- cxlp_log_flush of every site with a count,
 * whether or not its window has ended (at a process's stop). */
void cxlp_log_flush_all(void);
/* cxlp_log_set_clock -- tests: read now_ms from fn (NULL: the monotonic
 * clock again). */
void cxlp_log_set_clock(uint64_t (*fn)(void));
/* cxlp_log_atfork_child -- in a child of fork(): a new lock for the sink
 * (one of the parent's threads may have held it), and no site's count
 * (the parent's to report). */
void cxlp_log_atfork_child(void);
/* cxlp_log_level -- the current level (CXLP_LOG env read once). */
int cxlp_log_level(void);

#define log_err(...) cxlp_log(CXLP_LOG_ERR, __VA_ARGS__)
#define log_info(...) cxlp_log(CXLP_LOG_INFO, __VA_ARGS__)
#define log_rl(level, ...)                                                 \
	do {                                                               \
		static struct cxlp_log_site log_site_;                     \
		cxlp_log_rl(&log_site_, (level), __VA_ARGS__);             \
	} while (0)
#define log_rl_err(...) log_rl(CXLP_LOG_ERR, __VA_ARGS__)
#define log_rl_info(...) log_rl(CXLP_LOG_INFO, __VA_ARGS__)
#ifdef CXLP_DEBUG_LOG
#define log_dbg(...) cxlp_log(CXLP_LOG_DEBUG, __VA_ARGS__)
#define log_rl_dbg(...) log_rl(CXLP_LOG_DEBUG, __VA_ARGS__)
#else
#define log_dbg(...)                                                       \
	do {                                                               \
		if (0) {                                                   \
			cxlp_log(CXLP_LOG_DEBUG, __VA_ARGS__);             \
		}                                                          \
	} while (0)
#define log_rl_dbg(...) log_dbg(__VA_ARGS__)
#endif

#endif /* CXLP_LOG_H */
