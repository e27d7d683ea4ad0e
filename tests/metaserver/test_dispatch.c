/*
 * test_dispatch.c -- metaserver/dispatch.c and the ops it dispatches to
 * (op_session.c, op_region.c, op_kv.c, op_report.c): ms_dispatch driven
 * directly with frames built by the codec, on a temporary pool, with no
 * sockets (dispatch_fixture.h): sessions (HELLO, SESSIONS, reattach, tokens),
 * REGISTER and LOOKUP/EXISTS. DELETE, regions, unpins and replayed
 * requests are in test_dispatch_release.c; session death in
 * test_liveness.c, malformed and hostile frames in test_frames.c.
 */
#include "dispatch_fixture.h"
#include "layout.h"

TestSuite(dispatch, .init = dfx_setup, .fini = dfx_teardown);

/* ---- sessions ----------------------------------------------------------- */

Test(dispatch, hello_returns_a_session_with_pool_path_size_and_align)
{
	struct dfx_cl a, b;

	dfx_hello(&a, 1);
	dfx_hello(&b, 2);
	cr_assert_neq(a.session, b.session);
	cr_assert_neq(a.token, 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_SESSIONS), 2);
}

/* SESSIONS as c; the decoded entries in *v (caller frees), count in *n.
 * Hosts point into *rep, which the caller finishes. */
static void
sessions_of(struct dfx_cl *c, struct pbuf *rep, struct proto_session_info **v,
    uint32_t *n)
{
	struct proto_rep_hdr h;
	struct preader r;

	cr_assert_eq(dfx_call_id(c, PROTO_OP_SESSIONS, ++c->next_id, NULL, rep,
	    NULL, NULL), 0, "SESSIONS: %s", cxlp_errormsg());
	cr_assert_eq(proto_get_rep_hdr(rep->data, rep->len, &h, &r), 0);
	cr_assert_eq(proto_get_sessions(&r, v, n), 0, "%s", cxlp_errormsg());
}

static const struct proto_session_info *
entry_of(const struct proto_session_info *v, uint32_t n, uint64_t id)
{
	for (uint32_t i = 0; i < n; i++) {
		if (v[i].id == id) {
			return &v[i];
		}
	}
	cr_assert_fail("session %llu not listed", (unsigned long long)id);
	return NULL;
}

Test(dispatch, sessions_lists_every_session_with_its_regions_and_pins)
{
	const struct proto_session_info *ea, *eb;
	struct proto_session_info *v = NULL;
	struct proto_result res;
	struct dfx_cl a, b;
	struct pbuf rep;
	uint32_t n = 0;

	dfx_client(&a, 1);
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_reg_page(&a, PROTO_F_PIN, "k", 0, &res), 0);
	pbuf_init(&rep);
	sessions_of(&b, &rep, &v, &n);
	cr_assert_eq(n, 2);
	ea = entry_of(v, n, a.session);
	eb = entry_of(v, n, b.session);
	cr_assert_eq(ea->regions, 1);
	cr_assert_eq(ea->pins, 1);
	cr_assert_eq(eb->regions, 0);
	cr_assert_eq(eb->pins, 0);
	cr_assert_eq(ea->pid, (uint32_t)getpid());
	cr_assert_eq(ea->instance, 7);
	cr_assert_eq(ea->host_len, 8);
	cr_assert(memcmp(ea->host, "testhost", 8) == 0);
	cr_assert_eq(eb->flags, PROTO_SESS_ATTACHED, "the caller is attached");
	cr_assert_eq(ea->flags, PROTO_SESS_ATTACHED);
	free(v);
	pbuf_fini(&rep);
}

