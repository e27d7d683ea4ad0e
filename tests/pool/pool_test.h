/*
 * pool_test.h -- helpers shared by the pool tests: unique temporary pool
 * paths under /dev/shm (tmpfs: volatile media) or /tmp (disk), a pool's
 * superblock edited in place, a pool with keys.
 */
#ifndef CXLP_TEST_POOL_H
#define CXLP_TEST_POOL_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "err.h"
#include "layout.h"
#include "pool.h"

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

/* test_pool_edit_sb -- call edit on the superblock of the (closed) pool
 * at file through a plain shared mapping, as a damaged or older pool
 * would have it; edit seals it (layout_seal) when the checksum is to
 * stay valid. */
static inline void
test_pool_edit_sb(const char *file, void (*edit)(struct pool_sb *sb))
{
	int fd = open(file, O_RDWR);
	struct pool_sb *sb;

	cr_assert_geq(fd, 0, "%s", file);
	sb = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(sb, MAP_FAILED);
	edit(sb);
	munmap(sb, 4096);
	close(fd);
}

/* test_pool_keys -- a fresh 32 MiB pool at a new path under /dev/shm
 * (into buf[n]) with one session (*sess), one 2 MiB region of 32 KiB
 * pages (*reg), and keys "key-000".. of 100 bytes at its first nkeys
 * pages; slot_of[i] is key i's index slot. */
static inline struct pool *
test_pool_keys(char *buf, size_t n, uint64_t *sess, struct pool_region *reg,
    uint64_t *slots, int nkeys)
{
	struct pool_params pp = { .size = 32ull << 20 };
	struct pool_session s = { .token = 7, .pid = 1 };
	struct pool *p;

	test_pool_path(buf, n, "/dev/shm");
	cr_assert_eq(pool_open(&p, buf, POOL_CREATE, &pp), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_session_add(p, &s), 0);
	*sess = s.id;
	cr_assert_eq(pool_region_alloc(p, s.id, 2u << 20, 32768, reg), 0);
	for (int i = 0; i < nkeys; i++) {
		struct pool_kv kv;
		bool ins;
		char k[16];

		snprintf(k, sizeof(k), "key-%03d", i);
		cr_assert_eq(pool_kv_insert(p, s.id, k, strlen(k), reg->id,
		    reg->off + (uint64_t)i * 32768, 100, &kv, &ins), 0);
		slots[i] = kv.slot;
	}
	return p;
}

#endif /* CXLP_TEST_POOL_H */
