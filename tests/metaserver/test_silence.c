/*
 * test_silence.c -- metaserver/silence.c: a session whose handler
 * promised heartbeats (HELLO keepalive_ms) and went silent is ended, its
 * pins released and its keys anyone's, while its regions stay out of use
 * as long as its process runs (fenced) -- until the process exits or its
 * late BYE comes; a server that was itself stalled ends nobody for it;
 * and the per-process and pool-wide session bounds, each with its own
 * reason. Driven through ms_dispatch with a fake clock, no sockets
 * (dispatch_fixture.h).
 */
#include "dispatch_fixture.h"

TestSuite(silence, .init = dfx_setup, .fini = dfx_teardown);

#define KA_MS 100 /* keepalive: 5 periods < GRACE_MS, so the limit is grace */

/* HELLO promising keepalive ka (0: none) and asking for reasons; the
 * refusal's reason goes to why (may be NULL). Returns the status. */
static int
hello_ka(struct dfx_cl *c, uint64_t pipe, uint32_t ka, uint32_t pid,
    const char *host, char *why, size_t n)
{
	struct proto_hello m = { .pid = pid, .start_time = 0,
		.flags = PROTO_HELLO_ERRMSG | (ka ? PROTO_HELLO_KEEPALIVE : 0),
		.instance_id = 7, .host = host,
		.host_len = (uint16_t)strlen(host), .keepalive_ms = ka };
	struct proto_rep_hdr h;
	struct proto_welcome w;
	struct preader r;
	struct pbuf f, rep;
	int st;

	memset(c, 0, sizeof(*c));
	pbuf_init(&f);
	pbuf_init(&rep);
	dfx_put_req(&f, c, PROTO_OP_HELLO, 1);
	proto_put_hello(&f, &m);
	c->pipe = pipe;
	st = dfx_send_raw(pipe, &f, &rep, &h, &r);
	if (st == 0) {
		cr_assert_eq(proto_get_welcome(&r, &w), 0);
		c->session = w.session;
		c->token = w.token;
	} else if (why != NULL) {
		snprintf(why, n, "%.*s", (int)h.msg_len,
		    h.msg != NULL ? h.msg : "");
	}
	pbuf_fini(&f);
	pbuf_fini(&rep);
	return st;
}

/* Run the reaper every 100 ms of fake time over (from, to]; returns how
 * many sessions it ended or fenced. Steps stay under MS_REAP_STALL_MS. */
static unsigned
reap_over(uint64_t from, uint64_t to)
{
	unsigned n = 0;

	for (uint64_t t = from + 100; t <= to; t += 100) {
		n += ms_reap(&dfx_ms, t);
	}
	return n;
}

/* a: a handler of this host (pid seen on ipc pipe 1) that promised
 * heartbeats, took a region and pinned "k" in it; b (pipe 2, keepalive
 * off, another host) watches. */
static void
silent_pinner(struct dfx_cl *a, struct dfx_cl *b, uint64_t pid)
{
	struct proto_result res;
	char host[64] = "";

	cr_assert_eq(gethostname(host, sizeof(host) - 1), 0);
	dfx_hello(b, 2);
	ms_pipe_added(&dfx_ms, 1, pid);
	cr_assert_eq(hello_ka(a, 1, KA_MS, 1, host, NULL, 0), 0);
	cr_assert_eq(dfx_region_alloc(a, REGION_LEN, PAGE, &a->region), 0);
	cr_assert_eq(dfx_reg_page(a, PROTO_F_PIN, "k", 0, &res), 0);
}

Test(silence, a_silent_session_is_fenced_its_pins_go_and_its_region_stays)
{
	struct dfx_cl a, b;
	struct proto_loc loc;
	uint64_t t0 = cxlp_now_ms();

	silent_pinner(&a, &b, (uint64_t)getpid());
	ms_pipe_removed(&dfx_ms, 1, t0); /* it closed; its process runs */
	cr_assert_eq(reap_over(t0, t0 + GRACE_MS - 200), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), CXLP_E_PINNED);
	cr_assert_eq(reap_over(t0 + GRACE_MS - 200, t0 + GRACE_MS + 300), 1);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_PINS), 0, "its pins were kept");
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_SESSIONS), 1);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), 0, "its key is "
	    "anyone's now");
	a.pipe = 3;
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
	cr_assert_eq(dfx_hello_flags(&a, 3, PROTO_HELLO_REATTACH, 1, 0),
	    CXLP_E_SESSION);
	/* its region is still taken: the next one is elsewhere */
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_REGIONS), 1);
	cr_assert_eq(dfx_region_alloc(&b, REGION_LEN, PAGE, &loc), 0);
	cr_assert_neq(loc.region_off, a.region.region_off, "a fenced region "
	    "was handed to another handler while its process runs");
	cr_assert_eq(reap_over(t0 + GRACE_MS + 300, t0 + 5 * GRACE_MS), 0);
	cr_assert_eq(pool_check(dfx_ms.pool, NULL, NULL), 0);
}

