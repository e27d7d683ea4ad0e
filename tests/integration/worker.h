/*
 * worker.h -- what itest-worker (worker.c) and the tests that run it share.
 */
#ifndef CXLP_ITEST_WORKER_H
#define CXLP_ITEST_WORKER_H

#include <stddef.h>
#include <stdint.h>

#define RACE_KEYS 1000
#define RACE_BATCH 100

/* What a racer writes to stdout when it is done. */
struct race_result {
	uint32_t false_keys; /* keys reported false */
	uint32_t pad;
	uint64_t pages_total, pages_free, pages_allocated, pages_registered;
};

/* store-loop: keys per batch_store; after each batch it writes the u32
 * count of keys acknowledged so far (keys PREFIX-0 .. PREFIX-(count-1)). */
#define LOOP_BATCH 16
/* Pages of store-loop and hold hold this writer's pattern. */
#define DEATH_WRITER 9

/* What hold writes once it holds everything ("ready"). */
struct hold_report {
	uint32_t keys;        /* own keys stored: PREFIX-0 .. keys-1 */
	uint32_t pins;        /* pins taken (own keys twice, the foreign key) */
	uint32_t unregistered; /* pages allocated and never registered */
	uint32_t regions;     /* regions it owns */
};

/* crash-storer (tests/crash/test_kill.c): keys w<WRITER>-<i> stored in
 * batches; on stdout: CRASH_READY once connected, the index of each key
 * stored true, then CRASH_END and a struct crash_result. */
/* stall-threads: STALL_THREADS threads store STALL_HALF keys each, the
 * worker writes STALL_READY, then they store until the connection was
 * replaced and STALL_HALF more each; then a struct stall_result. */
#define STALL_THREADS 8
#define STALL_HALF 20
#define STALL_READY 's'

struct stall_result {
	uint32_t failures;  /* calls that failed, all threads */
	uint32_t stored;    /* keys stored, all threads */
	uint64_t redials;   /* from cxlp_stats */
	uint64_t unresolved;
};

#define CRASH_BATCH 8
#define CRASH_KEYS_MAX 12000
#define CRASH_END 0xffffffffu
#define CRASH_READY 0xfffffffeu /* connected; the kills may start */

struct crash_result {
	uint32_t false_keys; /* keys reported false */
	uint32_t unknown;    /* batch_store calls that returned UNKNOWN */
	int32_t stats_rc;
	uint32_t pad;
	uint64_t pages_total, pages_free, pages_allocated, pages_registered;
	uint64_t pages_unresolved;
};

/* crash_len -- the value length of key i. */
static inline size_t
crash_len(uint32_t i)
{
	return 64 + i * 37u % 4000u;
}

/* Request groups (worker_group.c). */
#define GW_TOTAL 8
#define GW_HALF 4
#define GW_READY 'g'
struct gw_result {
	int32_t rc;    /* the second stage's return */
	int32_t state; /* cxlp_group_state after it */
	uint64_t pages_registered, pages_allocated; /* after group_close */
};
#define GR_KEYS 64
#define GR_DEADLINE_MS 20000
#define GR_READY 'r'
struct gr_result {
	uint32_t polls;   /* batch_exists calls */
	uint32_t none;    /* of them, answers with no key */
	uint32_t partial; /* of them, answers with some keys and not all */
	uint32_t all;     /* 1: the last one found every key */
};

/* coh-writer and coh-reader (worker_coh.c, test_coh_read.c): the key
 * coh-<COH_KEY> of COH_LEN bytes; one reply per command. */
#define COH_KEY 1
#define COH_LEN 3000
struct coh_reply {
	int32_t rc;     /* the command's calls */
	uint32_t writer; /* writer whose bytes were read (0: not a whole
	                  * value), or the writer's current id */
	int32_t vrc;    /* cxlp_validate's return */
	int32_t prc;    /* cxlp_prepare_read's return */
};

extern const char *worker_url;
int group_writer(int argc, char **argv);
int group_reader(int argc, char **argv);
int async_storer(int argc, char **argv);
int coh_writer(int argc, char **argv);
int coh_reader(int argc, char **argv);

#endif
