/*
 * session.c -- handler sessions: HELLO, the token check every request
 * passes, the pipe a session last spoke on, and every change of a
 * session's state: detached, fenced, ended (BYE, death of its process, a
 * grace period after its pipe is gone, or silence). How a session begins
 * or comes back (HELLO, its secret, reattach) is hello.c's.
 *
 * The pool records sessions durably (pool_session_add); this module keeps
 * a DRAM shadow per session for what only a running server knows: the
 * token check, the pipe, detachment, the reply cache and a reference
 * count of requests in flight. The shadow table is a fixed array of hash
 * chains under ms->sess_lock.
 *
 * A session ends in one place, sess_end_locked, with ms->lock held for
 * writing and ms->sess_lock held: its pins are released, every region it
 * owns is disowned (freed now, or orphaned while keys point into it), its
 * record is removed and its shadow is marked dead (freed once no request
 * holds it). This gives contract 5 (pins of a dead session are released)
 * and contract 6 (its regions live on only while referenced).
 *
 * Who decides is elsewhere: liveness.c (pipe gone, process gone, the
 * reaper) and op_session.c (BYE) call the transitions here. This file in
 * turn asks only modules below it -- the pipe table (pipes.c), the
 * per-process bound (silence.c), replycache.c and the pool, which keeps
 * the pins -- so the calls go one way.
 *
 * DESIGN NOTES
 *  1. live -> detached [ms_pipe_removed: pipe gone, process may live]
 *     detached -> live [sess_enter, sess_hello REATTACH: it spoke again]
 *     live|detached -> fenced [ms_sess_silence_end: promised heartbeats,
 *                     silent too long, owns regions, process runs]
 *     live|detached|fenced -> dead [sess_end_locked: BYE, process gone,
 *                     deadline, silence without regions]
 *  2. A dead session is never found by id: it is unlinked when it dies.
 *  3. A session shadow is freed only when dead and refs == 0.
 *  4. A fenced session answers nothing but BYE (sess_enter), is never
 *     found by a HELLO (hello_find, hello_reattach) and holds no pin; its
 *     record keeps its regions OWNED, so none is handed out again.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "ms_int.h"

static size_t
bucket(uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 56) %
	    MS_SESS_BUCKETS;
}

/* sess_find -- see ms_int.h */
struct ms_sess *
sess_find(struct ms *ms, uint64_t id)
{
	struct ms_sess *s = ms->sess[bucket(id)];

	while (s != NULL && s->id != id) {
		s = s->next;
	}
	return s;
}

static void
sess_unlink(struct ms *ms, struct ms_sess *s)
{
	struct ms_sess **pp = &ms->sess[bucket(s->id)];

	while (*pp != NULL && *pp != s) {
		pp = &(*pp)->next;
	}
	cxlp_assert(*pp == s);
	*pp = s->next;
	s->next = NULL;
	ms->nsess--;
}

static void
sess_free(struct ms_sess *s)
{
	rcache_fini(&s->rcache);
	free(s);
}

/* sess_track -- see ms_int.h */
struct ms_sess *
sess_track(struct ms *ms, const struct pool_session *r)
{
	struct ms_sess *s = calloc(1, sizeof(*s));
	size_t b = bucket(r->id);

	if (s == NULL) {
		return NULL;
	}
	s->id = r->id;
	s->token = r->token;
	s->pid = r->pid;
	s->start_time = r->start_time;
	s->flags = r->flags;
	s->keepalive_ms = r->keepalive_ms;
	s->heard_ms = cxlp_now_ms();
	memcpy(s->host, r->host, sizeof(s->host));
	s->host[sizeof(s->host) - 1] = '\0';
	rcache_init(&s->rcache);
	s->next = ms->sess[b];
	ms->sess[b] = s;
	ms->nsess++;
	return s;
}

/* sess_bind -- see ms_int.h. A request from a pipe already removed (it
 * was queued before the removal) binds nothing: a detached session stays
 * detached, a live one stays on its pipe, and a new one (HELLO) starts
 * detached, so that each still ends when its process is gone or its
 * grace runs out. */
