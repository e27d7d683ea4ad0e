/*
 * group.c -- request groups: the chunks of one request, sent in several
 * batches, that a reader sees all at once (at commit) or never.
 *
 * DESIGN NOTES
 *
 * 1. Admission. A group declares its total at open and, unless
 *    CXLP_GROUP_NORESERVE, reserves that many pages (cxlp_reserve, with
 *    the open's wait): a request the pool cannot take waits, in arrival
 *    order, and fails with CXLP_E_NOSPACE at the end of its wait, before
 *    a byte is written. cxlp_group_alloc takes from the reservation.
 * 2. Staging. A batch (store_group_batch, GROUP_REGISTER) stages its keys
 *    at the server: nothing enters the index, so no reader, no eviction
 *    and no restart meets a key of an open group. The pages stay this
 *    handler's, REGISTERED here, until the commit. A key already in the
 *    pool is pinned for the group and its page freed, as a store's loser
 *    is; cxlp_group_skip_present pins such keys before their chunks are
 *    written at all.
 * 3. Commit makes every staged key visible at once, in one durable step
 *    (pool/kv.c note 2: the keys go in unseen, then one commit point;
 *    a restart completes or rolls back a commit cut short), bracketed by
 *    the pool's commit_seq, which batch lookups from shared memory check
 *    (direct.c), and answers where each key now is: a key another
 *    writer stored meanwhile frees this group's page. The last batch of
 *    a group (count == total) commits it. What is left of the
 *    reservation goes back.
 * 4. Rollback: abort, close of an open group, and, with
 *    CXLP_GROUP_ATOMIC, a batch with a key not stored or an alloc that
 *    failed. The server drops the staged keys and the group's pins; the
 *    handler frees the staged pages. A group cancelled (by any handler,
 *    this one too) is found so at the next call (CXLP_E_CANCELED), and
 *    one the server no longer knows (NOTFOUND: a metaserver restart;
 *    groups are DRAM only) the same; then this handler releases the
 *    group's pins itself (pins survive a restart). A batch whose outcome
 *    was lost rolls back too (its keys were only staged).
 * 5. A commit whose outcome was lost. No answer at all: its pages stay
 *    REGISTERED (kept, never freed while the handler lives) and the group
 *    reports CXLP_E_UNKNOWN, since its keys may be in the pool and a copy
 *    of the commit may still land; a cxlp_group_commit again sends it
 *    again (a server that still holds the group commits it; one that
 *    holds none answers NOTFOUND, below). NOTFOUND on its retry: the server
 *    restarted and has no group, and no copy can land, but it may have
 *    committed the keys before it went (a commit cut short by the crash
 *    is completed or rolled back whole by the restart, before it
 *    serves): group_end.c's commit_lost looks them up and takes all for
 *    a commit, none for a rollback. It still takes out a part it finds
 *    (keys of the group that another writer stored meanwhile, evicted or
 *    deleted since), as it did when a crash could leave part of a
 *    commit in.
 * 6. Limits, for what crosses a restart (nothing of a group is on media
 *    but its pins and, mid-commit, its keys, which the restart settles
 *    all or none: a writer that dies with the metaserver mid-commit
 *    leaves the whole group, or nothing of it, never a part, and no
 *    reader saw a part before: tests/integration/test_group_crash.c);
 *    a group's pins are not told apart from the
 *    session's own, so after a cancel and a restart both before this
 *    handler's next call, its release of the group's pins may take pins
 *    it took on the same keys itself; and a commit found whole after a
 *    restart may leave the group's pins held (whether the commit got to
 *    release them is not known: they end with the session). An ABORT
 *    whose answer is lost leaves the group's staged keys and pins at the
 *    server until the session ends. A batch that pinned present keys and
 *    whose answer a restart took leaves those pins unknown here: they
 *    end with the session (the pins are on media, the group is not).
 * 7. A group is used by one thread at a time; many groups may be in
 *    flight on one handler at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "kv.h"
#include "group.h"
#include "log.h"

static int
grow(void **v, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 16;
	void *p;

	if (need <= *cap) {
		return 0;
	}
	while (c < need) {
		c *= 2;
	}
	if ((p = realloc(*v, c * size)) == NULL) {
		return cxlp_fail(-ENOMEM, "group: out of memory");
	}
	*v = p;
	*cap = c;
	return 0;
}

/* cxlp_group_open -- see cxlpool.h */
int
cxlp_group_open(struct cxlp_handler *h, const void *id, size_t id_len,
    size_t total, unsigned flags, unsigned wait_ms, struct cxlp_group **out)
{
	struct cxlp_group *g;
	int rc;

	if (out == NULL || id == NULL || id_len == 0 ||
	    id_len > CXLP_GROUP_ID_MAX || total > CXLP_GROUP_TOTAL_MAX ||
	    (flags & ~(CXLP_GROUP_ATOMIC | CXLP_GROUP_PIN |
	    CXLP_GROUP_NORESERVE)) != 0) {
		return cxlp_fail(-EINVAL, "group_open: NULL, an id of %zu "
		    "bytes (1..%d), a total of %zu (0..%d) or bad flags",
		    id_len, CXLP_GROUP_ID_MAX, total, CXLP_GROUP_TOTAL_MAX);
	}
	*out = NULL;
	if ((rc = h_check_open(h)) != 0 || (rc = h_check_session(h)) != 0) {
		return rc;
	}
	if ((g = calloc(1, sizeof(*g))) == NULL) {
		return cxlp_fail(-ENOMEM, "group: out of memory");
	}
	memcpy(g->id, id, id_len);
	g->id_len = (uint16_t)id_len;
	g->total = total;
	g->flags = flags;
	if (total > 0 && !(flags & CXLP_GROUP_NORESERVE) &&
	    (rc = cxlp_reserve(h, total, wait_ms, &g->res)) != 0) {
		free(g);
		return rc; /* not admitted: CXLP_E_NOSPACE says why */
	}
	if ((rc = group_cmd(h, g, PROTO_GROUP_OPEN)) != 0) {
		if (rc == CXLP_E_TIMEOUT || rc == CXLP_E_CONN ||
		    rc == CXLP_E_UNKNOWN) { /* it may be open: not for long */
			(void)group_cmd(h, g, PROTO_GROUP_ABORT);
			(void)cxlp_fail(rc, "group_open: no answer");
		}
		group_release_reservation(h, g);
		free(g);
		if (rc == CXLP_E_GROUP) {
			return cxlp_fail(rc, "group_open: the id is in use by an "
			    "open group (this handler's, or another's); "
			    "cxlp_group_cancel ends one that is stale");
		}
		return rc == CXLP_E_BADOP ? cxlp_fail(rc, "group_open: the "
		    "metaserver predates request groups") : rc;
	}
	*out = g;
	return 0;
}

