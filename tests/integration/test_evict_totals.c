/*
 * test_evict_totals.c -- the pool keeps eviction totals since format
 * (pool/evict.c note 7; issue 25 item 8): the server's counters (STATS,
 * /metrics cxlpool_evictions_total) start at zero at each start, the
 * totals in the superblock carry on across a kill -9 and a restart, and
 * each equals the sum of the runs' counters.
 */
#include <signal.h>

#include "evfill.h"
#include "pool.h"

TestSuite(evict_totals, .fini = itest_stop, .timeout = 180);

static const char *const args[] = { "--evict-order", "clock",
	"--evict-free", "0", NULL };

/* the totals the pool holds now, read as pool-inspect reads them */
static struct pool_evict_stats
totals(void)
{
	struct pool_evict_stats ev;
	struct pool *p;

	cr_assert_eq(pool_open(&p, srv.pool, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	pool_evict_stats(p, &ev);
	pool_close(&p);
	return ev;
}

/* a handler churns keys of prefix through a full pool, then closes;
 * the server's counters of this run, as STATS reports them */
static uint64_t stored; /* keys the last churn stored */

static struct cxlp_stats
churn(const char *prefix)
{
	struct cxlp_handler *h = ev_connect(0);
	uint64_t cap = ev_capacity(h);
	struct cxlp_stats st;

	stored = 0;
	for (uint32_t k = 0; k < cap + cap / 2; k += BATCH) {
		ev_store(h, prefix, k, BATCH, 0);
		stored += BATCH;
	}
	st = kv_stats(h);
	cxlp_close(&h);
	return st;
}

static uint64_t
sum(const uint64_t v[POOL_EVICT_CAUSES])
{
	return v[0] + v[1] + v[2];
}

Test(evict_totals, the_totals_since_format_outlive_a_restart)
{
	struct cxlp_stats r1, r2;
	struct pool_evict_stats t1, t2;

	cr_assert_eq(test_server_start(&srv, POOL, args), 0);
	r1 = churn("one");
	cr_assert_gt(r1.evicted_pressure, 0);
	t1 = totals();
	cr_assert_eq(t1.total_keys[POOL_EVICT_PRESSURE], r1.evicted_pressure);
	cr_assert_eq(t1.total_keys[POOL_EVICT_ORPHAN], r1.evicted_orphan);
	cr_assert_eq(t1.total_keys[POOL_EVICT_WATERMARK],
	    r1.evicted_watermark);
	cr_assert_eq(sum(t1.total_bytes), r1.evicted_bytes);

	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, args), 0);
	r2 = churn("two"); /* its first regions take the orphans of one */
	cr_assert_gt(r2.evicted_pressure, 0);
	cr_assert_gt(r2.evicted_orphan, 0);
	/* a run evicts no more keys than it stores: its own counters */
	cr_assert_leq(r2.evicted_pressure + r2.evicted_orphan +
	    r2.evicted_watermark, stored, "the server's counters did not "
	    "start again at zero");
	t2 = totals();
	cr_assert_eq(t2.total_keys[POOL_EVICT_PRESSURE],
	    r1.evicted_pressure + r2.evicted_pressure);
	cr_assert_eq(t2.total_keys[POOL_EVICT_ORPHAN],
	    r1.evicted_orphan + r2.evicted_orphan);
	cr_assert_eq(t2.total_keys[POOL_EVICT_WATERMARK],
	    r1.evicted_watermark + r2.evicted_watermark);
	cr_assert_eq(sum(t2.total_bytes), r1.evicted_bytes + r2.evicted_bytes);
	itest_assert_pool_checks();
}
