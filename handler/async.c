/*
 * async.c -- batch_store and batch_retrieve submitted without waiting:
 * each request is queued, run on a thread of the handler's own by the
 * synchronous call, and ended by its callback (cxlpool.h, "Asynchronous
 * calls").
 *
 * Why this shape. The synchronous calls already keep every contract of
 * the store (write then register, first writer wins, pages consumed
 * exactly once, lost replies resolved before a page is freed) and are
 * thread-safe; a request that runs one of them on another thread keeps
 * them all by construction (a store runs store_claimed: the same code,
 * its pages taken at the submit, note 3), where an asynchronous path
 * of its own through the client would have to prove each again. What
 * the module
 * adds is only the bound on requests in flight, the threads, and the
 * hand-over of arguments and results: a submit copies the caller's
 * arrays and keys into one allocation, which also holds the result
 * arrays the callback is given.
 *
 * DESIGN NOTES
 *
 * 1. Slots. A request holds one of cfg.max_inflight slots from its submit
 *    [slot_take] until its callback has returned [worker_main], so the
 *    bound covers the round trips, the callbacks and the memory of the
 *    copies alike. A submit that finds every slot held waits on
 *    a->slot_cv, or fails -EAGAIN with CXLP_ASYNC_NOWAIT.
 *
 * 2. A submit from a callback never waits: the slots may all be held by
 *    requests queued behind the callback's own thread, and waiting would
 *    wait for itself. It takes a free slot if there is one; else it takes
 *    over the slot of the request whose callback runs (once: the
 *    request's holds_slot goes false, and the worker frees no slot for it
 *    afterwards); else -EAGAIN. So a callback may always chain one
 *    follow-up request.
 *
 * 3. Pages. A store's pages go ALLOCATED -> INFLIGHT at its submit
 *    [pages_claim] and stay INFLIGHT until the store consumes them: the
 *    worker runs store_claimed, cxlp_batch_store_status of pages taken
 *    already (store.c step 2 only checks them). So from the submit on a
 *    free, a store or another submit of one of them fails
 *    CXLP_E_BADPAGE, and the submit itself returns CXLP_E_BADPAGE for a
 *    page that is not the caller's to give. When the store fails before
 *    consuming a page (the session lost meanwhile, no memory), the
 *    worker moves them back INFLIGHT -> ALLOCATED [pages_unclaim]
 *    before the callback says so: the caller's again. No page of a
 *    queued request has a key, so nothing else moves it meanwhile (a
 *    delete's pagelife_key_gone concerns pages whose key was
 *    registered).
 *
 * 4. Threads. At most max_inflight, started on demand [async_enqueue]:
 *    when more requests are queued than threads wait idle. A queued
 *    request always holds a slot (note 1), so with max_inflight threads
 *    none is left without one for longer than a running request takes.
 *    A thread that cannot be started is logged; the submit fails -EAGAIN
 *    only when no thread runs at all. Threads live until close.
 *
 * 5. Close [async_stop], before h->closing is set (the requests still run
 *    their synchronous calls): a->closing refuses every new submit with
 *    CXLP_E_CLOSED, callbacks' too; every request already submitted runs
 *    to its end with its real result; once none is in flight, a->stop
 *    ends the threads, which are joined. The state stays, refusing,
 *    until the handler is freed [async_fini], and a handler that never
 *    submitted gets a static one that refuses (closed_state): a submit
 *    that races the close (from a region callback on the keeper, which
 *    runs until keeper_stop) never finds h->async empty and builds a new
 *    state with a thread nobody joins. A close called from one of h's
 *    callbacks cannot wait there (it would wait for its own callback):
 *    async_close_deferred hands it to a detached thread.
 *
 * Lock: a->lock guards everything in struct async but the fields set at
 * creation (h, max). It is never held across a call into the handler or
 * a callback, and taken after none of the handler's locks (page_lock is
 * taken and released before it, in pages_claim).
 */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "handler.h"
#include "log.h"

struct areq {
	struct areq *next; /* a->head's queue */
	bool store;        /* a store, else a retrieve */
	bool holds_slot;   /* frees a slot when done (note 2) */
	unsigned flags;    /* the call's own flags */
	size_t n;
	cxlp_store_done_fn store_done;
	cxlp_retrieve_done_fn retrieve_done;
	void *arg;
	/* copies of the arguments, in this allocation */
	const void **keys;
	size_t *key_lens;
	cxlp_page_t *pages; /* store */
	size_t *lens;       /* store: value lengths; retrieve: results */
	/* results, in this allocation */
	const void **data; /* retrieve */
	int *status;
	bool *stored; /* store */
};

