/*
 * log.c -- one process-wide log sink. The default writes to stderr at the
 * level CXLP_LOG names (err by default); a host replaces it with
 * cxlp_set_log_fn. Formatting happens only when the level passes.
 *
 * Rate-limited sites (log.h, log_rl_*): a flood of one event must not
 * fill the log (issue 25: 1.43 million orphan-pass lines in 150 s,
 * 87,508 connection lines a minute under a port prober), yet every
 * line is accounted for. Each call site keeps its own window, so one
 * flooding site does not silence another. A suppressed line is still
 * formatted (into the site's last line, which the count repeats); the
 * log's volume, not a few microseconds of CPU, is what is bounded. Every
 * line is written or counted, exactly once: a count that comes with the
 * site's next line counts the lines before it; one that the flush writes
 * comes with the last line suppressed and counts the others. Sites
 * with a count join a list on their first suppressed line, which
 * cxlp_log_flush walks (only when some count is pending: one atomic load
 * otherwise); cxlp_log_flush_all, at a process's stop, writes every count
 * whatever its window. A count of a level the log no longer passes (the
 * level lowered since) is dropped, as its lines would be. A child of
 * fork starts with no counts: the parent's are the parent's to write.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"

static cxlp_log_fn log_fn;
static void *log_arg;
static int log_level = -1;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cxlp_log_site *sites;   /* listed sites, under log_lock */
static uint64_t pending;              /* sites with a count (atomic) */
static uint64_t (*clock_fn)(void);    /* tests' clock, or NULL */

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
	struct cxlp_log_site *s = sites;

	log_lock = fresh;
	/* the parent reports its own counts: none of them is the child's */
	while (s != NULL) {
		struct cxlp_log_site *next = s->next;

		s->suppressed = 0;
		s->lines = 0;
		s->listed = false;
		s->next = NULL;
		s = next;
	}
	sites = NULL;
	__atomic_store_n(&pending, 0, __ATOMIC_RELAXED);
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

static bool
passes(int level)
{
	return level <= cxlp_log_level() && level > CXLP_LOG_OFF;
}

/* write msg at level; log_lock held */
static void
emit(int level, const char *msg)
{
	if (log_fn != NULL) {
		log_fn(level, msg, log_arg);
	} else {
		fprintf(stderr, "cxlpool: %s\n", msg);
	}
}

void
cxlp_log(int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!passes(level)) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	emit(level, msg);
	pthread_mutex_unlock(&log_lock);
}

static uint64_t
now_ms(void)
{
	uint64_t (*fn)(void) = __atomic_load_n(&clock_fn, __ATOMIC_ACQUIRE);

	return fn != NULL ? fn() : cxlp_now_ms();
}

/* cxlp_log_set_clock -- see log.h */
void
cxlp_log_set_clock(uint64_t (*fn)(void))
{
	__atomic_store_n(&clock_fn, fn, __ATOMIC_RELEASE);
}

/* site's count, taken (cleared); log_lock held */
static uint64_t
take_count(struct cxlp_log_site *site)
{
	uint64_t n = site->suppressed;

	if (n > 0) {
		site->suppressed = 0;
		__atomic_fetch_sub(&pending, 1, __ATOMIC_RELAXED);
	}
	return n;
}

/* msg is suppressed at site: counted, kept as its last line */
static void
suppress(struct cxlp_log_site *site, int level, const char *msg)
{
	size_t n;

	if (site->suppressed++ == 0) {
		__atomic_fetch_add(&pending, 1, __ATOMIC_RELAXED);
	}
	if (!site->listed) {
		site->listed = true;
		site->next = sites;
		sites = site;
	}
	n = strlen(msg);
	if (n >= sizeof(site->last)) {
		n = sizeof(site->last) - 1; /* the count needs only its start */
	}
	site->level = level;
	memcpy(site->last, msg, n);
	site->last[n] = '\0';
}

/* cxlp_log_rl -- see log.h */
void
cxlp_log_rl(struct cxlp_log_site *site, int level, const char *fmt, ...)
{
	char msg[512];
	uint64_t now, carried = 0;
	va_list ap;

	if (!passes(level)) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	now = now_ms();
	pthread_mutex_lock(&log_lock);
	if (site->lines == 0 || now - site->start_ms >= CXLP_LOG_WINDOW_MS) {
		site->start_ms = now;
		site->lines = 0;
		carried = take_count(site);
	}
	if (site->lines >= CXLP_LOG_BURST) {
		suppress(site, level, msg);
	} else if (site->lines++, carried > 0) {
		char line[600];

		snprintf(line, sizeof(line), "%s (%llu similar lines "
		    "suppressed)", msg, (unsigned long long)carried);
		emit(level, line);
	} else {
		emit(level, msg);
	}
	pthread_mutex_unlock(&log_lock);
}

/* write the counts of the sites whose window has ended, or (all) of
 * every site; a count of a level that no longer passes is dropped */
static void
flush(bool all)
{
	uint64_t now;

	if (__atomic_load_n(&pending, __ATOMIC_RELAXED) == 0) {
		return;
	}
	now = now_ms();
	pthread_mutex_lock(&log_lock);
	for (struct cxlp_log_site *s = sites; s != NULL; s = s->next) {
		uint64_t n;
		char line[CXLP_LOG_SITE_LINE + 64];

		if (s->suppressed == 0 ||
		    (!all && now - s->start_ms < CXLP_LOG_WINDOW_MS)) {
			continue;
		}
		/* the last line suppressed is written now, the rest counted:
		 * every line is written or counted, once */
		n = take_count(s) - 1;
		/* the count closes the window: the next line opens one */
		s->lines = 0;
		if (!passes(s->level)) {
			continue; /* the level was lowered since */
		}
		if (n == 0) {
			snprintf(line, sizeof(line), "%s", s->last);
		} else {
			snprintf(line, sizeof(line), "%s (%llu similar lines "
			    "suppressed)", s->last, (unsigned long long)n);
		}
		emit(s->level, line);
	}
	pthread_mutex_unlock(&log_lock);
}

/* cxlp_log_flush -- see log.h */
void
cxlp_log_flush(void)
{
	flush(false);
}

/* cxlp_log_flush_all -- see log.h */
void
cxlp_log_flush_all(void)
{
	flush(true);
}
