/*
 * keeper.c -- the handler's background thread: its keepalive, which
 * sends a HEARTBEAT when the handler has heard nothing from the
 * metaserver for keepalive_ms, and the round trips of the give-back of
 * emptied regions (giveback.c).
 *
 * A session is bound to the connection it last spoke on. When that
 * connection goes (the metaserver restarted, a network path failed, nng
 * redialed), the session is detached until the handler speaks again, and
 * a handler of another host that stays silent past the server's
 * --grace-ms loses its session, and with it its regions: regions it may
 * still be writing into, which the server can then hand to another
 * handler. A heartbeat reattaches the session within keepalive_ms of a
 * reconnect (h_ping reattaches as every call does), and tells an idle
 * handler that its session is gone (h_check_session) before its next
 * alloc would hand out a page of a region that may be another's.
 *
 * A busy handler sends none: any reply within the period counts
 * (client_last_reply_ms). One attempt per heartbeat, no retries, so a
 * close waits at most one timeout for a heartbeat in flight, as it does
 * for its BYE.
 *
 * The give-back. A free or delete that leaves the handler more empty
 * regions than its reserve pokes the keeper (keeper_poke), which then
 * runs giveback_run, so the REGION_FREE round trips are made here and no
 * caller waits for them; a run that got no answer for some region is
 * repeated a second later. So the thread runs in every handler, with
 * the keepalive off too, and then sleeps until poked.
 *
 * The refill. On a full pool, an alloc that leaves few free pages pokes
 * it too (keeper_poke_refill), and it makes the RECLAIM that the next
 * allocs would otherwise wait for (reclaim.c note 7).
 *
 * Its state is its own struct keeper, embedded in the handler and set up
 * and torn down with it (keeper_init/keeper_fini, nng's way for a
 * module's state); keeper_start/keeper_stop run the thread in between.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "deadline.h"
#include "err.h"
#include "handler_int.h"
#include "log.h"

#define GIVEBACK_RETRY_MS 1000 /* after a REGION_FREE went unanswered */

/* When the next heartbeat is due (cxlp_now_coarse_ms time): a period
 * after the last reply, and after the last heartbeat (one that failed at
 * once must not be sent again at once); never with the keepalive off. */
static uint64_t
heartbeat_at(const struct cxlp_handler *h, const struct keeper *k)
{
	uint64_t last = client_last_reply_ms(h->cl);

	if (h->cfg.keepalive_ms == 0) {
		return UINT64_MAX;
	}
	last = last > k->tried_ms ? last : k->tried_ms;
	return last + h->cfg.keepalive_ms;
}

/* Sleep until at (UINT64_MAX: until signalled); k->lock held. */
static void
sleep_until(struct keeper *k, uint64_t at, uint64_t now)
{
	struct timespec until;

	if (at == UINT64_MAX) {
		(void)pthread_cond_wait(&k->cond, &k->lock);
		return;
	}
	until = cxlp_deadline(CLOCK_MONOTONIC, at - now);
	(void)pthread_cond_timedwait(&k->cond, &k->lock, &until);
}

/* One heartbeat, k->lock released around it. False once the session is
 * gone for good: nothing is left to keep, nor to give back. */
static bool
heartbeat(struct cxlp_handler *h, struct keeper *k)
{
	k->tried_ms = cxlp_now_coarse_ms();
	pthread_mutex_unlock(&k->lock);
	if (h_ping(h) != 0) {
		log_info("keepalive: %s", cxlp_errormsg());
	}
	pthread_mutex_lock(&k->lock);
	return h_check_session(h) == 0;
}

/* One giveback_run, k->lock released around it; a run that leaves
 * regions unanswered is repeated GIVEBACK_RETRY_MS later. */
static void
giveback(struct cxlp_handler *h, struct keeper *k)
{
	bool again;

	k->work = false;
	pthread_mutex_unlock(&k->lock);
	again = giveback_run(h);
	regview_drain(h); /* UNMAPPING of the regions given back */
	pthread_mutex_lock(&k->lock);
	k->retry_ms = again ? cxlp_now_coarse_ms() + GIVEBACK_RETRY_MS : 0;
}

static void *
keeper_main(void *arg)
{
	struct cxlp_handler *h = arg;
	struct keeper *k = &h->keeper;

	pthread_mutex_lock(&k->lock);
	while (!k->stop) {
		uint64_t now = cxlp_now_coarse_ms();
		uint64_t beat = heartbeat_at(h, k);
		uint64_t retry = k->retry_ms != 0 ? k->retry_ms : UINT64_MAX;

		if (k->work || retry <= now) { /* before a refill: what the
			                               * server asked back first */
			giveback(h, k);
		} else if (k->refill) {
			k->refill = false;
			pthread_mutex_unlock(&k->lock);
			reclaim_refill(h);
			regview_drain(h);
			pthread_mutex_lock(&k->lock);
		} else if (beat <= now) {
			if (!heartbeat(h, k)) {
				break;
			}
		} else {
			sleep_until(k, beat < retry ? beat : retry, now);
		}
	}
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

/* keeper_init -- see handler_int.h */
void
keeper_init(struct keeper *k)
{
	pthread_condattr_t ca;

	memset(k, 0, sizeof(*k));
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cond, &ca);
	pthread_condattr_destroy(&ca);
}

/* keeper_fini -- see handler_int.h */
void
keeper_fini(struct keeper *k)
{
	cxlp_assert(!k->running);
	pthread_cond_destroy(&k->cond);
	pthread_mutex_destroy(&k->lock);
}

/* keeper_start -- see handler_int.h */
int
keeper_start(struct cxlp_handler *h)
{
	struct keeper *k = &h->keeper;
	int err;

	k->stop = false;
	if ((err = pthread_create(&k->tid, NULL, keeper_main, h)) != 0) {
		return cxlp_fail(-err, "connect: cannot start the handler's "
		    "thread (keepalive, regions given back): %s",
		    strerror(err));
	}
	k->running = true;
	return 0;
}

/* keeper_stop -- see handler_int.h */
void
keeper_stop(struct cxlp_handler *h)
{
	struct keeper *k = &h->keeper;

	if (!k->running) {
		return;
	}
	pthread_mutex_lock(&k->lock);
	k->stop = true;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
	pthread_join(k->tid, NULL);
	k->running = false;
}

/* keeper_poke -- see handler_int.h */
void
keeper_poke(struct cxlp_handler *h)
{
	struct keeper *k = &h->keeper;

	if (!k->running) {
		(void)giveback_run(h);
		return;
	}
	pthread_mutex_lock(&k->lock);
	k->work = true;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
}

/* keeper_poke_refill -- see handler_int.h */
void
keeper_poke_refill(struct cxlp_handler *h)
{
	struct keeper *k = &h->keeper;

	pthread_mutex_lock(&k->lock);
	if (k->running && !k->refill) {
		k->refill = true;
		pthread_cond_signal(&k->cond);
	}
	pthread_mutex_unlock(&k->lock);
}