struct async {
	struct cxlp_handler *h;
	unsigned max;         /* cfg.max_inflight */
	pthread_mutex_t lock;
	pthread_cond_t work_cv; /* a request queued, or stop */
	pthread_cond_t slot_cv; /* a slot freed (also: none in flight) */
	struct areq *head, *tail; /* queued, not started */
	unsigned queued;
	unsigned inflight;    /* slots held */
	unsigned peak;        /* most slots held at once */
	unsigned nthreads, nidle;
	bool closing;         /* no new submit (note 5) */
	bool stop;            /* threads end once the queue is empty */
	pthread_t *tids;      /* max entries, nthreads started */
};

/* The request whose callback this thread runs, and its handler. */
static _Thread_local struct {
	struct cxlp_handler *h;
	struct areq *req;
} in_cb;

static size_t
align_up(size_t v)
{
	return (v + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
}

/* One allocation for the request, its copies and its results; NULL when
 * out of memory. */
static struct areq *
req_new(bool store, size_t n, const void *const keys[],
    const size_t key_lens[])
{
	size_t kbytes = 0, off = align_up(sizeof(struct areq));
	size_t o_keys, o_klens, o_pages, o_lens, o_data, o_status, o_stored,
	    o_kb;
	struct areq *r;
	uint8_t *base, *kb;

	for (size_t i = 0; i < n; i++) {
		kbytes += key_lens[i];
	}
	o_keys = off;
	off = align_up(off + n * sizeof(void *));
	o_klens = off;
	off = align_up(off + n * sizeof(size_t));
	o_pages = off;
	off = align_up(off + (store ? n * sizeof(cxlp_page_t) : 0));
	o_lens = off;
	off = align_up(off + n * sizeof(size_t));
	o_data = off;
	off = align_up(off + (store ? 0 : n * sizeof(void *)));
	o_status = off;
	off = align_up(off + n * sizeof(int));
	o_stored = off;
	off = align_up(off + (store ? n * sizeof(bool) : 0));
	o_kb = off;
	if ((base = calloc(1, off + kbytes)) == NULL) {
		return NULL;
	}
	r = (struct areq *)base;
	r->store = store;
	r->n = n;
	r->keys = (const void **)(base + o_keys);
	r->key_lens = (size_t *)(base + o_klens);
	r->pages = store ? (cxlp_page_t *)(base + o_pages) : NULL;
	r->lens = (size_t *)(base + o_lens);
	r->data = store ? NULL : (const void **)(base + o_data);
	r->status = (int *)(base + o_status);
	r->stored = store ? (bool *)(base + o_stored) : NULL;
	kb = base + o_kb;
	for (size_t i = 0; i < n; i++) {
		memcpy(kb, keys[i], key_lens[i]);
		r->keys[i] = kb;
		r->key_lens[i] = key_lens[i];
		kb += key_lens[i];
	}
	return r;
}

/* ---- the state: made at the first submit, freed at close --------------- */

static void
async_free(struct async *a)
{
	pthread_cond_destroy(&a->slot_cv);
	pthread_cond_destroy(&a->work_cv);
	pthread_mutex_destroy(&a->lock);
	free(a->tids);
	free(a);
}

/* What h->async holds once a close found none: a state that refuses
 * every submit, so that none made during the close (a region callback on
 * the keeper thread may submit) builds a new one (note 5). */
static struct async closed_state = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work_cv = PTHREAD_COND_INITIALIZER,
	.slot_cv = PTHREAD_COND_INITIALIZER,
	.closing = true,
};

/* async_atfork_child -- see handler.h */
void
async_atfork_child(void)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

	closed_state.lock = lock;
	closed_state.work_cv = cv;
	closed_state.slot_cv = cv;
}

/* h's async state, made on first use (two first submits race through a
 * compare-and-swap); NULL when out of memory. */
