/*
 * soak_parent.h -- what the soak's parent process (soak.c: workers,
 * phases, main) and its audit of the pool (soak_audit.c) share: the
 * parent's picture of every worker and key, and its failure message.
 * The worker processes (soak_worker.c) see only soak.h.
 */
#ifndef CXLP_SOAK_PARENT_H
#define CXLP_SOAK_PARENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cxlpool.h"
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

/* The parent's state (soak.c's one instance). */
struct soak_parent {
	struct test_server srv;
	struct worker w[SOAK_WORKERS_MAX];
	unsigned nworkers;
	unsigned seconds, kill_ms; /* kill_ms 0: no kills */
	unsigned pool_mib;         /* the pool's size */
	bool hostile;
	bool evict;                /* --evict: a pool small enough that
	                            * stores evict all the time */
	unsigned hosts;            /* --hosts N: a sim pool, worker i on
	                            * simulated host h<i % N>, the server on
	                            * ms, the parent (audit) on audit; 0: one
	                            * host, the pool's default mode */
	uint8_t shared[SOAK_SHARED];  /* K_* per shared key */
	uint8_t *priv[SOAK_WORKERS_MAX]; /* K_* per private key */
	unsigned kills;
	uint64_t events;
	char self[4096];
};

/* soak_fail -- print "cxlp-soak: FAIL: " and the message on stderr;
 * returns 1. */
int soak_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* soak_audit_live -- audit steps 1-4 (see soak.c) with every worker of
 * sp alive and idle, through h, the parent's own handler: 0 or nonzero,
 * the reason on stderr. */
int soak_audit_live(const struct soak_parent *sp, struct cxlp_handler *h);
/* soak_audit_closed -- after the workers closed: step 5 (every key
 * deleted, the pool back to st0), then pool-inspect check again. */
int soak_audit_closed(const struct soak_parent *sp, struct cxlp_handler *h,
    const struct cxlp_stats *st0);

#endif /* CXLP_SOAK_PARENT_H */
