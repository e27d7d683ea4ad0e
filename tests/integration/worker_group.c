/*
 * worker_group.c -- itest-worker's request-group roles (test_group.c):
 *
 *   group-writer URL ID   open group ID of GW_TOTAL chunks, stage GW_HALF
 *                         of them (keys ID-0..), say GW_READY, wait for
 *                         the key ID-go-0 to appear (or to be killed),
 *                         stage the rest, and report a struct gw_result
 *   group-reader URL ID   poll batch_exists of ID-0..GR_KEYS-1 until all
 *                         are there (or GR_DEADLINE_MS), saying GR_READY
 *                         after the first poll, and report a struct
 *                         gr_result
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "kvtest.h"
#include "worker.h"

#define MiB (1024ull * 1024)

static int
stage(struct cxlp_handler *h, struct cxlp_group *g, const char *id,
    uint32_t first, uint32_t n)
{
	char kbuf[GW_TOTAL][64];
	const void *keys[GW_TOTAL];
	size_t kl[GW_TOTAL], lens[GW_TOTAL];
	cxlp_page_t pg[GW_TOTAL];
	bool stored[GW_TOTAL];

	for (uint32_t i = 0; i < n; i++) {
		void *buf;
		int rc = cxlp_group_alloc(h, g, &pg[i], &buf);

		if (rc != 0) {
			return rc;
		}
		kl[i] = kv_key(kbuf[i], sizeof(kbuf[i]), id, first + i);
		keys[i] = kbuf[i];
		lens[i] = 512;
		kv_fill(buf, lens[i], DEATH_WRITER, first + i);
	}
	return cxlp_group_store(h, g, n, keys, kl, pg, lens, stored);
}

/* group_writer -- see the top */
int
group_writer(int argc, char **argv)
{
	struct cxlp_handler *h = kv_connect(worker_url, 4096, 4 * MiB, true);
	struct gw_result r = { 0 };
	struct cxlp_group *g = NULL;
	struct cxlp_stats st;
	uint64_t until = cxlp_now_ms() + GR_DEADLINE_MS;
	char ready = GW_READY, mark[300];

	(void)argc;
	if (h == NULL) {
		return 100;
	}
	if (cxlp_group_open(h, argv[0], strlen(argv[0]), GW_TOTAL,
	    CXLP_GROUP_ATOMIC, 0, &g) != 0 ||
	    stage(h, g, argv[0], 0, GW_HALF) != 0) {
		return 101;
	}
	if (write(STDOUT_FILENO, &ready, 1) != 1) {
		return 102;
	}
	snprintf(mark, sizeof(mark), "%s-go-0", argv[0]); /* itest_put */
	while (cxlp_exists(h, mark, strlen(mark)) != 1) {
		if (cxlp_now_ms() > until) {
			return 104;
		}
		usleep(10 * 1000);
	}
	r.rc = stage(h, g, argv[0], GW_HALF, GW_TOTAL - GW_HALF);
	r.state = cxlp_group_state(g);
	cxlp_group_close(h, &g);
	if (cxlp_stats(h, &st) == 0) {
		r.pages_registered = st.pages_registered;
		r.pages_allocated = st.pages_allocated;
	}
	if (write(STDOUT_FILENO, &r, sizeof(r)) != sizeof(r)) {
		return 103;
	}
	cxlp_close(&h);
	return 0;
}

/* group_reader -- see the top */
int
group_reader(int argc, char **argv)
{
	struct cxlp_handler *h = kv_connect(worker_url, 4096, 4 * MiB, true);
	struct gr_result r = { 0 };
	uint64_t until = cxlp_now_ms() + GR_DEADLINE_MS;
	char ready = GR_READY;
	char kbuf[GR_KEYS][64];
	const void *keys[GR_KEYS];
	size_t kl[GR_KEYS];
	bool ex[GR_KEYS];

	(void)argc;
	if (h == NULL) {
		return 100;
	}
	for (uint32_t i = 0; i < GR_KEYS; i++) {
		kl[i] = kv_key(kbuf[i], sizeof(kbuf[i]), argv[0], i);
		keys[i] = kbuf[i];
	}
	while (r.all == 0 && cxlp_now_ms() < until) {
		uint32_t n = 0;

		if (cxlp_batch_exists(h, GR_KEYS, keys, kl, ex) != 0) {
			return 101;
		}
		for (uint32_t i = 0; i < GR_KEYS; i++) {
			n += ex[i];
		}
		r.polls++;
		r.none += n == 0;
		r.partial += n > 0 && n < GR_KEYS;
		r.all = n == GR_KEYS;
		if (r.polls == 1 && write(STDOUT_FILENO, &ready, 1) != 1) {
			return 102;
		}
	}
	if (write(STDOUT_FILENO, &r, sizeof(r)) != sizeof(r)) {
		return 103;
	}
	cxlp_close(&h);
	return 0;
}