static struct async *
async_get(struct cxlp_handler *h)
{
	struct async *a = __atomic_load_n(&h->async, __ATOMIC_ACQUIRE);
	struct async *none = NULL;

	if (a != NULL) {
		return a;
	}
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		return NULL;
	}
	a->h = h;
	a->max = h->cfg.max_inflight != 0 ? h->cfg.max_inflight :
	    CXLP_MAX_INFLIGHT_DEFAULT;
	if ((a->tids = calloc(a->max, sizeof(*a->tids))) == NULL) {
		free(a);
		return NULL;
	}
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->work_cv, NULL);
	pthread_cond_init(&a->slot_cv, NULL);
	if (!__atomic_compare_exchange_n(&h->async, &none, a, false,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		async_free(a);
		return none;
	}
	return a;
}

/* ---- slots (notes 1, 2) ------------------------------------------------- */

/* Take a slot for a new request r: 0, or CXLP_E_CLOSED / -EAGAIN. A
 * submit from h's region callback never waits either (note 2): the
 * thread delivering may be one of h's workers, or the keeper that h's
 * workers wait for. */
static int
slot_take(struct cxlp_handler *h, struct async *a, struct areq *r,
    bool nowait)
{
	bool in_callback = in_cb.h == h;
	bool no_wait = nowait || in_callback || rmap_delivering(h);

	pthread_mutex_lock(&a->lock);
	for (;;) {
		if (a->closing) {
			pthread_mutex_unlock(&a->lock);
			return cxlp_fail(CXLP_E_CLOSED, "async: the handler is "
			    "closing");
		}
		if (a->inflight < a->max) {
			a->inflight++;
			a->peak = a->inflight > a->peak ? a->inflight :
			    a->peak;
			break;
		}
		if (in_callback && in_cb.req->holds_slot) {
			in_cb.req->holds_slot = false; /* note 2: passed on */
			break;
		}
		if (no_wait) {
			pthread_mutex_unlock(&a->lock);
			return cxlp_fail(-EAGAIN, "async: %u requests in flight "
			    "(max_inflight)%s", a->max, no_wait && !nowait ?
			    "; a callback does not wait for a slot" : "");
		}
		pthread_cond_wait(&a->slot_cv, &a->lock);
	}
	r->holds_slot = true;
	pthread_mutex_unlock(&a->lock);
	return 0;
}

/* Give back the slot of a request that was never queued (its submit
 * failed after slot_take). */
static void
slot_put(struct async *a, struct areq *r)
{
	pthread_mutex_lock(&a->lock);
	if (r->holds_slot) {
		a->inflight--;
		pthread_cond_broadcast(&a->slot_cv);
	}
	pthread_mutex_unlock(&a->lock);
}

/* ---- pages (note 3) ----------------------------------------------------- */

/* ALLOCATED -> INFLIGHT for every page of r, or none: 0 or
 * CXLP_E_BADPAGE. */
static int
pages_claim(struct cxlp_handler *h, const struct areq *r)
{
	size_t i;
	int rc = 0;

	pthread_mutex_lock(&h->page_lock);
	for (i = 0; i < r->n && rc == 0; i++) {
		rc = pagetab_move(&h->pages, r->pages[i], PAGE_ALLOCATED,
		    PAGE_INFLIGHT);
	}
	if (rc != 0) {
		i--; /* the page that failed */
		for (size_t j = 0; j < i; j++) {
			(void)pagetab_move(&h->pages, r->pages[j],
			    PAGE_INFLIGHT, PAGE_ALLOCATED);
		}
	}
	pthread_mutex_unlock(&h->page_lock);
	if (rc != 0) {
		return cxlp_fail(CXLP_E_BADPAGE, "store: key %zu: page %#llx "
		    "is not allocated here, is registered, is named twice or "
		    "is in another request in flight", i,
		    (unsigned long long)r->pages[i]);
	}
	return 0;
}

/* INFLIGHT -> ALLOCATED for every page of r: no store consumed them
 * (note 3). */
static void
pages_unclaim(struct cxlp_handler *h, const struct areq *r)
{
	pthread_mutex_lock(&h->page_lock);
	for (size_t i = 0; i < r->n; i++) {
		int rc = pagetab_move(&h->pages, r->pages[i], PAGE_INFLIGHT,
		    PAGE_ALLOCATED);

		cxlp_assert(rc == 0); /* note 3: nothing else moves them */
	}
	pthread_mutex_unlock(&h->page_lock);
}

