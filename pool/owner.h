/*
 * owner.h -- one pool, one metaserver: the owner record in the pool's
 * superblock and the lock that go with pool_open_owned (owner.c and
 * owner_hold.c have the rules and why they have this shape).
 *
 * Same rules as pool.h: not locked internally, except that the heartbeat
 * thread an owned pool runs touches nothing but its owner record's beat
 * words.
 */
#ifndef CXLP_POOL_OWNER_H
#define CXLP_POOL_OWNER_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "pool.h"

struct pool_damage; /* damage.h */

#define POOL_OWNER_BEAT_MS 1000u  /* heartbeat period, ms */
#define POOL_OWNER_STALE_MS 5000u /* no beat for this long: owner gone */

/* The owner record as read from media. */
struct pool_owner {
	uint32_t pid;                      /* in the owner's pid namespace */
	char host[POOL_OREC_HOST_LEN];     /* its host name */
	char boot_id[POOL_BOOT_ID_LEN];    /* its host's boot: who "this
	                                    * host" is, where names differ */
	char listen[POOL_OREC_LISTEN_LEN]; /* its endpoints, comma-separated */
	uint64_t start_ns;                 /* CLOCK_REALTIME of its claim */
	uint64_t beat;                     /* heartbeats so far */
	uint64_t beat_ns;                  /* CLOCK_REALTIME of the last one,
	                                    * by the owner's clock */
	uint64_t term;                     /* its election term; 0: none */
};

/* What a server claiming a pool says about itself, and how it waits. */
struct pool_own {
	const char *listen;   /* endpoints to record (NULL: none); copied */
	unsigned beat_ms;     /* 0: POOL_OWNER_BEAT_MS */
	unsigned stale_ms;    /* 0: POOL_OWNER_STALE_MS */
	/* called once, from the heartbeat thread, if the record was claimed
	 * by another server after all (a pause longer than stale_ms on a
	 * pool shared across hosts); NULL: only logged */
	void (*lost)(void *arg);
	void *lost_arg;
	/* Election (--elect; owner.c note 3). term: this server holds term
	 * (epoch) term, won in an election whose fencing rule stops every
	 * earlier term's writer before term could be won
	 * (docs/standby.md); 0: no election, nothing below applies. A pool
	 * whose term is greater is refused (-ESTALE) unless term_reset; a
	 * record of an earlier nonzero term is taken over at once (no
	 * stale wait, no sw claim window); the pool's term is then set to
	 * term before pool_open_owned returns. may_write: the term still
	 * holds (elect_may_write), asked before each heartbeat; NULL:
	 * always. */
	uint64_t term;
	bool term_reset;
	bool (*may_write)(void *arg);
	void *may_write_arg;
};

/* pool_open_owned -- pool_open for the pool's one server: before it
 * writes anything, lock the file or device against every other server on
 * this host and claim the owner record against servers on other hosts
 * (owner.c), then keep a heartbeat in the record until pool_close, which
 * clears it. own != NULL; flags must not hold POOL_RDONLY. Returns what
 * pool_open does, or -EBUSY when another server serves the pool, with
 * cxlp_errormsg() naming its pid, host and endpoints, or -ESTALE when
 * own->term is below the pool's term (both named). May wait up to
 * stale_ms for a record of another host to prove itself stale. dmg:
 * as for pool_open_report (damage.h), or NULL. */
int pool_open_owned(struct pool **out, const char *path, unsigned flags,
    const struct pool_params *params, const struct pool_own *own,
    struct pool_damage *dmg);

/* pool_owner_get -- p's owner record now, as the device holds it (in sw
 * and sim its lines are dropped first). Returns 0 and *out,
 * CXLP_E_NOTFOUND if no server owns the pool, or CXLP_E_CHECKSUM if a
 * claim was cut short or is being written (*out holds what is there). */
int pool_owner_get(const struct pool *p, struct pool_owner *out);

/* pool_term -- the highest election term p was served under (layout.h
 * sb.term, read from the device); 0: none. */
uint64_t pool_term(const struct pool *p);

/* The last takeover of a pool by an elected leader (layout.h
 * sb.takeover_*): kept across restarts, until the next takeover or a
 * format. */
struct pool_takeover {
	uint64_t at_ns;     /* CLOCK_REALTIME ns it began to serve; 0: none */
	uint64_t ms;        /* from the vacancy it saw to serving */
	uint64_t from_term; /* the pool's term before; 0: none */
	uint64_t term;      /* the term that took over */
};
/* pool_takeover_get -- the last takeover recorded in p (zero: none). */
void pool_takeover_get(const struct pool *p, struct pool_takeover *out);
/* pool_takeover_set -- record t as p's last takeover and write it back;
 * by the elected leader that serves p (its pool lock held), once. */
void pool_takeover_set(struct pool *p, const struct pool_takeover *t);

/* pool_owner_write -- make o the owner record of p, as a server on
 * another host would: for tests and tools that stand in for one. Its
 * heartbeat then moves only through pool_owner_beat. p must be writable
 * and not owned by this process. */
void pool_owner_write(struct pool *p, const struct pool_owner *o);
/* pool_owner_beat -- one heartbeat in p's record: beat + 1, beat_ns now. */
void pool_owner_beat(struct pool *p);

#endif /* CXLP_POOL_OWNER_H */
