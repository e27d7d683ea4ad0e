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

/* crashpt_persisted -- no-op */
void
crashpt_persisted(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
}

/* crashpt_set_recorder -- nothing to record with */
bool
crashpt_set_recorder(void (*fn)(void *arg, const void *addr, size_t len),
    void *arg)
{
	(void)fn;
	(void)arg;
	return false;
}

void
crashpt_commit_pause(void)
{
}

void
crashpt_pipe_pause(void)
{
}

void
crashpt_scope(int on)
{
	(void)on;
}
