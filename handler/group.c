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
 * 3. Commit inserts every staged key at once (the server brackets them
 *    with the pool's commit_seq, which batch lookups from shared memory
 *    check: direct.c) and answers where each key now is: a key another
 *    writer stored meanwhile frees this group's page. The last batch of
 *    a group (count == total) commits it. What is left of the
 *    reservation goes back.
 * 4. Rollback: abort, close of an open group, and, with
 *    CXLP_GROUP_ATOMIC, a batch with a key not stored or an alloc that
 *    failed. The server drops the staged keys and the group's pins; the
 *    handler frees the staged pages. A group cancelled by another handler
 *    is found so at the next call (CXLP_E_CANCELED), and one the server no
 *    longer knows (a metaserver restart: groups are DRAM only) the same;
 *    then this handler releases the group's pins itself (pins survive a
 *    restart). A batch or commit whose outcome was lost rolls back too,
 *    but for a commit whose outcome was lost: its pages stay REGISTERED
 *    (kept, never freed while the handler lives) and the group reports
 *    CXLP_E_UNKNOWN, since its keys may be in the pool.
 * 5. A group is used by one thread at a time; many groups may be in
 *    flight on one handler at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "handler_int.h"
#include "log.h"

enum { G_OPEN, G_COMMITTED, G_ROLLED_BACK, G_UNKNOWN };

struct gkey {
	uint8_t *key;
	uint16_t len;
};

struct cxlp_group {
	uint8_t id[CXLP_GROUP_ID_MAX];
	uint16_t id_len;
	size_t total, count;
	unsigned flags;
	int state;
	struct cxlp_reservation *res;
	cxlp_page_t *staged; /* pages staged, in the server's order */
	size_t nstaged, cap_staged;
	struct gkey *pins;   /* keys the group pinned (note 4) */
	size_t npins, cap_pins;
};

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

static int
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

/* a GROUP command whose reply has no body */
static int
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

/* the staged pages go back to the free list (REGISTERED -> FREE) */
static void
free_staged(struct cxlp_handler *h, struct cxlp_group *g)
{
	pthread_mutex_lock(&h->page_lock);
	for (size_t i = 0; i < g->nstaged; i++) {
		int rc = pagetab_move(&h->pages, g->staged[i],
		    PAGE_REGISTERED, PAGE_FREE);

		cxlp_assert(rc == 0);
	}
	g->nstaged = 0;
	doubt_note(h);
	giveback_page_unlock(h);
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

static void
forget_pins(struct cxlp_group *g)
{
	for (size_t i = 0; i < g->npins; i++) {
		free(g->pins[i].key);
	}
	g->npins = 0;
}

/* What is left of the reservation goes back. */
static void
release_reservation(struct cxlp_handler *h, struct cxlp_group *g)
{
	if (g->res != NULL) {
		(void)cxlp_reserve_release(h, &g->res);
	}
}

/* Note 4: roll g back here, after the server did (server_done) or by
 * asking it to; lost (the server no longer knows g): release its pins
 * too. Returns CXLP_E_CANCELED with why. */
static int
rollback(struct cxlp_handler *h, struct cxlp_group *g, bool server_done,
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
	forget_pins(g);
	free_staged(h, g);
	release_reservation(h, g);
	g->state = G_ROLLED_BACK;
	return cxlp_fail(CXLP_E_CANCELED, "group \"%.*s\" rolled back: %s",
	    (int)g->id_len, (const char *)g->id, msg);
}

/* A group request failed with rc: roll back as its error says. */
static int
failed(struct cxlp_handler *h, struct cxlp_group *g, int rc)
{
	char why[160];

	snprintf(why, sizeof(why), "%s", cxlp_errormsg());
	if (rc == CXLP_E_NOTFOUND) {
		return rollback(h, g, true, true, "the metaserver no longer "
		    "knows it (it restarted)");
	}
	if (rc == CXLP_E_CANCELED) {
		(void)group_cmd(h, g, PROTO_GROUP_ABORT); /* its record */
		return rollback(h, g, true, false, why);
	}
	return rollback(h, g, false, false, why);
}

static int
check_group(struct cxlp_handler *h, const struct cxlp_group *g)
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
		release_reservation(h, g);
		free(g);
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
	int rc = check_group(h, g);

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
		(void)rollback(h, g, false, false, why);
		return cxlp_fail(rc, "group \"%.*s\" rolled back: %s",
		    (int)g->id_len, (const char *)g->id, why);
	}
	return rc;
}