void
sess_bind(struct ms *ms, struct ms_sess *s, uint64_t pipe_id)
{
	const struct ms_pipe *gone = ms_pipe_gone(ms, pipe_id);

	s->heard_ms = cxlp_now_ms();
	if (gone != NULL) {
		log_info("op=late_request session=%llu pipe=%llu",
		    (unsigned long long)s->id, (unsigned long long)pipe_id);
		if (!s->detached && s->pipe == 0) {
			s->pipe = pipe_id;
			ms_sess_detach(ms, s, gone->pid, cxlp_now_ms());
		}
		return;
	}
	if (s->detached) {
		log_info("op=reattach session=%llu pipe=%llu",
		    (unsigned long long)s->id, (unsigned long long)pipe_id);
	}
	s->pipe = pipe_id;
	s->detached = false;
	s->deadline_ms = 0;
	s->peer_pid = 0;
}

/* the session's host, as its HELLO named it, is this one */
static bool
same_host(const char *host)
{
	char me[64] = "";

	return gethostname(me, sizeof(me) - 1) == 0 && me[0] != '\0' &&
	    strncmp(me, host, sizeof(me) - 1) == 0;
}

/* ms_sess_load -- shadow every session the pool records, detached, to end
 * at now + grace unless it reattaches. Only at start (single-threaded). */
int
ms_sess_load(struct ms *ms, uint64_t now_ms)
{
	struct pool_session r;
	uint64_t cursor = 0;

	/* silence.c counts from the start, and a stall from the start on */
	ms->awake_ms = ms->reap_last_ms = now_ms;
	while (pool_session_next(ms->pool, &cursor, &r) == 1) {
		struct ms_sess *s = sess_track(ms, &r);

		if (s == NULL) {
			return cxlp_fail(-ENOMEM, "no memory for sessions");
		}
		s->detached = true;
		s->deadline_ms = now_ms + ms->grace_ms;
		/* a handler of this host whose process is gone ends at the
		 * first reaper pass; others get the grace period: one that
		 * came through a relay (its pid is the relay's), and one
		 * whose pid only the peer claimed (tcp: no peer credentials),
		 * which another process may have */
		s->peer_pid = same_host(r.host) &&
		    (r.flags & POOL_SESS_PEERCRED) &&
		    !(r.flags & POOL_SESS_RELAYED) ? r.pid : 0;
		log_info("op=session_load session=%llu pid=%u host=%s",
		    (unsigned long long)r.id, r.pid, r.host);
	}
	return 0;
}

/* ms_sess_free_all -- drop every shadow (at shutdown; no request runs). */
void
ms_sess_free_all(struct ms *ms)
{
	for (size_t b = 0; b < MS_SESS_BUCKETS; b++) {
		while (ms->sess[b] != NULL) {
			struct ms_sess *s = ms->sess[b];

			ms->sess[b] = s->next;
			sess_free(s);
		}
	}
	ms->nsess = 0;
}

/* A cached reply answers a retry only if it is for the same op: a client
 * that reuses a request id for another op gets an error, not the reply of
 * the first. The op is the u16 at byte 6 of the reply frame. */
static bool
reply_is_for(const struct pbuf *reply, uint16_t op)
{
	return reply->len >= PROTO_REP_HDR_LEN &&
	    (unsigned)(reply->data[6] | reply->data[7] << 8) ==
	    (op | PROTO_REPLY);
}

/* Every frame of a session is of the version its HELLO chose; one loaded
 * from the pool at a restart takes its first frame's (sess_lock held). */
static int
sess_version(struct ms_sess *s, const struct proto_req_hdr *h)
{
	if (s->version == 0) {
		s->version = h->version;
	}
	if (h->version != s->version) {
		return cxlp_fail(CXLP_E_VERSION, "request.version: %u, but "
		    "session %llu speaks protocol version %u (its HELLO chose "
		    "it)", h->version, (unsigned long long)s->id, s->version);
	}
	return 0;
}

/* sess_set_version -- see ms_int.h */
void
sess_set_version(struct ms *ms, struct ms_sess *s, uint16_t version)
{
	ms_sess_lock(ms);
	s->version = version;
	ms_sess_unlock(ms);
}

/* sess_enter -- check the header's session and token and bind the session
 * to pipe_id. Returns 0 with a reference in *out (the caller applies the
 * request, then calls sess_leave), 1 when the request was already answered
 * (reply holds the cached reply; *out NULL), or CXLP_E_SESSION /
 * CXLP_E_BUSY, or CXLP_E_PROTO when req_id was first used for another op;
 * with gone_unknown, CXLP_E_UNKNOWN for a retry whose reply was evicted
 * (rcache_begin). req_id 0 is never cached. */