/* ---- running a request -------------------------------------------------- */

/* The synchronous call of r, then its callback (in_cb set around it). */
static void
req_run(struct cxlp_handler *h, struct areq *r)
{
	int rc;

	if (r->store) {
		rc = store_claimed(h, r->n, r->keys, r->key_lens, r->pages,
		    r->lens, r->flags, r->stored, r->status);
		if (rc != 0 && rc != CXLP_E_UNKNOWN) { /* no page consumed */
			pages_unclaim(h, r);
			for (size_t i = 0; i < r->n; i++) {
				r->stored[i] = false;
				r->status[i] = rc;
			}
		}
	} else {
		rc = cxlp_batch_retrieve(h, r->n, r->keys, r->key_lens,
		    r->flags, r->data, r->lens, r->status);
		for (size_t i = 0; rc != 0 && i < r->n; i++) {
			r->data[i] = NULL;
			r->lens[i] = 0;
			r->status[i] = rc;
		}
	}
	in_cb.h = h;
	in_cb.req = r;
	if (r->store) {
		r->store_done(r->arg, rc, r->n, r->stored, r->status);
	} else {
		r->retrieve_done(r->arg, rc, r->n, r->data, r->lens,
		    r->status);
	}
	in_cb.h = NULL;
	in_cb.req = NULL;
}

static void *
worker_main(void *arg)
{
	struct async *a = arg;
	struct areq *r;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		while (a->head == NULL && !a->stop) {
			a->nidle++;
			pthread_cond_wait(&a->work_cv, &a->lock);
			a->nidle--;
		}
		if ((r = a->head) == NULL) {
			break; /* stop, and nothing left */
		}
		if ((a->head = r->next) == NULL) {
			a->tail = NULL;
		}
		a->queued--;
		pthread_mutex_unlock(&a->lock);
		req_run(a->h, r);
		pthread_mutex_lock(&a->lock);
		if (r->holds_slot) {
			a->inflight--;
			pthread_cond_broadcast(&a->slot_cv);
		}
		pthread_mutex_unlock(&a->lock);
		free(r);
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* Queue r (which holds a slot) and start a thread if no idle one will
 * take it (note 4): 0, or -EAGAIN when no thread runs (r not queued). */
static int
async_enqueue(struct async *a, struct areq *r)
{
	int err;

	pthread_mutex_lock(&a->lock);
	if (a->queued + 1 > a->nidle && a->nthreads < a->max) {
		err = pthread_create(&a->tids[a->nthreads], NULL,
		    worker_main, a);
		if (err == 0) {
			a->nthreads++;
		} else if (a->nthreads == 0) {
			pthread_mutex_unlock(&a->lock);
			return cxlp_fail(-EAGAIN, "async: cannot start a "
			    "thread: %s", strerror(err));
		} else {
			log_err("async: cannot start thread %u of %u: %s; "
			    "requests wait for the %u running",
			    a->nthreads + 1, a->max, strerror(err),
			    a->nthreads);
		}
	}
	r->next = NULL;
	if (a->tail != NULL) {
		a->tail->next = r;
	} else {
		a->head = r;
	}
	a->tail = r;
	a->queued++;
	pthread_cond_signal(&a->work_cv);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

/* The steps of a submit once its arguments are checked and copied: a
 * slot, the pages (a store's), the queue. r is freed on failure. */
static int
submit(struct cxlp_handler *h, struct areq *r, bool nowait)
{
	struct async *a = async_get(h);
	int rc;

	if (a == NULL) {
		free(r);
		return cxlp_fail(-ENOMEM, "async: out of memory");
	}
	if ((rc = slot_take(h, a, r, nowait)) != 0) {
		free(r);
		return rc;
	}
	if (r->store && (rc = pages_claim(h, r)) != 0) {
		slot_put(a, r);
		free(r);
		return rc;
	}
	if ((rc = async_enqueue(a, r)) != 0) {
		if (r->store) {
			pages_unclaim(h, r);
		}
		slot_put(a, r);
		free(r);
		return rc;
	}
	return 0;
}

/* ---- the API ------------------------------------------------------------ */

/* cxlp_batch_store_async -- see cxlpool.h. */
int
cxlp_batch_store_async(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], unsigned flags,
    cxlp_store_done_fn done, void *arg)
{
	struct areq *r;
	int rc;

	if ((rc = store_check_call(h, n, keys, key_lens, pages, lens,
	    done != NULL, flags, CXLP_STORE_PIN | CXLP_STORE_LEASE |
	    CXLP_ASYNC_NOWAIT)) != 0) {
		return rc;
	}
	if ((r = req_new(true, n, keys, key_lens)) == NULL) {
		return cxlp_fail(-ENOMEM, "async: out of memory");
	}
	memcpy(r->pages, pages, n * sizeof(*pages));
	memcpy(r->lens, lens, n * sizeof(*lens));
	r->flags = flags & ~CXLP_ASYNC_NOWAIT;
	r->store_done = done;
	r->arg = arg;
	return submit(h, r, (flags & CXLP_ASYNC_NOWAIT) != 0);
}

/* cxlp_batch_retrieve_async -- see cxlpool.h. */
int
cxlp_batch_retrieve_async(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], unsigned flags,
    cxlp_retrieve_done_fn done, void *arg)
{
	struct areq *r;
	int rc;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if (done == NULL || (flags & ~(CXLP_RETRIEVE_PIN |
	    CXLP_RETRIEVE_LEASE | CXLP_ASYNC_NOWAIT)) != 0) {
		return cxlp_fail(-EINVAL, "retrieve: NULL callback or bad "
		    "flags");
	}
	if ((rc = h_check_keys(n, keys, key_lens)) != 0) {
		return rc;
	}
	if ((r = req_new(false, n, keys, key_lens)) == NULL) {
		return cxlp_fail(-ENOMEM, "async: out of memory");
	}
	r->flags = flags & ~CXLP_ASYNC_NOWAIT;
	r->retrieve_done = done;
	r->arg = arg;
	return submit(h, r, (flags & CXLP_ASYNC_NOWAIT) != 0);
}

