/*
 * soak.c -- cxlp-soak: a bounded soak of one metaserver and 8 handler
 * processes doing a mixed workload while some of them are killed (SIGKILL)
 * and restarted, then a full audit of the pool.
 *
 *   cxlp-soak [--seconds N] [--workers N] [--kill-ms MS] [--quick]
 *             [--hostile]
 *     --quick = 15 s with a kill every 500 ms (the meson test, suite soak)
 *     default = 120 s with a kill every 1500 ms
 *     --kill-ms 0 = no kills: then every call of every worker must succeed
 *     --hostile = no kills, and a prober and newcomer handlers (hostile.c)
 *                 on the server's ipc socket and a tcp port
 *
 * Workers are this program exec'd again (`cxlp-soak --worker URL ID SEED
 * NEXT`); nng cannot run in a forked copy. A worker loops over a mixed
 * workload: batch_store of keys shared (and overlapping) with every other
 * worker, sometimes returned pinned; stores and deletes of its own private
 * keys; batch_retrieve with pins of shared keys, checking their bytes;
 * pages allocated and left unregistered; all in 16 KiB pages of 2 MiB
 * regions, so regions grow. It tells the parent what it knows as events on
 * its stdout: a key acknowledged, a delete about to be sent and how it
 * ended. Events are written before (intent) and after (outcome), so a kill
 * in between leaves the parent knowing the key is "maybe": it is then
 * excluded from the presence check, never counted wrong.
 *
 * The audit, with every worker alive and idle:
 *   1. pool-inspect check passes on the live pool;
 *   2. every shared key ever acknowledged, and every private key
 *      acknowledged and not deleted, is present with intact bytes;
 *   3. no pin is held; every live worker's pages add up (free + allocated
 *      + registered = total, none allocated or unresolved);
 *   4. the keys pointing into each live worker's regions (the pool's own
 *      count, read from the pool file) equal the pages that worker has
 *      registered;
 * then the workers close, the parent deletes every key (all of them now
 * have a gone owner, which any handler may delete), and
 *   5. no region other than the parent's is left and the free bytes are
 *      back to what they were before the first worker started.
 * Exit 0 when all holds; 1 with a reason on stderr otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cxlpool.h"
#include "kvtest.h"
#include "pool.h"
#include "proc.h"
#include "server.h"
#include "soak.h"

struct worker {
	pid_t pid;
	int in_fd;  /* parent -> worker stdin */
	int out_fd; /* worker stdout -> parent */
	uint32_t next; /* next private key number for a new incarnation */
	struct soak_stats st; /* from the final E_STATS */
	bool got_stats;
	unsigned lives;
};

static struct {
	struct test_server srv;
	struct worker w[SOAK_WORKERS_MAX];
	unsigned nworkers;
	unsigned seconds, kill_ms; /* kill_ms 0: no kills */
	bool hostile;
	uint8_t shared[SOAK_SHARED];  /* K_* per shared key */
	uint8_t *priv[SOAK_WORKERS_MAX]; /* K_* per private key */
	unsigned kills;
	uint64_t events;
	char self[4096];
} S;

static int fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static int
fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cxlp-soak: FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return 1;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- the parent's side of the workers ---------------------------------- */

static int
worker_start(unsigned id)
{
	struct worker *w = &S.w[id];
	char ids[16], seed[24], next[16];
	const char *const argv[] = { "cxlp-soak", "--worker", S.srv.url, ids,
		seed, next, NULL };
	struct test_child ch;

	/* a killed incarnation may have stored a batch it never reported:
	 * the new one starts past those numbers, which become "maybe" */
	for (unsigned k = 0; k < SOAK_RESTART_GAP && w->lives > 0 &&
	    w->next + k < SOAK_PRIVATE_MAX; k++) {
		S.priv[id][w->next + k] = K_MAYBE;
	}
	w->next += SOAK_RESTART_GAP;
	snprintf(ids, sizeof(ids), "%u", id);
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)now_ms() *
	    31 + id * 7919 + w->lives);
	snprintf(next, sizeof(next), "%u", w->next);
	if (test_child_spawn(&ch, S.self, argv) != 0) {
		return fail("spawn %s: %s", S.self, strerror(errno));
	}
	w->pid = ch.pid;
	w->in_fd = ch.go_fd;
	w->out_fd = ch.out_fd;
	w->lives++;
	return 0;
}

