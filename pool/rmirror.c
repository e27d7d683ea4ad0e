/*
 * rmirror.c -- the region table's second copy (POOL_INCOMPAT_RMIRROR):
 * one damaged region record would otherwise take every key in the region
 * with it, and a region holds thousands of keys.
 *
 * Why this shape: the copy is a second table of the same records right
 * after the first, in the same area, written after the primary in the
 * same order (body, persist, word), so that at any moment either the two
 * agree or the primary holds the newer state:
 *   alloc  [regtab_alloc]: primary body, word; then the copy
 *          [rmirror_sync];
 *   disown, free, repair drop [rrec_set_word]: primary word, copy word.
 * A crash in between leaves the copy one step behind, and a copy whose
 * body is rewritten is first marked FREE, so every state a crash leaves
 * in it is a valid record or a FREE one. At open [rmirror_prepare]:
 *   - a primary that fails layout_rrec_problem while its copy passes is
 *     damage the copy undoes: the copy is written over it, nothing is
 *     lost (counted in damage->restored);
 *   - any other difference is the copy lagging (a crash: torn) or a
 *     damaged copy (restored); either way the primary is written over
 *     it at the end of the repair rebuild [rmirror_sync_all].
 * A rebuild that may not write (read-only, or the first phase of
 * pool.c's two) reads the table from a DRAM copy in which the damaged
 * primaries are already replaced, so that it sees what the repair will
 * make. What the copy cannot tell (a flipped state bit that turns OWNED
 * into FREE looks like a free the crash cut short) is left to the key
 * links: keys pointing at a FREE region are reported as damage (kv.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "persist.h"
#include "pool_int.h"

static bool
rec_live(const struct pool_rrec *r)
{
	return rrec_state(r->word) != POOL_REGION_FREE;
}

/* a live record that would be dropped: damaged */
static bool
rec_bad(const struct pool *p, const struct pool_rrec *r)
{
	return rec_live(r) && layout_rrec_problem(p->sb, p->align, r) != NULL;
}

/* the copy can stand in for a damaged primary */
static bool
rec_good(const struct pool *p, const struct pool_rrec *r)
{
	return rec_live(r) && layout_rrec_problem(p->sb, p->align, r) == NULL;
}

/* dst := src, body first (dst reads FREE meanwhile if they differ) */
static void
rec_copy(struct pool *p, struct pool_rrec *dst, const struct pool_rrec *src)
{
	if (memcmp((uint8_t *)dst + 8, (const uint8_t *)src + 8,
	    sizeof(*dst) - 8) != 0) {
		if (rec_live(dst)) {
			pool_store8(p, &dst->word, rrec_word(POOL_REGION_FREE,
			    rrec_gen(dst->word)));
		}
		memcpy((uint8_t *)dst + 8, (const uint8_t *)src + 8,
		    sizeof(*dst) - 8);
		pool_persist_cb(p, dst, sizeof(*dst));
	}
	if (dst->word != src->word) {
		pool_store8(p, &dst->word, src->word);
	}
}

/* rmirror_prepare -- see pool_int.h */
int
rmirror_prepare(struct pool *p, bool repair)
{
	if (p->rmir == NULL) {
		return 0;
	}
	if (!repair) {
		p->rcopy = malloc(p->nregions * sizeof(*p->rcopy));
		if (p->rcopy == NULL) {
			return cxlp_fail(-ENOMEM, "no memory for the region "
			    "table");
		}
		memcpy(p->rcopy, p->rprim, p->nregions * sizeof(*p->rcopy));
		p->rtab = p->rcopy;
	}
	for (uint32_t i = 0; i < p->nregions; i++) {
		const struct pool_rrec *pr = &p->rprim[i], *mr = &p->rmir[i];

		if (rec_bad(p, pr) && rec_good(p, mr)) {
			p->damage->restored++;
			if (repair) {
				rec_copy(p, &p->rprim[i], mr);
			} else {
				p->rcopy[i] = *mr;
			}
		} else if (memcmp(pr, mr, sizeof(*pr)) != 0) {
			p->damage->restored += rec_bad(p, mr);
			p->damage->torn += !rec_bad(p, mr);
		}
	}
	return 0;
}

/* rmirror_sync -- see pool_int.h */
void
rmirror_sync(struct pool *p, uint32_t i)
{
	if (p->rmir != NULL && !p->rdonly) {
		rec_copy(p, &p->rmir[i], &p->rprim[i]);
	}
}

/* rmirror_sync_all -- see pool_int.h */
void
rmirror_sync_all(struct pool *p)
{
	for (uint32_t i = 0; p->rmir != NULL && i < p->nregions; i++) {
		if (memcmp(&p->rprim[i], &p->rmir[i], sizeof(p->rprim[i]))) {
			rmirror_sync(p, i);
		}
	}
}

/* rrec_set_word -- see pool_int.h */
void
rrec_set_word(struct pool *p, uint32_t i, uint64_t w)
{
	pool_store8(p, &p->rprim[i].word, w);
	if (p->rmir != NULL) {
		pool_store8(p, &p->rmir[i].word, w);
	}
}

/* rmirror_fini -- see pool_int.h */
void
rmirror_fini(struct pool *p)
{
	free(p->rcopy);
	p->rcopy = NULL;
	p->rtab = p->rprim;
}
