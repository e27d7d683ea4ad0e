/*
 * group.c -- the request groups the metaserver holds: a writer's
 * multi-batch transfer (prefill to decode) whose keys become visible all
 * at once, at commit, or not at all.
 *
 * DESIGN NOTES
 *
 * 1. A group is DRAM only, owned by one session and named by an id that
 *    is unique among the open groups of the whole server (a decoder names
 *    it to cancel). Its keys are staged here, with a copy of each key and
 *    the page it points at; the index never holds a key of an open group,
 *    so no reader, eviction or restart can meet one. A key that is already
 *    in the index when a batch names it is pinned for the group instead
 *    (the chunk need not be written again) and remembered by its slot.
 * 2. Commit (op_group.c) is one durable step (pool/kv.c note 2): the
 *    staged keys go into the index unseen (pool_kv_stage), then one
 *    commit point makes them all visible (pool_commit_publish); a key
 *    that cannot go in takes the ones before it out again
 *    (pool_commit_rollback) and rolls the group back. A metaserver
 *    killed in the middle finds the commit at its next start completed
 *    (past the commit point) or rolled back (before it), whole, before it
 *    serves anyone: no reader ever sees part of a group.
 * 3. Rollback (abort, cancel, a batch past the total, a failed commit)
 *    drops the staged keys and releases the group's pins. A cancel by
 *    another session keeps the group's record, cancelled, so that its
 *    owner's next call learns of it (CXLP_E_CANCELED); the owner's abort
 *    removes it. The end of the owner's session removes its groups (its
 *    pins go with the session). A metaserver restart forgets them all:
 *    nothing of an open group is on media but the pins, which the
 *    handler releases when its next call finds the group gone (and, of
 *    a group whose commit a crash cut short, its keys, which the restart
 *    settles: note 2).
 * 4. Bounds: MS_GROUPS_MAX open groups, MS_GROUPS_PER_SESSION of one
 *    session, PROTO_GROUP_TOTAL_MAX chunks each, MS_GROUP_ENTRIES_MAX
 *    staged keys and pins and MS_GROUP_KEY_BYTES_MAX bytes of staged keys
 *    in all, and a quarter of each for one session (a peer that opens
 *    many groups gets CXLP_E_NOSPACE, not the server's memory nor every
 *    other session's room). A batch's room is made before any of it is
 *    staged or pinned [ms_group_room].
 *    Groups are few (one per request in flight), so they are found by a
 *    scan of a list.
 * 5. Replays. An OPEN whose answer was lost comes again with its
 *    request id, and the reply cache answers it, as every other op's
 *    replay. An OPEN of an id the group of which is still open is
 *    refused, the owner's own too: two handles of one session on one
 *    group would each commit, abort and free what the other staged (the
 *    handler aborts an OPEN that got no answer; if that ABORT is lost as
 *    well, cxlp_group_cancel of the id ends the group). A request whose
 *    id is older than the group's OPEN (a session's request ids only
 *    grow) is a late copy meant for an earlier group of the same id and
 *    gets NOTFOUND (op_group.c, own_group): it would stage a key at a
 *    page the earlier group's rollback freed. After a restart there is
 *    no group, and NOTFOUND tells the handler so.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "ms_int.h"

/* ms_group_find -- the group named id, or NULL (ms->lock held). */
struct ms_group *
ms_group_find(struct ms *ms, const void *id, size_t len)
{
	for (struct ms_group *g = ms->groups.list; g != NULL; g = g->next) {
		if (g->id_len == len && memcmp(g->id, id, len) == 0) {
			return g;
		}
	}
	return NULL;
}

static unsigned
groups_of(const struct ms *ms, uint64_t sid)
{
	unsigned n = 0;

	for (const struct ms_group *g = ms->groups.list; g; g = g->next) {
		n += g->owner == sid;
	}
	return n;
}

