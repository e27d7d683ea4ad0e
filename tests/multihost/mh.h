/*
 * mh.h -- what the multi-host tests and their worker processes
 * (mh-worker, mh_worker.c) share: the roles' wire formats.
 *
 * Every process of these tests is a simulated host of its own choosing
 * (pool/sim.h: CXLP_SIM_HOST in its environment, set by the test at the
 * spawn). A worker connects first, says MH_READY, and only then waits
 * for the test's go byte: so every host's view of the pool is taken
 * before anything is written, and a reader that forgets to drop a line
 * reads it stale however late it looks.
 */
#ifndef CXLP_MH_H
#define CXLP_MH_H

#include <stddef.h>
#include <stdint.h>

#define MH_READY 'c'     /* connected; waits for the go byte */
#define MH_END 0xffffffffu /* writer: no more acknowledged keys */
#define MH_MORE '+'      /* writer with LEG: LEG keys more (below) */
#define MH_BATCH 16      /* keys per batch_store of a writer */
#define MH_PAGE (16u << 10)
#define MH_REGION (2u << 20)
#define MH_PREFIX 16     /* bytes of a key prefix, NUL included */

/* mh_len -- the value length of key i: 64 bytes to a whole page, so a
 * value spans one to 256 cache lines and ends anywhere in one. */
static inline size_t
mh_len(uint32_t i)
{
	return 64 + (size_t)i * 2731u % (MH_PAGE - 64);
}

/*
 * writer PREFIX:WRITER:N[:LEG]   batch_store PREFIX-0..N-1 (N 0: until
 *     stopped) in batches of MH_BATCH, each value kv_fill(WRITER, i) of
 *     mh_len(i) bytes; writes the u32 index of every key stored true, in
 *     order, then MH_END when done. A byte (or EOF) on stdin stops it
 *     after the batch in flight. A batch whose outcome is unknown
 *     (CXLP_E_UNKNOWN, the server killed under it) is not reported.
 *     Exits 0, or nonzero at the first other failure. With LEG, it
 *     stores at most LEG keys for the go byte and LEG more for each
 *     MH_MORE byte (which does not stop it), and waits on stdin when it
 *     has stored all it may: so a test bounds how many pages its writers
 *     take, whatever the timing, and keeps them below what would make
 *     the server evict a key it must find.
 *
 * reader MODE   after the go byte reads a u32 count and that many
 *     struct mh_spec from stdin, then reads the keys they name in passes
 *     until a byte on stdin (or EOF) says the writers are done, then one
 *     last pass, and writes a struct mh_result. MODE:
 *       d  cxlp_retrieve, direct reads (the default config)
 *       s  cxlp_retrieve with direct reads off: the server's lookups
 *       v  cxlp_retrieve_v, a copy, cxlp_validate after it; the copy is
 *          checked only where validate said 0 (CHANGED: read again)
 *       g  groups: each spec is one group; cxlp_batch_retrieve of all its
 *          keys must find all or none
 *     'o' after the mode (e.g. "do"): one pass only, no wait for the
 *     done byte (a reader started after the writes).
 *
 * group-writer ID:WRITER:N commit groups ID<j> (j < N) of MH_GROUP
 *     chunks each (keys ID<j>-0.., kv_fill(WRITER, i) of mh_len(i)
 *     bytes), staged in two group_stores, one group after the other;
 *     writes the u32 j of every group committed, then MH_END.
 *
 * churn HOT               the eviction test's writer, in MH_EV_PAGE
 *     pages: after the go byte stores keys hot-0..HOT-1 and answers 'h',
 *     then for each byte 'b' on stdin stores MH_EV_BATCH new keys
 *     cold-* and answers 'k'; 'q' ends it. Every store must be true.
 * hot-reader HOT           for each byte 'r' on stdin reads hot-0..HOT-1
 *     (direct reads) and answers a struct mh_hot; 'q' ends it.
 *
 * connect -                writes a struct mh_conn: what cxlp_connect
 *     returned and cxlp_errormsg(); no go byte, no MH_READY.
 *
 * rewrite KEY              after the go byte stores KEY (kv_fill writer 1,
 *     key 0, mh_len(0) bytes), then writes writer 2's pattern over the
 *     value in its own page, which no API call writes back; says
 *     MH_READY again and waits to be killed.
 *
 * follower PREFIX:WRITER:POOL  the takeover test's handler (URL may be
 *     a comma-separated list; POOL a pool path for its owner record, or
 *     "-"): connects once, stores PREFIX-pin-0 and pins it, says
 *     MH_READY; after the go byte batch_stores MH_FOL_BATCH keys
 *     PREFIX-i at a time (kv_fill(WRITER, i) of mh_len(i) bytes) and
 *     reads an earlier one back through the server (direct reads off)
 *     after each, writing the u32 index of every key stored true, until
 *     MH_FOL_MAX keys or a byte on stdin: MH_FOL_KILLED (the leader was
 *     killed: counts what follows) or any other byte (stop). It never
 *     connects again. A batch that ends CXLP_E_UNKNOWN is counted, with
 *     its start and end (CLOCK_MONOTONIC), not reported; any other
 *     failure ends it with a nonzero exit. At the stop it unpins the
 *     pin, reads every key it acknowledged back through the server
 *     (any that is missing or wrong: a nonzero exit), reads its stats
 *     and counters, writes MH_END and a struct mh_follow, and exits 0.
 */
#define MH_FOL_BATCH 4
#define MH_FOL_MAX 256
#define MH_FOL_KILLED 'k'
#define MH_FOL_UNKNOWN_MAX 4

struct mh_follow {
	uint32_t unknown;       /* batches that ended CXLP_E_UNKNOWN */
	uint32_t stored_after;  /* keys stored true in batches started after
	                         * MH_FOL_KILLED */
	uint32_t reads;         /* reads back, every one intact */
	uint32_t reads_after;   /* of them, started after MH_FOL_KILLED */
	int32_t unpin_rc;       /* the unpin at the stop */
	uint32_t switches;      /* cxlp_stats endpoint_switches then */
	uint32_t verified;      /* acknowledged keys read back intact at
	                         * the stop: all of them */
	uint64_t stale_replies; /* cxlp_counters at the stop */
	uint64_t term_resets;
	uint64_t unknown_ns[MH_FOL_UNKNOWN_MAX][2]; /* start, end */
};

#define MH_GROUP 8
#define MH_EV_PAGE (64u << 10)
#define MH_EV_REGION (4u << 20)
#define MH_EV_BATCH 64
#define MH_EV_VLEN 256

struct mh_spec {
	char prefix[MH_PREFIX]; /* keys PREFIX-first .. PREFIX-(first+n-1) */
	uint32_t writer;        /* whose pattern each value must hold */
	uint32_t first, n;
	uint32_t must;          /* 1: each must be there at the last pass;
	                         * 0: each may be absent, never wrong */
};

struct mh_result {
	uint32_t passes;
	uint32_t seen;      /* keys found intact (every pass) */
	uint32_t wrong;     /* keys found with bytes not the writer's */
	uint32_t missing;   /* must keys absent at the last pass */
	uint32_t partial;   /* g: groups found with some keys, not all */
	uint32_t changed;   /* v: validates that said CHANGED */
	int32_t error;      /* the first unexpected return code, or 0 */
	uint32_t pad;
	char first_bad[48]; /* the first key wrong or missing */
};

struct mh_hot {
	uint32_t found; /* hot keys found intact */
	uint32_t wrong; /* found with bytes not the writer's */
};

struct mh_conn {
	int32_t rc;
	char msg[256];
};

#endif /* CXLP_MH_H */