int
sess_enter(struct ms *ms, const struct proto_req_hdr *h, uint64_t pipe_id,
    bool gone_unknown, struct pbuf *reply, struct ms_sess **out)
{
	struct ms_sess *s;
	int rc;

	*out = NULL;
	ms_sess_lock(ms);
	for (;;) {
		s = sess_find(ms, h->session);
		if (s == NULL || s->token != h->token) {
			rc = cxlp_fail(CXLP_E_SESSION, "no session %llu "
			    "with that token", (unsigned long long)h->session);
			break;
		}
		if (s->fenced && h->op != PROTO_OP_BYE) {
			rc = cxlp_fail(CXLP_E_SESSION, "session %llu was "
			    "ended: silent longer than its keepalive allows",
			    (unsigned long long)h->session);
			break;
		}
		if ((rc = sess_version(s, h)) != 0) {
			break;
		}
		sess_bind(ms, s, pipe_id);
		rc = h->req_id == 0 ? RCACHE_NEW : rcache_begin(&s->rcache,
		    h->req_id, gone_unknown, reply);
		if (rc != RCACHE_WAIT) {
			break;
		}
		if (h->op == PROTO_OP_RECLAIM) { /* its first may wait long */
			rc = cxlp_fail(CXLP_E_BUSY, "RECLAIM %llu still waits "
			    "for room", (unsigned long long)h->req_id);
			break;
		}
		pthread_cond_wait(&ms->sess_cond, &ms->sess_lock);
	}
	if (rc == RCACHE_NEW) {
		s->refs++;
		*out = s;
	}
	ms_sess_unlock(ms);
	if (rc == RCACHE_HIT && !reply_is_for(reply, h->op)) {
		pbuf_reset(reply);
		rc = cxlp_fail(CXLP_E_PROTO, "request id %llu was first used "
		    "for another operation", (unsigned long long)h->req_id);
	}
	return rc;
}

/* sess_leave -- drop the reference sess_enter took and remember the reply
 * for req_id (or forget it when the reply could not be built). */
void
sess_leave(struct ms *ms, struct ms_sess *s, uint64_t req_id,
    const struct pbuf *reply)
{
	ms_sess_lock(ms);
	if (req_id != 0 && reply->err != 0) {
		rcache_abort(&s->rcache, req_id);
	} else if (req_id != 0) {
		rcache_finish(&s->rcache, req_id, reply->data, reply->len);
	}
	cxlp_assert(s->refs > 0);
	s->refs--;
	if (s->dead && s->refs == 0) {
		sess_free(s);
	}
	pthread_cond_broadcast(&ms->sess_cond);
	ms_sess_unlock(ms);
}

/* sess_usable -- see ms_int.h. fenced changes only with both locks
 * held, so ms->lock makes the read stable. */
bool
sess_usable(struct ms *ms, const struct ms_sess *s, uint16_t op)
{
	return !__atomic_load_n(&s->dead, __ATOMIC_ACQUIRE) &&
	    (!s->fenced || op == PROTO_OP_BYE);
}

/* ms_sess_fenced_id -- see ms_int.h */
bool
ms_sess_fenced_id(struct ms *ms, uint64_t id)
{
	const struct ms_sess *s;
	bool fenced;

	ms_sess_lock(ms);
	s = sess_find(ms, id);
	fenced = s != NULL && s->fenced;
	ms_sess_unlock(ms);
	return fenced;
}

/* sess_list_flags -- for SESSIONS: fenced (ended for silence, record
 * kept), attached (speaks on a pipe) or detached (pipe gone, may
 * reattach) per entry; none when the server holds no shadow or the
 * session never had a pipe. */
void
sess_list_flags(struct ms *ms, struct proto_session_info *v, size_t n)
{
	ms_sess_lock(ms);
	for (size_t i = 0; i < n; i++) {
		const struct ms_sess *s = sess_find(ms, v[i].id);

		v[i].flags = 0;
		if (s != NULL && s->fenced) {
			v[i].flags = PROTO_SESS_FENCED;
		} else if (s != NULL && s->detached) {
			v[i].flags = PROTO_SESS_DETACHED;
		} else if (s != NULL && s->pipe != 0) {
			v[i].flags = PROTO_SESS_ATTACHED;
		}
	}
	ms_sess_unlock(ms);
}