Test(dispatch, sessions_flags_a_session_whose_pipe_went_as_detached)
{
	struct proto_session_info *v = NULL;
	struct dfx_cl a, b;
	struct pbuf rep;
	uint32_t n = 0;

	dfx_hello(&a, 1);
	dfx_hello(&b, 2);
	ms_pipe_added(&dfx_ms, 1, (uint64_t)getpid());
	ms_pipe_removed(&dfx_ms, 1, cxlp_now_ms());
	pbuf_init(&rep);
	sessions_of(&b, &rep, &v, &n);
	cr_assert_eq(n, 2);
	cr_assert_eq(entry_of(v, n, a.session)->flags, PROTO_SESS_DETACHED);
	cr_assert_eq(entry_of(v, n, b.session)->flags, PROTO_SESS_ATTACHED);
	free(v);
	pbuf_fini(&rep);
	/* a session that ended is no longer listed */
	cr_assert_eq(dfx_call(&a, PROTO_OP_BYE, NULL, NULL, NULL), 0);
	pbuf_init(&rep);
	sessions_of(&b, &rep, &v, &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(v[0].id, b.session);
	free(v);
	pbuf_fini(&rep);
}

/* (an empty body in version 2; version 3 skips what it does not know) */
Test(dispatch, sessions_needs_a_session_and_an_empty_body)
{
	struct dfx_cl none = { 0 }, a, b;
	struct pbuf body;

	cr_assert_eq(dfx_call(&none, PROTO_OP_SESSIONS, NULL, NULL, NULL),
	    CXLP_E_SESSION);
	dfx_hello_v(&a, 1, 2);
	dfx_hello(&b, 2);
	pbuf_init(&body);
	pbuf_put_u32(&body, 0);
	cr_assert_eq(dfx_call(&a, PROTO_OP_SESSIONS, &body, NULL, NULL),
	    CXLP_E_PROTO);
	cr_assert_eq(dfx_call(&b, PROTO_OP_SESSIONS, &body, NULL, NULL), 0);
	pbuf_fini(&body);
}

Test(dispatch, request_without_session_is_refused_with_session_error)
{
	struct dfx_cl none = { 0 };

	cr_assert_eq(dfx_call(&none, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
}

Test(dispatch, request_with_wrong_token_is_refused_with_session_error)
{
	struct dfx_cl a, thief;

	dfx_hello(&a, 1);
	thief = a;
	thief.token ^= 1;
	thief.pipe = 9;
	cr_assert_eq(dfx_call(&thief, PROTO_OP_HEARTBEAT, NULL, NULL, NULL),
	    CXLP_E_SESSION);
	cr_assert_eq(dfx_call(&a, PROTO_OP_HEARTBEAT, NULL, NULL, NULL), 0);
}

Test(dispatch, reattach_with_its_token_resumes_the_session_and_its_regions)
{
	struct dfx_cl a, again, bad;
	struct proto_result res;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, PROTO_F_PIN, "k", 0, &res), 0);
	ms_pipe_added(&dfx_ms, 1, 0);
	ms_pipe_removed(&dfx_ms, 1, cxlp_now_ms());
	again = a;
	cr_assert_eq(dfx_hello_flags(&again, 2, PROTO_HELLO_REATTACH,
	    (uint32_t)getpid(), 0), 0);
	cr_assert_eq(again.session, a.session);
	cr_assert_eq(again.token, a.token);
	cr_assert_eq(ms_reap(&dfx_ms, cxlp_now_ms() + 10 * GRACE_MS), 0);
	/* still owns its region and its pin */
	cr_assert_eq(dfx_reg_page(&again, 0, "k2", 1, &res), 0);
	cr_assert_eq(res.status, 0);
	cr_assert_eq(dfx_key1(&again, PROTO_OP_UNPIN, 0, "k"), 0);
	bad = a;
	bad.token++;
	cr_assert_eq(dfx_hello_flags(&bad, 3, PROTO_HELLO_REATTACH, 1, 0),
	    CXLP_E_SESSION);
}

Test(dispatch, heartbeat_gets_an_empty_reply)
{
	struct dfx_cl a;
	struct proto_rep_hdr h;
	struct preader r;
	struct pbuf f, rep;

	dfx_hello(&a, 1);
	pbuf_init(&f);
	pbuf_init(&rep);
	dfx_put_req(&f, &a, PROTO_OP_HEARTBEAT, 5);
	cr_assert_eq(dfx_send_raw(1, &f, &rep, &h, &r), 0);
	cr_assert_eq(rep.len, PROTO_REP_HDR_LEN_V3);
	pbuf_fini(&f);
	pbuf_fini(&rep);
}

/* ---- register ----------------------------------------------------------- */

Test(dispatch, register_of_a_new_key_reports_new_and_its_location)
{
	struct dfx_cl a;
	struct proto_result res;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "model@0@abc", 3, &res), 0);
	cr_assert_eq(res.status, 0);
	cr_assert_eq(res.flags, PROTO_R_NEW);
	cr_assert_eq(res.loc.region, a.region.region);
	cr_assert_eq(res.loc.gen, a.region.gen);
	cr_assert_eq(res.loc.region_off, a.region.region_off);
	cr_assert_eq(res.loc.region_len, a.region.region_len);
	cr_assert_eq(res.loc.off, dfx_page_off(&a, 3));
	cr_assert_eq(res.loc.len, 100);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_KEYS), 1);
}