/* Apply one event from worker id to the parent's picture of the pool. */
static int
apply_event(unsigned id, const struct soak_event *e)
{
	struct worker *w = &S.w[id];

	S.events++;
	if (e->type == E_STORED_SHARED && e->key < SOAK_SHARED) {
		S.shared[e->key] = K_PRESENT;
		return 0;
	}
	if (e->key >= SOAK_PRIVATE_MAX) {
		return fail("worker %u: bad event key %u", id, e->key);
	}
	if (e->key >= w->next) {
		w->next = e->key + 1;
	}
	switch (e->type) {
	case E_STORED_PRIV:
		S.priv[id][e->key] = K_PRESENT;
		return 0;
	case E_DELETING_PRIV:
		S.priv[id][e->key] = K_MAYBE;
		return 0;
	case E_DELETED_PRIV:
		S.priv[id][e->key] = K_ABSENT;
		return 0;
	case E_KEPT_PRIV:
		S.priv[id][e->key] = K_PRESENT;
		return 0;
	case E_UNKNOWN_PRIV:
		S.priv[id][e->key] = K_MAYBE;
		return 0;
	default:
		return fail("worker %u: bad event type %u", id, e->type);
	}
}

/* Read what worker id has written. Returns 0, 1 at EOF, or fails. */
static int
worker_drain(unsigned id, bool block)
{
	struct worker *w = &S.w[id];
	struct soak_event e;

	for (;;) {
		struct pollfd p = { w->out_fd, POLLIN, 0 };
		ssize_t n;

		if (!block && poll(&p, 1, 0) <= 0) {
			return 0;
		}
		n = read(w->out_fd, &e, sizeof(e));
		if (n == 0) {
			return 1;
		}
		if (n != (ssize_t)sizeof(e)) {
			return fail("worker %u: short event (%zd)", id, n);
		}
		if (e.type == E_STATS) {
			if (read(w->out_fd, &w->st, sizeof(w->st)) !=
			    (ssize_t)sizeof(w->st)) {
				return fail("worker %u: short stats", id);
			}
			w->got_stats = true;
			return 0;
		}
		if (apply_event(id, &e) != 0) {
			return -1;
		}
	}
}

static void
worker_close_fds(struct worker *w)
{
	close(w->in_fd);
	close(w->out_fd);
	w->in_fd = w->out_fd = -1;
}

/* SIGKILL worker id, read everything it wrote, start it again. */
static int
worker_kill_restart(unsigned id)
{
	struct worker *w = &S.w[id];
	int st;

	kill(w->pid, SIGKILL);
	if (worker_drain(id, true) < 0) {
		return -1;
	}
	st = kv_wait_child(w->pid);
	worker_close_fds(w);
	if (st != 128 + SIGKILL) {
		return fail("worker %u exited %d before it was killed",
		    id, st);
	}
	S.kills++;
	return worker_start(id);
}

/* Run the workload for the configured time, killing a random worker
 * every kill_ms. */
static int
run_phase(void)
{
	uint64_t end = now_ms() + S.seconds * 1000ull;
	uint64_t next_kill = S.kill_ms > 0 ? now_ms() + S.kill_ms : UINT64_MAX;

	while (now_ms() < end) {
		struct pollfd p[SOAK_WORKERS_MAX];

		for (unsigned i = 0; i < S.nworkers; i++) {
			p[i] = (struct pollfd){ S.w[i].out_fd, POLLIN, 0 };
		}
		poll(p, S.nworkers, 50);
		for (unsigned i = 0; i < S.nworkers; i++) {
			int rc = p[i].revents ? worker_drain(i, false) : 0;

			if (rc < 0) {
				return -1;
			}
			if (rc == 1 || (p[i].revents & POLLHUP)) {
				return fail("worker %u died on its own (see "
				    "stderr above)", i);
			}
		}
		if (now_ms() >= next_kill) {
			if (worker_kill_restart((unsigned)rand() %
			    S.nworkers) != 0) {
				return -1;
			}
			next_kill = now_ms() + S.kill_ms; /* kill_ms > 0 */
		}
	}
	return 0;
}

/* Ask every worker to stop its workload and report; they stay connected
 * and idle until their stdin closes. */
