/*
 * test_group_unknown.c -- a request group's commit that gets no answer
 * (handler/kv/group_end.c, cxlp_group_commit): the call reports
 * CXLP_E_UNKNOWN, and cxlp_group_commit again finds out what happened,
 * whether the metaserver had committed (the answer was lost) or never
 * saw the commit (the request was lost), or answered in a way that cannot
 * be read (which must not be taken for a refusal: rolling back a commit
 * that was applied would free pages its keys point at). A
 * fault-injection proxy (tests/support/proxy.h) loses every copy of the
 * GROUP requests or answers, or garbles the answers, while told to. (From a review: a G_UNKNOWN group could
 * not be committed or resolved again.)
 */
#include <pthread.h>

#include "itest.h"
#include "proto.h"
#include "proxy.h"

#define GARBLE (-1) /* lose.act: pass GROUP answers with a bad header */

static struct {
	pthread_mutex_t lock;
	int act; /* enum proxy_action for GROUP ops, or GARBLE */
} lose = { PTHREAD_MUTEX_INITIALIZER, PROXY_PASS };

static enum proxy_action
hook(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	enum proxy_action a = PROXY_PASS;

	(void)arg, (void)req_id, (void)reply_len, (void)delay_ms;
	pthread_mutex_lock(&lose.lock);
	if (op == PROTO_OP_GROUP && lose.act == GARBLE && reply != NULL &&
	    *reply_len > 0) {
		reply[0] ^= 0x5a; /* the version: not an answer to read */
	} else if (op == PROTO_OP_GROUP && lose.act != GARBLE &&
	    (reply != NULL) == (lose.act == PROXY_DROP_REPLY)) {
		a = (enum proxy_action)lose.act;
	}
	pthread_mutex_unlock(&lose.lock);
	return a;
}

static void
lose_group_ops(int act)
{
	pthread_mutex_lock(&lose.lock);
	lose.act = act;
	pthread_mutex_unlock(&lose.lock);
}

static void
start(void)
{
	itest_proxy_start(hook);
}

static void
stop(void)
{
	lose_group_ops(PROXY_PASS);
	itest_proxy_stop();
}

TestSuite(group_unknown, .init = start, .fini = stop, .timeout = 60);

/* Open group id of two chunks, store both keys "<id>-0/1" (the last one
 * commits) while act loses the GROUP ops: CXLP_E_UNKNOWN. Then, GROUP
 * ops passing again, a second commit gives 0, and the keys are in. */
static void
unknown_then_commit(const char *id, int act)
{
	struct cxlp_handler *h = itest_connect_via_proxy(300, 1);
	struct cxlp_group *g = NULL;
	char k[2][32];
	const void *kp[2] = { k[0], k[1] };
	size_t kl[2], lens[2] = { 64, 64 };
	cxlp_page_t pg[2];
	bool stored[2];
	struct cxlp_stats st;

	cr_assert_rc(cxlp_group_open(h, id, strlen(id), 2, 0, 0, &g), 0);
	for (int i = 0; i < 2; i++) {
		void *buf;

		snprintf(k[i], sizeof(k[i]), "%s-%d", id, i);
		kl[i] = strlen(k[i]);
		cr_assert_rc(cxlp_group_alloc(h, g, &pg[i], &buf), 0);
		memset(buf, 'a' + i, 64);
	}
	cr_assert_rc(cxlp_group_store(h, g, 1, kp, kl, pg, lens, stored), 0);
	lose_group_ops(act);
	cr_assert_rc(cxlp_group_store(h, g, 1, kp + 1, kl + 1, pg + 1,
	    lens + 1, stored + 1), CXLP_E_UNKNOWN, "the last batch commits");
	cr_assert_eq(cxlp_group_state(g), CXLP_GROUP_UNKNOWN);
	lose_group_ops(PROXY_PASS);
	cr_assert_rc(cxlp_group_commit(h, g), 0, "committed, or found so");
	cr_assert_eq(cxlp_group_state(g), CXLP_GROUP_COMMITTED);
	for (int i = 0; i < 2; i++) {
		const void *data;
		size_t len;

		cr_assert_rc(cxlp_retrieve(h, k[i], kl[i], 0, &data, &len), 0);
		cr_assert_eq(len, 64);
		cr_assert_eq(((const char *)data)[63], 'a' + i);
	}
	cr_assert_rc(cxlp_stats(h, &st), 0);
	cr_assert_eq(st.pages_registered, 2, "both pages hold their keys");
	cr_assert_eq(st.pages_reserved, 0, "the reservation went back");
	cr_assert_eq(st.pins, 0);
	cxlp_group_close(h, &g);
	cxlp_close(&h);
}

Test(group_unknown, a_commit_whose_answer_was_lost_is_found_committed)
{
	unknown_then_commit("lostreply", PROXY_DROP_REPLY);
}

Test(group_unknown, a_commit_that_never_arrived_is_sent_again)
{
	unknown_then_commit("lostreq", PROXY_DROP_REQUEST);
}

Test(group_unknown, a_commit_answer_that_cannot_be_read_is_not_a_refusal)
{
	unknown_then_commit("garbled", GARBLE);
}
