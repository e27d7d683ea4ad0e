/*
 * log.c -- one process-wide log sink. The default writes to stderr at the
 * level CXLP_LOG names (err by default); a host replaces it with
 * cxlp_set_log_fn. Formatting happens only when the level passes.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static cxlp_log_fn log_fn;
static void *log_arg;
static int log_level = -1;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static int
level_from_env(void)
{
	static const char *const names[] = {
		[CXLP_LOG_OFF] = "off",
		[CXLP_LOG_ERR] = "err",
		[CXLP_LOG_INFO] = "info",
		[CXLP_LOG_DEBUG] = "debug",
	};
	const char *e = getenv("CXLP_LOG");

	if (e == NULL) {
		return CXLP_LOG_ERR;
	}
	for (int i = 0; i <= CXLP_LOG_DEBUG; i++) {
		if (strcmp(e, names[i]) == 0) {
			return i;
		}
	}
	return CXLP_LOG_ERR;
}

int
cxlp_log_level(void)
{
	int lvl = __atomic_load_n(&log_level, __ATOMIC_RELAXED);

	if (lvl < 0) {
		lvl = level_from_env();
		__atomic_store_n(&log_level, lvl, __ATOMIC_RELAXED);
	}
	return lvl;
}

void
cxlp_log_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	log_lock = fresh;
}

void
cxlp_set_log_fn(cxlp_log_fn fn, void *arg, int level)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_arg = arg;
	pthread_mutex_unlock(&log_lock);
	__atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

void
cxlp_log(int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (level > cxlp_log_level() || level <= CXLP_LOG_OFF) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	if (log_fn != NULL) {
		log_fn(level, msg, log_arg);
	} else {
		fprintf(stderr, "cxlpool: %s\n", msg);
	}
	pthread_mutex_unlock(&log_lock);
}
