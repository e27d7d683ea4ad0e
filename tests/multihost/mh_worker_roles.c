/*
 * mh_worker_roles.c -- mh-worker's roles besides the writer and the
 * reader (mh.h): request groups, the eviction test's churn and hot
 * reader, a bare connect, and the rewrite that no API call writes back.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvtest.h"
#include "mh_worker.h"

#define MiB (1024ull * 1024)

/* ---- group-writer ID:WRITER:N ---- */

static int
stage(struct cxlp_handler *h, struct cxlp_group *g, const char *id,
    uint32_t writer, uint32_t first, uint32_t n)
{
	char kb[MH_GROUP][48];
	const void *kp[MH_GROUP];
	size_t kl[MH_GROUP], lens[MH_GROUP];
	cxlp_page_t pg[MH_GROUP];
	bool stored[MH_GROUP];
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		void *buf;

		if ((rc = cxlp_group_alloc(h, g, &pg[i], &buf)) != 0) {
			return rc;
		}
		kl[i] = kv_key(kb[i], sizeof(kb[i]), id, first + i);
		kp[i] = kb[i];
		lens[i] = mh_len(first + i);
		kv_fill(buf, lens[i], writer, first + i);
	}
	return cxlp_group_store(h, g, n, kp, kl, pg, lens, stored);
}

static int
one_group(struct cxlp_handler *h, const char *id, uint32_t writer)
{
	struct cxlp_group *g = NULL;
	int rc = cxlp_group_open(h, id, strlen(id), MH_GROUP,
	    CXLP_GROUP_ATOMIC, 0, &g);

	rc = rc ? rc : stage(h, g, id, writer, 0, MH_GROUP / 2);
	rc = rc ? rc : stage(h, g, id, writer, MH_GROUP / 2,
	    MH_GROUP - MH_GROUP / 2);
	if (rc == 0 && cxlp_group_state(g) != CXLP_GROUP_COMMITTED) {
		rc = CXLP_E_GROUP;
	}
	if (rc != 0) {
		fprintf(stderr, "mh-worker: group %s: %s (%s)\n", id,
		    cxlp_strerror(rc), cxlp_errormsg());
	}
	cxlp_group_close(h, &g);
	return rc;
}

/* mh_group_writer -- see mh_worker.h */
int
mh_group_writer(const char *url, const char *arg)
{
	char prefix[MH_PREFIX - 4], id[32];
	unsigned w, n;
	struct cxlp_handler *h;

	if (sscanf(arg, "%11[^:]:%u:%u", prefix, &w, &n) != 3) {
		return 2;
	}
	if ((h = mh_connect(url, MH_PAGE, MH_REGION, true)) == NULL) {
		return 100;
	}
	if (mh_ready_go() != 0) {
		return 99;
	}
	for (uint32_t j = 0; j < n; j++) {
		snprintf(id, sizeof(id), "%s%u", prefix, j);
		if (one_group(h, id, w) != 0) {
			return 10;
		}
		if (mh_put_u32(j) != 0) {
			return 13;
		}
	}
	if (mh_put_u32(MH_END) != 0) {
		return 13;
	}
	cxlp_close(&h);
	return 0;
}

/* ---- churn HOT, hot-reader HOT ---- */

static int
churn_batch(struct cxlp_handler *h, const char *prefix, uint32_t first,
    uint32_t n)
{
	char kb[MH_EV_BATCH][32];
	const void *kp[MH_EV_BATCH];
	size_t kl[MH_EV_BATCH], lens[MH_EV_BATCH];
	cxlp_page_t pg[MH_EV_BATCH];
	bool ok[MH_EV_BATCH];
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		void *buf;

		if ((rc = cxlp_alloc(h, &pg[i], &buf)) != 0) {
			fprintf(stderr, "mh-worker: churn alloc: %s (%s)\n",
			    cxlp_strerror(rc), cxlp_errormsg());
			return 10;
		}
		kl[i] = kv_key(kb[i], sizeof(kb[i]), prefix, first + i);
		kp[i] = kb[i];
		lens[i] = MH_EV_VLEN;
		kv_fill(buf, MH_EV_VLEN, 1, first + i);
	}
	if ((rc = cxlp_batch_store(h, n, kp, kl, pg, lens, 0, ok)) != 0) {
		fprintf(stderr, "mh-worker: churn store: %s (%s)\n",
		    cxlp_strerror(rc), cxlp_errormsg());
		return 11;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!ok[i]) {
			return 12;
		}
	}
	return 0;
}

