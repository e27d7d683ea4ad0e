/*
 * pool_test.h -- helpers shared by the pool tests: unique temporary pool
 * paths under /dev/shm (tmpfs: volatile media) or /tmp (disk).
 */
#ifndef CXLP_TEST_POOL_H
#define CXLP_TEST_POOL_H

#include <stdio.h>
#include <unistd.h>

#define TEST_POOL_SIZE (64ull << 20)

/* fill buf with a fresh path in dir (not created) */
static inline const char *
test_pool_path(char *buf, size_t n, const char *dir)
{
	static int seq;

	snprintf(buf, n, "%s/cxlp-test-%d-%d.pool", dir, (int)getpid(), seq++);
	unlink(buf);
	return buf;
}

#endif /* CXLP_TEST_POOL_H */
