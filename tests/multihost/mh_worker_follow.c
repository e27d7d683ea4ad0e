/*
 * mh_worker_follow.c -- mh-worker's follower role (mh.h): a handler that
 * stores and reads back under load while its leader is killed and a
 * standby takes the pool over (tests/multihost/test_follow.c). It
 * connects once: whatever it does after the kill, it does on the handler
 * that the library moved to the new leader (handler/net/endpoints.c).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kvtest.h"
#include "mh_worker.h"

#define PACE_MS 40 /* between batches: MH_FOL_MAX keys last ~3 s of calls */

struct follower {
	struct cxlp_handler *h;
	char prefix[MH_PREFIX];
	uint32_t writer;
	uint32_t acked[MH_FOL_MAX]; /* keys stored true, in order */
	uint32_t nacked;
	bool killed;                /* MH_FOL_KILLED was read */
	unsigned seed;
	struct mh_follow r;
};

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* store PREFIX-first.. (n keys); -1 on a failure (said on stderr) */
static int
store_batch(struct follower *f, uint32_t first, uint32_t n)
{
	char kb[MH_FOL_BATCH][48];
	const void *kp[MH_FOL_BATCH];
	size_t kl[MH_FOL_BATCH], lens[MH_FOL_BATCH];
	cxlp_page_t pg[MH_FOL_BATCH];
	bool ok[MH_FOL_BATCH], after = f->killed;
	uint64_t t0;
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		void *buf;

		if ((rc = cxlp_alloc(f->h, &pg[i], &buf)) != 0) {
			fprintf(stderr, "mh-worker: follower alloc: %s (%s)\n",
			    cxlp_strerror(rc), cxlp_errormsg());
			return -1;
		}
		kl[i] = kv_key(kb[i], sizeof(kb[i]), f->prefix, first + i);
		kp[i] = kb[i];
		lens[i] = mh_len(first + i);
		kv_fill(buf, lens[i], f->writer, first + i);
	}
	t0 = mono_ns();
	rc = cxlp_batch_store(f->h, n, kp, kl, pg, lens, 0, ok);
	if (rc == CXLP_E_UNKNOWN && f->r.unknown < MH_FOL_UNKNOWN_MAX) {
		f->r.unknown_ns[f->r.unknown][0] = t0;
		f->r.unknown_ns[f->r.unknown++][1] = mono_ns();
		return 0; /* maybe stored: not acknowledged */
	}
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		if (!ok[i] || mh_put_u32(first + i) != 0) {
			fprintf(stderr, "mh-worker: %s stored false\n", kb[i]);
			return -1;
		}
		f->acked[f->nacked++] = first + i;
		f->r.stored_after += after;
	}
	if (rc != 0) {
		fprintf(stderr, "mh-worker: follower batch_store %s-%u: %s "
		    "(%s)\n", f->prefix, first, cxlp_strerror(rc),
		    cxlp_errormsg());
		return -1;
	}
	return 0;
}

/* acknowledged key i read back through the server; -1 unless intact */
static int
read_key(struct follower *f, uint32_t i)
{
	const void *data;
	size_t kl, len;
	uint32_t w = 0;
	char k[48];
	int rc;

	kl = kv_key(k, sizeof(k), f->prefix, i);
	rc = cxlp_retrieve(f->h, k, kl, 0, &data, &len);
	if (rc != 0 || !kv_check(data, len, i, &w) || w != f->writer) {
		fprintf(stderr, "mh-worker: follower read of %s: %s (%s)\n", k,
		    rc != 0 ? cxlp_strerror(rc) : "wrong bytes",
		    rc != 0 ? cxlp_errormsg() : "");
		return -1;
	}
	return 0;
}

/* one acknowledged key, at random, read back; -1 unless intact */
static int
read_back(struct follower *f)
{
	bool after = f->killed;

	if (read_key(f, f->acked[(unsigned)rand_r(&f->seed) % f->nacked]) !=
	    0) {
		return -1;
	}
	f->r.reads++;
	f->r.reads_after += after;
	return 0;
}

