/*
 * test_liveness.c -- metaserver/liveness.c: sessions end when their pipe
 * goes and their process is dead, live on while a process of this host
 * runs, end after a grace period when the peer's pid is unknown, and
 * across restarts; plus concurrent sessions. Driven through ms_dispatch
 * and hand-called pipe events (dispatch_fixture.h), no sockets.
 */
#include "dispatch_fixture.h"
#include "procstat.h"

TestSuite(liveness, .init = dfx_setup, .fini = dfx_teardown);

/* ---- session death ------------------------------------------------------ */

static pid_t
dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return pid;
}

Test(liveness, a_session_whose_process_died_ends_when_its_pipe_goes)
{
	struct dfx_cl a, b;
	struct proto_result res;
	uint64_t free0;

	dfx_hello(&b, 2);
	free0 = dfx_stat_of(&b, PROTO_STAT_FREE_BYTES);
	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, PROTO_F_PIN, "k", 0, &res), 0);
	ms_pipe_added(&dfx_ms, 1, (uint64_t)dead_pid());
	ms_pipe_removed(&dfx_ms, 1, cxlp_now_ms());
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_PINS), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_ORPHAN_REGIONS), 1);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_FREE_BYTES), free0);
}

Test(liveness, a_reused_pid_with_another_start_time_counts_as_dead)
{
	struct dfx_cl a = { 0 }, b = { 0 };

	dfx_hello(&b, 2);
	memset(&a, 0, sizeof(a));
	cr_assert_eq(dfx_hello_flags(&a, 1, 0, (uint32_t)getpid(), 1), 0);
	ms_pipe_added(&dfx_ms, 1, (uint64_t)getpid());
	ms_pipe_removed(&dfx_ms, 1, cxlp_now_ms());
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_SESSIONS), 1);
}

/* a (pipe 1, its process pid, 0 unknown) pins "k", then loses its pipe
 * at t0; b (pipe 2) watches. */
static void
pinned_then_detached(struct dfx_cl *a, struct dfx_cl *b, uint64_t pid,
    uint64_t t0)
{
	struct proto_result res;

	dfx_hello(b, 2);
	dfx_client(a, 1);
	cr_assert_eq(dfx_reg_page(a, PROTO_F_PIN, "k", 0, &res), 0);
	ms_pipe_added(&dfx_ms, 1, pid);
	ms_pipe_removed(&dfx_ms, 1, t0);
}

/* Its mappings outlive its connection: a process of this host that still
 * runs may be writing into its regions, so its session (regions, pins)
 * stays however long it is silent. */
Test(liveness, a_live_process_of_this_host_keeps_its_session_while_it_runs)
{
	struct dfx_cl a, b;
	struct proto_result res;
	uint64_t t0 = cxlp_now_ms();

	pinned_then_detached(&a, &b, (uint64_t)getpid(), t0);
	cr_assert_eq(ms_reap(&dfx_ms, t0 + 1000 * GRACE_MS), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_PINS), 1);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_SESSIONS), 2);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), CXLP_E_PINNED);
	a.pipe = 3; /* it speaks again, on a new connection */
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
	cr_assert_eq(dfx_reg_page(&a, 0, "k2", 1, &res), 0, "its region is "
	    "still its own");
}

/* A peer whose process the server cannot see (pid unknown: another host)
 * is given the grace period, then ended: pins released. */
Test(liveness, a_peer_of_unknown_pid_ends_after_the_grace_period)
{
	struct dfx_cl a, b;
	uint64_t t0 = cxlp_now_ms();

	pinned_then_detached(&a, &b, 0, t0);
	cr_assert_eq(ms_reap(&dfx_ms, t0 + GRACE_MS - 1), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_PINS), 1);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), CXLP_E_PINNED);
	cr_assert_eq(ms_reap(&dfx_ms, t0 + GRACE_MS), 1);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_PINS), 0);
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
}

