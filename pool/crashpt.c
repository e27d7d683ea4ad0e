/*
 * crashpt.c -- test-only crash points (see crashpt.h): count the pool's
 * metadata persist points and die at a chosen one.
 *
 * Why this shape: a crash-consistency argument is only as good as the
 * points it was tested at, and the points that matter are exactly the
 * persists, since the ordering rules (kvindex.c design note 10) are stated
 * between them. Dying at each in turn, and recovering, tests every
 * ordering edge; the "tear" mode adds the media a kill cannot show on a
 * file mapping (where every store is visible at once): a publish that did
 * not land and a range whose tail did not. The environment is read once,
 * on the first point; the counter is process-wide (the pool is written
 * under the metaserver's write lock, so points come one at a time).
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crashpt.h"

#define TEAR_BYTE 0xa5

static struct {
	atomic_flag inited;
	atomic_bool ready;
	uint64_t at;        /* 0: never */
	uint64_t commit_at; /* CXLP_CRASH_COMMIT; 0: never */
	atomic_int scoped;  /* crashpt_scope */
	atomic_uint_fast64_t sn; /* points passed in scope */
	bool tear;
	bool armed;         /* counting at all: at or count_path set */
	const char *count_path;
	atomic_uint_fast64_t n;
} cp = { .inited = ATOMIC_FLAG_INIT };

static void
write_count(void)
{
	FILE *f = fopen(cp.count_path, "w");

	if (f != NULL) {
		fprintf(f, "%llu\n", (unsigned long long)atomic_load(&cp.n));
		fclose(f);
	}
}

static void
init(void)
{
	const char *at, *mode;

	if (atomic_load(&cp.ready)) {
		return; /* the common case: no read-modify-write */
	}
	if (atomic_flag_test_and_set(&cp.inited)) {
		while (!atomic_load(&cp.ready)) {
			/* another thread is reading the environment */
		}
		return;
	}
	at = getenv("CXLP_CRASH_AT");
	mode = getenv("CXLP_CRASH_MODE");
	cp.at = at != NULL ? strtoull(at, NULL, 10) : 0;
	at = getenv("CXLP_CRASH_COMMIT");
	cp.commit_at = at != NULL ? strtoull(at, NULL, 10) : 0;
	cp.tear = mode != NULL && strcmp(mode, "tear") == 0;
	cp.count_path = getenv("CXLP_CRASH_COUNT");
	if (cp.count_path != NULL) {
		atexit(write_count);
	}
	cp.armed = cp.at != 0 || cp.count_path != NULL || cp.commit_at != 0;
	atomic_store(&cp.ready, true);
}

/* Is this point the one to die at? Points are counted from 1, and only
 * when a test asks (CXLP_CRASH_AT or CXLP_CRASH_COUNT): otherwise a point
 * costs one load. */
static bool
at_crash_point(void)
{
	init();
	if (cp.commit_at != 0 && atomic_load(&cp.scoped) &&
	    atomic_fetch_add(&cp.sn, 1) + 1 == cp.commit_at) {
		return true;
	}
	return cp.armed && atomic_fetch_add(&cp.n, 1) + 1 == cp.at;
}

static void
die(void)
{
	raise(SIGKILL);
	_exit(77); /* not reached */
}

/* crashpt_range -- see crashpt.h */
void
crashpt_range(void *addr, size_t len)
{
	if (!at_crash_point()) {
		return;
	}
	if (cp.tear && len >= 16) {
		size_t half = len / 2 & ~(size_t)7;

		memset((uint8_t *)addr + half, TEAR_BYTE, len - half);
	}
	die();
}

/* crashpt_store8 -- see crashpt.h */
void
crashpt_store8(uint64_t *dst, uint64_t v)
{
	if (!at_crash_point()) {
		return;
	}
	if (!cp.tear) {
		__atomic_store_n(dst, v, __ATOMIC_RELEASE);
	}
	die();
}

static void (*_Atomic rec_fn)(void *, const void *, size_t);
static void *rec_arg;

/* crashpt_persisted -- see crashpt.h */
void
crashpt_persisted(const void *addr, size_t len)
{
	void (*fn)(void *, const void *, size_t) = atomic_load(&rec_fn);

	if (fn != NULL) {
		fn(rec_arg, addr, len);
	}
}

/* crashpt_set_recorder -- see crashpt.h */
bool
crashpt_set_recorder(void (*fn)(void *arg, const void *addr, size_t len),
    void *arg)
{
	rec_arg = arg;
	atomic_store(&rec_fn, fn);
	return true;
}

/* crashpt_commit_pause -- see crashpt.h; reads the environment each time
 * (a commit of a test, not a hot path) */
void
crashpt_commit_pause(void)
{
	const char *us = getenv("CXLP_COMMIT_PAUSE_US");

	if (us != NULL) {
		usleep((useconds_t)strtoul(us, NULL, 10));
	}
}

/* crashpt_pipe_pause -- see crashpt.h; as crashpt_commit_pause */
void
crashpt_pipe_pause(void)
{
	const char *us = getenv("CXLP_PIPE_ADD_PAUSE_US");

	if (us != NULL) {
		usleep((useconds_t)strtoul(us, NULL, 10));
	}
}

/* crashpt_scope -- see crashpt.h */
void
crashpt_scope(int on)
{
	atomic_store(&cp.scoped, on);
}