/* ms_group_open -- a new open group of session sid (ms->lock held for
 * writing). 0 and *out, CXLP_E_GROUP (the id is taken) or
 * CXLP_E_NOSPACE. */
int
ms_group_open(struct ms *ms, uint64_t sid, const void *id, size_t len,
    uint32_t total, uint32_t flags, struct ms_group **out)
{
	struct ms_group *g = ms_group_find(ms, id, len);

	if (g != NULL && g->owner == sid) { /* note 5 */
		return cxlp_fail(CXLP_E_GROUP, "group id in use by this "
		    "session: opened and not ended yet (an open whose answer "
		    "was lost too: cxlp_group_cancel of the id ends it)");
	}
	if (g != NULL) {
		return cxlp_fail(CXLP_E_GROUP, "group id in use (session %llu)",
		    (unsigned long long)g->owner);
	}
	if (ms->groups.n >= MS_GROUPS_MAX) {
		return cxlp_fail(CXLP_E_NOSPACE, "%u request groups open: the "
		    "most one metaserver holds", ms->groups.n);
	}
	if (groups_of(ms, sid) >= MS_GROUPS_PER_SESSION) {
		return cxlp_fail(CXLP_E_NOSPACE, "session %llu has %u request "
		    "groups open: the most one session holds",
		    (unsigned long long)sid, MS_GROUPS_PER_SESSION);
	}
	if ((g = calloc(1, sizeof(*g))) == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for a group");
	}
	memcpy(g->id, id, len);
	g->id_len = (uint16_t)len;
	g->owner = sid;
	g->total = total;
	g->flags = flags;
	g->next = ms->groups.list;
	ms->groups.list = g;
	ms->groups.n++;
	*out = g;
	return 0;
}

/* ms_group_room -- see ms_int.h */
int
ms_group_room(struct ms *ms, struct ms_group *g, uint32_t n,
    uint64_t key_bytes)
{
	uint64_t sess_n = 0, sess_bytes = 0;

	for (const struct ms_group *o = ms->groups.list; o; o = o->next) {
		if (o->owner == g->owner) {
			sess_n += o->n;
			sess_bytes += o->key_bytes;
		}
	}
	if (ms->groups.entries + n > MS_GROUP_ENTRIES_MAX ||
	    ms->groups.key_bytes + key_bytes > MS_GROUP_KEY_BYTES_MAX) {
		return cxlp_fail(CXLP_E_NOSPACE, "request groups hold %llu "
		    "keys and %llu bytes of keys, the most the metaserver "
		    "keeps", (unsigned long long)ms->groups.entries,
		    (unsigned long long)ms->groups.key_bytes);
	}
	if (sess_n + n > MS_GROUP_ENTRIES_PER_SESSION ||
	    sess_bytes + key_bytes > MS_GROUP_KEY_BYTES_PER_SESSION) {
		return cxlp_fail(CXLP_E_NOSPACE, "the request groups of "
		    "session %llu hold %llu keys and %llu bytes of keys, the "
		    "most one session may", (unsigned long long)g->owner,
		    (unsigned long long)sess_n,
		    (unsigned long long)sess_bytes);
	}
	if (g->n + n > g->cap) {
		uint32_t cap = g->cap ? g->cap : 16;
		void *p;

		while (cap < g->n + n) {
			cap *= 2;
		}
		if ((p = realloc(g->e, cap * sizeof(*g->e))) == NULL) {
			return cxlp_fail(-ENOMEM, "no memory for group entries");
		}
		g->e = p;
		g->cap = cap;
	}
	return 0;
}

/* one more entry, in the room ms_group_room made */
static void
entry_add(struct ms *ms, struct ms_group *g, const struct ms_gentry *e)
{
	cxlp_assert(g->n < g->cap);
	g->e[g->n++] = *e;
	ms->groups.entries++;
}

/* ms_group_stage -- remember key -> (region, off, len) in g (note 1), in
 * the room ms_group_room made. 0 or -ENOMEM. */
