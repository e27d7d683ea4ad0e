/*
 * crashtest.h -- helpers shared by the crash tests: run pool-inspect check
 * on a pool, copy a pool file, open a pool read-only. No Criterion calls.
 */
#ifndef CXLP_CRASHTEST_H
#define CXLP_CRASHTEST_H

#include <stdbool.h>
#include <stddef.h>

/* ct_inspect_check -- exit status of `$CXLP_POOL_INSPECT check path`
 * (its output goes to out_path), or -1 if it could not run. */
int ct_inspect_check(const char *path, const char *out_path);

/* ct_copy -- copy file src to dst (replacing it). 0 or -errno. */
int ct_copy(const char *src, const char *dst);

/* ct_sleep_ms -- sleep ms milliseconds. */
void ct_sleep_ms(unsigned ms);

/* ct_file_has -- the file at path contains needle. */
bool ct_file_has(const char *path, const char *needle);

#endif