/* cxlp_group_alloc -- see cxlpool.h */
int
cxlp_group_alloc(struct cxlp_handler *h, struct cxlp_group *g,
    cxlp_page_t *page, void **buf)
{
	int rc = group_check(h, g);

	if (rc != 0) {
		return rc;
	}
	rc = cxlp_reserve_left(g->res) > 0 ?
	    cxlp_reserve_alloc(h, g->res, page, buf) :
	    cxlp_alloc(h, page, buf);
	if (rc != 0 && (g->flags & CXLP_GROUP_ATOMIC)) {
		char why[200];

		snprintf(why, sizeof(why), "an alloc failed: %s",
		    cxlp_errormsg());
		(void)group_rollback(h, g, false, false, why);
		return cxlp_fail(rc, "group \"%.*s\" rolled back: %s",
		    (int)g->id_len, (const char *)g->id, why);
	}
	return rc;
}

static int
key_copy(struct gkey *k, const void *key, size_t len)
{
	if ((k->key = malloc(len)) == NULL) {
		return cxlp_fail(-ENOMEM, "group: out of memory");
	}
	memcpy(k->key, key, len);
	k->len = (uint16_t)len;
	return 0;
}

/* Remember the keys of a batch: each staged at its page (kept), or
 * pinned present. Every staged page is recorded first, so that a
 * rollback frees them all even when a key copy fails for want of
 * memory (a key without its copy: see group_end.c, lost commits). */
static int
note_batch(struct cxlp_group *g, size_t n, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const bool ok[],
    const bool kept[])
{
	size_t s0 = g->nstaged;
	int rc;

	if ((rc = grow((void **)&g->staged, &g->cap_staged, g->nstaged + n,
	    sizeof(*g->staged))) != 0 || (rc = grow((void **)&g->skeys,
	    &g->cap_skeys, g->nstaged + n, sizeof(*g->skeys))) != 0 ||
	    (rc = grow((void **)&g->pins, &g->cap_pins, g->npins + n,
	    sizeof(*g->pins))) != 0) {
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		if (kept != NULL && kept[i]) {
			g->skeys[g->nstaged] = (struct gkey){ NULL, 0 };
			g->staged[g->nstaged++] = pages[i];
		}
		g->count += ok[i];
	}
	for (size_t i = 0, j = s0; i < n && rc == 0; i++) {
		if (kept != NULL && kept[i]) {
			rc = key_copy(&g->skeys[j++], keys[i], key_lens[i]);
		} else if (ok[i] && (rc = key_copy(&g->pins[g->npins], keys[i],
		    key_lens[i])) == 0) {
			g->npins++;
		}
	}
	return rc;
}

/* the first key of a batch that is not in: -1 if none */
static long
first_refused(size_t n, const bool ok[])
{
	for (size_t i = 0; i < n; i++) {
		if (!ok[i]) {
			return (long)i;
		}
	}
	return -1;
}

