/*
 * cline.h -- cache-line maintenance of this CPU: write lines back to
 * memory, drop them from the cache, and the fences that order both. The
 * software-coherence mode of a pool that several hosts share without
 * hardware coherence (DESIGN.md, contract 11) publishes and reads through
 * these; a pool of one coherence domain never calls them.
 *
 * The method is chosen once per process (cline_init; every call also
 * initialises on first use) from what the CPU has: on x86-64 clwb (write
 * back, the line may stay), else clflushopt, else clflush (both write
 * back and drop); on aarch64 DC CVAC and DC CIVAC; elsewhere none
 * (cline_method() == CLINE_NONE: the mode refuses to start, since it
 * cannot keep its promise). cline_x86.c, cline_arm64.c and cline_none.c
 * are the three builds (meson picks one by CPU family).
 */
#ifndef CXLP_POOL_CLINE_H
#define CXLP_POOL_CLINE_H

#include <stddef.h>

#define CLINE_SIZE 64u /* bytes of a cache line on every CPU we build for */

enum cline_method {
	CLINE_NONE = 0,       /* no cache maintenance from user space */
	CLINE_CLFLUSH = 1,    /* x86 clflush: ordered with stores, drops */
	CLINE_CLFLUSHOPT = 2, /* x86 clflushopt: weakly ordered, drops */
	CLINE_CLWB = 3,       /* x86 clwb (write back) + clflushopt (drop) */
	CLINE_DC = 4,         /* aarch64 DC CVAC (write back), DC CIVAC */
};

/* cline_init -- choose the method (idempotent, thread-safe). Returns it.
 * CXLP_CLINE=clflush|clflushopt|clwb forces a weaker method than the
 * CPU's best, for tests and benchmarks; one the CPU lacks is ignored. */
enum cline_method cline_init(void);
/* cline_method -- the method in use (cline_init first if needed). */
enum cline_method cline_method(void);
/* cline_method_name -- "clwb", "clflushopt", "clflush", "dc", "none". */
const char *cline_method_name(enum cline_method m);

/* cline_writeback -- write every line of [addr, addr + len) back to
 * memory, and fence: when it returns, the lines are in memory (another
 * host that drops its copy reads them) and later stores are ordered
 * after them. The lines may stay cached. len 0 does nothing. */
void cline_writeback(const void *addr, size_t len);
/* cline_writeback_unfenced -- cline_writeback without its fence: the
 * write-backs are issued and finish on their own, ordered with nothing;
 * for advisory bytes whose delay costs nothing (a reader's access
 * counters), so that no read waits for them. The next fence this thread
 * runs (a drop's, a publish's) waits for them too. */
void cline_writeback_unfenced(const void *addr, size_t len);
/* cline_drop -- write back and drop every line of [addr, addr + len),
 * and fence: loads after it miss the cache and read memory. */
void cline_drop(const void *addr, size_t len);
/* cline_drop_unfenced, cline_drop_fence -- cline_drop in two steps, so
 * that the drops of several ranges wait for one fence: loads are ordered
 * after the lines only once cline_drop_fence returns. */
void cline_drop_unfenced(const void *addr, size_t len);
void cline_drop_fence(void);

#endif /* CXLP_POOL_CLINE_H */
