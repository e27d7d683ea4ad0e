/*
 * keeper.c -- the handler's keepalive: a thread that sends a HEARTBEAT
 * when the handler has heard nothing from the metaserver for keepalive_ms.
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

/* ms until the next heartbeat is due (0: now): a period after the last
 * reply, and after the last heartbeat (one that failed at once must not
 * be sent again at once) */
static unsigned
due_in(const struct cxlp_handler *h, const struct keeper *k)
{
	uint64_t period = h->cfg.keepalive_ms, now = cxlp_now_coarse_ms();
	uint64_t last = client_last_reply_ms(h->cl);

	last = last > k->tried_ms ? last : k->tried_ms;
	return last + period > now ? (unsigned)(last + period - now) : 0;
}

static void *
keeper_main(void *arg)
{
	struct cxlp_handler *h = arg;
	struct keeper *k = &h->keeper;

	pthread_mutex_lock(&k->lock);
	while (!k->stop) {
		unsigned wait = due_in(h, k);

		if (wait > 0) {
			struct timespec until =
			    cxlp_deadline(CLOCK_MONOTONIC, wait);

			(void)pthread_cond_timedwait(&k->cond, &k->lock,
			    &until);
			continue;
		}
		k->tried_ms = cxlp_now_coarse_ms();
		pthread_mutex_unlock(&k->lock);
		if (h_ping(h) != 0) {
			log_info("keepalive: %s", cxlp_errormsg());
		}
		pthread_mutex_lock(&k->lock);
		if (h_check_session(h) != 0) {
			break; /* for good: nothing left to keep */
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
void
keeper_start(struct cxlp_handler *h)
{
	struct keeper *k = &h->keeper;

	if (h->cfg.keepalive_ms == 0) {
		return;
	}
	k->stop = false;
	if (pthread_create(&k->tid, NULL, keeper_main, h) != 0) {
		log_err("keepalive off: cannot start its thread");
		return;
	}
	k->running = true;
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
