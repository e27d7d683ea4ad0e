/*
 * group_end.c -- how a request group ends (group.c has the design
 * notes): its commit, its rollback (abort, a failed batch, a cancel, a
 * restart the handler finds), a cancel of another handler's group, and
 * the close of the handle; and the GROUP round trip both ends use
 * (group_call). Below group.c, which opens groups and stores their
 * batches: nothing here calls it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "group.h"
#include "kv.h"
#include "log.h"

/* group_call -- see group.h */
int
group_call(struct cxlp_handler *h, struct cxlp_group *g, uint32_t cmd,
    struct creply *rep)
{
	struct proto_group m = {.cmd = cmd, .id = g->id, .id_len = g->id_len,
	    .total = cmd == PROTO_GROUP_OPEN ? (uint32_t)g->total : 0,
	    .flags = cmd == PROTO_GROUP_OPEN &&
	    (g->flags & CXLP_GROUP_PIN) ? PROTO_GF_PIN : 0};
	struct pbuf body;
	int rc;

	pbuf_init(&body);
	proto_put_group(&body, &m);
	rc = h_call(h, PROTO_OP_GROUP, &body, rep);
	pbuf_fini(&body);
	return rc;
}

/* group_cmd -- see group.h */
int
group_cmd(struct cxlp_handler *h, struct cxlp_group *g, uint32_t cmd)
{
	struct creply rep;
	int rc = group_call(h, g, cmd, &rep);

	if (rc == 0) {
		if (preader_end(&rep.body) != 0) {
			rc = cxlp_fail(CXLP_E_PROTO, "GROUP: a body in its "
			    "empty reply");
		}
		client_reply_fini(&rep);
	}
	return rc;
}

/* group_check -- see group.h */
int
group_check(struct cxlp_handler *h, const struct cxlp_group *g)
{
	int rc = h_check_open(h);

	if (rc != 0) {
		return rc;
	}
	if (g == NULL) {
		return cxlp_fail(-EINVAL, "group: NULL");
	}
	if (g->state != G_OPEN) {
		return cxlp_fail(g->state == G_ROLLED_BACK ? CXLP_E_CANCELED :
		    CXLP_E_GROUP, "group \"%.*s\" is %s", (int)g->id_len,
		    (const char *)g->id, g->state == G_ROLLED_BACK ?
		    "rolled back" : g->state == G_COMMITTED ? "committed" :
		    "of unknown outcome");
	}
	return 0;
}

/* the staged pages go back to the free list (REGISTERED -> FREE), but
 * those already settled (commit_lost) */
static void
free_staged(struct cxlp_handler *h, struct cxlp_group *g)
{
	size_t moved_on = 0;

	pthread_mutex_lock(&h->page_lock);
	for (size_t i = 0; i < g->nstaged; i++) {
		/* not REGISTERED any more: a key a commit cut short by a
		 * restart had put there was evicted or deleted meanwhile,
		 * and its page went its own way */
		moved_on += g->staged[i] != PAGE_SETTLED &&
		    pagetab_move(&h->pages, g->staged[i], PAGE_REGISTERED,
		    PAGE_FREE) != 0;
	}
	group_forget_staged(g);
	doubt_note(h);
	pagelife_unlock(h);
	if (moved_on > 0) {
		log_err("group \"%.*s\": %zu of its pages had left it before "
		    "its rollback (keys of a commit cut short, evicted or "
		    "deleted meanwhile)", (int)g->id_len, (const char *)g->id,
		    moved_on);
	}
}

/* group_forget_staged -- see group.h */
void
group_forget_staged(struct cxlp_group *g)
{
	for (size_t i = 0; i < g->nstaged; i++) {
		free(g->skeys[i].key);
	}
	g->nstaged = 0;
}

