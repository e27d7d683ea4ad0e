/*
 * sesstab.c -- the session table: one 128-byte record per handler session,
 * so that a restarted metaserver knows who owned what and a handler can
 * reattach with its token.
 *
 * Why this shape: the table is small (1024 records by default) and touched
 * once per connect and disconnect, so lookups are linear scans and there
 * is no DRAM index to keep in step. Ids come from the superblock's
 * next_session_id, which is advanced and persisted (one 8-byte store)
 * before the id is used, so an id is never handed out twice, even across
 * a crash. A record's id word is its publish word:
 *   add    [pool_session_add]: next_session_id++ persisted; body written
 *          and persisted while id == 0; id stored and persisted.
 *   remove [pool_session_remove]: id = 0, persisted.
 * The checksum covers the whole record, id included; a live record that
 * fails it is dropped at open (sesstab_rebuild).
 */
#include <errno.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "persist.h"
#include "pool_int.h"

/* sesstab_rebuild -- see pool_int.h */
int
sesstab_rebuild(struct pool *p, bool repair)
{
	uint64_t max_id = 0;

	p->sessions = 0;
	for (uint32_t i = 0; i < p->nsess; i++) {
		struct pool_srec *s = &p->stab[i];

		if (s->id == 0) {
			continue;
		}
		if (layout_srec_checksum(s) != s->checksum) {
			/* published after its body: damage, not a crash */
			damage_session(p, i, "checksum mismatch");
			if (repair) {
				pool_store8(p, &s->id, 0);
			}
			continue;
		}
		p->sessions++;
		max_id = s->id > max_id ? s->id : max_id;
	}
	if (max_id >= p->sb->next_session_id) {
		p->damage->tidy++;
	}
	if (repair && max_id >= p->sb->next_session_id) {
		pool_store8(p, &p->sb->next_session_id, max_id + 1);
	}
	return 0;
}

static bool
srec_live(const struct pool_srec *s)
{
	return s->id != 0 && layout_srec_checksum(s) == s->checksum;
}

/* pool_session_add -- see pool.h */
int
pool_session_add(struct pool *p, struct pool_session *s)
{
	struct pool_srec rec, *r = NULL;
	uint64_t id;

	if (p->rdonly) {
		return cxlp_fail(-EROFS, "%s: opened read-only", p->path);
	}
	for (uint32_t i = 0; i < p->nsess && r == NULL; i++) {
		r = p->stab[i].id == 0 ? &p->stab[i] : NULL;
	}
	if (r == NULL) {
		return cxlp_fail(CXLP_E_NOSPACE, "session table full (%u)",
		    p->nsess);
	}
	id = p->sb->next_session_id;
	pool_store8(p, &p->sb->next_session_id, id + 1);
	memset(&rec, 0, sizeof(rec));
	rec.id = id;
	rec.token = s->token;
	rec.start_time = s->start_time;
	rec.instance = s->instance;
	rec.pid = s->pid;
	rec.keepalive_ms = s->keepalive_ms;
	rec.flags = s->flags;
	memcpy(rec.host, s->host, strnlen(s->host, sizeof(rec.host) - 1));
	rec.checksum = layout_srec_checksum(&rec);
	memcpy((uint8_t *)r + 8, (uint8_t *)&rec + 8, sizeof(rec) - 8);
	pool_persist_cb(p, r, sizeof(*r));
	pool_store8(p, &r->id, id);
	p->sessions++;
	s->id = id;
	memcpy(s->host, rec.host, sizeof(s->host));
	return 0;
}

static void
srec_out(const struct pool_srec *r, struct pool_session *out)
{
	memset(out, 0, sizeof(*out));
	out->id = r->id;
	out->token = r->token;
	out->pid = r->pid;
	out->start_time = r->start_time;
	out->instance = r->instance;
	out->keepalive_ms = r->keepalive_ms;
	out->flags = r->flags;
	memcpy(out->host, r->host, sizeof(out->host));
	out->host[sizeof(out->host) - 1] = '\0';
}

static struct pool_srec *
srec_find(const struct pool *p, uint64_t id)
{
	for (uint32_t i = 0; id != 0 && i < p->nsess; i++) {
		if (p->stab[i].id == id && srec_live(&p->stab[i])) {
			return &p->stab[i];
		}
	}
	return NULL;
}

/* pool_session_get -- see pool.h */
int
pool_session_get(const struct pool *p, uint64_t id, struct pool_session *out)
{
	const struct pool_srec *r = srec_find(p, id);

	if (r == NULL) {
		return cxlp_fail(CXLP_E_NOTFOUND, "no session %llu",
		    (unsigned long long)id);
	}
	srec_out(r, out);
	return 0;
}

/* pool_session_remove -- see pool.h */
int
pool_session_remove(struct pool *p, uint64_t id)
{
	struct pool_srec *r;

	if (p->rdonly) {
		return cxlp_fail(-EROFS, "%s: opened read-only", p->path);
	}
	if ((r = srec_find(p, id)) == NULL) {
		return cxlp_fail(CXLP_E_NOTFOUND, "no session %llu",
		    (unsigned long long)id);
	}
	pool_store8(p, &r->id, 0);
	p->sessions--;
	return 0;
}

/* pool_session_next -- see pool.h */
int
pool_session_next(const struct pool *p, uint64_t *cursor,
    struct pool_session *out)
{
	for (uint64_t i = *cursor; i < p->nsess; i++) {
		if (srec_live(&p->stab[i])) {
			srec_out(&p->stab[i], out);
			*cursor = i + 1;
			return 1;
		}
	}
	*cursor = p->nsess;
	return 0;
}
