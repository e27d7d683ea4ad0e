/*
 * waitq.c -- backpressure: a RECLAIM that finds no room waits in the
 * server, in arrival order, until room may have appeared or its wait runs
 * out, instead of failing at once.
 *
 * DESIGN NOTES
 *
 * 1. What is waited for. A RECLAIM fails (CXLP_E_NOSPACE) when no region
 *    is free and none of the caller's keys may be evicted: everything is
 *    pinned, leased, or in other live handlers' regions. Room can only
 *    come from an event that frees something: a delete, an unpin, a
 *    lease that ends (released or expired), a region given back, a
 *    session that ends (its regions become orphans, which eviction
 *    empties). Each of those calls ms_space_event, which counts an epoch
 *    and wakes the waiters; a waiter tries its RECLAIM again only when
 *    the epoch moved since its last try.
 *
 * 2. Order. Each waiting session holds a ticket in arrival order, and
 *    only the oldest (the head) tries again at an event; the others wait
 *    behind it, so a handler that needs a whole region is not overtaken
 *    by a stream of later ones. While anyone waits, a RECLAIM of a
 *    session that is not the head may still evict its own keys (that
 *    takes nothing the head could use) but may not take a free region
 *    [ms_waitq_may_take_region], nor may a REGION_ALLOC: a region that
 *    comes free goes to the oldest waiter that asks for one (a waiter
 *    that only wants its own keys evicted, RECLAIM len 0, holds no
 *    region back).
 *
 * 3. Places are kept across waits. A handler waits in slices (so that it
 *    also sees pages its own threads free, which never reach the server)
 *    and says in each RECLAIM whether it will ask again
 *    (PROTO_RECLAIM_MORE): its session keeps its ticket between slices,
 *    and loses it when it gets room, sends a last slice that ends, or
 *    stays away longer than AWAY_MAX_MS (it found a page its own threads
 *    freed, or gave up). A waiter holds a server worker thread, so at
 *    most half of them (none with a single worker) wait at a time, a
 *    session waits once at a time, and a copy of a waiting request (a
 *    resend under its id) does not wait for it (session.c sess_enter);
 *    past that a RECLAIM is answered CXLP_E_BUSY at once and the handler
 *    asks again after a pause (handler/region/reclaim.c note 5). A slice never
 *    exceeds what the request asks for (the handler keeps it under its
 *    own request timeout) nor MS_WAIT_MAX_MS. A waiter whose session
 *    ends stops at once.
 *
 * 4. Shutdown ends every wait at once (ms_waitq_close): the waiter
 *    answers CXLP_E_NOSPACE and its worker stops.
 *
 * 5. Locks. A waiter waits with no lock of the pool held: dispatch.c lets
 *    go of ms->lock before it waits here and takes it again to retry.
 *    The queue has its own mutex, taken after ms->lock where both are
 *    held (ms_space_event is called under ms->lock).
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "deadline.h"
#include "err.h"
#include "ms_int.h"

/* ms_waitq_init -- see ms_int.h */
void
ms_waitq_init(struct ms_waitq *q, unsigned workers)
{
	pthread_condattr_t ca;

	memset(q, 0, sizeof(*q));
	MS_LOCK_OK(pthread_mutex_init(&q->lock, NULL));
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	MS_LOCK_OK(pthread_cond_init(&q->cond, &ca));
	pthread_condattr_destroy(&ca);
	q->max = workers / 2;
	if (q->max > MS_WAITERS_MAX) {
		q->max = MS_WAITERS_MAX;
	}
}

/* ms_waitq_fini -- see ms_int.h */
void
ms_waitq_fini(struct ms_waitq *q)
{
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
}

/* Entries whose session has been away longer than this are dropped: it
 * stopped waiting (note 3). */
#define AWAY_MAX_MS 500u

/* drop the entries of sessions that stopped asking */
static void
prune(struct ms_waitq *q, uint64_t now)
{
	for (unsigned i = 0; i < q->n;) {
		if (!q->e[i].here && now - q->e[i].left_ms > AWAY_MAX_MS) {
			q->e[i] = q->e[--q->n];
			pthread_cond_broadcast(&q->cond); /* a new head */
		} else {
			i++;
		}
	}
}

/* the entry of the oldest ticket (of those that want a region, if
 * region), or NULL */
static struct ms_waiter *
head_of(struct ms_waitq *q, bool region)
{
	struct ms_waiter *h = NULL;

	for (unsigned i = 0; i < q->n; i++) {
		if ((!region || q->e[i].region) &&
		    (h == NULL || q->e[i].ticket < h->ticket)) {
			h = &q->e[i];
		}
	}
	return h;
}

static struct ms_waiter *
head(struct ms_waitq *q)
{
	return head_of(q, false);
}

static struct ms_waiter *
find(struct ms_waitq *q, uint64_t sess)
{
	for (unsigned i = 0; i < q->n; i++) {
		if (q->e[i].sess == sess) {
			return &q->e[i];
		}
	}
	return NULL;
}