static int
quiesce(void)
{
	for (unsigned i = 0; i < S.nworkers; i++) {
		if (write(S.w[i].in_fd, "q", 1) != 1) {
			return fail("cannot stop worker %u", i);
		}
	}
	for (unsigned i = 0; i < S.nworkers; i++) {
		while (!S.w[i].got_stats) {
			if (worker_drain(i, true) != 0) {
				return fail("worker %u ended without stats",
				    i);
			}
		}
	}
	return 0;
}

static int
workers_close(void)
{
	int bad = 0;

	for (unsigned i = 0; i < S.nworkers; i++) {
		struct worker *w = &S.w[i];
		int st;

		worker_close_fds(w);
		st = kv_wait_child(w->pid);
		if (st != 0) {
			bad = fail("worker %u exited %d at the end", i,
			    st);
		}
	}
	return bad;
}

/* ---- the audit ---------------------------------------------------------- */

static int
run_inspect_check(void)
{
	int st = test_inspect_check(S.srv.pool, "/dev/null");

	return st == 0 ? 0 : fail("pool-inspect check %s: exit %d",
	    S.srv.pool, st);
}

/* A batch of key names with the pattern number each page holds. */
#define KB_MAX 1024

struct keybatch {
	char names[KB_MAX][48];
	const void *kp[KB_MAX];
	size_t kl[KB_MAX];
	uint32_t ids[KB_MAX];
	size_t n;
};

/* 2: the batch's keys are all there, with intact bytes. */
static int
kb_check(struct cxlp_handler *h, struct keybatch *b)
{
	static const void *data[KB_MAX];
	static size_t lens[KB_MAX];
	static int st[KB_MAX];
	int rc = b->n == 0 ? 0 : cxlp_batch_retrieve(h, b->n, b->kp, b->kl, 0,
	    data, lens, st);

	if (rc != 0) {
		return fail("batch_retrieve: %s", cxlp_strerror(rc));
	}
	for (size_t i = 0; i < b->n; i++) {
		if (st[i] != 0) {
			return fail("acknowledged key %s is missing (%s)",
			    b->names[i], cxlp_strerror(st[i]));
		}
		if (!kv_check(data[i], lens[i], b->ids[i], NULL)) {
			return fail("bytes of %s are wrong", b->names[i]);
		}
	}
	b->n = 0;
	return 0;
}

/* Delete the batch's keys; each is deleted or was not there. */
static int
kb_delete(struct cxlp_handler *h, struct keybatch *b)
{
	static int st[KB_MAX];
	int rc = b->n == 0 ? 0 : cxlp_batch_delete(h, b->n, b->kp, b->kl, st);

	if (rc != 0) {
		return fail("batch_delete: %s", cxlp_strerror(rc));
	}
	for (size_t i = 0; i < b->n; i++) {
		if (st[i] != 0 && st[i] != CXLP_E_NOTFOUND) {
			return fail("delete of %s (owner gone): %s",
			    b->names[i], cxlp_strerror(st[i]));
		}
	}
	b->n = 0;
	return 0;
}

/* Add a key; when the batch is full, run fn on it. */
static int
kb_add(struct cxlp_handler *h, struct keybatch *b, int worker, uint32_t i,
    int (*fn)(struct cxlp_handler *, struct keybatch *))
{
	char *k = b->names[b->n];

	if (worker < 0) {
		soak_shared_key(k, sizeof(b->names[0]), i);
		b->ids[b->n] = i;
	} else {
		soak_private_key(k, sizeof(b->names[0]), (unsigned)worker, i);
		b->ids[b->n] = soak_private_id((unsigned)worker, i);
	}
	b->kp[b->n] = k;
	b->kl[b->n] = strlen(k);
	return ++b->n == KB_MAX ? fn(h, b) : 0;
}

/* Run fn over every key whose state is in mask (1 << K_*). */
static int
for_keys(struct cxlp_handler *h, unsigned mask,
    int (*fn)(struct cxlp_handler *, struct keybatch *), unsigned *count)
{
	static struct keybatch b;
	int rc = 0;

	b.n = 0;
	for (uint32_t i = 0; i < SOAK_SHARED && rc == 0; i++) {
		if (mask & 1u << S.shared[i]) {
			rc = kb_add(h, &b, -1, i, fn);
			++*count;
		}
	}
	for (unsigned id = 0; id < S.nworkers; id++) {
		for (uint32_t i = 0; i < S.w[id].next && rc == 0; i++) {
			if (mask & 1u << S.priv[id][i]) {
				rc = kb_add(h, &b, (int)id, i, fn);
				++*count;
			}
		}
	}
	return rc != 0 ? rc : fn(h, &b);
}

