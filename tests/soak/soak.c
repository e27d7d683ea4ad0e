/*
 * soak.c -- cxlp-soak: a bounded soak of one metaserver and 8 handler
 * processes doing a mixed workload while some of them are killed (SIGKILL)
 * and restarted, then a full audit of the pool.
 *
 *   cxlp-soak [--seconds N] [--workers N] [--kill-ms MS] [--quick]
 *             [--hostile] [--evict] [--pool-mib N] [--hosts N]
 *     --quick = 15 s with a kill every 500 ms (the meson test, suite soak)
 *     default = 120 s with a kill every 1500 ms, on a 1 GiB pool
 *     --kill-ms 0 = no kills: then every call of every worker must succeed
 *     --hostile = no kills, and a prober and newcomer handlers (hostile.c)
 *                 on the server's ipc socket and a tcp port
 *     --evict = workers of SOAK_EVICT_REGIONS regions each, a fraction of
 *                 what each keeps, on a pool their shares fill (and a
 *                 few regions more, for the killed ones' successors):
 *                 every worker's stores evict its own keys (RECLAIM), and
 *                 killed workers' regions are emptied, all the time
 *                 (issue 17)
 *     --pool-mib N = the pool's size, MiB
 *     --hosts N = several hosts on one pool (issue 27): the pool is
 *                 formatted --coherence sim, worker i runs on simulated
 *                 host h<i % N> (CXLP_SIM_HOST; a restarted worker on
 *                 the same host), the metaserver on host ms, and the
 *                 parent's audit, its handler and pool-inspect on host
 *                 audit: every byte the audit checks, and every shared
 *                 key a worker checks that another host stored, crossed
 *                 hosts; 256 MiB pool unless --pool-mib or --evict
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
 *      acknowledged and not deleted, is present with intact bytes, or
 *      was evicted: no more are missing than the server evicted;
 *   3. no pin is held; every live worker's pages add up (free + allocated
 *      + registered = total, none allocated or unresolved);
 *   4. the keys pointing into each live worker's regions (the pool's own
 *      count, read from the pool file) equal the pages that worker has
 *      registered;
 * then the workers close, the parent deletes every key (all of them now
 * have a gone owner, which any handler may delete), and
 *   5. no region other than the parent's is left and the free bytes are
 *      back to what they were before the first worker started.
 * Exit 0 when all holds; 1 with a reason on stderr otherwise. The audit
 * is soak_audit.c; this file runs the workers and keeps the picture of
 * the pool it checks (soak_parent.h).
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
#include "soak_parent.h"

static struct soak_parent S;

/* soak_fail -- see soak_parent.h */
int
soak_fail(const char *fmt, ...)
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
	char ids[16], seed[24], next[16], host[16];
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
	snprintf(host, sizeof(host), "h%u", S.hosts > 0 ? id % S.hosts : 0);
	if (test_child_spawn_host(&ch, S.self, argv, S.hosts > 0 ? host :
	    NULL) != 0) {
		return soak_fail("spawn %s: %s", S.self, strerror(errno));
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
		return soak_fail("worker %u: bad event key %u", id, e->key);
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
		return soak_fail("worker %u: bad event type %u", id, e->type);
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
			return soak_fail("worker %u: short event (%zd)", id, n);
		}
		if (e.type == E_STATS) {
			if (read(w->out_fd, &w->st, sizeof(w->st)) !=
			    (ssize_t)sizeof(w->st)) {
				return soak_fail("worker %u: short stats", id);
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
		return soak_fail("worker %u exited %d before it was killed",
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
				return soak_fail("worker %u died on its own "
				    "(see stderr above)", i);
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
			return soak_fail("cannot stop worker %u", i);
		}
	}
	for (unsigned i = 0; i < S.nworkers; i++) {
		while (!S.w[i].got_stats) {
			if (worker_drain(i, true) != 0) {
				return soak_fail("worker %u ended without "
				    "stats", i);
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
			bad = soak_fail("worker %u exited %d at the end", i,
			    st);
		}
	}
	return bad;
}

/* ---- the audit (soak_audit.c) ------------------------------------------ */

static int
audit(struct cxlp_handler *h, const struct cxlp_stats *st0)
{
	int rc = soak_audit_live(&S, h);

	rc |= workers_close();
	return rc != 0 ? rc : soak_audit_closed(&S, h, st0);
}

/* ---- main ---------------------------------------------------------------- */

/* --evict's pool: every worker's regions, the parent's, and 3 more for
 * the successors of killed workers while their predecessors' regions
 * still wait to be orphaned, in 2 MiB regions; plus the metadata area
 * (4 MiB at this size) */
static unsigned
evict_pool_mib(unsigned nworkers)
{
	unsigned regions = nworkers * SOAK_EVICT_REGIONS + 1 + 3;

	return 4 + regions * (SOAK_REGION >> 20);
}

static int
parse(int argc, char **argv)
{
	bool pool_mib_given = false;

	S.seconds = 120;
	S.kill_ms = 1500;
	S.nworkers = 8;
	S.pool_mib = 1024;
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
		} else if (strcmp(argv[i], "--evict") == 0) {
			S.evict = true;
		} else if (strcmp(argv[i], "--hosts") == 0 && more) {
			S.hosts = (unsigned)atoi(argv[++i]);
		} else if (strcmp(argv[i], "--pool-mib") == 0 && more) {
			S.pool_mib = (unsigned)atoi(argv[++i]);
			pool_mib_given = true;
		} else {
			fprintf(stderr, "usage: cxlp-soak [--quick] [--seconds "
			    "N] [--kill-ms MS] [--workers N] [--hostile] "
			    "[--evict] [--pool-mib N] [--hosts N]\n");
			return 2;
		}
	}
	if (S.nworkers == 0 || S.nworkers > SOAK_WORKERS_MAX) {
		fprintf(stderr, "cxlp-soak: --workers 1..%d\n",
		    SOAK_WORKERS_MAX);
		return 2;
	}
	if (S.hosts > S.nworkers) {
		fprintf(stderr, "cxlp-soak: --hosts 1..--workers\n");
		return 2;
	}
	if (S.hosts > 0 && !pool_mib_given) {
		S.pool_mib = 256; /* every host's cache is a copy */
	}
	if (S.pool_mib < 16) {
		fprintf(stderr, "cxlp-soak: --pool-mib 16 or more\n");
		return 2;
	}
	S.kill_ms = S.hostile ? 0 : S.kill_ms;
	if (S.evict && !pool_mib_given) {
		S.pool_mib = evict_pool_mib(S.nworkers);
	}
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
		return soak_fail("cannot connect to %s", S.srv.url);
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
	fprintf(stderr, "cxlp-soak: %u s, %u workers on %u hosts, %u kills, "
	    "%llu events, %u MiB pool\n", S.seconds, S.nworkers,
	    S.hosts > 0 ? S.hosts : 1, S.kills, (unsigned long long)S.events,
	    S.pool_mib);
	rc = rc != 0 ? rc : audit(h, &st0);
	cxlp_close(&h);
	return rc;
}

/* the metaserver's flags: --hostile's, and --hosts' sim format; NULL
 * when hostile's cannot be made */
static const char *const *
server_args(void)
{
	static const char *args[16];
	const char *const *h = S.hostile ? hostile_server_args() : NULL;
	size_t n = 0;

	if (S.hostile && h == NULL) {
		return NULL;
	}
	for (; h != NULL && h[n] != NULL && n < 12; n++) {
		args[n] = h[n];
	}
	if (S.hosts > 0) {
		args[n++] = "--coherence";
		args[n++] = "sim";
	}
	args[n] = NULL;
	return args;
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
	if (S.evict) {
		char n[16];

		snprintf(n, sizeof(n), "%u", SOAK_EVICT_REGIONS);
		setenv("CXLP_SOAK_MAX_REGIONS", n, 1);
	}
	if (S.hosts > 0) {
		setenv("CXLP_SIM_HOST", "audit", 1); /* before any thread */
	}
	args = server_args();
	if (readlink("/proc/self/exe", S.self, sizeof(S.self) - 1) <= 0 ||
	    args == NULL || test_server_start_host(&S.srv,
	    (uint64_t)S.pool_mib << 20, args, S.hosts > 0 ? "ms" : NULL) != 0) {
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
