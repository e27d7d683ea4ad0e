/*
 * test_dispatch_group.c -- the request-group ops (metaserver/op_group.c,
 * group.c) driven with frames, as a peer that does not follow the
 * handler's rules would send them: unknown and foreign groups, a batch
 * without a total or past it, staged keys that no LOOKUP finds until the
 * commit, a key another session stored meanwhile, a session's end, and
 * malformed GROUP bodies. Each ends with what the pool holds.
 */
#include <fcntl.h>
#include <stddef.h>

#include "dispatch_fixture.h"
#include "layout.h"

TestSuite(dispatch_group, .init = dfx_setup, .fini = dfx_teardown);

/* the superblock's commit_seq, read from the pool file */
static uint64_t
commit_seq(void)
{
	int fd = open(dfx_pool_file, O_RDONLY);
	uint64_t v = 0;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &v, sizeof(v), offsetof(struct pool_sb,
	    commit_seq)), (ssize_t)sizeof(v));
	close(fd);
	return v;
}

static int
group(struct dfx_cl *c, uint32_t cmd, const char *id, uint32_t total,
    uint32_t flags, struct proto_result *res, uint32_t *n)
{
	struct proto_group g = {cmd, (const uint8_t *)id,
	    (uint16_t)strlen(id), total, flags};
	struct pbuf b;
	int st;

	pbuf_init(&b);
	proto_put_group(&b, &g);
	st = dfx_call(c, PROTO_OP_GROUP, &b, res, n);
	pbuf_fini(&b);
	return st;
}

/* stage key at page of c's region in group id */
static int
stage(struct dfx_cl *c, const char *id, const char *key, unsigned page,
    struct proto_result *res)
{
	struct proto_reg r = { { (const uint8_t *)key, (uint16_t)strlen(key) },
		c->region.region, dfx_page_off(c, page), 100 };
	struct pbuf b;
	uint32_t n = 0;
	int st;

	pbuf_init(&b);
	proto_put_group_id(&b, id, strlen(id));
	proto_put_regs(&b, 0, 1, &r);
	st = dfx_call(c, PROTO_OP_GROUP_REGISTER, &b, res, &n);
	pbuf_fini(&b);
	if (st == 0) {
		cr_assert_eq(n, 1);
	}
	return st;
}

Test(dispatch_group, staged_keys_are_found_only_after_the_commit)
{
	struct proto_result res[4];
	struct dfx_cl a, b;
	uint32_t n = 0;

	dfx_client(&a, 1);
	dfx_client(&b, 2);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "g", 3, 0, NULL, NULL), 0);
	cr_assert_eq(stage(&a, "g", "k0", 0, &res[0]), 0);
	cr_assert_eq(res[0].status, 0);
	cr_assert_eq(res[0].loc.off, dfx_page_off(&a, 0), "staged at its page");
	cr_assert_eq(stage(&a, "g", "k1", 1, &res[0]), 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_LOOKUP, 0, "k0"), CXLP_E_NOTFOUND);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_KEYS), 0);
	/* b stores k1 itself meanwhile: first writer wins at the commit */
	cr_assert_eq(dfx_reg_page(&b, 0, "k1", 0, &res[0]), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_COMMIT, "g", 0, 0, res, &n), 0);
	cr_assert_eq(n, 2, "one result per staged key");
	cr_assert_eq(res[0].loc.off, dfx_page_off(&a, 0));
	cr_assert(res[0].flags & PROTO_R_NEW);
	cr_assert_eq(res[1].loc.off, dfx_page_off(&b, 0), "k1 is b's");
	cr_assert_eq(res[1].flags & PROTO_R_NEW, 0);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_LOOKUP, 0, "k0"), 0);
	cr_assert_eq(dfx_stat_of(&b, PROTO_STAT_KEYS), 2);
	cr_assert_eq(commit_seq(), 2, "one commit, bracketed: odd, then even");
	cr_assert_eq(group(&a, PROTO_GROUP_COMMIT, "g", 0, 0, NULL, NULL),
	    CXLP_E_NOTFOUND, "a committed group is gone");
}

/* A key named twice in one group ([k, x, k]): the second k is answered
 * with the first's entry (a PEND slot of this commit), never with the
 * page staged between them (pool/kv.c kv_insert_as). */