/* 2: every acknowledged key that was not deleted is there, intact. */
static int
check_keys(struct cxlp_handler *h)
{
	unsigned n = 0;

	if (for_keys(h, 1u << K_PRESENT, kb_check, &n) != 0) {
		return -1;
	}
	fprintf(stderr, "cxlp-soak: %u acknowledged keys present and intact\n",
	    n);
	return 0;
}

/* The pid behind session id sid, from the pool's session records. */
static uint32_t
session_pid(struct pool *p, uint64_t sid)
{
	struct pool_session s;
	uint64_t cursor = 0;

	while (pool_session_next(p, &cursor, &s) == 1) {
		if (s.id == sid) {
			return s.pid;
		}
	}
	return 0;
}

/* 4: keys in each live worker's regions == its registered pages. */
static int
check_region_keys(void)
{
	uint64_t keys[SOAK_WORKERS_MAX] = { 0 };
	struct pool *p = NULL;
	int bad = 0;

	if (pool_open(&p, S.srv.pool, POOL_RDONLY, NULL) != 0) {
		return fail("open %s read-only: %s", S.srv.pool,
		    cxlp_errormsg());
	}
	for (uint32_t id = 0; id < pool_region_max(p); id++) {
		struct pool_region r;
		uint32_t pid;

		if (pool_region_get(p, id, &r) != 0 ||
		    r.state != POOL_REGION_OWNED) {
			continue;
		}
		pid = session_pid(p, r.owner);
		for (unsigned i = 0; i < S.nworkers; i++) {
			keys[i] += (uint32_t)S.w[i].pid == pid ? r.nkeys : 0;
		}
	}
	pool_close(&p);
	for (unsigned i = 0; i < S.nworkers && bad == 0; i++) {
		const struct soak_stats *st = &S.w[i].st;

		if (keys[i] != st->pages_registered) {
			bad = fail("worker %u: the pool has %llu keys in its "
			    "regions, the worker registered %llu pages", i,
			    (unsigned long long)keys[i],
			    (unsigned long long)st->pages_registered);
		}
		if (st->pages_free + st->pages_registered != st->pages_total ||
		    st->pages_allocated != 0 || st->pages_unresolved != 0) {
			bad = fail("worker %u: pages do not add up (%llu "
			    "allocated, %llu unresolved)", i,
			    (unsigned long long)st->pages_allocated,
			    (unsigned long long)st->pages_unresolved);
		}
	}
	return bad;
}

/* 5: delete every key the workers made; the pool returns to st0. */
static int
cleanup_and_compare(struct cxlp_handler *h, const struct cxlp_stats *st0)
{
	struct cxlp_stats st;
	unsigned n = 0;

	for (int i = 0; i < 500; i++) { /* sessions end within ms */
		if (kv_stats(h).sessions == 1) {
			break;
		}
		usleep(10000);
	}
	if (for_keys(h, 1u << K_PRESENT | 1u << K_MAYBE, kb_delete, &n) != 0) {
		return -1;
	}
	st = kv_stats(h);
	if (st.keys != 0 || st.pins != 0 || st.orphan_regions != 0 ||
	    st.regions != st0->regions) {
		return fail("after deleting every key: %llu keys, %llu pins, "
		    "%llu regions (%llu orphans), want %llu regions",
		    (unsigned long long)st.keys, (unsigned long long)st.pins,
		    (unsigned long long)st.regions,
		    (unsigned long long)st.orphan_regions,
		    (unsigned long long)st0->regions);
	}
	if (st.free_bytes != st0->free_bytes) {
		return fail("free bytes did not come back: %llu leaked",
		    (unsigned long long)(st0->free_bytes - st.free_bytes));
	}
	return 0;
}

