/*
 * inspect_fixture.h -- what the pool-inspect tests share (test_inspect.c:
 * the read commands and usage; test_inspect_check.c: check on damaged
 * pools; test_inspect_stats.c: a live metaserver's stats and sessions).
 * Each test file declares TestSuite(inspect, .init = inspect_setup,
 * .fini = inspect_teardown).
 */
#ifndef CXLP_TEST_INSPECT_FIXTURE_H
#define CXLP_TEST_INSPECT_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

extern char path[256];     /* this test's pool (not created) */
extern char out[65536];    /* the last run's output */
extern uint64_t sid;       /* make_pool's session */
extern struct pool_region r1, r2; /* make_pool's regions */

/* inspect_setup -- a fresh pool path under /dev/shm */
void inspect_setup(void);
/* inspect_teardown -- unlink it */
void inspect_teardown(void);

/* run_to -- run pool-inspect with args, its output into out (stderr
 * folded in unless json); returns the exit status. Skips the test when
 * CXLP_POOL_INSPECT is unset. */
int run_to(const char *args, bool json);
/* run -- run_to of fmt with arg (one %s), stderr folded in */
int run(const char *fmt, const char *arg);
/* run_json -- run with --json; the output must be valid JSON */
int run_json(const char *fmt, const char *arg);
/* has -- assert that out holds s */
void has(const char *s);
/* insert -- register key on page of r for session sid, len bytes */
void insert(struct pool *p, const void *key, size_t klen,
    const struct pool_region *r, uint64_t page, uint64_t len);
/* make_pool -- a pool at path with a session owning r1 (4 KiB pages:
 * nkeys keys of 100 bytes) and r2 (8 KiB pages: key "other" on page 1) */
void make_pool(int nkeys);

#endif /* CXLP_TEST_INSPECT_FIXTURE_H */