/* Remember key i of a batch: staged at its page, or pinned present. */
static int
note_batch(struct cxlp_group *g, size_t n, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const bool ok[],
    const bool kept[])
{
	int rc;

	if ((rc = grow((void **)&g->staged, &g->cap_staged, g->nstaged + n,
	    sizeof(*g->staged))) != 0 || (rc = grow((void **)&g->pins,
	    &g->cap_pins, g->npins + n, sizeof(*g->pins))) != 0) {
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		struct gkey *k = &g->pins[g->npins];

		if (kept != NULL && kept[i]) {
			g->staged[g->nstaged++] = pages[i];
		} else if (ok[i]) {
			if ((k->key = malloc(key_lens[i])) == NULL) {
				return cxlp_fail(-ENOMEM, "group: out of "
				    "memory");
			}
			memcpy(k->key, keys[i], key_lens[i]);
			k->len = (uint16_t)key_lens[i];
			g->npins++;
		}
		g->count += ok[i];
	}
	return 0;
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
		return rollback(h, g, false, false, why);
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
	(void)rollback(h, g, false, false, why);
	return cxlp_fail(CXLP_E_GROUP, "group \"%.*s\": %s; every earlier "
	    "batch is rolled back", (int)g->id_len, (const char *)g->id, why);
}

/* cxlp_group_store -- see cxlpool.h */
int
cxlp_group_store(struct cxlp_handler *h, struct cxlp_group *g, size_t n,
    const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], bool stored[])
{
	int *status, reg_rc = 0, rc = check_group(h, g);
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
		rc = rc != 0 ? rollback(h, g, false, false, cxlp_errormsg()) :
		    after_batch(h, g, n, stored, status);
	} else if (rc == 0 || rc == CXLP_E_UNKNOWN) {
		rc = failed(h, g, reg_rc);
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
	int rc = check_group(h, g);

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
		return failed(h, g, rc);
	}
	if ((rc = note_batch(g, n, keys, key_lens, NULL, present,
	    NULL)) != 0) {
		return rollback(h, g, false, false, cxlp_errormsg());
	}
	return g->count == g->total ? cxlp_group_commit(h, g) : 0;
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
		    regions_page_of(h, &res[i].loc, &at) == 0 &&
		    at == g->staged[i];

		if (!mine) {
			int rc = pagetab_move(&h->pages, g->staged[i],
			    PAGE_REGISTERED, PAGE_FREE);

			cxlp_assert(rc == 0);
		}
	}
	g->nstaged = 0;
	doubt_note(h);
	giveback_page_unlock(h);
}

/* cxlp_group_commit -- see cxlpool.h */
int
cxlp_group_commit(struct cxlp_handler *h, struct cxlp_group *g)
{
	struct proto_result *res;
	struct creply rep;
	int rc = check_group(h, g);

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
	if (rc == CXLP_E_TIMEOUT || rc == CXLP_E_CONN ||
	    rc == CXLP_E_CLOSED || rc == CXLP_E_UNKNOWN) {
		g->state = G_UNKNOWN; /* note 4: its pages are kept */
		free(res);
		return cxlp_fail(CXLP_E_UNKNOWN, "group \"%.*s\": no answer "
		    "to its commit (%s): its %zu pages are kept", (int)g->id_len,
		    (const char *)g->id, cxlp_strerror(rc), g->nstaged);
	}
	if (rc != 0) {
		free(res);
		return failed(h, g, rc);
	}
	settle_commit(h, g, res);
	free(res);
	forget_pins(g);
	release_reservation(h, g);
	g->state = G_COMMITTED;
	return 0;
}

/* cxlp_group_abort -- see cxlpool.h */
int
cxlp_group_abort(struct cxlp_handler *h, struct cxlp_group *g)
{
	int rc = check_group(h, g);

	if (rc != 0) {
		return rc;
	}
	(void)rollback(h, g, false, false, "aborted");
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
		(void)rollback(h, g, false, false, "closed while open");
	}
	/* h == NULL: the handler's close freed the pages */
	(void)cxlp_reserve_release(h, &g->res);
	forget_pins(g);
	free(g->pins);
	free(g->staged);
	free(g);
	*gp = NULL;
}
