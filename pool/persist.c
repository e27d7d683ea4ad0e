/*
 * persist.c -- how the pool's metadata writes reach other processes and
 * media, in one module (as libpmem2 keeps its persist.c apart): a range
 * persisted after plain stores [pool_persist_cb], an 8-byte publish
 * [pool_store8], and the owner record's quiet stores, compare-and-swap,
 * persist and loads [pool_set8, pool_cas8, pool_persist_quiet,
 * pool_load8, pool_load8_here]. Each persist of the first two is a crash point before it
 * and a recorded one after it (crashpt.h), for the tests.
 *
 * Why this shape: every table of the pool (regtab.c, rmirror.c,
 * sesstab.c, pintab.c, the index through kvindex_init's callback, the
 * superblock in pool.c, owner_hold.c) orders its writes the same way (body,
 * persist, one 8-byte publish, persist), so the ordering lives in their
 * design notes and the mechanism lives here. That also keeps these
 * modules out of pool.c: they call down into this one, which calls only
 * map.c and crashpt.c, and pool.c calls them, with no loop between them.
 * And this is where the software-coherence modes live (DESIGN.md,
 * "Memory that hosts do not share coherently"; coh.h): on a device that
 * hosts share without hardware coherence (sw, sim), pool_persist_cb,
 * pool_store8 and pool_persist_quiet also write back the lines they
 * publish (map.c: pmap_persist), and pool_load8 drops the reader's
 * cached copy of the line before reading it (pool_load8_here does not:
 * for words only this host writes). pool_cas8 is atomic on this host's
 * copy only, so owner_hold.c does not use it in those modes (owner_sw.c).
 * The other shared reads are the handler's, through kvread.c's loads
 * (ld32, ld64 and the slot and region words); the index's own slot
 * words (kvindex_load_word, kvindex_store_word) persist through
 * pool_persist_cb.
 */
#include "crashpt.h"
#include "err.h"
#include "persist.h"
#include "pool_int.h"

/* pool_persist_cb -- see persist.h */
void
pool_persist_cb(void *ctx, const void *addr, size_t len)
{
	struct pool *p = ctx;

	crashpt_range((void *)(uintptr_t)addr, len);
	pmap_persist(p->map, addr, len);
	crashpt_persisted(addr, len);
}

/* pool_store8 -- see persist.h */
void
pool_store8(struct pool *p, uint64_t *dst, uint64_t v)
{
	cxlp_assert(!p->rdonly && ((uintptr_t)dst & 7u) == 0);
	crashpt_store8(dst, v);
	__atomic_store_n(dst, v, __ATOMIC_RELEASE);
	pmap_persist(p->map, dst, sizeof(*dst));
	crashpt_persisted(dst, sizeof(*dst));
}

/* pool_persist_quiet -- see persist.h */
void
pool_persist_quiet(struct pool *p, const void *addr, size_t len)
{
	pmap_persist(p->map, addr, len);
}

/* pool_set8 -- see persist.h */
void
pool_set8(uint64_t *dst, uint64_t v)
{
	__atomic_store_n(dst, v, __ATOMIC_RELEASE);
}

/* pool_cas8 -- see persist.h */
bool
pool_cas8(uint64_t *dst, uint64_t *expect, uint64_t v)
{
	return __atomic_compare_exchange_n(dst, expect, v, false,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* pool_load8 -- see persist.h */
uint64_t
pool_load8(const struct pool *p, const uint64_t *src)
{
	pool_fresh(p, src, sizeof(*src));
	return __atomic_load_n(src, __ATOMIC_ACQUIRE);
}

/* pool_load8_here -- see persist.h */
uint64_t
pool_load8_here(const uint64_t *src)
{
	return __atomic_load_n(src, __ATOMIC_ACQUIRE);
}
