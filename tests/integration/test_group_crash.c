/*
 * test_group_crash.c -- a request group's commit is one durable step
 * (pool/kv.c note 2, metaserver/group.c note 2; issue 25 item 5): the
 * metaserver dies at each persist point of a commit, and at each point
 * of the recovery that follows, and a reader never finds part of the
 * group.
 *
 * A writer (itest-worker group-writer) stages GW_TOTAL chunks; its last
 * batch commits them. The metaserver runs with CXLP_CRASH_COMMIT=k
 * (pool/crashpt.h): it dies at the k-th persist point inside the commit,
 * in crash mode "kill" (every store before the point visible, as after
 * kill -9) or "tear" (the last publish lost, the last range's tail
 * garbled, as after a power cut). The writer is killed too, so no retry
 * of its own can tidy up. The server is restarted; then:
 *   - a new handler's batch_exists and each key's retrieve (with its
 *     bytes) find all GW_TOTAL keys or none;
 *   - pool-inspect check passes on the live pool, and the pool opened
 *     read-only holds exactly the go key plus all or none of the group,
 *     every page of a region counted against the keys that point in
 *     (pool_check): the group's pages are all referenced or none is;
 *   - over k the outcome switches once, from none to all, and only after
 *     every key was staged: the commit completes exactly when a crash
 *     comes after its commit point.
 * The first k at which the server does not die ends the sweep (the group
 * committed, all found). A second test crashes the restart too, at each
 * point of its recovery (CXLP_CRASH_COMMIT again: recovery's writes are
 * in scope), for one crash before the commit point and one after, and
 * then restarts once more: the outcome is the one the first crash
 * decided.
 *
 * Also here (issue 25 item 6b), the bracket that batch reads from shared
 * memory keep (handler/region/direct.c, commit_seq): a commit made slow (a
 * pause after each key it stages and each it publishes) is caught by
 * the test's own lock-free reader (pool/kvread.c over the pool file)
 * with its first key published and its second not yet; a batch_exists
 * of both then must not answer from shared memory (one of two), but go
 * to the metaserver, whose LOOKUP waits for the commit: both.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "itest.h"
#include "kvread.h"
#include "layout.h"
#include "pool.h"
#include "worker.h"

static struct test_child writer;

/* reap the writer: its exit code, or 128 + signal */
static int
writer_wait(void)
{
	int st = itest_wait(&writer);

	writer.pid = 0;
	return st;
}

/* a failed assert leaves a server or the writer behind: end them */
static void
cleanup(void)
{
	if (writer.pid > 0) {
		kill(writer.pid, SIGKILL);
		(void)writer_wait();
	}
	if (srv.pid > 0) {
		itest_stop();
	}
}

TestSuite(group_crash, .fini = cleanup, .timeout = 600);

#define ID "cg"
#define K_MAX 200 /* far more points than a commit of GW_TOTAL keys has */

enum outcome { NONE = 0, ALL = 1, SURVIVED = 2 };

static unsigned recoveries_died; /* restarts of the last run that died */

/* wait until the server died (true) or the writer answered (false) */
static bool
server_died(struct test_child *w)
{
	struct pollfd pf = { .fd = w->out_fd, .events = POLLIN };

	for (int i = 0; i < 3000; i++) {
		int st;

		if (waitpid(srv.pid, &st, WNOHANG) == srv.pid) {
			cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
			    "the server ended with status %d; see %s", st,
			    srv.log);
			srv.pid = 0;
			return true;
		}
		if (poll(&pf, 1, 10) == 1) {
			return false;
		}
	}
	cr_assert_fail("neither the server died nor the writer answered");
	return false;
}

/* how many of the group's keys a new handler finds: batch_exists and
 * each retrieve must agree, and every key found has its bytes */
