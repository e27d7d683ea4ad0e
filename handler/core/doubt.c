/*
 * doubt.c -- pages whose REGISTER may still land: kept out of the free
 * list until the handler closes (issue 15, item 5).
 *
 * The hazard. A REGISTER (request id r1: key K at page P) that this
 * handler sent more than once (a timeout, then a resend under r1, maybe
 * on a redialed connection), or whose answer never came (store_park),
 * may have a copy still on its way: queued in a relay, a proxy, a socket
 * buffer. The server recognizes r1 only while its reply cache holds it;
 * a restart empties the cache, eviction forgets r1 after 64 replies
 * (256 more ids are answered CXLP_E_UNKNOWN, then forgotten too), and a
 * copy that was never applied is unknown to it in any case. So a late
 * copy is applied as new: the session and token are unchanged (a
 * reattach keeps them), P's region is still the caller's, and if K was
 * deleted meanwhile and P is not registered at that moment, the insert
 * binds K to P. Had P been handed out again for K2, K now reads K2's
 * bytes (and K2's own store is refused CXLP_E_BUSY): wrong bytes, the
 * worst thing a cache can return. tests/integration/test_late.c shows
 * it through a proxy that holds a copy across a kill -9 and restart.
 *
 * The guard. Such a page is tainted (pages.c note 4) where the doubt
 * arises -- store_settle when the REGISTER went out more than once
 * (creply.sends), store_park when no answer came -- and a tainted page
 * that would go FREE (its key deleted, its store refused or lost the
 * race, resolve_run finding the key elsewhere) goes QUARANTINED:
 * never handed out by cxlp_alloc again while this handler lives. Its
 * bytes stay K's, so the worst a late copy can do is bring K back with
 * K's own bytes, which a cache may do (the key was valid; it is a
 * resurrection, never a wrong read). Pages in doubt that are still
 * registered cost nothing; a quarantined page costs its capacity and no
 * memory (one bit beside its state byte; the key copy is dropped).
 *
 * Why the handler alone suffices. P can only be freed, and reused, by:
 *  1. this handler (every such path goes through pagetab_move, which
 *     quarantines a tainted page);
 *  2. a delete by another handler: refused while this session is live
 *     (contract 7), allowed once it closed or died -- and then the
 *     session is ended, so a late copy carrying its id and token is
 *     refused CXLP_E_SESSION by sess_enter before anything is applied
 *     (an ended session is never found again, also after a restart);
 *  3. region reclaim at close or death (contract 6): again only after
 *     the session ended, and a region handed to another session is
 *     refused to this one (pool_kv_insert checks the owner);
 *  4. this handler giving a region back: one it could not map
 *     (regions.c, regions_add), before any page of it was handed out,
 *     and one whose every page is FREE (giveback.c); a region holding a
 *     quarantined page is never empty, so never given back while the
 *     handler lives, which matters because a REGISTER names region id
 *     and offset, not the region's generation: once given back and
 *     granted to this handler again, a late copy would land in it.
 * A session that is lost (CXLP_E_SESSION from alloc and store) refuses
 * late copies the same way. The pool-wide eviction of contract 9 would
 * be a fifth path; it does not exist yet, and must refuse or fence a
 * live session's in-doubt pages when it comes (or free them only through
 * their owner, as delete does).
 *
 * The server-side fence, not chosen. The handler could name, in a later
 * request, the ids it gave up on, and the server persist them in the
 * session record and refuse them; that releases the pages at once, but
 * needs a new operation, a session-record layout change (its reserved
 * words are covered by the record's checksum, so a crash-consistent
 * rewrite of the record), and a bound on the set (a low-water mark would
 * also refuse other threads' legitimate resends, which then have to be
 * treated as outcome-unknown). All of that for capacity that timeouts
 * rarely cost, while the quarantine needs no protocol or layout change.
 * It is the way to take quarantined pages back without a close, should
 * the cost below ever matter.
 *
 * The cost, bounded. Only pages of REGISTERs that actually met a timeout
 * are tainted, at most one batch (CXLP_BATCH_MAX pages) per timed-out
 * call, and they are lost only once their key is deleted or refused. A
 * handler that times out often can still fill its regions this way:
 * then cxlp_alloc takes a new region (auto_expand) or fails
 * CXLP_E_NOSPACE as for a full handler -- never a wrong read. cxlp_stats
 * counts them (pages_quarantined), doubt_note logs at err level when
 * they pass a quarter of the handler's pages and at each doubling, and
 * closing the handler gives all of them back: the session ends, every
 * copy of its requests is refused from then on, and its regions return
 * to the pool with their last key as usual (contract 6).
 */
#include "core.h"
#include "log.h"

/* doubt_taint -- see core.h */
void
doubt_taint(struct cxlp_handler *h, const cxlp_page_t pages[], size_t n)
{
	for (size_t i = 0; i < n; i++) {
		pagetab_taint(&h->pages, pages[i]);
	}
}

/* doubt_note -- see core.h */
void
doubt_note(struct cxlp_handler *h)
{
	const uint64_t *c = h->pages.count;
	uint64_t q = c[PAGE_QUARANTINED], total = 0;

	for (int s = 0; s < PAGE_NSTATES; s++) {
		total += c[s];
	}
	if (q == 0 || q * 4 <= total ||
	    (h->store.quar_logged != 0 && q < 2 * h->store.quar_logged)) {
		return;
	}
	h->store.quar_logged = q;
	log_err("store: %llu of %llu pages quarantined until close: a "
	    "REGISTER of each timed out or was resent, and a late copy of it "
	    "could bind its deleted key to the page (close the handler to "
	    "get them back)", (unsigned long long)q,
	    (unsigned long long)total);
}