Test(dispatch, register_of_an_existing_key_reports_the_winners_location)
{
	struct dfx_cl a, b;
	struct proto_result ra, rb;

	dfx_client(&a, 1);
	dfx_client(&b, 2);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &ra), 0);
	cr_assert_eq(dfx_reg_page(&b, 0, "k", 5, &rb), 0);
	cr_assert_eq(rb.status, 0);
	cr_assert_eq(rb.flags, 0);
	cr_assert_eq(rb.loc.region, a.region.region);
	cr_assert_eq(rb.loc.off, dfx_page_off(&a, 0));
	/* the loser's page stays free: it can register another key there */
	cr_assert_eq(dfx_reg_page(&b, 0, "other", 5, &rb), 0);
	cr_assert_eq(rb.flags, PROTO_R_NEW);
}

Test(dispatch, register_duplicate_in_one_batch_reports_the_first_entry)
{
	struct dfx_cl a;
	struct proto_reg g[2];
	struct proto_result res[2];
	struct pbuf b;
	uint32_t n = 0;

	dfx_client(&a, 1);
	for (int i = 0; i < 2; i++) {
		g[i].key.data = (const uint8_t *)"dup";
		g[i].key.len = 3;
		g[i].region = a.region.region;
		g[i].off = dfx_page_off(&a, (unsigned)i);
		g[i].len = 10;
	}
	pbuf_init(&b);
	proto_put_regs(&b, 0, 2, g);
	cr_assert_eq(dfx_call(&a, PROTO_OP_REGISTER, &b, res, &n), 0);
	pbuf_fini(&b);
	cr_assert_eq(n, 2);
	cr_assert_eq(res[0].flags, PROTO_R_NEW);
	cr_assert_eq(res[1].status, 0);
	cr_assert_eq(res[1].flags, 0);
	cr_assert_eq(res[1].loc.off, dfx_page_off(&a, 0));
}

Test(dispatch, register_into_a_foreign_region_is_refused_with_perm)
{
	struct dfx_cl a, b;
	struct proto_result res;

	dfx_client(&a, 1);
	dfx_client(&b, 2);
	cr_assert_eq(dfx_reg1(&b, 0, "k", a.region.region, dfx_page_off(&a, 0),
	    10, &res), 0);
	cr_assert_eq(res.status, CXLP_E_PERM);
	cr_assert_eq(res.loc.region_off, 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_EXISTS, 0, "k"), CXLP_E_NOTFOUND);
}

Test(dispatch, register_past_the_region_end_is_refused_with_bounds)
{
	struct dfx_cl a;
	struct proto_result res;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg1(&a, 0, "k", a.region.region,
	    a.region.region_off + a.region.region_len, 10, &res), 0);
	cr_assert_eq(res.status, CXLP_E_BOUNDS);
	cr_assert_eq(dfx_reg1(&a, 0, "k", a.region.region, dfx_page_off(&a, 0),
	    PAGE + 1, &res), 0);
	cr_assert_eq(res.status, CXLP_E_TOOBIG);
}

/* A page size need not divide the region: the partial page at its end
 * (it would run into whatever follows the region) is no page. The server
 * used to take it into the index and then abort on it. */
Test(dispatch, register_at_a_partial_last_page_is_refused_with_bounds)
{
	const uint64_t page = 12288; /* 170 whole pages in 2 MiB, and 8 KiB */
	struct dfx_cl a, b;
	struct proto_loc loc;
	struct proto_result res;

	dfx_hello(&a, 1);
	cr_assert_eq(dfx_region_alloc(&a, REGION_LEN, page, &loc), 0);
	cr_assert_neq(loc.region_len % page, 0);
	cr_assert_eq(dfx_reg1(&a, 0, "last", loc.region, loc.region_off +
	    (loc.region_len / page) * page, 10, &res), 0);
	cr_assert_eq(res.status, CXLP_E_BOUNDS);
	cr_assert_eq(dfx_reg1(&a, 0, "whole", loc.region, loc.region_off +
	    (loc.region_len / page - 1) * page, 10, &res), 0);
	cr_assert_eq(res.status, 0, "the last whole page is a page");
	dfx_hello(&b, 2);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_KEYS), 1);
}

/* One session may hold PIN_COUNT_MAX pins on one key. A PIN past that
 * is refused with its own error and the batch stops there (batch_pin's
 * rule for a miss); a LOOKUP that pins reports it on the key. Both used
 * to report the pin as taken, so the caller's later unpins failed. */