Test(liveness, a_detached_session_that_speaks_again_is_not_reaped)
{
	struct dfx_cl a;
	uint64_t t0 = cxlp_now_ms();

	dfx_hello(&a, 1);
	ms_pipe_added(&dfx_ms, 1, 0);
	ms_pipe_removed(&dfx_ms, 1, t0);
	a.pipe = 5; /* nng redialed */
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
	cr_assert_eq(ms_reap(&dfx_ms, t0 + 100 * GRACE_MS), 0);
	/* the old pipe's late removal does not touch the new binding */
	ms_pipe_removed(&dfx_ms, 1, t0);
	cr_assert_eq(ms_reap(&dfx_ms, t0 + 100 * GRACE_MS), 0);
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
}

/* A request still in a worker's hands when its pipe's removal is handled
 * (the process sent it, then died) must not bind its session to the dead
 * pipe: nothing would ever detach the session again. */
Test(liveness, a_request_served_after_its_pipe_went_does_not_reattach)
{
	struct dfx_cl a;
	uint64_t t0 = cxlp_now_ms();

	dfx_hello(&a, 1);
	ms_pipe_added(&dfx_ms, 1, 0);
	ms_pipe_removed(&dfx_ms, 1, t0);
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0,
	    "the late request itself is still served");
	cr_assert_eq(ms_reap(&dfx_ms, t0 + GRACE_MS), 1, "the late request "
	    "bound the session to its dead pipe");
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
}

Test(liveness, a_hello_served_after_its_pipe_went_starts_detached)
{
	struct dfx_cl a;
	uint64_t t0;

	ms_pipe_added(&dfx_ms, 3, 0);
	ms_pipe_removed(&dfx_ms, 3, cxlp_now_ms());
	dfx_hello(&a, 3);
	t0 = cxlp_now_ms();
	cr_assert_eq(ms_reap(&dfx_ms, t0 + GRACE_MS), 1, "a session made on a "
	    "dead pipe would never end");
}

Test(liveness, a_late_request_on_an_old_pipe_leaves_a_live_session_alone)
{
	struct dfx_cl a;
	uint64_t t0 = cxlp_now_ms();

	ms_pipe_added(&dfx_ms, 1, 0);
	ms_pipe_added(&dfx_ms, 2, 0);
	dfx_hello(&a, 1);
	a.pipe = 2; /* the handler dialed afresh */
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
	ms_pipe_removed(&dfx_ms, 1, t0);
	a.pipe = 1; /* one request still queued from the old connection */
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
	cr_assert_eq(ms_reap(&dfx_ms, t0 + 100 * GRACE_MS), 0);
	/* still bound to pipe 2: its loss detaches the session */
	ms_pipe_removed(&dfx_ms, 2, t0);
	cr_assert_eq(ms_reap(&dfx_ms, t0 + GRACE_MS), 1);
}

/* A handler in another pid namespace (a container sharing the ipc
 * socket and the hostname) says a pid that names another process here, or
 * none: the session keeps the pid the server saw on its pipe, so that a
 * restarted server looks at the right process. It used to end such a
 * session at the first reaper pass after a restart, live as it was. */
Test(liveness, a_session_keeps_the_pid_the_server_saw_on_its_pipe)
{
	struct pool_session r;
	struct dfx_cl a = { 0 };
	char host[64] = "";

	cr_assert_eq(gethostname(host, sizeof(host) - 1), 0);
	memset(&a, 0, sizeof(a));
	ms_pipe_added(&dfx_ms, 1, (uint64_t)getpid());
	cr_assert_eq(dfx_hello_from(&a, 1, 0, 1, 0, host), 0); /* pid 1: init */
	cr_assert_eq(pool_session_get(dfx_ms.pool, a.session, &r), 0);
	cr_assert_eq(r.pid, (uint32_t)getpid());
	ms_fini(&dfx_ms);
	dfx_ms_open();
	cr_assert_eq(ms_reap(&dfx_ms, cxlp_now_ms() + 1000 * GRACE_MS), 0, "a "
	    "live handler's session ended after the restart");
	a.pipe = 2;
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
}

/* A stand-in for a relay on the ipc socket (socat): another process,
 * running until relay_end. */