Test(silence, an_attached_session_that_stops_speaking_is_fenced_too)
{
	struct dfx_cl a, b;
	uint64_t t0 = cxlp_now_ms();

	silent_pinner(&a, &b, (uint64_t)getpid()); /* pipe 1 stays */
	cr_assert_eq(reap_over(t0, t0 + GRACE_MS + 300), 1);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_PINS), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_REGIONS), 1, "region kept");
}

static pid_t child = -1;

/* The stand-in handler process never outlives its test, failed or not. */
static void
kill_child(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = -1;
	}
	dfx_teardown();
}

Test(silence, a_fenced_session_ends_when_its_process_exits,
    .fini = kill_child)
{
	struct dfx_cl a, b;
	uint64_t t0 = cxlp_now_ms(), t1 = t0 + GRACE_MS + 300;

	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	cr_assert_gt(child, 0);
	silent_pinner(&a, &b, (uint64_t)child);
	cr_assert_eq(reap_over(t0, t1), 1);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_REGIONS), 1);
	kill(child, SIGKILL);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	child = -1;
	cr_assert_eq(reap_over(t1, t1 + 200), 1);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_REGIONS), 0, "the region of a "
	    "fenced session outlived its process");
	cr_assert_neq(pool_session_get(dfx_ms.pool, a.session,
	    &(struct pool_session){ 0 }), 0);
}

Test(silence, a_late_bye_ends_a_fenced_session_and_frees_its_region)
{
	struct dfx_cl a, b;
	uint64_t t0 = cxlp_now_ms();

	silent_pinner(&a, &b, (uint64_t)getpid());
	ms_pipe_removed(&dfx_ms, 1, t0);
	cr_assert_eq(reap_over(t0, t0 + GRACE_MS + 300), 1);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), 0);
	a.pipe = 4; /* the same process connects again */
	cr_assert_eq(dfx_call(&a, PROTO_OP_BYE, NULL, NULL, NULL), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_REGIONS), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_SESSIONS), 1);
	cr_assert_eq(pool_check(dfx_ms.pool, NULL, NULL), 0);
}

/* A connect whose WELCOME was lost: a session with no region, never
 * heard again. Nothing can write anywhere for it: it ends. */
Test(silence, a_silent_session_with_no_region_ends_outright)
{
	struct dfx_cl a, b;
	uint64_t t0 = cxlp_now_ms();

	dfx_hello(&b, 2);
	ms_pipe_added(&dfx_ms, 1, (uint64_t)getpid());
	cr_assert_eq(hello_ka(&a, 1, KA_MS, 1, "testhost", NULL, 0), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_SESSIONS), 2);
	cr_assert_eq(reap_over(t0, t0 + GRACE_MS + 300), 1);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_SESSIONS), 1);
	cr_assert_neq(pool_session_get(dfx_ms.pool, a.session,
	    &(struct pool_session){ 0 }), 0, "its record was kept");
}

/* A peer of another host (pid unknown) cannot be fenced: silence ends it
 * as the grace period ends such a peer. */
Test(silence, a_silent_peer_of_unknown_pid_ends_with_its_regions)
{
	struct dfx_cl a, b;
	uint64_t t0 = cxlp_now_ms();

	silent_pinner(&a, &b, 0);
	cr_assert_eq(reap_over(t0, t0 + GRACE_MS + 300), 1);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_ORPHAN_REGIONS), 1);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_REGIONS), 0);
}

/* Real time here: a request counts at the server's clock. */
Test(silence, a_handler_that_speaks_or_promised_nothing_is_kept)
{
	struct dfx_cl a, b, c;
	uint64_t t0 = cxlp_now_ms();

	silent_pinner(&a, &b, (uint64_t)getpid());
	ms_pipe_added(&dfx_ms, 5, (uint64_t)getpid());
	cr_assert_eq(hello_ka(&c, 5, 0, 1, "testhost", NULL, 0), 0);
	while (cxlp_now_ms() < t0 + 3 * GRACE_MS) {
		usleep(100 * 1000);
		cr_assert_eq(ms_reap(&dfx_ms, cxlp_now_ms()), 0);
		cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
		    0);
	}
	cr_assert_eq(reap_over(cxlp_now_ms(), cxlp_now_ms() + 50 * GRACE_MS), 1,
	    "then silent: only a ends, c promised nothing");
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_SESSIONS), 2);
}

/* The clock runs while the server is stopped, and its handlers'
 * heartbeats wait in the socket: a reaper pass that comes late counts
 * silence afresh. */
