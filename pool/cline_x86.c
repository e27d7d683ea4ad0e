/*
 * cline_x86.c -- cline.h on x86-64: clwb, clflushopt or clflush, found
 * through cpuid leaf 7 (EBX bit 24 clwb, bit 23 clflushopt) and leaf 1
 * (EDX bit 19 clflush).
 *
 * Ordering (Intel SDM vol. 2, each instruction): clwb and clflushopt are
 * weakly ordered with other stores and with each other, so a write-back
 * is finished by an sfence before the store that publishes it; a drop is
 * followed by an mfence, since the loads that must miss come next.
 * clflush is ordered with stores but not with younger loads: an mfence
 * after it too. The instructions are written as mnemonics (binutils
 * knows them whatever -march says); the one chosen is the only one run.
 */
#include <cpuid.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cline.h"

static int chosen = -1; /* enum cline_method, -1 before cline_init */

static enum cline_method
cpu_best(void)
{
	unsigned a, b, c, d;

	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		if (b & (1u << 24)) {
			return CLINE_CLWB;
		}
		if (b & (1u << 23)) {
			return CLINE_CLFLUSHOPT;
		}
	}
	if (__get_cpuid(1, &a, &b, &c, &d) && (d & (1u << 19))) {
		return CLINE_CLFLUSH;
	}
	return CLINE_NONE;
}

/* the method CXLP_CLINE names, if the CPU has it (every weaker one is
 * there when a stronger is: clwb CPUs have clflushopt and clflush) */
static enum cline_method
forced(enum cline_method best)
{
	static const char *const names[] = {
		[CLINE_CLFLUSH] = "clflush",
		[CLINE_CLFLUSHOPT] = "clflushopt",
		[CLINE_CLWB] = "clwb",
	};
	const char *v = getenv("CXLP_CLINE");

	for (int m = CLINE_CLFLUSH; v != NULL && m <= CLINE_CLWB; m++) {
		if (strcmp(v, names[m]) == 0 && (enum cline_method)m <= best) {
			return (enum cline_method)m;
		}
	}
	return best;
}

/* cline_init -- see cline.h */
enum cline_method
cline_init(void)
{
	int m = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);

	if (m < 0) {
		m = (int)forced(cpu_best());
		__atomic_store_n(&chosen, m, __ATOMIC_RELEASE);
	}
	return (enum cline_method)m;
}

/* cline_method -- see cline.h */
enum cline_method
cline_method(void)
{
	return cline_init();
}

static inline void
clwb(const char *p)
{
	__asm__ volatile("clwb %0" : "+m"(*(volatile char *)p));
}

static inline void
clflushopt(const char *p)
{
	__asm__ volatile("clflushopt %0" : "+m"(*(volatile char *)p));
}

static inline void
clflush(const char *p)
{
	__asm__ volatile("clflush %0" : "+m"(*(volatile char *)p));
}

/* each line of [addr, addr + len), by the method's instruction */
static void
each_line(const void *addr, size_t len, bool drop)
{
	uintptr_t p = (uintptr_t)addr & ~(uintptr_t)(CLINE_SIZE - 1);
	uintptr_t end = (uintptr_t)addr + len;
	enum cline_method m = cline_method();

	for (; p < end; p += CLINE_SIZE) {
		if (m == CLINE_CLWB && !drop) {
			clwb((const char *)p);
		} else if (m == CLINE_CLWB || m == CLINE_CLFLUSHOPT) {
			clflushopt((const char *)p);
		} else if (m == CLINE_CLFLUSH) {
			clflush((const char *)p);
		}
	}
}

/* cline_writeback -- see cline.h */
void
cline_writeback(const void *addr, size_t len)
{
	if (len == 0) {
		return;
	}
	each_line(addr, len, false);
	__asm__ volatile("sfence" ::: "memory");
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
	if (len == 0) {
		return;
	}
	each_line(addr, len, true);
	cline_drop_fence();
}

/* cline_drop_unfenced -- see cline.h */
void
cline_drop_unfenced(const void *addr, size_t len)
{
	each_line(addr, len, true);
}

/* cline_drop_fence -- see cline.h: clflushopt is ordered with later
 * loads by mfence (clflush by itself, but mfence is then harmless) */
void
cline_drop_fence(void)
{
	__asm__ volatile("mfence" ::: "memory");
}
