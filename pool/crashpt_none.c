/*
 * crashpt_none.c -- crash points compiled out (meson -Dtest_hooks=false):
 * the persist paths call these empty functions. See crashpt.h.
 */
#include "crashpt.h"

/* crashpt_range -- no-op */
void
crashpt_range(void *addr, size_t len)
{
	(void)addr;
	(void)len;
}

/* crashpt_store8 -- no-op */
void
crashpt_store8(uint64_t *dst, uint64_t v)
{
	(void)dst;
	(void)v;
}

void
crashpt_commit_pause(void)
{
}

void
crashpt_scope(int on)
{
	(void)on;
}
