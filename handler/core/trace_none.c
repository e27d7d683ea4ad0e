/*
 * trace_none.c -- the recording hooks compiled out (meson
 * -Dtest_hooks=false): see trace.h.
 */
#include "trace.h"

/* trace_persist -- nothing recorded in this build. */
void
trace_persist(uint64_t off, uint64_t len)
{
	(void)off;
	(void)len;
}

/* trace_register -- nothing recorded in this build. */
void
trace_register(const struct pbuf *body)
{
	(void)body;
}
