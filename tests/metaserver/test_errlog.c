/*
 * test_errlog.c -- tests of metaserver/errlog.c through ms_dispatch: a
 * peer that sends a flood of bad frames gets a bounded number of error
 * lines and a summary of what was suppressed; another peer's errors are
 * still written. Driven with no sockets (dispatch_fixture.h).
 */
#include <time.h>

#include "dispatch_fixture.h"

static struct {
	pthread_mutex_t lock;
	uint64_t errors;     /* op=... rc= lines */
	uint64_t summaries;  /* "suppressed K similar messages" lines */
	uint64_t suppressed; /* sum of K */
	uint64_t pipe2;      /* error lines about pipe 2's requests */
} seen = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void
count_line(int level, const char *msg, void *arg)
{
	unsigned long long pipe, n;

	(void)level;
	(void)arg;
	pthread_mutex_lock(&seen.lock);
	if (sscanf(msg, "op=log pipe=%llu suppressed=%llu", &pipe, &n) ==
	    2) {
		cr_assert_not_null(strstr(msg, "similar messages from pipe"));
		seen.summaries++;
		seen.suppressed += n;
	} else if (strstr(msg, "rc=") != NULL) {
		seen.errors++;
		seen.pipe2 += strstr(msg, "req=424242 ") != NULL;
	}
	pthread_mutex_unlock(&seen.lock);
}

static void
errlog_setup(void)
{
	dfx_setup();
	cxlp_set_log_fn(count_line, NULL, CXLP_LOG_ERR);
}

TestSuite(errlog, .init = errlog_setup, .fini = dfx_teardown, .timeout = 60);

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#define FLOOD 20000

Test(errlog, a_flood_of_bad_frames_is_logged_in_bounded_lines_and_counted)
{
	static const uint8_t junk[24] = { 0xde, 0xad, 0xbe, 0xef };
	struct pbuf rep, f;
	struct dfx_cl c;
	uint64_t t0 = now_ms(), secs;

	pbuf_init(&rep);
	for (int i = 0; i < FLOOD; i++) {
		cr_assert_eq(ms_dispatch(&dfx_ms, 1, junk, sizeof(junk), &rep),
		    0);
	}
	secs = (now_ms() - t0) / RL_WINDOW_MS + 1;
	cr_assert_leq(seen.errors, RL_BURST * secs, "%llu error lines for "
	    "%d bad frames in %llu s", (unsigned long long)seen.errors,
	    FLOOD, (unsigned long long)secs);
	/* another peer is not held to pipe 1's budget */
	pbuf_init(&f);
	dfx_client(&c, 2);
	dfx_put_req(&f, &c, 999, 424242);
	cr_assert_eq(ms_dispatch(&dfx_ms, 2, f.data, f.len, &rep), 0);
	cr_assert_eq(seen.pipe2, 1, "pipe 2's error was not written");
	/* after the window, any request writes the summary */
	usleep((RL_WINDOW_MS + 100) * 1000);
	cr_assert_eq(dfx_call(&c, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
	cr_assert_geq(seen.summaries, 1, "no summary line");
	cr_assert_eq(seen.errors - seen.pipe2 + seen.suppressed, FLOOD,
	    "%llu lines + %llu suppressed for %d frames",
	    (unsigned long long)(seen.errors - seen.pipe2),
	    (unsigned long long)seen.suppressed, FLOOD);
	pbuf_fini(&f);
	pbuf_fini(&rep);
}