Test(silence, a_server_that_was_stalled_ends_nobody_for_its_own_silence)
{
	struct dfx_cl a, b;
	uint64_t t0 = cxlp_now_ms(), t1 = t0 + 20 * GRACE_MS;

	silent_pinner(&a, &b, (uint64_t)getpid());
	cr_assert_eq(reap_over(t0, t0 + GRACE_MS / 2), 0);
	cr_assert_eq(ms_reap(&dfx_ms, t1), 0, "ended for the server's stall");
	cr_assert_eq(reap_over(t1, t1 + GRACE_MS - 200), 0);
	cr_assert_eq(reap_over(t1 + GRACE_MS - 200, t1 + GRACE_MS + 300), 1);
}

/* The closed-during-an-outage case: the promise is in the record, so a
 * restarted server ends the session its handler never comes back for. */
Test(silence, the_promise_outlives_a_restart)
{
	struct dfx_cl a, b;
	struct pool_session r;
	uint64_t t0;

	silent_pinner(&a, &b, (uint64_t)getpid());
	cr_assert_eq(pool_session_get(dfx_ms.pool, a.session, &r), 0);
	cr_assert_eq(r.keepalive_ms, KA_MS);
	ms_fini(&dfx_ms);
	dfx_ms_open();
	t0 = cxlp_now_ms();
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_PINS), 1);
	cr_assert_eq(reap_over(t0, t0 + GRACE_MS - 200), 0);
	/* a is fenced; the first b, of another host, ends by its grace */
	cr_assert_eq(reap_over(t0 + GRACE_MS - 200, t0 + GRACE_MS + 300), 2);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_PINS), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_REGIONS), 1, "a's region is "
	    "kept while its process runs");
	a.pipe = 3;
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
}

/* ---- bounds --------------------------------------------------------- */

Test(silence, one_process_is_bounded_and_told_which_limit_it_hit)
{
	struct dfx_cl c[4], other;
	char why[PROTO_ERRMSG_MAX + 1] = "";

	dfx_ms.sess_per_proc = 3;
	ms_pipe_added(&dfx_ms, 1, (uint64_t)getpid());
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(hello_ka(&c[i], 1, KA_MS, 1, "testhost", NULL, 0),
		    0);
	}
	cr_assert_eq(hello_ka(&c[3], 1, KA_MS, 1, "testhost", why,
	    sizeof(why)), CXLP_E_NOSPACE);
	cr_assert(strstr(why, "this process already has 3 sessions") !=
	    NULL && strstr(why, "--max-sessions-per-process") != NULL,
	    "reason: \"%s\"", why);
	cr_assert_eq(hello_ka(&other, 2, KA_MS, 4242, "testhost", NULL, 0), 0,
	    "another process is refused too");
	cr_assert_eq(dfx_call(&c[0], PROTO_OP_BYE, NULL, NULL, NULL), 0);
	cr_assert_eq(hello_ka(&c[3], 1, KA_MS, 1, "testhost", NULL, 0), 0);
}

/* The bound counts processes as the server sees them: on ipc the peer's
 * pid and its start time in /proc, not what a HELLO claims. A client that
 * sends a new start time (and host) in each HELLO used to count as a new
 * process each time, and could take the whole session table. */
Test(silence, forged_start_times_in_hellos_are_one_process)
{
	struct dfx_cl c = { 0 }, other;
	char host[16];
	int st = 0;

	dfx_ms.sess_per_proc = 3;
	ms_pipe_added(&dfx_ms, 1, (uint64_t)getpid());
	for (int i = 0; i < 3; i++) {
		snprintf(host, sizeof(host), "h%d", i);
		cr_assert_eq(dfx_hello_from(&c, 1, 0, (uint32_t)getpid(),
		    1000 + (uint64_t)i, host), 0);
	}
	for (int i = 3; i < 10 && st == 0; i++) {
		snprintf(host, sizeof(host), "h%d", i);
		memset(&c, 0, sizeof(c));
		st = dfx_hello_from(&c, 1, PROTO_HELLO_ERRMSG,
		    (uint32_t)getpid() + (uint32_t)i, 1000 + (uint64_t)i,
		    host);
	}
	cr_assert_eq(st, CXLP_E_NOSPACE, "a fourth session was admitted");
	ms_pipe_added(&dfx_ms, 2, (uint64_t)getppid());
	memset(&other, 0, sizeof(other));
	cr_assert_eq(dfx_hello_from(&other, 2, 0, (uint32_t)getppid(), 0,
	    "testhost"), 0, "another process is refused too");
}

Test(silence, a_full_session_table_says_so, .timeout = 120)
{
	struct dfx_cl c;
	char why[PROTO_ERRMSG_MAX + 1] = "";
	uint32_t pid = 100000;
	int st;

	while ((st = hello_ka(&c, 1, 0, pid++, "testhost", why,
	    sizeof(why))) == 0) {
		cr_assert_lt(pid, 200000u);
	}
	cr_assert_eq(st, CXLP_E_NOSPACE);
	cr_assert(strstr(why, "session table full (1024 sessions") != NULL,
	    "reason: \"%s\"", why);
	cr_assert_null(strstr(why, "this process"));
}
