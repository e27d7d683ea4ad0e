/*
 * owner_int.h -- what owner.c (whether this server may take a pool) and
 * owner_hold.c (the claim, the heartbeat, the release) share: the state
 * of a pool's owner and the record's place. Internal to those two files.
 */
#ifndef CXLP_POOL_OWNER_INT_H
#define CXLP_POOL_OWNER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "layout.h"
#include "pool_int.h"

struct pool_owner; /* owner.h */

/* p->own: made by owner_enter (owner.c), freed by owner_release
 * (owner_hold.c) */
struct owner {
	int lock_fd;            /* holds the flock; -1 when none */
	uint64_t seen;          /* word owner.c note 1 decided over, or 0 */
	uint64_t seen_beat;     /* and its beat then (owner_sw.c 2a) */
	uint64_t token;         /* our claim; 0 before it */
	unsigned beat_ms;
	unsigned stale_ms;
	void (*lost)(void *arg);
	void *lost_arg;
	uint64_t term;          /* own->term: our election term, or 0 */
	bool term_reset;        /* own->term_reset */
	bool fenced;            /* owner.c note 3: its term is over */
	bool (*may_write)(void *arg);
	void *may_write_arg;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* CLOCK_MONOTONIC */
	bool stop;              /* under mu */
	bool running;           /* beat thread started */
	pthread_t thread;
};

/* owner_now_ns -- clk now, in ns */
static inline uint64_t
owner_now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* owner_orec -- p's owner record, in the superblock */
static inline struct pool_orec *
owner_orec(const struct pool *p)
{
	return &p->sb->owner;
}

/* owner_refuse -- fail with -EBUSY naming o, the server that has p
 * (owner.c). */
int owner_refuse(const struct pool *p, const struct pool_owner *o);

#endif /* CXLP_POOL_OWNER_INT_H */
