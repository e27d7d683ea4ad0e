/*
 * owner_simfix.h -- the fixture the owner record's tests on sim pools
 * share (test_owner_sim.c, test_owner_term.c): a fresh pool of coherence
 * sim under /dev/shm, formatted by simulated host "0", the library's log
 * kept for the tests to search, and every file the simulator and the
 * simulated hosts' locks leave beside the pool removed afterwards.
 */
#ifndef CXLP_TEST_OWNER_SIMFIX_H
#define CXLP_TEST_OWNER_SIMFIX_H

#include <stdbool.h>

#include "pool.h"

extern char osim_path[256];                 /* the pool */
extern const struct pool_params osim_params; /* 16 MiB, sim */
extern char osim_log[16384];                /* log lines since setup */

/* osim_setup -- format the pool at a new osim_path; keep the log. */
void osim_setup(void);
/* osim_teardown -- remove the pool and every file beside it. */
void osim_teardown(void);
/* osim_log_has -- a log line since setup holds needle. */
bool osim_log_has(const char *needle);

#endif /* CXLP_TEST_OWNER_SIMFIX_H */