/* After a batch: roll back (atomic, a key refused), commit (the last),
 * or go on. */
static int
after_batch(struct cxlp_handler *h, struct cxlp_group *g, size_t n,
    const bool ok[], const int status[])
{
	long bad = first_refused(n, ok);

	if (bad >= 0 && (g->flags & CXLP_GROUP_ATOMIC)) {
		char why[120];

		snprintf(why, sizeof(why), "key %ld of a batch not stored "
		    "(%s)", bad, cxlp_strerror(status[bad]));
		return group_rollback(h, g, false, false, why);
	}
	if (g->count == g->total) {
		return cxlp_group_commit(h, g);
	}
	return 0;
}

/* Over the declared total, or none: refused here, before any page is
 * consumed, and the group rolled back (the server would do the same). */
static int
admit(struct cxlp_handler *h, struct cxlp_group *g, size_t n)
{
	char why[160];

	if (g->total == 0) {
		return cxlp_fail(CXLP_E_GROUP, "group \"%.*s\" declares no "
		    "total: open it with the number of chunks it will send",
		    (int)g->id_len, (const char *)g->id);
	}
	if (g->count + n <= g->total) {
		return 0;
	}
	snprintf(why, sizeof(why), "a batch of %zu chunks would take it to "
	    "%zu of its declared %zu", n, g->count + n, g->total);
	(void)group_rollback(h, g, false, false, why);
	return cxlp_fail(CXLP_E_GROUP, "group \"%.*s\": %s; every earlier "
	    "batch is rolled back", (int)g->id_len, (const char *)g->id, why);
}

/* cxlp_group_store -- see cxlpool.h */
int
cxlp_group_store(struct cxlp_handler *h, struct cxlp_group *g, size_t n,
    const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], bool stored[])
{
	int *status, reg_rc = 0, rc = group_check(h, g);
	bool *kept;

	if (rc == CXLP_E_CANCELED) { /* earlier: this batch's pages stay */
		return cxlp_fail(CXLP_E_GROUP, "%s", cxlp_errormsg());
	}
	if (rc != 0) {
		return rc;
	}
	if (n == 0 || n > CXLP_BATCH_MAX || stored == NULL) {
		return cxlp_fail(-EINVAL, "group_store: %zu keys (1..%d) or "
		    "NULL", n, CXLP_BATCH_MAX);
	}
	if ((rc = admit(h, g, n)) != 0) {
		return rc;
	}
	status = calloc(n, sizeof(*status));
	kept = calloc(n, sizeof(*kept));
	if (status == NULL || kept == NULL) {
		free(status);
		free(kept);
		return cxlp_fail(-ENOMEM, "group_store: out of memory");
	}
	rc = store_group_batch(h, g->id, g->id_len, n, keys, key_lens, pages,
	    lens, stored, status, kept, &reg_rc);
	if (rc == 0 && reg_rc == 0) {
		rc = note_batch(g, n, keys, key_lens, pages, stored, kept);
		rc = rc != 0 ? group_rollback(h, g, false, false, cxlp_errormsg()) :
		    after_batch(h, g, n, stored, status);
	} else if (rc == 0 || rc == CXLP_E_UNKNOWN) {
		rc = group_failed(h, g, reg_rc);
	}
	free(status);
	free(kept);
	return rc;
}

/* cxlp_group_skip_present -- see cxlpool.h */
int
cxlp_group_skip_present(struct cxlp_handler *h, struct cxlp_group *g,
    size_t n, const void *const keys[], const size_t key_lens[],
    bool present[])
{
	struct proto_result *res;
	struct creply rep;
	struct pbuf body;
	int rc = group_check(h, g);

	if (rc != 0 || (rc = h_check_keys(n, keys, key_lens)) != 0) {
		return rc;
	}
	if (present == NULL || (res = calloc(n, sizeof(*res))) == NULL) {
		return cxlp_fail(present ? -ENOMEM : -EINVAL, "group_skip_"
		    "present: NULL or out of memory");
	}
	pbuf_init(&body);
	proto_put_group_id(&body, g->id, g->id_len);
	proto_put_keys(&body, 0, n, keys, key_lens);
	rc = h_call(h, PROTO_OP_GROUP_LOOKUP, &body, &rep);
	pbuf_fini(&body);
	if (rc == 0) {
		uint32_t got;

		rc = h_get_results(&rep, res, n, true, &got);
		client_reply_fini(&rep);
	}
	for (size_t i = 0; i < n; i++) {
		present[i] = rc == 0 && res[i].status == 0;
	}
	free(res);
	if (rc != 0) {
		return group_failed(h, g, rc);
	}
	if ((rc = note_batch(g, n, keys, key_lens, NULL, present,
	    NULL)) != 0) {
		return group_rollback(h, g, false, false, cxlp_errormsg());
	}
	return g->count == g->total ? cxlp_group_commit(h, g) : 0;
}