static uint32_t
reader_count(void)
{
	struct cxlp_handler *h = itest_connect();
	char kbuf[GW_TOTAL][48];
	const void *keys[GW_TOTAL];
	size_t kl[GW_TOTAL];
	bool ex[GW_TOTAL];
	uint32_t n = 0, got = 0;

	for (uint32_t i = 0; i < GW_TOTAL; i++) {
		kl[i] = kv_key(kbuf[i], sizeof(kbuf[i]), ID, i);
		keys[i] = kbuf[i];
	}
	cr_assert_rc(cxlp_batch_exists(h, GW_TOTAL, keys, kl, ex), 0);
	for (uint32_t i = 0; i < GW_TOTAL; i++) {
		const void *data;
		size_t len;
		uint32_t wr;
		int rc = cxlp_retrieve(h, keys[i], kl[i], 0, &data, &len);

		n += ex[i];
		cr_assert(rc == 0 || rc == CXLP_E_NOTFOUND, "retrieve: %d", rc);
		if (rc == 0) {
			cr_assert(kv_check(data, len, i, &wr), "bytes of %s",
			    kbuf[i]);
			got++;
		}
	}
	cr_assert_eq(n, got, "batch_exists found %u keys, retrieve %u", n,
	    got);
	cr_assert(n == 0 || n == GW_TOTAL, "%u of the group's %u keys are "
	    "in the pool", n, GW_TOTAL);
	cxlp_close(&h);
	return n;
}