/* release the group's pins ourselves: the server forgot the group */
static void
unpin_own(struct cxlp_handler *h, struct cxlp_group *g)
{
	for (size_t i = 0; i < g->npins; i += CXLP_BATCH_MAX) {
		size_t n = g->npins - i < CXLP_BATCH_MAX ? g->npins - i :
		    CXLP_BATCH_MAX;
		const void **keys = calloc(n, sizeof(*keys));
		size_t *lens = calloc(n, sizeof(*lens));
		int *st = calloc(n, sizeof(*st));

		for (size_t j = 0; keys && lens && st && j < n; j++) {
			keys[j] = g->pins[i + j].key;
			lens[j] = g->pins[i + j].len;
		}
		if (keys == NULL || lens == NULL || st == NULL ||
		    cxlp_batch_unpin(h, n, keys, lens, st) != 0) {
			log_err("group: pins of a lost group kept: %s",
			    cxlp_errormsg());
		}
		free(keys);
		free(lens);
		free(st);
	}
}

void
group_forget_pins(struct cxlp_group *g)
{
	for (size_t i = 0; i < g->npins; i++) {
		free(g->pins[i].key);
	}
	g->npins = 0;
}

/* What is left of the reservation goes back. */
void
group_release_reservation(struct cxlp_handler *h, struct cxlp_group *g)
{
	if (g->res != NULL) {
		(void)cxlp_reserve_release(h, &g->res);
	}
}

/* Note 4: roll g back here, after the server did (server_done) or by
 * asking it to; lost (the server no longer knows g): release its pins
 * too. Returns CXLP_E_CANCELED with why. */
int
group_rollback(struct cxlp_handler *h, struct cxlp_group *g, bool server_done,
    bool lost, const char *why)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "%s", why);
	if (!server_done && group_cmd(h, g, PROTO_GROUP_ABORT) ==
	    CXLP_E_NOTFOUND) {
		lost = true;
	}
	if (lost) {
		unpin_own(h, g);
	}
	group_forget_pins(g);
	free_staged(h, g);
	group_release_reservation(h, g);
	g->state = G_ROLLED_BACK;
	return cxlp_fail(CXLP_E_CANCELED, "group \"%.*s\" rolled back: %s",
	    (int)g->id_len, (const char *)g->id, msg);
}

/* A group request failed with rc: roll back as its error says. */
int
group_failed(struct cxlp_handler *h, struct cxlp_group *g, int rc)
{
	char why[160];

	snprintf(why, sizeof(why), "%s", cxlp_errormsg());
	if (rc == CXLP_E_NOTFOUND) {
		return group_rollback(h, g, true, true, "the metaserver no longer "
		    "knows it (it restarted)");
	}
	if (rc == CXLP_E_CANCELED) {
		(void)group_cmd(h, g, PROTO_GROUP_ABORT); /* its record */
		return group_rollback(h, g, true, false, why);
	}
	return group_rollback(h, g, false, false, why);
}

/* Note 3: where each staged key went; a page whose key was already
 * there (another writer's) is freed. */
static void
settle_commit(struct cxlp_handler *h, struct cxlp_group *g,
    const struct proto_result *res)
{
	pthread_mutex_lock(&h->page_lock);
	for (size_t i = 0; i < g->nstaged; i++) {
		cxlp_page_t at;
		bool mine = res[i].status == 0 &&
		    owntab_page_of(h, &res[i].loc, &at) == 0 &&
		    at == g->staged[i];

		if (!mine) {
			int rc = pagetab_move(&h->pages, g->staged[i],
			    PAGE_REGISTERED, PAGE_FREE);

			cxlp_assert(rc == 0);
		} else {
			h_count(h, keys_stored, 1);
			h_count(h, bytes_stored, res[i].loc.len);
		}
	}
	group_forget_staged(g);
	doubt_note(h);
	pagelife_unlock(h);
}

/* Where the staged keys are now: res[i] as an EXISTS of g->skeys[i]
 * answers (a key whose copy is missing: CXLP_E_NOTFOUND). */
static int
staged_where(struct cxlp_handler *h, struct cxlp_group *g,
    struct proto_result *res)
{
	int rc = 0;

