/*
 * cline_none.c -- cline.h where this code knows no cache maintenance
 * instruction: the method is CLINE_NONE and the calls do nothing but
 * fence, so the software-coherence mode refuses to start (cline.h).
 */
#include "cline.h"

/* cline_init -- see cline.h */
enum cline_method
cline_init(void)
{
	return CLINE_NONE;
}

/* cline_method -- see cline.h */
enum cline_method
cline_method(void)
{
	return CLINE_NONE;
}

/* cline_writeback -- see cline.h */
void
cline_writeback(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* cline_writeback_unfenced -- see cline.h */
void
cline_writeback_unfenced(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
}

/* cline_drop -- see cline.h */
void
cline_drop(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* cline_drop_unfenced -- see cline.h */
void
cline_drop_unfenced(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
}

/* cline_drop_fence -- see cline.h */
void
cline_drop_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