/* ms_space_event -- see ms_int.h (note 1) */
void
ms_space_event(struct ms *ms)
{
	struct ms_waitq *q = &ms->waitq;

	MS_LOCK_OK(pthread_mutex_lock(&q->lock));
	q->epoch++;
	if (q->n > 0) {
		pthread_cond_broadcast(&q->cond); /* all: a dead one's too */
	}
	MS_LOCK_OK(pthread_mutex_unlock(&q->lock));
}

/* ms_waitq_may_take_region -- see ms_int.h (note 2) */
bool
ms_waitq_may_take_region(struct ms *ms, uint64_t sess)
{
	struct ms_waitq *q = &ms->waitq;
	struct ms_waiter *h;
	bool ok;

	MS_LOCK_OK(pthread_mutex_lock(&q->lock));
	prune(q, cxlp_now_ms());
	h = head_of(q, true);
	ok = h == NULL || h->sess == sess;
	MS_LOCK_OK(pthread_mutex_unlock(&q->lock));
	return ok;
}

/* ms_waitq_epoch -- see ms_int.h */
uint64_t
ms_waitq_epoch(struct ms *ms)
{
	uint64_t e;

	MS_LOCK_OK(pthread_mutex_lock(&ms->waitq.lock));
	e = ms->waitq.epoch;
	MS_LOCK_OK(pthread_mutex_unlock(&ms->waitq.lock));
	return e;
}

/* sess's entry, made at the tail if it has none: NULL if the queue is
 * full */
static struct ms_waiter *
join(struct ms_waitq *q, uint64_t sess)
{
	struct ms_waiter *e = find(q, sess);

	if (e == NULL && q->n < q->max) {
		e = &q->e[q->n++];
		*e = (struct ms_waiter){ .ticket = ++q->next, .sess = sess };
	}
	return e;
}

/* ms_waitq_wait -- see ms_int.h (notes 2, 3) */
int
ms_waitq_wait(struct ms *ms, struct ms_wait *w)
{
	struct ms_waitq *q = &ms->waitq;
	struct ms_waiter *e;
	unsigned n;
	int rc = 0;

	MS_LOCK_OK(pthread_mutex_lock(&q->lock));
	prune(q, cxlp_now_ms());
	if ((e = join(q, w->sess)) == NULL || e->here) {
		/* full, or this session waits already (one RECLAIM at a time
		 * is all a handler sends) */
		n = q->n;
		MS_LOCK_OK(pthread_mutex_unlock(&q->lock));
		return cxlp_fail(CXLP_E_BUSY, "pool full and %u handlers "
		    "already wait for room", n);
	}
	e->here = true;
	e->region = w->region;
	for (;;) {
		struct timespec until;
		uint64_t now = cxlp_now_ms();

		if (now >= w->until_ms || q->closing ||
		    (w->dead != NULL &&
		    __atomic_load_n(w->dead, __ATOMIC_ACQUIRE))) {
			rc = CXLP_E_TIMEOUT; /* checked first: an event does
			                      * not buy a try past the end */
			break;
		}
		if (head(q) == e && q->epoch != w->epoch) {
			break;
		}
		/* wake to prune too: a head that went away holds the rest */
		until = cxlp_deadline(CLOCK_MONOTONIC, w->until_ms - now <
		    AWAY_MAX_MS ? w->until_ms - now : AWAY_MAX_MS);
		(void)pthread_cond_timedwait(&q->cond, &q->lock, &until);
		prune(q, cxlp_now_ms());
		e = find(q, w->sess); /* entries move when others leave */
		cxlp_assert(e != NULL); /* only prune and leave remove, and
		                         * neither takes one that is here */
	}
	w->epoch = q->epoch;
	e->here = false;
	e->left_ms = cxlp_now_ms();
	MS_LOCK_OK(pthread_mutex_unlock(&q->lock));
	return rc;
}

/* ms_waitq_close -- see ms_int.h (note 4) */
void
ms_waitq_close(struct ms *ms)
{
	MS_LOCK_OK(pthread_mutex_lock(&ms->waitq.lock));
	ms->waitq.closing = true;
	pthread_cond_broadcast(&ms->waitq.cond);
	MS_LOCK_OK(pthread_mutex_unlock(&ms->waitq.lock));
}

/* ms_waitq_leave -- see ms_int.h */
void
ms_waitq_leave(struct ms *ms, uint64_t sess)
{
	struct ms_waitq *q = &ms->waitq;
	struct ms_waiter *e;

	MS_LOCK_OK(pthread_mutex_lock(&q->lock));
	if ((e = find(q, sess)) != NULL && !e->here) {
		*e = q->e[--q->n];
		pthread_cond_broadcast(&q->cond); /* the next may be head */
	}
	MS_LOCK_OK(pthread_mutex_unlock(&q->lock));
}
