/*
 * test_sim.c -- pool/sim.c: the multi-host coherence simulator. Each test
 * opens two or three simulated hosts on one device file and checks the
 * model sim.h promises: stores stay in a host's cache until written back,
 * a reader sees stale lines until it drops them, a write-back of a line
 * that differs loses another host's write to the same line, atomics act
 * on one host's copy, processes of one host share its cache, and a
 * device's holes stay holes in the copies.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "map.h"
#include "pool_test.h"
#include "sim.h"

#define DEV_SIZE (4u << 20)

static char dev[256];
static struct sim *a, *b;
static uint8_t *va, *vb; /* hosts A's and B's views */

static uint8_t *
view(const struct sim *s)
{
	int fd = open(sim_cache_path(s), O_RDWR);
	void *m;

	cr_assert_geq(fd, 0);
	m = mmap(NULL, DEV_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(m, MAP_FAILED);
	return m;
}

static uint8_t
dev_byte(uint64_t off)
{
	int fd = open(dev, O_RDONLY);
	uint8_t c = 0xee;

	cr_assert_eq(pread(fd, &c, 1, (off_t)off), 1);
	close(fd);
	return c;
}

static void
setup(void)
{
	test_pool_path(dev, sizeof(dev), "/dev/shm");
	cr_assert_eq(pmap_file_create(dev, DEV_SIZE), 0);
	cr_assert_eq(sim_open(&a, dev, "A"), 0, "%s", cxlp_errormsg());
	cr_assert_eq(sim_open(&b, dev, "B"), 0, "%s", cxlp_errormsg());
	va = view(a);
	vb = view(b);
}

static void
teardown(void)
{
	munmap(va, DEV_SIZE);
	munmap(vb, DEV_SIZE);
	sim_close(&a);
	sim_close(&b);
	cr_assert_eq(sim_forget_hosts(dev), 2);
	unlink(dev);
	char lock[300];
	snprintf(lock, sizeof(lock), "%s.simlock", dev);
	unlink(lock);
}

TestSuite(sim, .init = setup, .fini = teardown);

Test(sim, a_store_stays_in_its_hosts_cache_until_written_back)
{
	va[4096] = 0x5a;
	sim_drop(b, 4096, 1);
	cr_assert_eq(vb[4096], 0, "B read A's store with no write-back");
	cr_assert_eq(dev_byte(4096), 0);
	sim_writeback(a, 4096, 1);
	cr_assert_eq(dev_byte(4096), 0x5a);
}

Test(sim, a_reader_sees_stale_bytes_until_it_drops_the_line)
{
	va[8192] = 1;
	sim_writeback(a, 8192, 1);
	cr_assert_eq(vb[8192], 0, "B's cached copy changed by itself");
	sim_drop(b, 8192, 1);
	cr_assert_eq(vb[8192], 1);
	va[8192] = 2; /* and again: B's reload is a load like any other */
	sim_writeback(a, 8192, 1);
	cr_assert_eq(vb[8192], 1);
	sim_drop(b, 8192, 1);
	cr_assert_eq(vb[8192], 2);
}

Test(sim, a_drop_reaches_only_the_lines_it_names)
{
	va[0] = 1;
	va[64] = 2;
	sim_writeback(a, 0, 128);
	sim_drop(b, 0, 1); /* line 0 only */
	cr_assert_eq(vb[0], 1);
	cr_assert_eq(vb[64], 0, "line 1 reloaded by a drop of line 0");
	sim_drop(b, 63, 2); /* bytes 63..64: lines 0 and 1 */
	cr_assert_eq(vb[64], 2);
}

Test(sim, two_hosts_writing_one_line_lose_one_write)
{
	va[100] = 0xaa; /* both in line 1 (64..127) */
	vb[101] = 0xbb;
	sim_writeback(a, 64, 64);
	sim_writeback(b, 64, 64);
	cr_assert_eq(dev_byte(101), 0xbb);
	cr_assert_eq(dev_byte(100), 0, "B's whole-line write-back kept A's "
	    "byte: no false-sharing loss");
}

Test(sim, two_hosts_writing_different_lines_keep_both)
{
	va[128] = 0xaa;
	vb[192] = 0xbb;
	sim_writeback(a, 0, 4096);
	sim_writeback(b, 0, 4096); /* B's line 2 is clean: not written */
	cr_assert_eq(dev_byte(128), 0xaa, "a clean line was written back");
	cr_assert_eq(dev_byte(192), 0xbb);
}

Test(sim, a_drop_writes_a_dirty_line_back_first)
{
	va[300] = 9;
	sim_drop(a, 300, 1);
	cr_assert_eq(va[300], 9);
	cr_assert_eq(dev_byte(300), 9);
}

Test(sim, a_compare_and_swap_that_both_hosts_win_loses_a_write)
{
	uint64_t *wa = (uint64_t *)(va + 512), *wb = (uint64_t *)(vb + 512);
	uint64_t ea = 0, eb = 0;

	cr_assert(__atomic_compare_exchange_n(wa, &ea, 0xa, false,
	    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
	sim_writeback(a, 512, 8);
	cr_assert(__atomic_compare_exchange_n(wb, &eb, 0xb, false,
	    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST), "B's CAS saw A's claim");
	sim_writeback(b, 512, 8);
	sim_drop(a, 512, 8);
	cr_assert_eq(*wa, 0xb, "A's claim survived B's: the CAS was shared");
}

Test(sim, processes_of_one_host_share_its_cache)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) { /* another process of host A: no cr_assert here */
		struct sim *a2;
		if (sim_open(&a2, dev, "A") != 0) {
			_exit(2);
		}
		int fd = open(sim_cache_path(a2), O_RDWR);
		uint8_t c = 0x77;
		_exit(fd >= 0 && pwrite(fd, &c, 1, 1000) == 1 ? 0 : 3);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	cr_assert_eq(va[1000], 0x77, "host A's processes saw different caches");
	cr_assert_eq(vb[1000], 0);
	cr_assert_eq(dev_byte(1000), 0);
}

Test(sim, a_host_attaching_later_copies_what_the_device_holds)
{
	struct sim *c;
	uint8_t *vc;

	va[2000] = 3;
	sim_writeback(a, 2000, 1);
	va[2001] = 4; /* not written back */
	cr_assert_eq(sim_open(&c, dev, "C"), 0);
	vc = view(c);
	cr_assert_eq(vc[2000], 3);
	cr_assert_eq(vc[2001], 0);
	munmap(vc, DEV_SIZE);
	sim_close(&c);
	cr_assert_eq(sim_forget_hosts(dev), 3);
	/* setup's hosts are gone too: the teardown's count needs them */
	sim_close(&a);
	sim_close(&b);
	cr_assert_eq(sim_open(&a, dev, "A"), 0);
	cr_assert_eq(sim_open(&b, dev, "B"), 0);
}

Test(sim, the_copies_keep_the_devices_holes)
{
	struct stat st;

	cr_assert_eq(stat(sim_cache_path(a), &st), 0);
	cr_assert_eq(st.st_size, DEV_SIZE);
	cr_assert_lt(st.st_blocks * 512, DEV_SIZE / 4, "a sparse device's "
	    "copy took %lld bytes", (long long)st.st_blocks * 512);
}

Test(sim, bad_host_names_and_devices_are_refused)
{
	struct sim *s = (struct sim *)1;

	cr_assert_eq(sim_open(&s, dev, "a/b"), -EINVAL);
	cr_assert_null(s);
	cr_assert_eq(sim_open(&s, dev, ""), -EINVAL);
	cr_assert_eq(sim_open(&s, "/dev/shm", "A"), -EINVAL);
	cr_assert_null(s);
	cr_assert_eq(sim_open(&s, "/dev/shm/cxlp-no-such-pool", "A"),
	    -ENOENT);
}
