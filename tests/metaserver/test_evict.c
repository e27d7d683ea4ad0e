/*
 * test_evict.c -- metaserver/evict.c's logs (note 6; issue 25 item 7):
 * an orphan pass that can evict nothing (its region's key is pinned)
 * logs nothing however often it runs; a pass that evicts logs one line;
 * pipes opened and closed by a prober are logged within the call sites'
 * budget, with the count of the rest.
 */
#include "dispatch_fixture.h"

static struct {
	int evict;      /* op=evict lines */
	int pipe_add;   /* op=pipe_add lines */
	int pipe_rem;   /* op=pipe_rem lines */
	unsigned long long suppressed; /* sum of their counts */
	int other;
} seen;

static void
capture(int level, const char *msg, void *arg)
{
	const char *c = strstr(msg, " similar lines suppressed)");
	unsigned long long n = 0;

	(void)level;
	(void)arg;
	if (c != NULL) {
		while (c > msg && c[-1] != '(') {
			c--;
		}
		n = strtoull(c, NULL, 10);
	}
	seen.suppressed += n;
	if (strncmp(msg, "op=evict ", 9) == 0) {
		seen.evict++;
	} else if (strncmp(msg, "op=pipe_add ", 12) == 0) {
		seen.pipe_add++;
	} else if (strncmp(msg, "op=pipe_rem ", 12) == 0) {
		seen.pipe_rem++;
	} else {
		seen.other++;
	}
}

static void
setup(void)
{
	dfx_setup();
	memset(&seen, 0, sizeof(seen));
	cxlp_set_log_fn(capture, NULL, CXLP_LOG_INFO);
}

static void
teardown(void)
{
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	dfx_teardown();
}

TestSuite(ms_evict, .init = setup, .fini = teardown);

/* an orphan pass that asks for more room than the pool has: it tries
 * every orphan region */
static size_t
orphan_pass(void)
{
	size_t n;

	ms_wrlock(&dfx_ms);
	n = ms_evict_orphans(&dfx_ms, 2 * POOL_SIZE, 0, POOL_EVICT_ORPHAN);
	ms_unlock(&dfx_ms);
	return n;
}

Test(ms_evict, an_orphan_pass_that_evicts_nothing_logs_nothing)
{
	struct dfx_cl a, b;
	struct proto_result res;

	dfx_client(&a, 1);
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &res), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_PIN, 0, "k"), 0);
	cr_assert_eq(dfx_call(&a, PROTO_OP_BYE, NULL, NULL, NULL), 0);
	seen.evict = 0;
	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(orphan_pass(), 0, "a pinned key was evicted");
	}
	cxlp_log_flush();
	cr_assert_eq(seen.evict, 0, "%d lines for 1000 passes that did "
	    "nothing", seen.evict);
	cr_assert_eq(seen.suppressed, 0);
	/* the pin goes: the next pass evicts the key, and says so */
	cr_assert_eq(dfx_key1(&b, PROTO_OP_UNPIN, 0, "k"), 0);
	cr_assert_eq(orphan_pass(), 1);
	cr_assert_eq(seen.evict, 1);
}

static uint64_t clock_now = 1000000;

static uint64_t
fake_now(void)
{
	return clock_now;
}

Test(ms_evict, a_port_prober_costs_the_log_a_burst_and_a_count)
{
	enum { PROBES = 5000 };

	cxlp_log_set_clock(fake_now); /* the log's windows: the test's */
	for (uint64_t p = 100; p < 100 + PROBES; p++) {
		ms_pipe_added(&dfx_ms, p, 0);
		ms_pipe_removed(&dfx_ms, p, cxlp_now_ms());
	}
	cr_assert_eq(seen.pipe_add, CXLP_LOG_BURST, "%d lines for %d probes",
	    seen.pipe_add, PROBES);
	cr_assert_eq(seen.pipe_rem, CXLP_LOG_BURST);
	/* every probe is accounted for once the window has ended */
	clock_now += CXLP_LOG_WINDOW_MS;
	cxlp_log_flush();
	cr_assert_eq(seen.pipe_add + seen.pipe_rem + seen.suppressed,
	    2 * PROBES, "%d + %d lines and %llu suppressed for %d probes",
	    seen.pipe_add, seen.pipe_rem, seen.suppressed, PROBES);
	cxlp_log_set_clock(NULL);
}