static pid_t
relay_start(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;) {
			pause();
		}
	}
	cr_assert_gt(pid, 0);
	return pid;
}

static void
relay_end(pid_t pid)
{
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
}

/* A handler reached through a relay: the pipe's peer (the relay) is
 * another process than the HELLO's (pid and start time both differ). The
 * relay's exit (with its connection, or at a metaserver restart) says
 * nothing of the handler: its session is kept like one of another host,
 * by its connection and the grace period. It used to be ended at the
 * first of these (why=peer_exited): the session held the relay's pid and
 * the handler's start time, which no process has. */
Test(liveness, a_handler_behind_a_relay_keeps_its_session_past_the_relays_exit_and_restarts)
{
	struct pool_session r;
	struct dfx_cl a = { 0 }, b = { 0 };
	struct proto_result res;
	uint64_t start = 0;
	pid_t relay = relay_start();
	char host[64] = "", state;

	cr_assert_eq(gethostname(host, sizeof(host) - 1), 0);
	cr_assert(procstat_read(0, &state, &start));
	ms_pipe_added(&dfx_ms, 1, (uint64_t)relay);
	memset(&a, 0, sizeof(a));
	cr_assert_eq(dfx_hello_from(&a, 1, 0, (uint32_t)getpid(), start,
	    host), 0);
	cr_assert_eq(dfx_region_alloc(&a, REGION_LEN, PAGE, &a.region), 0);
	cr_assert_eq(dfx_reg_page(&a, PROTO_F_PIN, "k", 0, &res), 0);
	cr_assert_eq(pool_session_get(dfx_ms.pool, a.session, &r), 0);
	cr_assert_eq(r.pid, (uint32_t)relay, "the record names the peer");
	cr_assert_eq(r.flags, POOL_SESS_PEERCRED | POOL_SESS_RELAYED);
	relay_end(relay);
	ms_pipe_removed(&dfx_ms, 1, cxlp_now_ms());
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_PINS), 1, "the session ended "
	    "with its relay");
	relay = relay_start(); /* the handler redials: a new relay process */
	ms_pipe_added(&dfx_ms, 3, (uint64_t)relay);
	a.pipe = 3;
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
	for (int i = 0; i < 3; i++) { /* restarts: the relay goes each time */
		relay_end(relay);
		ms_fini(&dfx_ms);
		dfx_ms_open();
		cr_assert_eq(ms_reap(&dfx_ms, cxlp_now_ms() + GRACE_MS / 2), 0,
		    "restart %d ended it", i);
		relay = relay_start();
		ms_pipe_added(&dfx_ms, 4 + (uint64_t)i, (uint64_t)relay);
		a.pipe = 4 + (uint64_t)i;
		cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL,
		    NULL), 0, "restart %d", i);
	}
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 1);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "k"), 0, "its pin");
	/* and like one of another host, it ends by its grace */
	relay_end(relay);
	ms_pipe_removed(&dfx_ms, a.pipe, cxlp_now_ms());
	cr_assert_geq(ms_reap(&dfx_ms, cxlp_now_ms() + GRACE_MS + 1), 1);
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
}

/* A session of this host whose pid only its HELLO claimed (a pipe without
 * peer credentials: tcp) is judged by the grace period after a restart,
 * not by whatever process has that pid now: a live unrelated one (with
 * the start time claimed to match) does not keep it, a dead one does not
 * end it at once. It used to take the claimed pid as the peer's. */