/* ms_sess_detach -- see ms_int.h; sess_lock held. */
void
ms_sess_detach(struct ms *ms, struct ms_sess *s, uint64_t pid,
    uint64_t now_ms)
{
	s->detached = true;
	s->deadline_ms = now_ms + ms->grace_ms;
	s->peer_pid = pid; /* the reaper looks again: exit may still be on */
	log_info("op=detach session=%llu pipe=%llu pid=%llu until=%s "
	    "grace_ms=%llu", (unsigned long long)s->id,
	    (unsigned long long)s->pipe, (unsigned long long)pid,
	    ms_pid_checkable(pid) ? "exit" : "grace",
	    (unsigned long long)ms->grace_ms);
}

static unsigned
disown_regions(struct ms *ms, uint64_t owner)
{
	uint32_t max = pool_region_max(ms->pool);
	unsigned n = 0;

	for (uint32_t id = 0; id < max; id++) {
		struct pool_region r;

		if (pool_region_get(ms->pool, id, &r) != 0 ||
		    r.state != POOL_REGION_OWNED || r.owner != owner) {
			continue;
		}
		if (pool_region_disown(ms->pool, id) != 0) {
			log_err("op=region_disown session=%llu region=%u "
			    "rc=fail msg=\"%s\"", (unsigned long long)owner,
			    id, cxlp_errormsg());
			continue;
		}
		n++;
	}
	return n;
}

/* sess_end_locked -- end s as BYE would: remove its record, release its
 * pins, disown its regions, mark it dead. ms->lock held for writing and
 * ms->sess_lock held. s is freed here if no request holds it. The record
 * goes first: it is the commit point, and a crash after it leaves pins
 * the pool drops at open and regions ms_recover disowns. */
void
sess_end_locked(struct ms *ms, struct ms_sess *s, const char *why)
{
	int rc = pool_session_remove(ms->pool, s->id);
	uint64_t pins = pool_pin_release_session(ms->pool, s->id);
	uint64_t leases = pool_lease_release_session(ms->pool, s->id);
	unsigned regions = disown_regions(ms, s->id);

	ms_groups_session_end(ms, s->id);
	log_info("op=session_end session=%llu why=%s pins=%llu leases=%llu "
	    "regions=%u rc=%d", (unsigned long long)s->id, why,
	    (unsigned long long)pins, (unsigned long long)leases, regions,
	    rc);
	if (s->fenced) {
		ms->nfenced--;
	}
	sess_unlink(ms, s);
	__atomic_store_n(&s->dead, true, __ATOMIC_RELEASE);
	ms_space_event(ms); /* its pins, leases and regions may make room,
	                     * and a wait of its own ends */
	if (s->refs == 0) {
		sess_free(s);
	}
	pthread_cond_broadcast(&ms->sess_cond);
}

static bool
owns_region(struct ms *ms, uint64_t owner)
{
	uint32_t max = pool_region_max(ms->pool);

	for (uint32_t id = 0; id < max; id++) {
		struct pool_region r;

		if (pool_region_get(ms->pool, id, &r) == 0 &&
		    r.state == POOL_REGION_OWNED && r.owner == owner) {
			return true;
		}
	}
	return false;
}

/* ms_sess_silence_end -- see ms_int.h. pid is the process of this host
 * behind s (0: none the server can look at). */
void
ms_sess_silence_end(struct ms *ms, struct ms_sess *s, uint64_t pid)
{
	uint64_t pins;

	if (pid == 0 || !owns_region(ms, s->id)) {
		sess_end_locked(ms, s, "silent");
		return;
	}
	pins = pool_pin_release_session(ms->pool, s->id);
	(void)pool_lease_release_session(ms->pool, s->id);
	s->fenced = true;
	s->fence_pid = pid;
	ms->nfenced++;
	log_info("op=session_fence session=%llu pid=%llu pins=%llu "
	    "keepalive_ms=%u msg=\"silent: its keys are anyone's, its "
	    "regions stay out of use until its process exits or its BYE "
	    "comes\"", (unsigned long long)s->id, (unsigned long long)pid,
	    (unsigned long long)pins, s->keepalive_ms);
}

/* ms_sess_giveback -- see ms_int.h */
enum ms_giveback
ms_sess_giveback(struct ms *ms, uint64_t id)
{
	const struct ms_sess *s;
	enum ms_giveback g = MS_GIVEBACK_NO;

	ms_sess_lock(ms);
	s = sess_find(ms, id);
	if (s != NULL && !s->dead && s->detached) {
		g = MS_GIVEBACK_ENDING;
	} else if (s != NULL && !s->dead && !s->fenced && s->giveback) {
		g = MS_GIVEBACK_YES;
	}
	ms_sess_unlock(ms);
	return g;
}
