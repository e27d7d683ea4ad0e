/*
 * reserve.c -- reservations: n pages set aside at once, so that a writer
 * that must send all of a request's chunks (a prefill instance handing
 * its KV cache to a decoder) learns before it starts whether the pool
 * can take them, and then allocates each without a wait or a round trip.
 *
 * DESIGN NOTES
 *
 * 1. A reservation is pages, not a promise: cxlp_reserve allocates its n
 *    pages (as cxlp_alloc would: from the free list, then a new region or
 *    pages eviction frees, then, if the call allows, waiting for room in
 *    arrival order: handler/region/reclaim.c note 6) and holds them; a RECLAIM
 *    it makes asks for all the pages still missing, so a large
 *    reservation takes its place among waiters once, not once a batch.
 *    So the sum of all reservations can never exceed what the pool
 *    holds, a reservation never fails later, and the pool's own
 *    accounting needs nothing new: the pages are this handler's,
 *    ALLOCATED.
 *
 * 2. All or nothing: a reservation that cannot get its n pages within
 *    its wait (one wait for the whole call) gives back the ones it got
 *    and fails with the reason. It holds those while it waits for the
 *    rest, so two reservations that together want more than the pool
 *    can make room for may both run out and have to be asked again:
 *    size them to what the pool holds.
 *
 * 3. A page taken from a reservation (cxlp_reserve_alloc) is an ordinary
 *    allocated page: stored, it leaves the reservation for good; freed,
 *    it goes back to the handler's free list, not to the reservation.
 *    cxlp_reserve_release frees the pages not taken. A handler that
 *    closes frees them with everything else it holds; its reservations
 *    must still be released (their memory is the caller's).
 */
#include <errno.h>
#include <stdlib.h>

#include "clock.h"
#include "err.h"
#include "region.h"

struct cxlp_reservation {
	cxlp_page_t *pages; /* held, not yet taken: [next, n) */
	size_t n, next;
	void **bufs;        /* each page's address */
};

/* note 2: free what r got so far */
static void
give_back(struct cxlp_handler *h, struct cxlp_reservation *r)
{
	for (size_t i = r->next; i < r->n; i++) {
		(void)cxlp_free(h, r->pages[i]);
	}
	__atomic_sub_fetch(&h->reserved, r->n - r->next, __ATOMIC_RELAXED);
	r->next = r->n;
}

static void
reservation_free(struct cxlp_reservation *r)
{
	free(r->pages);
	free(r->bufs);
	free(r);
}

/* cxlp_reserve -- see cxlpool.h */
int
cxlp_reserve(struct cxlp_handler *h, size_t n, unsigned wait_ms,
    struct cxlp_reservation **out)
{
	struct cxlp_reservation *r;
	uint64_t until;
	int rc;

	if (out == NULL || n == 0 || n > CXLP_RESERVE_MAX) {
		return cxlp_fail(-EINVAL, "reserve: %zu pages (1..%u) or NULL",
		    n, CXLP_RESERVE_MAX);
	}
	*out = NULL;
	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->pages = calloc(n, sizeof(*r->pages))) == NULL ||
	    (r->bufs = calloc(n, sizeof(*r->bufs))) == NULL) {
		if (r != NULL) {
			reservation_free(r);
		}
		return cxlp_fail(-ENOMEM, "reserve: no memory for %zu pages", n);
	}
	until = cxlp_now_ms() + wait_ms; /* one wait for the whole call */
	for (; r->n < n; r->n++) {
		uint64_t now = cxlp_now_ms();

		rc = alloc_wait(h, &r->pages[r->n], &r->bufs[r->n],
		    now < until ? (unsigned)(until - now) : 0,
		    (uint32_t)(n - r->n));
		if (rc != 0) {
			break;
		}
		__atomic_add_fetch(&h->reserved, 1, __ATOMIC_RELAXED);
	}
	if (rc != 0) {
		char why[256];
		size_t got = r->n;

		snprintf(why, sizeof(why), "%s", cxlp_errormsg());
		give_back(h, r);
		reservation_free(r);
		return cxlp_fail(rc, "reserve: %zu of %zu pages, then: %s", got,
		    n, why);
	}
	*out = r;
	return 0;
}

/* cxlp_reserve_alloc -- see cxlpool.h */
int
cxlp_reserve_alloc(struct cxlp_handler *h, struct cxlp_reservation *r,
    cxlp_page_t *page, void **buf)
{
	int rc;

	if (r == NULL || page == NULL || buf == NULL) {
		return cxlp_fail(-EINVAL, "reserve_alloc: NULL argument");
	}
	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if (r->next == r->n) {
		return cxlp_fail(CXLP_E_NOSPACE, "reserve_alloc: all %zu pages "
		    "of the reservation are taken", r->n);
	}
	*page = r->pages[r->next];
	*buf = r->bufs[r->next++];
	__atomic_sub_fetch(&h->reserved, 1, __ATOMIC_RELAXED);
	return 0;
}

/* cxlp_reserve_left -- see cxlpool.h */
size_t
cxlp_reserve_left(const struct cxlp_reservation *r)
{
	return r == NULL ? 0 : r->n - r->next;
}

/* cxlp_reserve_release -- see cxlpool.h */
int
cxlp_reserve_release(struct cxlp_handler *h, struct cxlp_reservation **rp)
{
	if (rp == NULL || *rp == NULL) {
		return 0;
	}
	if (h != NULL && !h_forked(h)) { /* fork.c note 1 */
		give_back(h, *rp);
	}
	reservation_free(*rp);
	*rp = NULL;
	return 0;
}
