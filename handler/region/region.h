/*
 * region.h -- the region layer: the own-region table, the region map and
 * its event queue, mapping, give-back, reclaim, allocation, direct reads of
 * the pool's metadata, region views.
 *
 * A file of handler/region/ includes this header, and through it those of
 * the layers below (handler_int.h draws them; tests/handler/check_layers.py
 * checks the rule).
 */
#ifndef CXLP_HANDLER_REGION_H
#define CXLP_HANDLER_REGION_H

#include "session.h"

/* ---- owntab.c ----------------------------------------------------------- */

/* owntab_state_init -- set up rg: no region, no mapping, no
 * prefaulter. */
void owntab_state_init(struct regions *rg);
/* owntab_state_fini -- tear rg down, after regions_fini. */
void owntab_state_fini(struct regions *rg);
/* owntab_loc_ok -- loc's region extent is not empty, 4096-aligned and
 * inside the pool. */
bool owntab_loc_ok(const struct cxlp_handler *h,
    const struct proto_loc *loc);
/* owntab_find -- local index of my region (id, gen) or -1. Caller
 * holds page_lock. */
int owntab_find(const struct cxlp_handler *h, uint32_t region,
    uint32_t gen);
/* owntab_page_of -- the page at loc in one of my regions (page_lock
 * held): 0 and *pg, or CXLP_E_NOTFOUND. */
int owntab_page_of(const struct cxlp_handler *h, const struct proto_loc *loc,
    cxlp_page_t *pg);
/* owntab_page_addr -- RW address and pool offset of an own page
 * (page_lock held; pg valid). */
uint8_t *owntab_page_addr(const struct cxlp_handler *h, cxlp_page_t pg,
    uint64_t *pool_off);
/* owntab_may_grow -- max_regions allows one more region (takes
 * page_lock). */
bool owntab_may_grow(struct cxlp_handler *h);
/* owntab_region_len -- the length of the regions this handler asks for. */
uint64_t owntab_region_len(const struct cxlp_handler *h);
/* owntab_grant_check -- a region the server granted fits the pool and
 * the page size: 0, or CXLP_E_PROTO. */
int owntab_grant_check(const struct cxlp_handler *h,
    const struct proto_loc *loc);

/* ---- regions.c ---------------------------------------------------------- */

int regions_init(struct cxlp_handler *h);
void regions_fini(struct cxlp_handler *h);
/* regions_add -- ask the server for one more region and enter it (expand_lock
 * held); with pg, hand out its first page. */
int regions_add(struct cxlp_handler *h, cxlp_page_t *pg);
/* regions_enter -- map the region the server granted at loc and enter it
 * in the page table, taking its first page into *pg (pg NULL: none);
 * on failure it is given back. Caller holds expand_lock. */
int regions_enter(struct cxlp_handler *h, const struct proto_loc *loc,
    cxlp_page_t *pg);

/* ---- rmap.c ------------------------------------------------------------- */

/* rmap_put -- enter e (new) in the region map, replacing any entry for
 * its region id (a foreign one is retired, an own one freed). map_lock
 * held for writing. */
void rmap_put(struct cxlp_handler *h, struct rmap_ent *e);
/* rmap_fini -- unmap and free every entry, and the retired mappings (at
 * close, prefaulter stopped). */
void rmap_fini(struct cxlp_handler *h);
/* rmap_resolve_ptr -- rmap.c: loc's value as a pointer into its region's
 * mapping (mapped on first use), its lines dropped on sw and sim pools
 * unless dropped (the lookup's proof dropped them: RES_F_DROPPED). */
int rmap_resolve_ptr(struct cxlp_handler *h, const struct proto_loc *loc,
    bool dropped, const void **data);
/* rmap_drop_value_lines -- the lines of loc's value dropped without a
 * fence (pmap_fresh_lines) if its region is mapped and loc lies inside
 * it: true if so. map_lock held, shared. */
bool rmap_drop_value_lines(struct cxlp_handler *h,
    const struct proto_loc *loc);
/* RES_F_DROPPED -- in a proto_result's flags, never on the wire: a
 * direct lookup dropped the value's lines with its proof's fence
 * (directlook.c note 3), so resolving it drops nothing more */
#define RES_F_DROPPED 0x80000000u
uint64_t rmap_foreign_count(struct cxlp_handler *h);
/* rmap_own_unlink -- take my region (loc's id and gen) out of the
 * region map, so that no location resolves to its mapping any more (a
 * no-op when it is not there). Takes map_lock. */