/* cxlp_async_inflight -- see cxlpool.h. */
int
cxlp_async_inflight(struct cxlp_handler *h, unsigned *peak)
{
	struct async *a;
	unsigned now = 0, most = 0;
	int rc;

	if (h == NULL) {
		return cxlp_fail(-EINVAL, "async_inflight: h is NULL");
	}
	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if ((a = __atomic_load_n(&h->async, __ATOMIC_ACQUIRE)) != NULL) {
		pthread_mutex_lock(&a->lock);
		now = a->inflight;
		most = a->peak;
		pthread_mutex_unlock(&a->lock);
	}
	if (peak != NULL) {
		*peak = most;
	}
	return (int)now;
}

/* ---- close (note 5) ----------------------------------------------------- */

static void
async_refuse(struct cxlp_handler *h)
{
	struct async *a = __atomic_load_n(&h->async, __ATOMIC_ACQUIRE);

	if (a != NULL) {
		pthread_mutex_lock(&a->lock);
		a->closing = true;
		pthread_cond_broadcast(&a->slot_cv); /* waiting submits end */
		pthread_mutex_unlock(&a->lock);
	}
}

/* async_stop -- see handler.h. */
void
async_stop(struct cxlp_handler *h)
{
	struct async *a = NULL;

	/* none yet: the closed state refuses submits from here on */
	if (__atomic_compare_exchange_n(&h->async, &a, &closed_state, false,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) || a == &closed_state) {
		return;
	}
	async_refuse(h);
	pthread_mutex_lock(&a->lock);
	while (a->inflight > 0) {
		pthread_cond_wait(&a->slot_cv, &a->lock);
	}
	a->stop = true;
	pthread_cond_broadcast(&a->work_cv);
	pthread_mutex_unlock(&a->lock);
	for (unsigned i = 0; i < a->nthreads; i++) {
		pthread_join(a->tids[i], NULL);
	}
	a->nthreads = 0;
	/* kept, refusing, until async_fini: a submit racing the close may
	 * still be about to lock it */
}

/* async_fini -- see handler.h. */
void
async_fini(struct cxlp_handler *h)
{
	struct async *a = __atomic_load_n(&h->async, __ATOMIC_ACQUIRE);

	if (a != NULL && a != &closed_state) {
		async_free(a);
	}
	h->async = NULL;
}

/* async_close_deferred -- see handler.h. */
bool
async_close_deferred(struct cxlp_handler *h)
{
	if (in_cb.h != h) {
		return false;
	}
	async_refuse(h);
	return true;
}