/* the pool, read-only: clean, and 1 + n keys in all */
static void
pool_holds(uint32_t n)
{
	struct pool *p = NULL;
	struct pool_kv kv;
	const void *key;
	size_t klen;
	uint64_t cursor = 0, keys = 0;

	itest_assert_pool_checks();
	cr_assert_eq(pool_open(&p, srv.pool, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_check(p, NULL, NULL), 0, "pool_check");
	while (pool_kv_next(p, &cursor, &kv, &key, &klen) == 1) {
		keys++;
	}
	cr_assert_eq(keys, 1u + n, "the pool holds %llu keys, want the go "
	    "key and %u", (unsigned long long)keys, n);
	pool_close(&p);
}

/* The pool a crash left, before the restart: whether it holds a commit
 * cut short (and *complete, whether the restart completes it), which
 * pool-inspect check must name as such. */
static bool
crashed_pool_note(bool *complete)
{
	struct pool *p = NULL;
	char out[160];
	uint64_t keys;
	bool pending;

	cr_assert_eq(pool_open(&p, srv.pool, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	pending = pool_commit_pending(p, &keys, complete);
	pool_close(&p);
	snprintf(out, sizeof(out), "%s.check", srv.log);
	(void)test_inspect_check(srv.pool, out);
	cr_assert(!pending || test_file_has(out, *complete ? "next start "
	    "completes it" : "next start rolls it back"), "pool-inspect "
	    "check does not name the commit cut short; see %s", out);
	unlink(out);
	return pending;
}

/* store the writer's go key: stored, or its answer lost to the crash
 * the writer's commit made */
static void
go_put(struct cxlp_handler *h)
{
	char k[64];
	size_t kl = kv_key(k, sizeof(k), ID "-go", 0);
	cxlp_page_t pg;
	void *buf;
	bool ok = false;
	int rc;

	cr_assert_rc(cxlp_alloc(h, &pg, &buf), 0);
	kv_fill(buf, 8, 1, 0);
	rc = cxlp_store(h, k, kl, pg, 8, 0, &ok);
	cr_assert(rc == CXLP_E_UNKNOWN || (rc == 0 && ok), "store of the go "
	    "key: %d (%s)", rc, cxlp_errormsg());
}

/* one run: the commit's k-th point kills the server (mode), then each
 * of recover_at[0..nrec) kills its restart's recovery; the outcome */
static enum outcome
run(uint64_t k, const char *mode, const uint64_t *recover_at, size_t nrec)
{
	struct test_child *w = &writer;
	struct cxlp_handler *h;
	struct gw_result r;
	char at[32], ready = 0;
	bool pending, complete;
	uint32_t n;

	snprintf(at, sizeof(at), "%llu", (unsigned long long)k);
	cr_assert_eq(setenv("CXLP_CRASH_COMMIT", at, 1), 0);
	cr_assert_eq(setenv("CXLP_CRASH_MODE", mode, 1), 0);
	itest_start();
	cr_assert_eq(unsetenv("CXLP_CRASH_COMMIT"), 0);
	cr_assert_eq(unsetenv("CXLP_CRASH_MODE"), 0);
	itest_spawn(w, "group-writer", ID);
	itest_go(w);
	cr_assert(test_child_read(w, &ready, 1) && ready == GW_READY,
	    "group-writer failed (exit %d)", writer_wait());
	/* The key that lets the writer go on, by a handler closed at once.
	 * The writer sees it in the index before its reply leaves, and its
	 * commit may kill the server first: then the store's outcome is
	 * unknown, and that is fine (the key is in; the writer went on). */
	h = kv_connect_timeout(srv.url, 2000, 1);
	cr_assert_not_null(h);
	go_put(h);
	cxlp_close(&h);
	if (!server_died(w)) {
		cr_assert(test_child_read(w, &r, sizeof(r)));
		cr_assert_eq(writer_wait(), 0);
		cr_assert_rc(r.rc, 0);
		cr_assert_eq(reader_count(), GW_TOTAL);
		itest_stop();
		return SURVIVED;
	}
	kill(w->pid, SIGKILL);
	(void)writer_wait();
	pending = crashed_pool_note(&complete);
	recoveries_died = 0;
	for (size_t i = 0; i < nrec; i++) {
		snprintf(at, sizeof(at), "%llu",
		    (unsigned long long)recover_at[i]);
		cr_assert_eq(setenv("CXLP_CRASH_COMMIT", at, 1), 0);
		/* dies recovering, or comes up with fewer points to pass */
		recoveries_died += test_server_restart(&srv, NULL) != 0;
		cr_assert_eq(unsetenv("CXLP_CRASH_COMMIT"), 0);
		if (srv.pid != 0) {
			test_server_kill(&srv, SIGKILL);
		}
	}
	cr_assert_eq(test_server_restart(&srv, NULL), 0, "restart after a "
	    "crash at commit point %llu (%s); see %s", (unsigned long long)k,
	    mode, srv.log);
	n = reader_count();
	pool_holds(n);
	itest_stop();
	cr_assert(!pending || n == (complete ? GW_TOTAL : 0), "k=%llu (%s): "
	    "%u keys after a crash that left a commit to %s",
	    (unsigned long long)k, mode, n, complete ? "complete" :
	    "roll back");
	return n == GW_TOTAL ? ALL : NONE;
}

/* the sweep over k in mode; the first k whose crash completes the
 * commit */
static uint64_t
sweep(const char *mode)
{
	uint64_t first_all = 0, k;
	enum outcome o = NONE;

	for (k = 1; k < K_MAX && o != SURVIVED; k++) {
		o = run(k, mode, NULL, 0);
		if (o == ALL && first_all == 0) {
			first_all = k;
		}
		cr_assert(o != NONE || first_all == 0, "%s: a crash at point "
		    "%llu rolled back a commit that a crash at %llu completed",
		    mode, (unsigned long long)k,
		    (unsigned long long)first_all);
	}
	cr_assert_eq(o, SURVIVED, "%s: the server died at every point", mode);
	cr_log_info("%s: %llu points in the commit; a crash completes it from "
	    "point %llu", mode, (unsigned long long)k - 2,
	    (unsigned long long)first_all);
	cr_assert_gt(first_all, GW_TOTAL, "%s: a crash at point %llu, before "
	    "every key was staged, completed the commit", mode,
	    (unsigned long long)first_all);
	return first_all;
}

Test(group_crash, a_crash_at_any_point_of_a_commit_leaves_all_or_none)
{
	uint64_t kill_all = sweep("kill"), tear_all = sweep("tear");

	/* a torn commit point (its store lost) rolls back what the same
	 * point completes when its store landed */
	cr_assert_eq(tear_all, kill_all + 1, "kill: %llu, tear: %llu",
	    (unsigned long long)kill_all, (unsigned long long)tear_all);
}

/* k: the point of the commit to die at; the recovery of that crash dies
 * at its 1st, 2nd, ... point in turn (and the next recovery at its
 * first), and each time the last restart settles the same way, until a
 * recovery has fewer points than j */
static void
recovery_sweep(uint64_t k, enum outcome want)
{
	unsigned died = 0;

	for (uint64_t j = 1; j < K_MAX; j++) {
		uint64_t rec[2] = { j, 1 };

		cr_assert_eq(run(k, "kill", rec, 2), want, "k=%llu j=%llu",
		    (unsigned long long)k, (unsigned long long)j);
		if (recoveries_died == 0) {
			break;
		}
		died += recoveries_died;
	}
	cr_assert_geq(died, 2, "k=%llu: the recovery had no crash point",
	    (unsigned long long)k);
}

Test(group_crash, a_crash_during_recovery_keeps_the_first_decision)
{
	enum outcome o = NONE;
	uint64_t k;

	for (k = GW_TOTAL; o == NONE && k < K_MAX; k++) {
		o = run(k, "kill", NULL, 0);
	}
	cr_assert_eq(o, ALL, "no crash completed the commit");
	recovery_sweep(k - 2, NONE); /* k - 1: the first that completed */
	recovery_sweep(k + 1, ALL);
}

/* ---- the commit bracket of batch reads (item 6b) ------------------------ */

struct committer {
	struct cxlp_handler *h;
	struct cxlp_group *g;
	char key[2][48];
	const void *keys[2];
	size_t kl[2], lens[2];
	cxlp_page_t pg[2];
	bool stored[2];
	int rc;
};

static void *
commit_2(void *arg)
{
	struct committer *c = arg;

	c->rc = cxlp_group_store(c->h, c->g, 2, c->keys, c->kl, c->pg,
	    c->lens, c->stored);
	return NULL;
}

/* the pool's metadata area mapped read-only, for a kvread of our own */
static void *
map_meta(struct kvread *kr, size_t *len)
{
	struct pool_sb sb;
	char why[200];
	int fd = open(srv.pool, O_RDONLY);
	void *m;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	*len = sb.area[POOL_AREA_DATA].off;
	m = mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(m, MAP_FAILED);
	cr_assert_eq(kvread_init(kr, &sb, m, *len, why, sizeof(why)), 0, "%s",
	    why);
	return m;
}

Test(group_crash, a_batch_read_never_answers_from_a_commit_half_published)
{
	struct committer c = { 0 };
	struct kvread kr;
	struct kvread_loc loc;
	struct cxlp_handler *r;
	bool ex[2] = { false, false };
	pthread_t t;
	size_t mlen;
	void *meta;
	int rc = CXLP_E_NOTFOUND;

	cr_assert_eq(setenv("CXLP_COMMIT_PAUSE_US", "1000000", 1), 0);
	itest_start();
	cr_assert_eq(unsetenv("CXLP_COMMIT_PAUSE_US"), 0);
	c.h = itest_connect();
	r = itest_connect();
	cr_assert_rc(cxlp_group_open(c.h, "hp", 2, 2, 0, 0, &c.g), 0);
	for (int i = 0; i < 2; i++) {
		void *buf;

		cr_assert_rc(cxlp_group_alloc(c.h, c.g, &c.pg[i], &buf), 0);
		c.kl[i] = kv_key(c.key[i], sizeof(c.key[i]), "hp", i);
		c.keys[i] = c.key[i];
		c.lens[i] = 512;
		kv_fill(buf, 512, 3, i);
	}
	meta = map_meta(&kr, &mlen);
	cr_assert_eq(pthread_create(&t, NULL, commit_2, &c), 0);
	/* the first key published, the commit paused after it (~1 s) */
	for (int i = 0; i < 2000 && rc != 0; i++) {
		rc = kvread_lookup(&kr, c.keys[0], c.kl[0], &loc);
		usleep(rc == 0 ? 0 : 2000);
	}
	cr_assert_eq(rc, 0, "the commit never published its first key");
	cr_assert_eq(kvread_lookup(&kr, c.keys[1], c.kl[1], &loc),
	    CXLP_E_NOTFOUND, "both keys published already: no half to see");
	cr_assert_rc(cxlp_batch_exists(r, 2, c.keys, c.kl, ex), 0);
	cr_assert(ex[0] && ex[1], "a batch read saw %d and %d of a group "
	    "committed whole", ex[0], ex[1]);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_rc(c.rc, 0);
	munmap(meta, mlen);
	cxlp_group_close(c.h, &c.g);
	cxlp_close(&r);
	cxlp_close(&c.h);
	itest_stop();
}