void rmap_own_unlink(struct cxlp_handler *h, const struct proto_loc *loc);
/* rmap_delivering -- this thread is running one of h's region
 * callbacks (regview.c note 3). */
bool rmap_delivering(const struct cxlp_handler *h);
/* rmap_note -- the region map entry e was put (CXLP_REGION_MAPPED) or
 * is taken out (CXLP_REGION_UNMAPPING): queue the event for the region
 * callback, if one is set. map_lock held for writing (or the handler
 * closing, single-threaded). Takes only the queue's leaf lock. */
void rmap_note(struct cxlp_handler *h, const struct rmap_ent *e,
    int kind);
/* rmap_drain -- deliver the queued events to the region callback.
 * Caller holds none of h's locks (regview.c note 1). */
void rmap_drain(struct cxlp_handler *h);
/* rmap_events_fini -- free the callback's state (handler_free). */
/* rmap_ent_info -- what the region callback and the views say of e. */
void rmap_ent_info(const struct cxlp_handler *h, const struct rmap_ent *e,
    struct cxlp_region_info *out);
/* rmap_collect -- every entry of the region map into out[0..cap), sorted
 * by id; returns how many there are. map_lock held. */
size_t rmap_collect(struct cxlp_handler *h, struct cxlp_region_info *out,
    size_t cap);
void rmap_events_fini(struct cxlp_handler *h);

/* ---- prefaulter.c ------------------------------------------------------- */

/* prefault_queue -- queue a prefault of m (own regions ahead of foreign
 * ones). Best effort: without memory or a thread, m is faulted in on
 * first use. m must stay mapped until prefaulter_stop. Takes none of h's
 * locks, so callers may hold any of them. */
void prefault_queue(struct cxlp_handler *h, const struct pmap *m, bool own);
/* prefaulter_stop -- end h's prefaulter, if any; before any mapping is
 * closed. */
void prefaulter_stop(struct cxlp_handler *h);

/* ---- giveback.c --------------------------------------------------------- */

/* giveback_task -- the give-back as a keeper task (giveback_run, and
 * again GIVEBACK_RETRY_MS after a run that left regions unanswered). */
extern const struct keeper_task giveback_task;
/* giveback_run -- take the empty regions past the reserve out of use and
 * return them (REGION_FREE), and ask again for those whose REGION_FREE
 * went unanswered. Takes expand_lock and page_lock (caller holds none).
 * Returns true when some are left to ask again. */
bool giveback_run(struct cxlp_handler *h);
/* giveback_retire -- keep r, out of use and still mapped, until close
 * (a region whose entry failed after the region callback may have heard
 * of it: its UNMAPPING comes before the munmap). expand_lock held. */
void giveback_retire(struct cxlp_handler *h, struct own_region *r);
/* giveback_reuse -- the retired mapping of a region at loc's extent, made
 * writable again and no longer the give-back's (caller owns it), or NULL.
 * expand_lock held. */
struct pmap *giveback_reuse(struct cxlp_handler *h,
    const struct proto_loc *loc);
/* giveback_call -- REGION_FREE of (loc->region, loc->gen): 0 or the
 * call's error. */
int giveback_call(struct cxlp_handler *h, const struct proto_loc *loc);
/* giveback_fini -- unmap and free the give-back's regions (at close). */
void giveback_fini(struct cxlp_handler *h);

/* ---- alloc.c ------------------------------------------------------------ */

/* alloc_wait -- cxlp_alloc with a wait of wait_ms for room (reclaim.c
 * note 6) instead of the configured one, for a caller that needs need
 * pages in all (reserve.c's, per call; 1 for cxlp_alloc). */
int alloc_wait(struct cxlp_handler *h, cxlp_page_t *page, void **buf,
    unsigned wait_ms, uint32_t need);

/* ---- pagelife.c --------------------------------------------------------- */

/* pagelife_unlock -- release page_lock after pages went FREE; pokes the
 * give-back's keeper task (or runs it, with no keeper thread) when more
 * sets are empty than the reserve. */
void pagelife_unlock(struct cxlp_handler *h);
/* pagelife_key_gone -- a key of mine at loc went (deleted, or evicted):
 * its page is free again, or settles as its store decides (ops.c).
 * Takes page_lock. */
void pagelife_key_gone(struct cxlp_handler *h, const struct proto_loc *loc);
/* pagelife_forget -- drop page pg's unresolved entry (page_lock held): true
 * if it was there, false if resolve_run has it in hand. */
