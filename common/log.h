/*
 * log.h -- leveled logging through a host-settable callback (ndctl's
 * log_fn). Library code logs; it never prints on its own.
 */
#ifndef CXLP_LOG_H
#define CXLP_LOG_H

#include "cxlpool.h"

void cxlp_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* cxlp_log_atfork_child -- in a child of fork(): a new lock for the sink
 * (one of the parent's threads may have held it). */
void cxlp_log_atfork_child(void);
/* cxlp_log_level -- the current level (CXLP_LOG env read once). */
int cxlp_log_level(void);

#define log_err(...) cxlp_log(CXLP_LOG_ERR, __VA_ARGS__)
#define log_info(...) cxlp_log(CXLP_LOG_INFO, __VA_ARGS__)
#ifdef CXLP_DEBUG_LOG
#define log_dbg(...) cxlp_log(CXLP_LOG_DEBUG, __VA_ARGS__)
#else
#define log_dbg(...)                                                       \
	do {                                                               \
		if (0) {                                                   \
			cxlp_log(CXLP_LOG_DEBUG, __VA_ARGS__);             \
		}                                                          \
	} while (0)
#endif

#endif /* CXLP_LOG_H */