Test(dispatch, a_pin_past_the_per_key_limit_is_refused_and_stops_the_batch)
{
	enum { N = 512 }; /* each PIN reserves N records of the pin table */
	static const char *keys[N];
	static struct proto_result res[N];
	struct proto_result r1;
	struct dfx_cl a;
	uint64_t total = 0;
	uint32_t m = 0;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "k", 0, &r1), 0);
	for (int i = 0; i < N; i++) {
		keys[i] = "k";
	}
	for (; total + N <= PIN_COUNT_MAX; total += N) {
		int st = dfx_keyop(&a, PROTO_OP_PIN, 0, N, keys, res, &m);

		cr_assert_eq(st, 0, "after %llu pins: %d",
		    (unsigned long long)total, st);
		cr_assert_eq(m, N);
		cr_assert_eq(res[N - 1].status, 0);
	}
	cr_assert_eq(dfx_keyop(&a, PROTO_OP_PIN, 0, N, keys, res, &m), 0);
	cr_assert_eq(m, PIN_COUNT_MAX - total + 1, "%u results", m);
	cr_assert_eq(res[m - 1].status, CXLP_E_NOSPACE);
	cr_assert_eq(res[m - 2].status, 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), PIN_COUNT_MAX);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_LOOKUP, PROTO_F_PIN, "k"),
	    CXLP_E_NOSPACE);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_LOOKUP, PROTO_F_PIN, "k"), 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), PIN_COUNT_MAX);
}

Test(dispatch, register_into_a_page_that_holds_a_key_is_refused_with_busy)
{
	struct dfx_cl a;
	struct proto_result res;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "first", 2, &res), 0);
	cr_assert_eq(dfx_reg_page(&a, 0, "second", 2, &res), 0);
	cr_assert_eq(res.status, CXLP_E_BUSY);
}

Test(dispatch, register_with_pin_pins_winners_and_losers)
{
	struct dfx_cl a, b;
	struct proto_result res;

	dfx_client(&a, 1);
	dfx_client(&b, 2);
	cr_assert_eq(dfx_reg_page(&a, PROTO_F_PIN, "k", 0, &res), 0);
	cr_assert_eq(res.flags, PROTO_R_NEW);
	cr_assert_eq(dfx_reg_page(&b, PROTO_F_PIN, "k", 0, &res), 0);
	cr_assert_eq(res.flags, 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 2);
	/* each holds exactly one pin of its own */
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "k"), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_UNPIN, 0, "k"), CXLP_E_NOTPINNED);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_UNPIN, 0, "k"), 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 0);
}

Test(dispatch, register_with_pin_does_not_pin_failed_entries)
{
	struct dfx_cl a;
	struct proto_result res;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg1(&a, PROTO_F_PIN, "k", a.region.region, 7, 10,
	    &res), 0);
	cr_assert_neq(res.status, 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 0);
}

/* ---- lookup / exists ---------------------------------------------------- */

Test(dispatch, lookup_and_exists_find_keys_and_report_missing_ones)
{
	static const char *const keys[] = { "a", "missing", "b" };
	struct proto_result res[3];
	struct dfx_cl c;
	uint32_t m = 0;

	dfx_client(&c, 1);
	cr_assert_eq(dfx_reg_page(&c, 0, "a", 0, res), 0);
	cr_assert_eq(dfx_reg_page(&c, 0, "b", 1, res), 0);
	for (int op = PROTO_OP_LOOKUP; op <= PROTO_OP_EXISTS; op++) {
		cr_assert_eq(dfx_keyop(&c, (uint16_t)op, 0, 3, keys, res, &m),
		    0);
		cr_assert_eq(m, 3);
		cr_assert_eq(res[0].status, 0);
		cr_assert_eq(res[0].loc.off, dfx_page_off(&c, 0));
		cr_assert_eq(res[0].loc.region_len, REGION_LEN);
		cr_assert_eq(res[1].status, CXLP_E_NOTFOUND);
		cr_assert_eq(res[2].status, 0);
		cr_assert_eq(res[2].loc.off, dfx_page_off(&c, 1));
	}
	cr_assert_eq(dfx_stat_of(&c, PROTO_STAT_PINS), 0);
}

Test(dispatch, lookup_with_pin_pins_each_key_found)
{
	static const char *const keys[] = { "a", "missing" };
	struct proto_result res[2];
	struct dfx_cl c;
	uint32_t m = 0;

	dfx_client(&c, 1);
	cr_assert_eq(dfx_reg_page(&c, 0, "a", 0, res), 0);
	cr_assert_eq(dfx_keyop(&c, PROTO_OP_LOOKUP, PROTO_F_PIN, 2, keys, res,
	    &m), 0);
	cr_assert_eq(res[1].status, CXLP_E_NOTFOUND);
	cr_assert_eq(dfx_stat_of(&c, PROTO_STAT_PINS), 1);
	cr_assert_eq(dfx_key1(&c, PROTO_OP_DELETE, 0, "a"), CXLP_E_PINNED);
}