bool pagelife_forget(struct cxlp_handler *h, cxlp_page_t pg);

/* ---- regfit.c ----------------------------------------------------------- */

/* regfit_why -- the metaserver had no room for a region of len bytes:
 * CXLP_E_NOSPACE with a message giving the data area, its free bytes, a
 * region size that would fit and the --size that would (asks for the
 * pool's stats; caller holds no handler lock but expand_lock). Sets
 * h->regions.unfit when the region is larger than the whole data area. */
int regfit_why(struct cxlp_handler *h, uint64_t len);

/* ---- direct.c ----------------------------------------------------------- */

/* direct_open -- map the pool's metadata area read-only for direct reads
 * (after HELLO: needs pool_path, pool_size, align). Never fails: on any
 * problem it logs why and leaves h->direct NULL (lookups use RPC). */
void direct_open(struct cxlp_handler *h);
/* direct_close -- end the metadata walker, unmap; NULL-safe. */
void direct_close(struct cxlp_handler *h);
/* direct_lookup_batch -- answer unpinned LOOKUP/EXISTS for keys (already
 * validated) from shared memory: res[i] (status 0 and loc, or
 * CXLP_E_NOTFOUND) with ask[i] false, or ask[i] true where the server
 * must answer; vers[i] (vers may be NULL) gets the slot's word and
 * slot for each key found, which version_hits makes a token of.
 * Returns how many are left to ask (n when direct reads are off).
 * Thread-safe. */
size_t direct_lookup_batch(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    struct proto_result res[], bool ask[], cxlp_version_t vers[]);
/* direct_reader -- the reader of the mapped index, or NULL when direct
 * reads are off (at connect, or turned off since). No system call. */
const struct kvread *direct_reader(struct cxlp_handler *h);
/* direct_intact -- the mapped pool still carries its magic and the uuid
 * it had at connect (a pool being reformatted in place clears the magic
 * first and gets a new uuid); false with direct reads off. drop: their
 * lines are dropped first (false: direct_fresh_words just did). */
bool direct_intact(struct cxlp_handler *h, bool drop);
/* direct_fresh_words -- on a pool whose mapping needs drops (sw, sim),
 * drop the words of index slots slot[0..n) (n <= KVREAD_BATCH) and the
 * superblock's magic, uuid and commit_seq with one fence, and return a
 * reader that does not drop again, for reading those words; NULL (and
 * nothing done) on other pools or with direct reads off. */
const struct kvread *direct_fresh_words(struct cxlp_handler *h,
    const uint64_t slot[], size_t n);
/* direct_page_size -- the page size of foreign region (id, gen) from the
 * pool's region table, or 0 when it cannot be read (direct reads off). */
uint64_t direct_page_size(struct cxlp_handler *h, uint32_t region,
    uint32_t gen);

/* ---- reclaim.c ---------------------------------------------------------- */

/* reclaim_init -- set up r. */
void reclaim_init(struct reclaimer *r);
/* reclaim_fini -- tear it down. */
void reclaim_fini(struct reclaimer *r);
/* reclaim -- the regions are full: one RECLAIM round trip for a region
 * (only if grow, and max_regions allows) or pages of this handler's own
 * that eviction freed (need of them at least, when more than one batch:
 * a reservation's), waiting up to wait_ms for room when none can be
 * made (note 6), then take one into *pg. Returns 0, CXLP_E_NOSPACE (with
 * the reason), CXLP_E_BADOP (the metaserver predates RECLAIM: ask for a
 * region the old way) or another error. Caller holds expand_lock, not
 * page_lock. */
int reclaim(struct cxlp_handler *h, cxlp_page_t *pg, bool grow,
    unsigned wait_ms, uint32_t need);
/* reclaim_low_locked -- the pool is full and this handler's free pages
 * are below the refill mark (reclaim.c note 7). Caller holds page_lock. */
bool reclaim_low_locked(const struct cxlp_handler *h);
/* reclaim_refill_task -- the keeper's RECLAIM ahead of need (note 7),
 * unless an alloc holds expand_lock; run when poked only. */
extern const struct keeper_task reclaim_refill_task;
/* reclaim_low_locked and a poke of the refill task (alloc_wait) */
/* reclaim_gate_lock/unlock -- resolve_run's exclusive hold (note 2). */
void reclaim_gate_lock(struct cxlp_handler *h);
void reclaim_gate_unlock(struct cxlp_handler *h);

#endif /* CXLP_HANDLER_REGION_H */