Test(dispatch_group, a_key_named_twice_commits_once_with_its_own_page)
{
	struct proto_result res[4];
	struct dfx_cl a;
	uint32_t n = 0;

	dfx_client(&a, 1);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "d", 3, 0, NULL, NULL), 0);
	cr_assert_eq(stage(&a, "d", "k", 0, &res[0]), 0);
	cr_assert_eq(stage(&a, "d", "x", 1, &res[0]), 0);
	cr_assert_eq(stage(&a, "d", "k", 2, &res[0]), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_COMMIT, "d", 0, 0, res, &n), 0);
	cr_assert_eq(n, 3, "one result per staged key");
	cr_assert_eq(res[0].loc.off, dfx_page_off(&a, 0), "k is k's page");
	cr_assert(res[0].flags & PROTO_R_NEW);
	cr_assert_eq(res[1].loc.off, dfx_page_off(&a, 1), "x is x's page");
	cr_assert_eq(res[2].loc.off, dfx_page_off(&a, 0), "k again: k's");
	cr_assert_eq(res[2].loc.len, res[0].loc.len);
	cr_assert_eq(res[2].flags & PROTO_R_NEW, 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_KEYS), 2);
	cr_assert_eq(pool_check(dfx_ms.pool, NULL, NULL), 0);
	cr_assert_eq(dfx_reg_page(&a, 0, "y", 2, &res[0]), 0);
	cr_assert_eq(res[0].status, 0, "page 2 was never taken");
}

/* A commit whose second key cannot go in (its page is the first one's)
 * takes the first out again: none of it was ever visible, the index
 * holds none of it, and the page is free for a key again
 * (pool_commit_rollback, pool/kv.c note 2). */
Test(dispatch_group, a_commit_that_fails_midway_leaves_nothing)
{
	struct proto_result res;
	uint64_t seq0 = commit_seq();
	struct dfx_cl a;

	dfx_client(&a, 1);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "f", 2, 0, NULL, NULL), 0);
	cr_assert_eq(stage(&a, "f", "f0", 0, &res), 0);
	cr_assert_eq(stage(&a, "f", "f1", 0, &res), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_COMMIT, "f", 0, 0, NULL, NULL),
	    CXLP_E_BUSY);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_LOOKUP, 0, "f0"), CXLP_E_NOTFOUND);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_KEYS), 0);
	cr_assert_eq(commit_seq(), seq0 + 2, "bracketed, and ended");
	cr_assert_eq(pool_check(dfx_ms.pool, NULL, NULL), 0);
	cr_assert_eq(dfx_reg_page(&a, 0, "f2", 0, &res), 0, "page 0 is free");
	cr_assert_eq(res.status, 0);
}

Test(dispatch_group, only_its_owner_may_use_it_and_anyone_may_cancel_it)
{
	struct proto_result res;
	struct dfx_cl a, b;

	dfx_client(&a, 1);
	dfx_client(&b, 2);
	cr_assert_eq(stage(&a, "nope", "k", 0, &res), CXLP_E_NOTFOUND);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "g", 2, 0, NULL, NULL), 0);
	cr_assert_eq(group(&b, PROTO_GROUP_OPEN, "g", 2, 0, NULL, NULL),
	    CXLP_E_GROUP, "the id is taken");
	cr_assert_eq(stage(&b, "g", "k", 0, &res), CXLP_E_GROUP);
	cr_assert_eq(group(&b, PROTO_GROUP_COMMIT, "g", 0, 0, NULL, NULL),
	    CXLP_E_GROUP);
	cr_assert_eq(group(&b, PROTO_GROUP_ABORT, "g", 0, 0, NULL, NULL),
	    CXLP_E_GROUP);
	cr_assert_eq(stage(&a, "g", "k", 0, &res), 0);
	cr_assert_eq(group(&b, PROTO_GROUP_CANCEL, "g", 0, 0, NULL, NULL), 0);
	cr_assert_eq(group(&b, PROTO_GROUP_CANCEL, "g", 0, 0, NULL, NULL), 0,
	    "a second cancel");
	cr_assert_eq(stage(&a, "g", "k2", 1, &res), CXLP_E_CANCELED);
	cr_assert_eq(group(&a, PROTO_GROUP_COMMIT, "g", 0, 0, NULL, NULL),
	    CXLP_E_CANCELED);
	cr_assert_eq(group(&a, PROTO_GROUP_ABORT, "g", 0, 0, NULL, NULL), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_ABORT, "g", 0, 0, NULL, NULL),
	    CXLP_E_NOTFOUND);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_KEYS), 0);
	cr_assert_eq(dfx_ms.groups.n, 0);
	/* the owner's own cancel keeps the record for its next call */
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "own", 2, 0, NULL, NULL), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_CANCEL, "own", 0, 0, NULL, NULL),
	    0);
	cr_assert_eq(stage(&a, "own", "k", 0, &res), CXLP_E_CANCELED);
	cr_assert_eq(group(&a, PROTO_GROUP_ABORT, "own", 0, 0, NULL, NULL), 0);
	cr_assert_eq(dfx_ms.groups.key_bytes, 0, "staged key bytes kept");
	cr_assert_eq(dfx_ms.groups.entries, 0, "entries kept");
}

