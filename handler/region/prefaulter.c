/*
 * prefaulter.c -- one background thread per handler that prefaults the
 * regions it maps after connect: own regions as they are added, foreign
 * ones as they are first read.
 *
 * The first touch of a shared page is slow (pool/prefault.c says why a
 * populate and one load per page, from the top down), and alloc and
 * retrieve are the hot path, so they only queue a mapping here. Own
 * regions go to the front of the queue: a writer will fill them next.
 * The thread starts on first use; a handler that never maps a second
 * region has none. A queued mapping is never unmapped before
 * prefaulter_stop: regions.c and giveback.c keep every mapping, retired
 * or not, until regions_fini, which stops the prefaulter first.
 */
#include <stdlib.h>

#include "region.h"
#include "log.h"
#include "map.h"

/* One queued prefault; the mapping outlives the prefaulter (both end in
 * regions_fini, the prefaulter first). */
struct pf_job {
	const struct pmap *map;
	struct pf_job *next;
};

struct prefaulter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pf_job *head, *tail; /* own regions first, then foreign */
	pthread_t tid;
	int stop; /* atomic: end the current walk and the thread */
};

static void *
prefault_main(void *arg)
{
	struct prefaulter *pf = arg;

	pthread_mutex_lock(&pf->lock);
	while (!__atomic_load_n(&pf->stop, __ATOMIC_RELAXED)) {
		struct pf_job *j = pf->head;

		if (j == NULL) {
			pthread_cond_wait(&pf->cond, &pf->lock);
			continue;
		}
		pf->head = j->next;
		if (pf->head == NULL) {
			pf->tail = NULL;
		}
		pthread_mutex_unlock(&pf->lock);
		pmap_prefault_walk(j->map, false, &pf->stop);
		free(j);
		pthread_mutex_lock(&pf->lock);
	}
	pthread_mutex_unlock(&pf->lock);
	return NULL;
}

static struct prefaulter *
prefaulter_new(void)
{
	struct prefaulter *pf = calloc(1, sizeof(*pf));

	if (pf == NULL) {
		return NULL;
	}
	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->cond, NULL);
	if (pthread_create(&pf->tid, NULL, prefault_main, pf) != 0) {
		pthread_cond_destroy(&pf->cond);
		pthread_mutex_destroy(&pf->lock);
		free(pf);
		return NULL;
	}
	return pf;
}

/* End pf's thread (a walk stops within 64 pages), drop what is still
 * queued, free pf. */
static void
prefaulter_end(struct prefaulter *pf)
{
	pthread_mutex_lock(&pf->lock);
	__atomic_store_n(&pf->stop, 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&pf->cond);
	pthread_mutex_unlock(&pf->lock);
	pthread_join(pf->tid, NULL);
	while (pf->head != NULL) {
		struct pf_job *j = pf->head;

		pf->head = j->next;
		free(j);
	}
	pthread_cond_destroy(&pf->cond);
	pthread_mutex_destroy(&pf->lock);
	free(pf);
}

/* h's prefaulter, started on first use (two racing callers: one wins,
 * the other ends its own); NULL without memory or a thread. Takes none
 * of h's locks, so callers may hold any of them. */
static struct prefaulter *
prefaulter_get(struct cxlp_handler *h)
{
	struct prefaulter *pf = __atomic_load_n(&h->regions.prefaulter,
	    __ATOMIC_ACQUIRE);
	struct prefaulter *mine;

	if (pf != NULL || (mine = prefaulter_new()) == NULL) {
		return pf;
	}
	if (__atomic_compare_exchange_n(&h->regions.prefaulter, &pf, mine,
	    false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		return mine;
	}
	prefaulter_end(mine);
	return pf;
}

/* prefault_queue -- see region.h */
void
prefault_queue(struct cxlp_handler *h, const struct pmap *m, bool own)
{
	struct pf_job *j = calloc(1, sizeof(*j));
	struct prefaulter *pf = prefaulter_get(h);

	if (j == NULL || pf == NULL) {
		log_info("region prefault: no memory or thread, pages "
		    "fault on first use");
		free(j);
		return;
	}
	j->map = m;
	pthread_mutex_lock(&pf->lock);
	if (own || pf->head == NULL) {
		j->next = pf->head;
		pf->head = j;
		pf->tail = pf->tail != NULL ? pf->tail : j;
	} else {
		pf->tail->next = j;
		pf->tail = j;
	}
	pthread_cond_signal(&pf->cond);
	pthread_mutex_unlock(&pf->lock);
}

/* prefaulter_stop -- see region.h */
void
prefaulter_stop(struct cxlp_handler *h)
{
	if (h->regions.prefaulter != NULL) {
		prefaulter_end(h->regions.prefaulter);
		h->regions.prefaulter = NULL;
	}
}