int
ms_group_stage(struct ms *ms, struct ms_group *g, const void *key,
    uint16_t klen, uint32_t region, uint64_t off, uint64_t len)
{
	struct ms_gentry e = {.staged = true, .klen = klen, .region = region,
	    .off = off, .len = len};

	if ((e.key = malloc(klen)) == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for a staged key");
	}
	memcpy(e.key, key, klen);
	entry_add(ms, g, &e);
	ms->groups.key_bytes += klen;
	g->key_bytes += klen;
	g->staged++;
	return 0;
}

/* ms_group_pinned -- remember that g pinned slot, in the room
 * ms_group_room made (it cannot fail: the pin is taken already). */
void
ms_group_pinned(struct ms *ms, struct ms_group *g, uint64_t slot)
{
	struct ms_gentry e = {.staged = false, .slot = slot};

	entry_add(ms, g, &e);
}

static void
entries_free(struct ms *ms, struct ms_group *g)
{
	for (uint32_t i = 0; i < g->n; i++) {
		if (g->e[i].staged) {
			ms->groups.key_bytes -= g->e[i].klen;
			free(g->e[i].key);
		}
	}
	ms->groups.entries -= g->n;
	free(g->e);
	g->e = NULL;
	g->n = g->cap = g->staged = 0;
	g->key_bytes = 0;
}

/* ms_group_release_pins -- release the pins g took (ms->lock held for
 * writing); how many could not be (logged). */
unsigned
ms_group_release_pins(struct ms *ms, struct ms_group *g)
{
	unsigned refused = 0;

	for (uint32_t i = 0; i < g->n; i++) {
		bool applied;

		if (!g->e[i].staged && pool_pin_change(ms->pool, g->owner,
		    g->e[i].slot, -1, 0, 0, &applied) != 0) {
			refused++;
		}
	}
	if (refused > 0) {
		log_err("op=group session=%llu msg=\"%u pins of the group "
		    "were gone: %s\"", (unsigned long long)g->owner, refused,
		    cxlp_errormsg());
	}
	return refused;
}

/* ms_group_rollback -- note 3: drop g's keys and pins; by is the session
 * that asks (the owner, or a canceller, whose cancel keeps the record).
 * ms->lock held for writing. */
void
ms_group_rollback(struct ms *ms, struct ms_group *g, uint64_t by,
    const char *why)
{
	log_info("op=group_rollback session=%llu by=%llu staged=%u entries=%u "
	    "why=%s", (unsigned long long)g->owner, (unsigned long long)by,
	    g->staged, g->n, why);
	(void)ms_group_release_pins(ms, g);
	entries_free(ms, g);
	g->cancelled_by = by;
	ms_space_event(ms); /* released pins may make room */
}

/* ms_group_close -- unlink and free g (its entries too, pins untouched). */
void
ms_group_close(struct ms *ms, struct ms_group *g)
{
	struct ms_group **pp = &ms->groups.list;

	while (*pp != g) {
		pp = &(*pp)->next;
	}
	*pp = g->next;
	ms->groups.n--;
	entries_free(ms, g);
	free(g);
}

/* ms_groups_session_end -- note 3: the groups of session sid go; its
 * pins are released with the session. ms->lock held for writing. */
void
ms_groups_session_end(struct ms *ms, uint64_t sid)
{
	struct ms_group *g = ms->groups.list, *next;

	for (; g != NULL; g = next) {
		next = g->next;
		if (g->owner == sid) {
			log_info("op=group_rollback session=%llu staged=%u "
			    "why=session_end", (unsigned long long)sid,
			    g->staged);
			ms_group_close(ms, g);
		}
	}
}

/* ms_groups_fini -- free every group (ms_fini). */
void
ms_groups_fini(struct ms *ms)
{
	while (ms->groups.list != NULL) {
		ms_group_close(ms, ms->groups.list);
	}
}
