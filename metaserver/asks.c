/*
 * asks.c -- capacity that moves between live handlers: the server asks a
 * handler that holds many regions to give some back, so that one that
 * holds few can get one.
 *
 * Why asks, not seizures: a handler maps its own regions writable and
 * carves pages from them itself, so at any moment it may be writing into
 * a page the server knows nothing of (allocated, not yet registered). The
 * server cannot take a region from under it; only the owner knows when a
 * region holds no page in use. So the server asks, and the owner gives
 * back (REGION_FREE) once it has stopped allocating from the region and
 * its pages in use there are settled; keys stay, the region turns ORPHAN,
 * and orphan eviction (evict.c note 1) empties it for whoever needs it.
 *
 * DESIGN NOTES
 *
 * 1. Who is asked [ms_ask_regions]: among live, attached sessions whose
 *    HELLO said PROTO_HELLO_GIVEBACK, the one holding the most regions,
 *    if it holds more than the requester plus one; it is asked for half
 *    the difference (at least one, at most MS_ASK_BATCH), its regions
 *    with the fewest keys first. So shares converge, and a handler is
 *    never asked for its last region on behalf of one that has as many.
 *
 * 2. How it learns, without a poll on its hot path: every success reply
 *    to it carries PROTO_REP_F_ASK while an ask is out [ms_ask_pending]
 *    (a busy handler sees it on its next reply), and its HEARTBEAT reply
 *    lists the regions asked [ms_asks_of] (an idle one sends a heartbeat
 *    each keepalive period anyway).
 *
 * 3. The requester is told CXLP_E_BUSY (retry soon) while asks are out,
 *    or while a handler that lost its connection holds regions (it ends
 *    as soon as its process is found gone, and its regions turn ORPHAN),
 *    and retries within its request timeout; an ask older than
 *    MS_ASK_WAIT_MS no longer holds back a new ask (a slow owner), but
 *    stays on its owner's list until the region leaves it.
 *
 * 4. Asks are DRAM only and checked lazily: an entry counts while its
 *    region is still OWNED by the session asked, at the gen asked. A
 *    restart forgets them; requesters then ask again.
 */
#include <errno.h>
#include <stdlib.h>

#include "err.h"
#include "log.h"
#include "ms_int.h"

/* ms_asks_init -- see ms_int.h */
int
ms_asks_init(struct ms *ms)
{
	ms->asks = calloc(pool_region_max(ms->pool) + 1, sizeof(*ms->asks));
	ms->asks_out = 0;
	return ms->asks == NULL ? cxlp_fail(-ENOMEM, "no memory for asks") :
	    0;
}

/* ms_asks_fini -- see ms_int.h */
void
ms_asks_fini(struct ms *ms)
{
	free(ms->asks);
	ms->asks = NULL;
}

/* the ask of region id still stands (note 4) */
static bool
ask_live(const struct ms *ms, uint32_t id)
{
	const struct ms_ask *a = &ms->asks[id];
	struct pool_region r;

	return a->asked_ms != 0 && pool_region_get(ms->pool, id, &r) == 0 &&
	    r.state == POOL_REGION_OWNED && r.owner == a->owner &&
	    r.gen == a->gen;
}

/* forget asks that no longer stand; true if one younger than
 * MS_ASK_WAIT_MS is still out */
static bool
asks_sweep(struct ms *ms, uint64_t now)
{
	bool young = false;

	for (uint32_t i = 0; ms->asks_out > 0 && i < pool_region_max(ms->pool);
	    i++) {
		if (ms->asks[i].asked_ms == 0) {
			continue;
		}
		if (!ask_live(ms, i)) {
			ms->asks[i].asked_ms = 0;
			ms->asks_out--;
			continue;
		}
		young |= now < ms->asks[i].asked_ms + MS_ASK_WAIT_MS;
	}
	return young;
}

struct holder {
	uint64_t sess;
	uint32_t regions;
};

/* regions per owner, in h[0..*n) (room for max owners) */
static void
count_owners(const struct ms *ms, struct holder *h, uint32_t *n,
    uint32_t max)
{
	*n = 0;
	for (uint32_t i = 0; i < pool_region_max(ms->pool); i++) {
		struct pool_region r;
		uint32_t k = 0;

		if (pool_region_get(ms->pool, i, &r) != 0 ||
		    r.state != POOL_REGION_OWNED) {
			continue;
		}
		while (k < *n && h[k].sess != r.owner) {
			k++;
		}
		if (k == *n && *n < max) {
			h[(*n)++] = (struct holder){ r.owner, 0 };
		}
		if (k < *n) {
			h[k].regions++;
		}
	}
}

