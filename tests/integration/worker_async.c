/*
 * worker_async.c -- itest-worker's async-storer role (test_async.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvtest.h"
#include "worker.h"

/* async-storer URL: a handler with max_inflight 2; 3 threads submit 8
 * asynchronous stores of 4 keys each ("as-<k>", k < 96) while a fourth
 * stores and reads synchronously, then a close with requests in flight.
 * Exit 0 when every callback ran once, storing all its keys, and the
 * bound held; 40 + what failed otherwise. (Its point is the ThreadSanitizer
 * run of scripts/test.sh, which builds this worker with TSan.) */
#define AS_THREADS 3
#define AS_REQS 8
#define AS_KPR 4

static struct {
	pthread_mutex_t lock;
	struct cxlp_handler *h;
	int calls[AS_THREADS * AS_REQS];
	int bad, inflight, inflight_max;
} as = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The synchronous side of async-storer: stores, pinned reads, unpins. */
static void *
as_sync_thread(void *arg)
{
	(void)arg;
	for (uint32_t k = 0; k < 20; k++) {
		char key[24];
		size_t kl = kv_key(key, sizeof(key), "ss", k);
		cxlp_page_t pg;
		void *buf;
		bool ok = false;
		const void *data;
		size_t len;

		if (cxlp_alloc(as.h, &pg, &buf) != 0) {
			return (void *)3;
		}
		kv_fill(buf, 512, 3, k);
		if (cxlp_store(as.h, key, kl, pg, 512, 0, &ok) != 0 || !ok ||
		    cxlp_retrieve(as.h, key, kl, CXLP_RETRIEVE_PIN, &data,
		    &len) != 0 || !kv_check(data, len, k, NULL) ||
		    cxlp_unpin(as.h, key, kl) != 0) {
			return (void *)4;
		}
	}
	return NULL;
}

static void
as_done(void *arg, int rc, size_t n, const bool stored[], const int status[])
{
	(void)status;
	pthread_mutex_lock(&as.lock);
	as.calls[(intptr_t)arg]++;
	for (size_t i = 0; i < n; i++) {
		as.bad += rc != 0 || !stored[i];
	}
	as.inflight--;
	pthread_mutex_unlock(&as.lock);
}

static void *
as_thread(void *arg)
{
	intptr_t t = (intptr_t)arg;

	for (intptr_t i = 0; i < AS_REQS; i++) {
		intptr_t idx = t * AS_REQS + i;
		char keys[AS_KPR][24];
		const void *kp[AS_KPR];
		size_t kl[AS_KPR], lens[AS_KPR];
		cxlp_page_t pg[AS_KPR];
		void *buf;

		for (int j = 0; j < AS_KPR; j++) {
			uint32_t k = (uint32_t)(idx * AS_KPR + j);

			kl[j] = kv_key(keys[j], sizeof(keys[j]), "as", k);
			kp[j] = keys[j];
			lens[j] = 512;
			if (cxlp_alloc(as.h, &pg[j], &buf) != 0) {
				return (void *)1;
			}
			kv_fill(buf, 512, 3, k);
		}
		if (cxlp_batch_store_async(as.h, AS_KPR, kp, kl, pg, lens, 0,
		    as_done, (void *)idx) != 0) {
			return (void *)2;
		}
		pthread_mutex_lock(&as.lock);
		if (++as.inflight > as.inflight_max) {
			as.inflight_max = as.inflight;
		}
		pthread_mutex_unlock(&as.lock);
	}
	return NULL;
}

int
async_storer(int argc, char **argv)
{
	struct cxlp_config *cfg = NULL;
	pthread_t t[AS_THREADS + 1];
	void *ret;
	int rc = 0;

	(void)argc;
	if (cxlp_config_new(&cfg) != 0 ||
	    cxlp_config_set_server(cfg, argv[0]) != 0 ||
	    cxlp_config_set_page_size(cfg, 4096) != 0 ||
	    cxlp_config_set_region_size(cfg, 4u << 20) != 0 ||
	    cxlp_config_set_max_inflight(cfg, 2) != 0 ||
	    cxlp_connect(&as.h, cfg) != 0) {
		return 100;
	}
	cxlp_config_delete(&cfg);
	for (intptr_t i = 0; i <= AS_THREADS; i++) {
		if (pthread_create(&t[i], NULL, i < AS_THREADS ? as_thread :
		    as_sync_thread, (void *)i) != 0) {
			return 101;
		}
	}
	for (int i = 0; i <= AS_THREADS; i++) {
		pthread_join(t[i], &ret);
		rc = rc != 0 ? rc : ret != NULL ? 40 + (int)(intptr_t)ret : 0;
	}
	cxlp_close(&as.h); /* the last requests are still in flight */
	for (int i = 0; i < AS_THREADS * AS_REQS && rc == 0; i++) {
		rc = as.calls[i] != 1 ? 45 : 0;
	}
	return rc != 0 ? rc : as.bad != 0 ? 46 : as.inflight_max > 2 ? 47 : 0;
}