Test(dispatch_group, a_batch_without_a_total_or_past_it_is_refused)
{
	struct proto_result res;
	struct dfx_cl a;

	dfx_client(&a, 1);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "z", 0, 0, NULL, NULL), 0);
	cr_assert_eq(stage(&a, "z", "k", 0, &res), CXLP_E_GROUP);
	cr_assert(strstr(cxlp_errormsg(), "declares no total") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "t", 1, 0, NULL, NULL), 0);
	cr_assert_eq(stage(&a, "t", "k0", 0, &res), 0);
	cr_assert_eq(stage(&a, "t", "k1", 1, &res), CXLP_E_GROUP);
	cr_assert(strstr(cxlp_errormsg(), "2 of its declared 1") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_eq(group(&a, PROTO_GROUP_COMMIT, "t", 0, 0, NULL, NULL),
	    CXLP_E_CANCELED, "past its total, the group is rolled back");
	cr_assert_eq(group(&a, PROTO_GROUP_ABORT, "t", 0, 0, NULL, NULL), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_EXISTS, 0, "k0"), CXLP_E_NOTFOUND);
}

Test(dispatch_group, a_present_key_is_pinned_for_the_group_until_its_end)
{
	struct proto_result res;
	struct dfx_cl a;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "have", 0, &res), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "p", 2, 0, NULL, NULL), 0);
	cr_assert_eq(stage(&a, "p", "have", 1, &res), 0);
	cr_assert_eq(res.loc.off, dfx_page_off(&a, 0), "found where it is");
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 1);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_DELETE, 0, "have"), CXLP_E_PINNED);
	cr_assert_eq(group(&a, PROTO_GROUP_ABORT, "p", 0, 0, NULL, NULL), 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_PINS), 0);
	cr_assert_eq(dfx_key1(&a, PROTO_OP_DELETE, 0, "have"), 0);
}

/* GROUP_LOOKUP (cxlp_group_skip_present) counts its keys in the lookup
 * counters, as LOOKUP does: the hit rate /metrics shows covers them */
Test(dispatch_group, a_group_lookup_counts_its_keys_found_and_missing)
{
	static const char *const keys[] = { "have", "nope", "none" };
	struct proto_result res[3];
	struct dfx_cl a;
	struct pbuf b;
	uint64_t found0, missing0;
	uint32_t n = 0;

	dfx_client(&a, 1);
	cr_assert_eq(dfx_reg_page(&a, 0, "have", 0, &res[0]), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "q", 3, 0, NULL, NULL), 0);
	found0 = dfx_ms.metrics.lookup_found;
	missing0 = dfx_ms.metrics.lookup_missing;
	pbuf_init(&b);
	proto_put_group_id(&b, "q", 1);
	dfx_put_keys(&b, 0, 3, keys);
	cr_assert_eq(dfx_call(&a, PROTO_OP_GROUP_LOOKUP, &b, res, &n), 0);
	pbuf_fini(&b);
	cr_assert_eq(n, 3);
	cr_assert_eq(res[0].status, 0);
	cr_assert_eq(dfx_ms.metrics.lookup_found - found0, 1);
	cr_assert_eq(dfx_ms.metrics.lookup_missing - missing0, 2);
	cr_assert_eq(group(&a, PROTO_GROUP_ABORT, "q", 0, 0, NULL, NULL), 0);
}

/* stage n keys of klen bytes ("<tag>-<i>", padded) at page 0 of c's
 * region in group id, in one GROUP_REGISTER: the dispatch's status */
static int
stage_many(struct dfx_cl *c, const char *id, const char *tag, uint32_t from,
    uint32_t n, size_t klen)
{
	static char names[4096][256];
	static struct proto_result res[4096];
	struct proto_reg r[4096];
	struct pbuf b;
	uint32_t got = 0;
	int st;

	cr_assert_leq(n, 4096);
	for (uint32_t i = 0; i < n; i++) {
		memset(names[i], 'x', klen);
		snprintf(names[i], klen, "%s-%u", tag, from + i);
		names[i][strlen(names[i])] = 'x';
		r[i] = (struct proto_reg){ { (const uint8_t *)names[i],
		    (uint16_t)klen }, c->region.region, dfx_page_off(c, 0),
		    100 };
	}
	pbuf_init(&b);
	proto_put_group_id(&b, id, strlen(id));
	proto_put_regs(&b, 0, n, r);
	st = dfx_call(c, PROTO_OP_GROUP_REGISTER, &b, res, &got);
	pbuf_fini(&b);
	return st;
}