Test(liveness, a_claimed_pid_is_not_looked_at_after_a_restart)
{
	struct pool_session r;
	struct dfx_cl a = { 0 }, b = { 0 };
	uint64_t start = 0;
	pid_t other = getppid(); /* live, and not the handler */
	char host[64] = "", state;

	cr_assert_eq(gethostname(host, sizeof(host) - 1), 0);
	cr_assert(procstat_read((uint64_t)other, &state, &start));
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	cr_assert_eq(dfx_hello_from(&a, 1, 0, (uint32_t)other, start, host),
	    0);
	cr_assert_eq(dfx_hello_from(&b, 2, 0, (uint32_t)dead_pid(), 0, host),
	    0);
	cr_assert_eq(pool_session_get(dfx_ms.pool, a.session, &r), 0);
	cr_assert_eq(r.flags & POOL_SESS_PEERCRED, 0, "no peer credentials");
	ms_fini(&dfx_ms);
	dfx_ms_open();
	cr_assert_eq(ms_reap(&dfx_ms, cxlp_now_ms() + GRACE_MS / 2), 0,
	    "the dead claimed pid ended a session before its grace");
	cr_assert_eq(ms_reap(&dfx_ms, cxlp_now_ms() + GRACE_MS + 1), 2,
	    "a live unrelated process kept a session past its grace");
	a.pipe = 3;
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
}

Test(liveness, sessions_survive_a_restart_and_reattach_with_their_regions)
{
	struct dfx_cl a;
	struct proto_result res;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &res), 0);
	ms_fini(&dfx_ms);
	dfx_ms_open();
	cr_assert_eq(dfx_hello_flags(&a, 3, PROTO_HELLO_REATTACH,
	    (uint32_t)getpid(), 0), 0);
	cr_assert_eq(dfx_reg_page(&a, 0, "k2", 1, &res), 0);
	cr_assert_eq(res.flags, PROTO_R_NEW);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_EXISTS, 0, "k"), 0);
}

/* An unpin of a key's last pin was applied and the server restarted
 * before the handler saw the reply: the handler's retry, same request id,
 * reaches a server with an empty reply cache and must still be answered
 * with the first result (DESIGN: a retry is answered with the original
 * result), while a new unpin finds no pin. */
Test(liveness, the_last_unpin_replayed_after_a_restart_answers_ok)
{
	static const char *const key = "k";
	struct proto_result res;
	struct pbuf body, rep;
	struct dfx_cl a;
	uint32_t n = 0;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, PROTO_F_PIN, "k", 0, &res), 0);
	pbuf_init(&body);
	pbuf_init(&rep);
	dfx_put_keys(&body, 0, 1, &key);
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_UNPIN, 700, &body, &rep, &res,
	    &n), 0);
	cr_assert_eq(res.status, 0);
	ms_fini(&dfx_ms);
	dfx_ms_open();
	cr_assert_eq(dfx_hello_flags(&a, 3, PROTO_HELLO_REATTACH,
	    (uint32_t)getpid(), 0), 0);
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_UNPIN, 700, &body, &rep, &res,
	    &n), 0);
	cr_assert_eq(res.status, 0, "the replay got %d", res.status);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "k"), CXLP_E_NOTPINNED);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_DELETE, 0, "k"), 0);
	pbuf_fini(&body);
	pbuf_fini(&rep);
}

Test(liveness, sessions_that_do_not_come_back_after_a_restart_are_reaped)
{
	struct dfx_cl a, b;
	struct proto_result res;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &res), 0);
	ms_fini(&dfx_ms);
	dfx_ms_open();
	cr_assert_eq(ms_reap(&dfx_ms, cxlp_now_ms() + GRACE_MS + 1), 1);
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_SESSIONS), 1);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_ORPHAN_REGIONS), 1);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_DELETE, 0, "k"), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_REGIONS), 0);
}

/* ---- concurrency -------------------------------------------------------- */

struct worker_arg {
	struct dfx_cl c;
	int errors;
};

/* One thread: register (pinned), look up a shared key, unpin, delete,
 * over its own pages. Counts unexpected answers instead of asserting
 * (Criterion asserts belong to the main thread). */