	for (size_t i = 0; i < g->nstaged && rc == 0; i += CXLP_BATCH_MAX) {
		size_t n = g->nstaged - i < CXLP_BATCH_MAX ? g->nstaged - i :
		    CXLP_BATCH_MAX, m = 0;
		const void *keys[CXLP_BATCH_MAX];
		size_t lens[CXLP_BATCH_MAX], at[CXLP_BATCH_MAX];
		struct proto_result *r = calloc(n, sizeof(*r));
		struct creply rep;
		struct pbuf body;
		uint32_t got;

		for (size_t j = 0; j < n; j++) {
			res[i + j].status = CXLP_E_NOTFOUND;
			if (g->skeys[i + j].key != NULL) {
				keys[m] = g->skeys[i + j].key;
				lens[m] = g->skeys[i + j].len;
				at[m++] = i + j;
			}
		}
		if (r == NULL || m == 0) {
			rc = r == NULL ? -ENOMEM : 0;
			free(r);
			continue;
		}
		pbuf_init(&body);
		proto_put_keys(&body, 0, m, keys, lens);
		rc = h_call(h, PROTO_OP_EXISTS, &body, &rep);
		pbuf_fini(&body);
		if (rc == 0) {
			rc = h_get_results(&rep, r, m, true, &got);
			client_reply_fini(&rep);
		}
		for (size_t j = 0; rc == 0 && j < m; j++) {
			res[at[j]] = r[j];
		}
		free(r);
	}
	return rc;
}

/* A commit the metaserver answered CXLP_E_NOTFOUND: it no longer knows
 * the group (it restarted), and it may have committed it before it went
 * (a commit the crash cut short the restart completed or rolled back
 * whole: pool/kv.c note 2). So the staged keys are looked up. All in:
 * the group is committed (the group's pins may be held still: that the
 * commit released them is not known). Some or none: the ones at this
 * handler's pages are deleted again (a part is no commit's since layout
 * 2.4: keys stored under the same names by another writer, or a part
 * evicted or deleted since the commit), and the group is rolled back as
 * one the server lost, pins included (a commit releases pins only after
 * its last insert). */
static int
commit_lost(struct cxlp_handler *h, struct cxlp_group *g,
    struct proto_result *res)
{
	size_t in = 0, kept = 0;
	int rc = staged_where(h, g, res);

	for (size_t i = 0; rc == 0 && i < g->nstaged; i++) {
		in += res[i].status == 0;
	}
	if (rc != 0) {
		g->state = G_UNKNOWN; /* note 4: its pages are kept */
		return cxlp_fail(CXLP_E_UNKNOWN, "group \"%.*s\": its commit's "
		    "answer was lost and its keys could not be looked up: "
		    "its %zu pages are kept", (int)g->id_len,
		    (const char *)g->id, g->nstaged);
	}
	if (in == g->nstaged) {
		settle_commit(h, g, res);
		group_forget_pins(g);
		group_release_reservation(h, g);
		g->state = G_COMMITTED;
		return 0;
	}
	for (size_t i = 0; i < g->nstaged; i++) {
		cxlp_page_t at;

		if (res[i].status != 0 || owntab_page_of(h, &res[i].loc,
		    &at) != 0 || at != g->staged[i]) {
			continue; /* not in at this page: free_staged's */
		}
		/* in at this page: deleted (the delete frees the page), or,
		 * pinned by a reader meanwhile, an ordinary key of ours */
		kept += cxlp_delete(h, g->skeys[i].key, g->skeys[i].len) != 0;
		g->staged[i] = PAGE_SETTLED;
	}
	return group_rollback(h, g, true, true, kept == 0 ? "the metaserver "
	    "restarted during its commit" : "the metaserver restarted during "
	    "its commit, and keys pinned meanwhile stay");
}

/* cxlp_group_commit -- see cxlpool.h. Called again on a group whose
 * commit got no answer (G_UNKNOWN) it sends the commit again: a server
 * that never had it commits now; one that committed (or restarted) no
 * longer knows the group, and commit_lost looks the keys up. */
