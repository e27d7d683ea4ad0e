/*
 * cline_arm64.c -- cline.h on aarch64: DC CVAC writes a line back to the
 * point of coherence, DC CIVAC writes back and invalidates; a DSB
 * completes them before what follows. Both are allowed at EL0 where the
 * kernel sets SCTLR_EL1.UCI, as Linux does. DSB SY, not ISH: another host
 * over CXL is outside the inner-shareable domain (Linux's dcache_clean_poc
 * and its DMA syncs use SY for the same reason). Not built or run here (the
 * project's machines are x86-64); kept so the mode builds where it may.
 */
#include <stdbool.h>
#include <stdint.h>

#include "cline.h"

/* cline_init -- see cline.h */
enum cline_method
cline_init(void)
{
	return CLINE_DC;
}

/* cline_method -- see cline.h */
enum cline_method
cline_method(void)
{
	return CLINE_DC;
}

static void
each_line(const void *addr, size_t len, bool drop)
{
	uintptr_t p = (uintptr_t)addr & ~(uintptr_t)(CLINE_SIZE - 1);
	uintptr_t end = (uintptr_t)addr + len;

	for (; p < end; p += CLINE_SIZE) {
		if (drop) {
			__asm__ volatile("dc civac, %0" ::"r"(p) : "memory");
		} else {
			__asm__ volatile("dc cvac, %0" ::"r"(p) : "memory");
		}
	}
}

/* cline_writeback -- see cline.h */
void
cline_writeback(const void *addr, size_t len)
{
	each_line(addr, len, false);
	__asm__ volatile("dsb sy" ::: "memory");
}

/* cline_writeback_unfenced -- see cline.h */
void
cline_writeback_unfenced(const void *addr, size_t len)
{
	each_line(addr, len, false);
}

/* cline_drop -- see cline.h */
void
cline_drop(const void *addr, size_t len)
{
	each_line(addr, len, true);
	cline_drop_fence();
}

/* cline_drop_unfenced -- see cline.h */
void
cline_drop_unfenced(const void *addr, size_t len)
{
	each_line(addr, len, true);
}

/* cline_drop_fence -- see cline.h */
void
cline_drop_fence(void)
{
	__asm__ volatile("dsb sy" ::: "memory");
}