/* One session staging keys without end meets its own bound (a quarter
 * of the metaserver's bytes of staged keys) and leaves room for others. */
Test(dispatch_group, one_session_cannot_take_every_group_bound,
    .timeout = 120)
{
	struct dfx_cl a, b;
	char id[16];
	uint32_t staged = 0;
	int st = 0;

	dfx_client(&a, 1);
	dfx_client(&b, 2);
	for (unsigned g = 0; st == 0 && g < 8; g++) {
		snprintf(id, sizeof(id), "big%u", g);
		cr_assert_eq(group(&a, PROTO_GROUP_OPEN, id, 65536, 0, NULL,
		    NULL), 0);
		for (uint32_t i = 0; st == 0 && i < 65536; i += 1024) {
			st = stage_many(&a, id, id, i, 1024, 250);
			staged += st == 0 ? 1024 : 0;
		}
	}
	cr_assert_eq(st, CXLP_E_NOSPACE, "after %u keys", staged);
	cr_assert_leq((uint64_t)staged * 250, MS_GROUP_KEY_BYTES_PER_SESSION);
	cr_assert_gt((uint64_t)(staged + 1024) * 250,
	    MS_GROUP_KEY_BYTES_PER_SESSION, "refused before its bound: %u "
	    "keys (%s)", staged, cxlp_errormsg());
	cr_assert_eq(group(&b, PROTO_GROUP_OPEN, "other", 8, 0, NULL, NULL),
	    0);
	cr_assert_eq(stage_many(&b, "other", "o", 0, 8, 250), 0,
	    "another session still stages");
}

/* A late copy of a GROUP_REGISTER (or ABORT) for an earlier group of an
 * id, arriving after that group ended and the id was opened again by the
 * same session, is no request of the new group's: its page may hold
 * another chunk by then. A session's request ids only grow, so one older
 * than the group's OPEN is refused. */
Test(dispatch_group, a_late_copy_for_an_earlier_group_of_the_id_is_refused)
{
	struct proto_result res[1];
	struct proto_reg r;
	struct dfx_cl a;
	struct pbuf b, rep;
	uint64_t late;
	uint32_t n = 0;

	dfx_client(&a, 1);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "re", 2, 0, NULL, NULL), 0);
	late = ++a.next_id; /* the first group's REGISTER, lost in transit */
	cr_assert_eq(group(&a, PROTO_GROUP_ABORT, "re", 0, 0, NULL, NULL), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "re", 2, 0, NULL, NULL), 0);
	r = (struct proto_reg){ { (const uint8_t *)"old", 3 },
	    a.region.region, dfx_page_off(&a, 0), 100 };
	pbuf_init(&b);
	pbuf_init(&rep);
	proto_put_group_id(&b, "re", 2);
	proto_put_regs(&b, 0, 1, &r);
	cr_assert_eq(dfx_call_id(&a, PROTO_OP_GROUP_REGISTER, late, &b, &rep,
	    res, &n), CXLP_E_NOTFOUND);
	pbuf_fini(&b);
	pbuf_fini(&rep);
	cr_assert_eq(ms_group_find(&dfx_ms, "re", 2)->staged, 0,
	    "nothing staged in the new group");
	cr_assert_eq(stage(&a, "re", "new", 1, res), 0, "its own requests go");
	cr_assert_eq(ms_group_find(&dfx_ms, "re", 2)->staged, 1);
	cr_assert_eq(group(&a, PROTO_GROUP_ABORT, "re", 0, 0, NULL, NULL), 0);
}

Test(dispatch_group, the_end_of_its_session_removes_it)
{
	struct proto_result res;
	struct dfx_cl a, b;

	dfx_client(&a, 1);
	dfx_client(&b, 2);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "s", 2, 0, NULL, NULL), 0);
	cr_assert_eq(stage(&a, "s", "k", 0, &res), 0);
	cr_assert_eq(dfx_call(&a, PROTO_OP_BYE, NULL, NULL, NULL), 0);
	cr_assert_eq(group(&b, PROTO_GROUP_OPEN, "s", 2, 0, NULL, NULL), 0,
	    "the id of an ended session's group is free");
	cr_assert_eq(dfx_ms.groups.n, 1);
	cr_assert_eq(dfx_key1(&b, PROTO_OP_EXISTS, 0, "k"), CXLP_E_NOTFOUND);
}