/* at the stop: every acknowledged key read back, its stats and counters
 * in the report; 0, or the exit status */
static int
report_fill(struct follower *f)
{
	struct cxlp_counters ctr;
	struct cxlp_stats st;

	for (uint32_t i = 0; i < f->nacked; i++) {
		if (read_key(f, f->acked[i]) != 0) {
			return 15;
		}
		f->r.verified++;
	}
	if (cxlp_stats(f->h, &st) != 0 ||
	    cxlp_counters(f->h, &ctr, sizeof(ctr)) != 0) {
		fprintf(stderr, "mh-worker: follower stats: %s\n",
		    cxlp_errormsg());
		return 14;
	}
	f->r.switches = (uint32_t)st.endpoint_switches;
	f->r.stale_replies = ctr.stale_replies;
	f->r.term_resets = ctr.term_resets;
	return 0;
}

/* a byte on stdin within wait_ms: MH_FOL_KILLED notes the kill (false:
 * go on); any other byte, or EOF, stops (true) */
static bool
stop_said(struct follower *f, int wait_ms)
{
	struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
	char c = 0;

	for (; poll(&p, 1, wait_ms) > 0; wait_ms = 0) {
		if (read(STDIN_FILENO, &c, 1) != 1 || c != MH_FOL_KILLED) {
			return true;
		}
		f->killed = true;
	}
	return false;
}

/* the pinned key: stored, then pinned; 0 or -1 */
static int
pin_key(struct follower *f, char *k, size_t n, size_t *kl)
{
	char pfx[MH_PREFIX + 8];
	cxlp_page_t pg;
	void *buf;
	bool ok = false;

	snprintf(pfx, sizeof(pfx), "%s-pin", f->prefix);
	*kl = kv_key(k, n, pfx, 0);
	if (cxlp_alloc(f->h, &pg, &buf) != 0) {
		return -1;
	}
	kv_fill(buf, mh_len(0), f->writer, 0);
	if (cxlp_store(f->h, k, *kl, pg, mh_len(0), 0, &ok) != 0 || !ok ||
	    cxlp_pin(f->h, k, *kl) != 0) {
		fprintf(stderr, "mh-worker: follower pin %s: %s\n", k,
		    cxlp_errormsg());
		return -1;
	}
	return 0;
}

/* follower PREFIX:WRITER:POOL -- mh.h */
int
mh_follower(const char *url, const char *arg)
{
	static struct follower f;
	char pool[1024], pin[48];
	size_t pinlen;
	uint32_t k = 0;
	int rc;

	if (sscanf(arg, "%15[^:]:%u:%1023s", f.prefix, &f.writer, pool) != 3) {
		return 2;
	}
	f.seed = f.writer;
	f.h = mh_connect_pool(url, strcmp(pool, "-") != 0 ? pool : NULL,
	    MH_PAGE, MH_REGION, false);
	if (f.h == NULL) {
		return 100;
	}
	if (pin_key(&f, pin, sizeof(pin), &pinlen) != 0) {
		return 10;
	}
	if (mh_ready_go() != 0) {
		return 99;
	}
	while (!stop_said(&f, PACE_MS) && k < MH_FOL_MAX) {
		if (store_batch(&f, k, MH_FOL_BATCH) != 0) {
			return 11;
		}
		k += MH_FOL_BATCH;
		if (f.nacked > 0 && read_back(&f) != 0) {
			return 12;
		}
	}
	while (k >= MH_FOL_MAX && !stop_said(&f, -1)) {
	} /* all stored: wait for the stop */
	f.r.unpin_rc = cxlp_unpin(f.h, pin, pinlen);
	if ((rc = report_fill(&f)) != 0) {
		return rc;
	}
	if (mh_put_u32(MH_END) != 0 ||
	    write(STDOUT_FILENO, &f.r, sizeof(f.r)) != sizeof(f.r)) {
		return 13;
	}
	cxlp_close(&f.h);
	return 0;
}