/* mh_churn -- see mh_worker.h */
int
mh_churn(const char *url, const char *arg)
{
	uint32_t hot = (uint32_t)atoi(arg), cold = 0;
	struct cxlp_handler *h = mh_connect(url, MH_EV_PAGE, MH_EV_REGION,
	    true);
	char c = 'h';
	int rc = 0;

	if (h == NULL) {
		return 100;
	}
	if (mh_ready_go() != 0) {
		return 99;
	}
	for (uint32_t k = 0; rc == 0 && k < hot; k += MH_EV_BATCH) {
		rc = churn_batch(h, "hot", k, hot - k < MH_EV_BATCH ?
		    hot - k : MH_EV_BATCH);
	}
	if (rc != 0 || write(STDOUT_FILENO, &c, 1) != 1) {
		return rc != 0 ? rc : 13;
	}
	while (read(STDIN_FILENO, &c, 1) == 1 && c == 'b') {
		if ((rc = churn_batch(h, "cold", cold, MH_EV_BATCH)) != 0) {
			return rc;
		}
		cold += MH_EV_BATCH;
		c = 'k';
		if (write(STDOUT_FILENO, &c, 1) != 1) {
			return 13;
		}
	}
	cxlp_close(&h);
	return 0;
}

/* mh_hot_reader -- see mh_worker.h */
int
mh_hot_reader(const char *url, const char *arg)
{
	uint32_t hot = (uint32_t)atoi(arg);
	struct cxlp_handler *h = mh_connect(url, 4096, 4 * MiB, true);
	char c;

	if (h == NULL) {
		return 100;
	}
	if (mh_ready_go() != 0) {
		return 99;
	}
	while (read(STDIN_FILENO, &c, 1) == 1 && c == 'r') {
		struct mh_hot r = { 0 };

		for (uint32_t k = 0; k < hot; k++) {
			char key[32];
			size_t kl = kv_key(key, sizeof(key), "hot", k), len;
			const void *data;
			uint32_t w = 0;
			int rc = cxlp_retrieve(h, key, kl, 0, &data, &len);

			if (rc != 0 && rc != CXLP_E_NOTFOUND) {
				fprintf(stderr, "mh-worker: %s: %s\n", key,
				    cxlp_strerror(rc));
				return 10;
			}
			if (rc == 0 && kv_check(data, len, k, &w) && w == 1) {
				r.found++;
			} else if (rc == 0) {
				r.wrong++;
			}
		}
		if (write(STDOUT_FILENO, &r, sizeof(r)) != sizeof(r)) {
			return 13;
		}
	}
	cxlp_close(&h);
	return 0;
}

/* ---- connect, rewrite ---- */

/* mh_connect_only -- see mh_worker.h */
int
mh_connect_only(const char *url, const char *arg)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;
	struct mh_conn r = { 0 };

	(void)arg;
	if (cxlp_config_new(&cfg) != 0 ||
	    cxlp_config_set_server(cfg, url) != 0 ||
	    cxlp_config_set_page_size(cfg, 4096) != 0 ||
	    cxlp_config_set_region_size(cfg, 2 * MiB) != 0) {
		return 100;
	}
	r.rc = cxlp_connect(&h, cfg);
	snprintf(r.msg, sizeof(r.msg), "%s", r.rc != 0 ? cxlp_errormsg() :
	    "");
	cxlp_config_delete(&cfg);
	if (write(STDOUT_FILENO, &r, sizeof(r)) != sizeof(r)) {
		return 13;
	}
	cxlp_close(&h);
	return 0;
}

/* mh_rewrite -- see mh_worker.h */
int
mh_rewrite(const char *url, const char *arg)
{
	struct cxlp_handler *h = mh_connect(url, MH_PAGE, MH_REGION, true);
	size_t len = mh_len(0);
	cxlp_page_t pg;
	bool ok = false;
	void *buf;

	if (h == NULL) {
		return 100;
	}
	if (mh_ready_go() != 0) {
		return 99;
	}
	if (cxlp_alloc(h, &pg, &buf) != 0) {
		return 10;
	}
	kv_fill(buf, len, 1, 0);
	if (cxlp_store(h, arg, strlen(arg), pg, len, 0, &ok) != 0 || !ok) {
		return 11;
	}
	/* after the store: this host's cache only, never written back */
	kv_fill(buf, len, 2, 0);
	if (mh_ready_go() != 0) { /* "rewritten"; then wait to be killed */
		return 99;
	}
	pause();
	return 0;
}
