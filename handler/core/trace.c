/*
 * trace.c -- test-only recording hooks (see trace.h): append what the
 * write path did to the file named by CXLP_TRACE_FILE.
 *
 * Why this shape: contract 1 is an order between two events inside the
 * handler (a page's bytes persisted, then the REGISTER naming it sent),
 * and nothing outside the process can see that order: on a tmpfs pool
 * the bytes are visible to a reader whether or not they were flushed.
 * So the two events are written down where they happen, in pool offsets
 * (what the REGISTER frame carries), under one lock so that lines of
 * threads never interleave, and the test reads the order back. The
 * environment is read once, on the first hook; a file that cannot be
 * opened turns the hooks off.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out; /* NULL: not recording */

static void
trace_open(void)
{
	const char *path = getenv("CXLP_TRACE_FILE");

	if (path != NULL && path[0] != '\0') {
		out = fopen(path, "a");
	}
}

static FILE *
trace_file(void)
{
	pthread_once(&once, trace_open);
	return out;
}

/* trace_persist -- see trace.h */
void
trace_persist(uint64_t off, uint64_t len)
{
	FILE *f = trace_file();

	if (f == NULL) {
		return;
	}
	pthread_mutex_lock(&lock);
	fprintf(f, "persist %llu %llu\n", (unsigned long long)off,
	    (unsigned long long)len);
	fflush(f);
	pthread_mutex_unlock(&lock);
}

/* trace_register -- see trace.h */
void
trace_register(const struct pbuf *body)
{
	struct proto_reg *regs = NULL;
	struct preader r;
	uint32_t flags, n = 0;
	FILE *f = trace_file();

	if (f == NULL) {
		return;
	}
	preader_init(&r, body->data, body->len);
	if (proto_get_regs(&r, &flags, &regs, &n) != 0) {
		n = 0; /* recorded as a REGISTER naming nothing */
	}
	pthread_mutex_lock(&lock);
	fprintf(f, "register %u\n", n);
	for (uint32_t i = 0; i < n; i++) {
		fprintf(f, "reg %llu %llu\n", (unsigned long long)regs[i].off,
		    (unsigned long long)regs[i].len);
	}
	fflush(f);
	pthread_mutex_unlock(&lock);
	free(regs);
}
