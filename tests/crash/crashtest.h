/*
 * crashtest.h -- what only the crash tests need: a sparse copy of a pool
 * file, to restart every crash run from the same empty pool. Processes
 * (metaserver, pool-inspect, itest-worker) come from tests/support
 * (server.h, proc.h). No Criterion calls.
 */
#ifndef CXLP_CRASHTEST_H
#define CXLP_CRASHTEST_H

/* ct_copy -- copy file src to dst (replacing it), only src's data
 * segments: the holes of a sparse pool stay holes. 0 or -errno. */
int ct_copy(const char *src, const char *dst);

#endif