/* malformed GROUP bodies get CXLP_E_PROTO and change nothing */
Test(dispatch_group, malformed_bodies_are_refused)
{
	const struct proto_group bad[] = {
		{ 9, (const uint8_t *)"g", 1, 1, 0 },            /* command */
		{ PROTO_GROUP_OPEN, (const uint8_t *)"g", 0, 1, 0 }, /* id */
		{ PROTO_GROUP_OPEN, (const uint8_t *)"g", 1,
		    PROTO_GROUP_TOTAL_MAX + 1, 0 },               /* total */
		{ PROTO_GROUP_OPEN, (const uint8_t *)"g", 1, 1, 0x80 }, /* flag */
		{ PROTO_GROUP_COMMIT, (const uint8_t *)"g", 1, 0,
		    PROTO_GF_PIN },                               /* flag */
	};
	struct dfx_cl a;

	dfx_client(&a, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pbuf b;

		pbuf_init(&b);
		proto_put_group(&b, &bad[i]);
		cr_assert_eq(dfx_call(&a, PROTO_OP_GROUP, &b, NULL, NULL),
		    CXLP_E_PROTO, "body %zu", i);
		pbuf_fini(&b);
	}
	cr_assert_eq(dfx_ms.groups.n, 0);
}

static void *
commit_bg(void *arg)
{
	struct proto_result res[2];
	uint32_t n = 0;

	return (void *)(intptr_t)group(arg, PROTO_GROUP_COMMIT, "slow", 0, 0,
	    res, &n);
}

/* While a commit inserts its keys, commit_seq is odd (a test hook makes
 * each insert pause: CXLP_COMMIT_PAUSE_US, pool/crashpt.c). */
Test(dispatch_group, commit_seq_is_odd_while_a_commit_runs)
{
	struct proto_result res;
	struct dfx_cl a;
	pthread_t t;
	void *rc;

	dfx_client(&a, 1);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "slow", 2, 0, NULL, NULL), 0);
	cr_assert_eq(stage(&a, "slow", "k0", 0, &res), 0);
	cr_assert_eq(stage(&a, "slow", "k1", 1, &res), 0);
	cr_assert_eq(commit_seq() % 2, 0);
	cr_assert_eq(setenv("CXLP_COMMIT_PAUSE_US", "150000", 1), 0);
	cr_assert_eq(pthread_create(&t, NULL, commit_bg, &a), 0);
	usleep(100 * 1000);
	cr_assert_eq(commit_seq() % 2, 1, "commit_seq even mid-commit");
	cr_assert_eq(pthread_join(t, &rc), 0);
	cr_assert_eq((intptr_t)rc, 0);
	cr_assert_eq(commit_seq() % 2, 0);
	cr_assert_eq(dfx_stat_of(&a, PROTO_STAT_KEYS), 2);
}

/* An OPEN whose answer was lost, sent again, finds its own empty group
 * (group.c note 5); one of another session, or one that holds keys, is
 * refused. A session holds at most MS_GROUPS_PER_SESSION groups. */
Test(dispatch_group, open_again_and_the_groups_of_one_session)
{
	struct proto_result res;
	struct dfx_cl a, b;
	char id[32];

	dfx_client(&a, 1);
	dfx_client(&b, 2);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "r", 2, 0, NULL, NULL), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "r", 2, 0, NULL, NULL),
	    CXLP_E_GROUP, "two handles of one session on one group would "
	    "free each other's pages");
	cr_assert_eq(dfx_ms.groups.n, 1);
	cr_assert_eq(group(&b, PROTO_GROUP_OPEN, "r", 2, 0, NULL, NULL),
	    CXLP_E_GROUP);
	cr_assert_eq(stage(&a, "r", "k", 0, &res), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "r", 2, 0, NULL, NULL),
	    CXLP_E_GROUP, "a group with a key staged is not opened again");
	cr_assert_eq(group(&a, PROTO_GROUP_CANCEL, "r", 0, 0, NULL, NULL), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_ABORT, "r", 0, 0, NULL, NULL), 0);
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "r", 2, 0, NULL, NULL), 0,
	    "ended, the id is free again");
	for (unsigned i = 1; i < MS_GROUPS_PER_SESSION; i++) {
		snprintf(id, sizeof(id), "g%u", i);
		cr_assert_eq(group(&a, PROTO_GROUP_OPEN, id, 1, 0, NULL, NULL),
		    0, "group %u", i);
	}
	cr_assert_eq(group(&a, PROTO_GROUP_OPEN, "one-more", 1, 0, NULL,
	    NULL), CXLP_E_NOSPACE);
	cr_assert_eq(group(&b, PROTO_GROUP_OPEN, "one-more", 1, 0, NULL,
	    NULL), 0, "another session's groups count apart");
}
