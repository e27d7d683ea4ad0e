/*
 * worker.h -- what itest-worker (worker.c) and the tests that run it share.
 */
#ifndef CXLP_ITEST_WORKER_H
#define CXLP_ITEST_WORKER_H

#include <stdint.h>

#define RACE_KEYS 1000
#define RACE_BATCH 100

/* What a racer writes to stdout when it is done. */
struct race_result {
	uint32_t false_keys; /* keys reported false */
	uint32_t pad;
	uint64_t pages_total, pages_free, pages_allocated, pages_registered;
};

#endif
