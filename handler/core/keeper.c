/*
 * keeper.c -- the handler's background thread, a scheduler of a table of
 * tasks that it knows none of by name (as Redis's ae.c runs its time
 * events, and nng its ops tables): the table is filled at connect
 * (handler.c), in the order of priority; each task says when it is due
 * unasked (due) and is run (run) when due or poked (keeper_poke). Today
 * the tasks are the give-back (giveback.c), the refill (reclaim.c) and
 * the keepalive (call.c), which sends a HEARTBEAT when the handler has
 * heard nothing from the metaserver for keepalive_ms.
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
 * regions than its reserve pokes its task, which then runs giveback_run,
 * so the REGION_FREE round trips are made here and no caller waits for
 * them; a run that got no answer for some region is due again a second
 * later. So the thread runs in every handler, with the keepalive off
 * too, and then sleeps until poked. A reply's ASK pokes the task that
 * h->keeper.ask_task names (the give-back's).
 *
 * The refill. On a full pool, an alloc that leaves few free pages pokes
 * its task, which makes the RECLAIM that the next allocs would otherwise
 * wait for (reclaim.c note 7).
 *
 * A task's run returns false when the session is gone for good: the
 * thread then ends (nothing is left to keep, nor to give back).
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
#include "core.h"

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

/* The first task poked or due by now, in the table's order, or -1; *next
 * is then when the first one falls due. k->lock held. */
static int
task_due(struct cxlp_handler *h, struct keeper *k, uint64_t now,
    uint64_t *next)
{
	*next = UINT64_MAX;
	for (unsigned i = 0; i < k->ntasks; i++) {
		uint64_t at = (k->poked & 1u << i) != 0 ? 0 :
		    k->task[i].due(h);

		if (at <= now) {
			return (int)i;
		}
		*next = at < *next ? at : *next;
	}
	return -1;
}

static void *
keeper_main(void *arg)
{
	struct cxlp_handler *h = arg;
	struct keeper *k = &h->keeper;

	pthread_mutex_lock(&k->lock);
	while (!k->stop) {
		uint64_t now = cxlp_now_coarse_ms(), next;
		int i = task_due(h, k, now, &next);
		bool more;

		if (i < 0) {
			sleep_until(k, next, now);
			continue;
		}
		k->poked &= ~(1u << i);
		pthread_mutex_unlock(&k->lock);
		more = k->task[i].run(h);
		pthread_mutex_lock(&k->lock);
		if (!more) {
			break;
		}
	}
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

/* keeper_init -- see core.h */
void
keeper_init(struct keeper *k)
{
	pthread_condattr_t ca;

	memset(k, 0, sizeof(*k));
	k->ask_task = -1;
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cond, &ca);
	pthread_condattr_destroy(&ca);
}

/* keeper_add -- see core.h */
int
keeper_add(struct keeper *k, const struct keeper_task *t)
{
	cxlp_assert(!k->running && k->ntasks < KEEPER_TASKS_MAX);
	k->task[k->ntasks] = *t;
	return (int)k->ntasks++;
}

/* keeper_fini -- see core.h */
void
keeper_fini(struct keeper *k)
{
	cxlp_assert(!k->running);
	pthread_cond_destroy(&k->cond);
	pthread_mutex_destroy(&k->lock);
}

/* keeper_start -- see core.h */
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

/* keeper_stop -- see core.h */
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

/* keeper_poke -- see core.h */
bool
keeper_poke(struct cxlp_handler *h, int task)
{
	struct keeper *k = &h->keeper;
	bool running;

	if (task < 0) {
		return false;
	}
	pthread_mutex_lock(&k->lock);
	if ((running = k->running)) {
		k->poked |= 1u << task;
		pthread_cond_signal(&k->cond);
	}
	pthread_mutex_unlock(&k->lock);
	return running;
}