int
cxlp_group_commit(struct cxlp_handler *h, struct cxlp_group *g)
{
	struct proto_result *res;
	struct creply rep;
	int rc = g != NULL && g->state == G_UNKNOWN ? h_check_open(h) :
	    group_check(h, g);

	if (rc != 0) {
		return rc;
	}
	if ((res = calloc(g->nstaged + 1, sizeof(*res))) == NULL) {
		return cxlp_fail(-ENOMEM, "group_commit: out of memory");
	}
	rc = group_call(h, g, PROTO_GROUP_COMMIT, &rep);
	if (rc == 0) {
		uint32_t got;

		rc = h_get_results(&rep, res, g->nstaged, true, &got);
		client_reply_fini(&rep);
		if (rc != 0) {
			rc = CXLP_E_UNKNOWN; /* applied, reply unreadable */
		}
	}
	/* no answer, or one that cannot be read (a bad header): the commit
	 * may have been applied, so nothing of it is undone */
	if (rc == CXLP_E_TIMEOUT || rc == CXLP_E_CONN ||
	    rc == CXLP_E_CLOSED || rc == CXLP_E_UNKNOWN ||
	    rc == CXLP_E_PROTO || rc == CXLP_E_VERSION) {
		g->state = G_UNKNOWN; /* note 4: its pages are kept */
		free(res);
		return cxlp_fail(CXLP_E_UNKNOWN, "group \"%.*s\": no answer "
		    "to its commit (%s): its %zu pages are kept; "
		    "cxlp_group_commit again finds out", (int)g->id_len,
		    (const char *)g->id, cxlp_strerror(rc), g->nstaged);
	}
	if (rc == CXLP_E_NOTFOUND) {
		rc = commit_lost(h, g, res);
		free(res);
		return rc;
	}
	if (rc != 0) {
		free(res);
		return group_failed(h, g, rc);
	}
	settle_commit(h, g, res);
	free(res);
	group_forget_pins(g);
	group_release_reservation(h, g);
	g->state = G_COMMITTED;
	return 0;
}

/* cxlp_group_abort -- see cxlpool.h */
int
cxlp_group_abort(struct cxlp_handler *h, struct cxlp_group *g)
{
	int rc = group_check(h, g);

	if (rc != 0) {
		return rc;
	}
	(void)group_rollback(h, g, false, false, "aborted");
	return 0;
}

/* cxlp_group_cancel -- see cxlpool.h */
int
cxlp_group_cancel(struct cxlp_handler *h, const void *id, size_t id_len)
{
	struct cxlp_group g = {.id_len = (uint16_t)id_len};
	int rc = h_check_open(h);

	if (rc != 0) {
		return rc;
	}
	if (id == NULL || id_len == 0 || id_len > CXLP_GROUP_ID_MAX) {
		return cxlp_fail(-EINVAL, "group_cancel: an id of %zu bytes "
		    "(1..%d)", id_len, CXLP_GROUP_ID_MAX);
	}
	memcpy(g.id, id, id_len);
	return group_cmd(h, &g, PROTO_GROUP_CANCEL);
}

/* cxlp_group_count -- see cxlpool.h */
size_t
cxlp_group_count(const struct cxlp_group *g)
{
	return g == NULL ? 0 : g->count;
}

/* cxlp_group_state -- see cxlpool.h */
int
cxlp_group_state(const struct cxlp_group *g)
{
	static const int map[] = {
		[G_OPEN] = CXLP_GROUP_OPEN,
		[G_COMMITTED] = CXLP_GROUP_COMMITTED,
		[G_ROLLED_BACK] = CXLP_GROUP_ROLLED_BACK,
		[G_UNKNOWN] = CXLP_GROUP_UNKNOWN,
	};

	return g == NULL ? -EINVAL : map[g->state];
}

/* cxlp_group_close -- see cxlpool.h */
void
cxlp_group_close(struct cxlp_handler *h, struct cxlp_group **gp)
{
	struct cxlp_group *g = gp == NULL ? NULL : *gp;

	if (g == NULL) {
		return;
	}
	if (h != NULL && g->state == G_OPEN && h_check_open(h) == 0) {
		(void)group_rollback(h, g, false, false, "closed while open");
	}
	/* h == NULL: the handler's close freed the pages */
	(void)cxlp_reserve_release(h, &g->res);
	group_forget_pins(g);
	group_forget_staged(g);
	free(g->pins);
	free(g->staged);
	free(g->skeys);
	free(g);
	*gp = NULL;
}