static void *
worker_main(void *p)
{
	struct worker_arg *w = p;
	struct proto_result res[2];
	uint32_t m;

	for (int i = 0; i < 300; i++) {
		char key[32];
		const char *keys[2] = { key, "shared" };
		struct proto_reg g = { { (const uint8_t *)key, 0 },
			w->c.region.region, dfx_page_off(&w->c,
			    (unsigned)i % 8),
			10 };
		struct pbuf b;

		snprintf(key, sizeof(key), "s%llu-%d",
		    (unsigned long long)w->c.session, i);
		g.key.len = (uint16_t)strlen(key);
		pbuf_init(&b);
		proto_put_regs(&b, PROTO_F_PIN, 1, &g);
		w->errors += dfx_call(&w->c, PROTO_OP_REGISTER, &b, res,
		    &m) != 0 || res[0].flags != PROTO_R_NEW;
		pbuf_fini(&b);
		w->errors += dfx_keyop(&w->c, PROTO_OP_LOOKUP, 0, 2, keys, res,
		    &m) != 0 || res[0].status != 0 || res[1].status != 0;
		w->errors += dfx_keyop(&w->c, PROTO_OP_UNPIN, 0, 1, keys, res,
		    &m) != 0 || res[0].status != 0;
		w->errors += dfx_keyop(&w->c, PROTO_OP_DELETE, 0, 1, keys, res,
		    &m) != 0 || res[0].status != 0;
	}
	return NULL;
}

Test(liveness, concurrent_sessions_keep_pins_and_the_pool_consistent)
{
	struct worker_arg w[4];
	pthread_t t[4];
	struct dfx_cl owner;
	struct proto_result res;

	dfx_client(&owner, 100);
	cr_assert_eq(dfx_reg_page(&owner, 0, "shared", 0, &res), 0);
	for (int i = 0; i < 4; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		dfx_client(&w[i].c, (uint64_t)i + 1);
	}
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(pthread_create(&t[i], NULL, worker_main, &w[i]),
		    0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(w[i].errors, 0, "worker %d: %d errors", i,
		    w[i].errors);
	}
	cr_assert_eq(dfx_stat_of(&owner, PROTO_STAT_PINS), 0);
	cr_assert_eq(dfx_stat_of(&owner, PROTO_STAT_KEYS), 1);
	cr_assert_eq(pool_check(dfx_ms.pool, NULL, NULL), 0);
}

struct replay_arg {
	struct dfx_cl c;
	int status;
};

static void *
replay_main(void *p)
{
	static const char *const key = "k";
	struct replay_arg *r = p;
	struct proto_result res[1];
	struct pbuf body, rep;
	uint32_t m = 0;

	pbuf_init(&body);
	pbuf_init(&rep);
	dfx_put_keys(&body, 0, 1, &key);
	r->status = dfx_call_id(&r->c, PROTO_OP_UNPIN, 4242, &body, &rep, res,
	    &m);
	if (r->status == 0) {
		r->status = res[0].status;
	}
	pbuf_fini(&body);
	pbuf_fini(&rep);
	return NULL;
}

Test(liveness, the_same_req_id_sent_twice_at_once_is_applied_once)
{
	struct replay_arg r[4];
	pthread_t t[4];
	struct dfx_cl a;
	struct proto_result res;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, PROTO_F_PIN, "k", 0, &res), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(dfx_key1(&a, PROTO_OP_PIN, 0, "k"), 0);
	}
	for (int i = 0; i < 4; i++) {
		r[i].c = a;
		r[i].c.pipe = (uint64_t)i + 1;
		cr_assert_eq(pthread_create(&t[i], NULL, replay_main, &r[i]),
		    0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(r[i].status, 0);
	}
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 3);
}

Test(liveness, a_peer_that_dies_after_its_pipe_went_is_reaped_before_grace)
{
	struct dfx_cl a, b;
	struct proto_result res;
	uint64_t t0 = cxlp_now_ms();
	pid_t child = fork();

	if (child == 0) {
		pause();
		_exit(0);
	}
	cr_assert_gt(child, 0);
	dfx_hello(&b, 2);
	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, PROTO_F_PIN, "k", 0, &res), 0);
	ms_pipe_added(&dfx_ms, 1, (uint64_t)child);
	ms_pipe_removed(&dfx_ms, 1, t0);
	cr_assert_eq(ms_reap(&dfx_ms, t0), 0); /* still alive: detached */
	kill(child, SIGKILL);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_assert_eq(ms_reap(&dfx_ms, t0), 1);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_PINS), 0);
}