static int
audit(struct cxlp_handler *h, const struct cxlp_stats *st0)
{
	int rc = run_inspect_check();

	rc = rc != 0 ? rc : check_keys(h);
	if (rc == 0 && kv_stats(h).pins != 0) {
		rc = fail("pins left after every worker unpinned");
	}
	rc = rc != 0 ? rc : check_region_keys();
	rc |= workers_close();
	rc = rc != 0 ? rc : cleanup_and_compare(h, st0);
	rc = rc != 0 ? rc : run_inspect_check();
	return rc;
}

/* ---- main ---------------------------------------------------------------- */

static int
parse(int argc, char **argv)
{
	S.seconds = 120;
	S.kill_ms = 1500;
	S.nworkers = 8;
	for (int i = 1; i < argc; i++) {
		bool more = i + 1 < argc;

		if (strcmp(argv[i], "--quick") == 0) {
			S.seconds = 15;
			S.kill_ms = 500;
		} else if (strcmp(argv[i], "--seconds") == 0 && more) {
			S.seconds = (unsigned)atoi(argv[++i]);
		} else if (strcmp(argv[i], "--kill-ms") == 0 && more) {
			S.kill_ms = (unsigned)atoi(argv[++i]);
		} else if (strcmp(argv[i], "--workers") == 0 && more) {
			S.nworkers = (unsigned)atoi(argv[++i]);
		} else if (strcmp(argv[i], "--hostile") == 0) {
			S.hostile = true;
		} else {
			fprintf(stderr, "usage: cxlp-soak [--quick] [--seconds "
			    "N] [--kill-ms MS] [--workers N] [--hostile]\n");
			return 2;
		}
	}
	if (S.nworkers == 0 || S.nworkers > SOAK_WORKERS_MAX) {
		fprintf(stderr, "cxlp-soak: --workers 1..%d\n",
		    SOAK_WORKERS_MAX);
		return 2;
	}
	S.kill_ms = S.hostile ? 0 : S.kill_ms;
	return 0;
}

static int
soak(void)
{
	struct cxlp_handler *h;
	struct cxlp_stats st0;
	int rc = 0;

	h = kv_connect(S.srv.url, SOAK_PAGE, SOAK_REGION, true);
	if (h == NULL) {
		return fail("cannot connect to %s", S.srv.url);
	}
	st0 = kv_stats(h);
	for (unsigned i = 0; i < S.nworkers && rc == 0; i++) {
		S.priv[i] = calloc(SOAK_PRIVATE_MAX, 1);
		rc = S.priv[i] == NULL ? -1 : worker_start(i);
	}
	if (rc == 0 && S.hostile) {
		rc = hostile_start(S.srv.url);
		rc = rc != 0 ? rc : run_phase();
		rc = hostile_stop() != 0 ? -1 : rc;
	}
	rc = rc != 0 || S.hostile ? rc : run_phase();
	rc = rc != 0 ? rc : quiesce();
	fprintf(stderr, "cxlp-soak: %u s, %u workers, %u kills, %llu events\n",
	    S.seconds, S.nworkers, S.kills, (unsigned long long)S.events);
	rc = rc != 0 ? rc : audit(h, &st0);
	cxlp_close(&h);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *const *args;
	int rc;

	if (argc >= 2 && strcmp(argv[1], "--worker") == 0) {
		return soak_worker(argc - 2, argv + 2);
	}
	if ((rc = parse(argc, argv)) != 0) {
		return rc;
	}
	signal(SIGPIPE, SIG_IGN);
	srand((unsigned)now_ms());
	if (S.kill_ms == 0) {
		setenv("CXLP_SOAK_STRICT", "1", 1); /* for the workers */
	}
	args = S.hostile ? hostile_server_args() : NULL;
	if (readlink("/proc/self/exe", S.self, sizeof(S.self) - 1) <= 0 ||
	    (S.hostile && args == NULL) ||
	    test_server_start(&S.srv, 1ull << 30, args) != 0) {
		fprintf(stderr, "cxlp-soak: cannot start the metaserver\n");
		return 1;
	}
	rc = soak();
	if (test_server_stop(&S.srv) != 0) {
		fprintf(stderr, "cxlp-soak: the metaserver did not stop "
		    "cleanly; see %s\n", S.srv.log);
		rc = 1;
	}
	for (unsigned i = 0; i < S.nworkers; i++) {
		free(S.priv[i]);
	}
	fprintf(stderr, "cxlp-soak: %s\n", rc == 0 ? "PASS" : "FAIL");
	return rc == 0 ? 0 : 1;
}