/* ask owner for up to n of its regions, fewest keys first */
static uint32_t
ask_of(struct ms *ms, uint64_t owner, uint32_t n, uint64_t now)
{
	uint32_t asked = 0;

	while (asked < n) {
		struct pool_region r, best = { .id = UINT32_MAX };

		for (uint32_t i = 0; i < pool_region_max(ms->pool); i++) {
			if (pool_region_get(ms->pool, i, &r) == 0 &&
			    r.state == POOL_REGION_OWNED && r.owner == owner &&
			    !ask_live(ms, i) && (best.id == UINT32_MAX ||
			    r.nkeys < best.nkeys)) {
				best = r;
			}
		}
		if (best.id == UINT32_MAX) {
			break;
		}
		ms->asks_out += ms->asks[best.id].asked_ms == 0;
		ms->asks[best.id] = (struct ms_ask){ .owner = owner,
			.gen = best.gen, .asked_ms = now };
		asked++;
	}
	return asked;
}

/* ms_ask_regions -- see ms_int.h (notes 1, 3) */
int
ms_ask_regions(struct ms *ms, uint64_t requester)
{
	struct holder h[256];
	uint32_t n, mine = 0, best = UINT32_MAX, want, asked;
	uint64_t now = cxlp_now_ms();
	bool ending = false;

	if (asks_sweep(ms, now)) {
		return cxlp_fail(CXLP_E_BUSY, "pool full: regions are being "
		    "given back by other handlers; retry");
	}
	count_owners(ms, h, &n, sizeof(h) / sizeof(h[0]));
	for (uint32_t k = 0; k < n; k++) {
		enum ms_giveback g = h[k].sess == requester ? MS_GIVEBACK_NO :
		    ms_sess_giveback(ms, h[k].sess);

		if (h[k].sess == requester) {
			mine = h[k].regions;
		} else if (g == MS_GIVEBACK_ENDING) {
			ending = true;
		} else if (g == MS_GIVEBACK_YES &&
		    (best == UINT32_MAX || h[k].regions > h[best].regions)) {
			best = k;
		}
	}
	if ((best == UINT32_MAX || h[best].regions <= mine + 1) && ending) {
		return cxlp_fail(CXLP_E_BUSY, "pool full: regions of a handler "
		    "whose connection went are held until it is found gone or "
		    "reattaches; retry");
	}
	if (best == UINT32_MAX || h[best].regions <= mine + 1) {
		return ms_nospace(ms, 0);
	}
	want = (h[best].regions - mine) / 2;
	want = want == 0 ? 1 : want > MS_ASK_BATCH ? MS_ASK_BATCH : want;
	asked = ask_of(ms, h[best].sess, want, now);
	log_info("op=ask session=%llu regions=%u for=%llu holds=%u mine=%u",
	    (unsigned long long)h[best].sess, asked,
	    (unsigned long long)requester, h[best].regions, mine);
	return cxlp_fail(CXLP_E_BUSY, "pool full: %u regions asked back "
	    "from session %llu; retry", asked,
	    (unsigned long long)h[best].sess);
}

/* ms_asks_of -- see ms_int.h */
uint32_t
ms_asks_of(struct ms *ms, uint64_t sess, struct proto_region_ref *out,
    uint32_t max)
{
	uint32_t n = 0;

	for (uint32_t i = 0; ms->asks_out > 0 && n < max &&
	    i < pool_region_max(ms->pool); i++) {
		if (ms->asks[i].owner == sess && ask_live(ms, i)) {
			out[n++] = (struct proto_region_ref){ .region = i,
				.gen = ms->asks[i].gen };
		}
	}
	return n;
}

/* ms_ask_pending -- see ms_int.h */
bool
ms_ask_pending(struct ms *ms, const struct ms_sess *s)
{
	if (s == NULL || !s->giveback || ms->asks_out == 0) {
		return false;
	}
	for (uint32_t i = 0; i < pool_region_max(ms->pool); i++) {
		if (ms->asks[i].owner == s->id && ask_live(ms, i)) {
			return true;
		}
	}
	return false;
}
