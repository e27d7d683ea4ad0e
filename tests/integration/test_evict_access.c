/*
 * test_evict_access.c -- DESIGN contract 9's last sentence with real
 * processes: the advisory access state that handlers may write changes
 * the order of eviction and nothing else. A thread of this process maps
 * the pool's access area writable, as every handler does, and sets every
 * byte in a loop while a handler churns a full pool; every store must
 * still succeed, by eviction (issue 25 item 3: 8,953 failed allocs and
 * stores in 5 s, "nothing evictable; 960 keys, 0 pinned, 0 leased").
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "evfill.h"
#include "layout.h"

TestSuite(evict_access, .fini = itest_stop, .timeout = 180);

struct writer {
	uint8_t *area;
	size_t len;
	atomic_bool stop;
	uint64_t rounds;
};

/* the hostile handler: every byte set, again and again */
static void *
set_all(void *arg)
{
	struct writer *w = arg;

	while (!atomic_load(&w->stop)) {
		memset(w->area, 1, w->len);
		w->rounds++;
	}
	return NULL;
}

/* srv's access area, mapped writable (the caller unmaps [*len]) */
static uint8_t *
map_access(size_t *len)
{
	struct pool_sb sb;
	int fd = open(srv.pool, O_RDWR);
	void *a;

	cr_assert_geq(fd, 0, "%s: %s", srv.pool, strerror(errno));
	cr_assert_eq(pread(fd, &sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	cr_assert(sb.compat & POOL_COMPAT_ACCESS, "the pool has no access "
	    "area");
	a = mmap(NULL, sb.access.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	    (off_t)sb.access.off);
	cr_assert_neq(a, MAP_FAILED, "mmap: %s", strerror(errno));
	close(fd);
	*len = sb.access.len;
	return a;
}

/* one batch of n keys of prefix from first: how many did not store */
static uint32_t
store_counting(struct cxlp_handler *h, const char *prefix, uint32_t first,
    size_t n)
{
	char kb[BATCH][32];
	const void *keys[BATCH];
	size_t klen[BATCH], lens[BATCH];
	cxlp_page_t pages[BATCH];
	bool ok[BATCH];
	uint32_t failed = 0;
	size_t got = 0;
	int rc;

	for (; got < n; got++) {
		void *buf;

		if (cxlp_alloc(h, &pages[got], &buf) != 0) {
			failed += (uint32_t)(n - got);
			break;
		}
		kv_fill(buf, VLEN, 1, first + (uint32_t)got);
		klen[got] = kv_key(kb[got], sizeof(kb[got]), prefix,
		    first + (unsigned)got);
		keys[got] = kb[got];
		lens[got] = VLEN;
	}
	if (got == 0) {
		return failed;
	}
	rc = cxlp_batch_store(h, got, keys, klen, pages, lens, 0, ok);
	for (size_t i = 0; i < got; i++) {
		failed += rc != 0 || !ok[i];
	}
	return failed;
}

Test(evict_access, a_handler_setting_every_access_byte_does_not_stop_caching)
{
	struct writer w = { 0 };
	struct cxlp_handler *h;
	pthread_t t;
	uint64_t cap, failed = 0;
	struct cxlp_stats st;

	ev_start("clock", NULL);
	h = ev_connect(0);
	cap = ev_capacity(h);
	(void)ev_fill(h, "fill", 0);
	w.area = map_access(&w.len);
	cr_assert_eq(pthread_create(&t, NULL, set_all, &w), 0);
	for (uint32_t k = 0; k < 2 * cap; k += BATCH) {
		failed += store_counting(h, "churn", k, BATCH);
	}
	atomic_store(&w.stop, true);
	pthread_join(t, NULL);
	st = kv_stats(h);
	cr_log_info("writer: %llu rounds over %zu bytes; %llu evicted",
	    (unsigned long long)w.rounds, w.len,
	    (unsigned long long)st.evicted_pressure);
	cr_assert_eq(failed, 0, "%llu of %llu stores failed on a pool of "
	    "evictable keys", (unsigned long long)failed,
	    (unsigned long long)(2 * cap));
	cr_assert_geq(st.evicted_pressure, cap, "evicted %llu",
	    (unsigned long long)st.evicted_pressure);
	munmap(w.area, w.len);
	itest_assert_pool_checks();
	cxlp_close(&h);
}
