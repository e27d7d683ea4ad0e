/*
 * hello.c -- how a session begins: HELLO, which creates a session (or
 * finds the one an earlier copy of the same HELLO created), reattaches one
 * by its token, and, from a peer that is not on ipc, must carry the
 * server's shared secret (ms_hello_admit, before ms_dispatch).
 *
 * Apart from session.c, which keeps the shadows and every later change of
 * a session's state: a HELLO only adds a shadow (sess_track) or binds one
 * to its pipe (sess_bind), under ms->sess_lock, and the pool records the
 * new session (pool_session_add) before its shadow exists. A resent
 * HELLO is recognised by its nonce (the header's token, chosen by the
 * handler) and its process (hello_ident), so a lost WELCOME never makes
 * a second session (session.c design notes 1 and 4 for what a fenced or
 * dead session is never found by).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "err.h"
#include "layout.h" /* POOL_HOSTS_MAX */
#include "log.h"
#include "ms_int.h"
#include "procstat.h"

static int
new_token(uint64_t *token)
{
	do {
		ssize_t n = getrandom(token, sizeof(*token), 0);

		if (n != (ssize_t)sizeof(*token)) {
			return cxlp_fail(n < 0 ? -errno : -EIO,
			    "getrandom: %s", strerror(errno));
		}
	} while (*token == 0);
	return 0;
}

/* Who a HELLO on pipe_id comes from (sess_lock held): pid, start_time
 * and flags of r. Behind an ipc pipe the server knows its peer's pid
 * (peer credentials) and start time (/proc, read when the pipe came:
 * pipes.c), and takes those, never the HELLO's claim, for the
 * per-process bound and for liveness (POOL_SESS_PEERCRED). The HELLO's
 * own pid may differ from the peer's: in another pid namespace the
 * handler gives its namespace's pid, but its start time is the peer's.
 * When neither matches, the peer is not the handler (a relay, socat on
 * the ipc socket): the peer's life says nothing of the handler's, so the
 * session is kept like one of another host, by its connection and the
 * grace period (POOL_SESS_RELAYED). A HELLO without a start time (0) is
 * the peer's. Elsewhere (tcp) the HELLO's claim is all there is. */
static void
hello_ident(const struct ms *ms, const struct proto_hello *m,
    uint64_t pipe_id, struct pool_session *r)
{
	const struct ms_pipe *p = ms_pipe_find(ms, pipe_id);

	r->pid = m->pid;
	r->start_time = m->start_time;
	r->flags = 0;
	if (p == NULL || !ms_pid_checkable(p->pid)) {
		return;
	}
	r->pid = (uint32_t)p->pid;
	if (p->start == 0) {
		return; /* gone already: its pid still ends the session */
	}
	r->start_time = p->start;
	r->flags = POOL_SESS_PEERCRED;
	if (m->pid != p->pid && m->start_time != 0 &&
	    m->start_time != p->start) {
		r->flags |= POOL_SESS_RELAYED;
	}
}

/* A reattaching HELLO on pipe_id: the process s names is the one this
 * pipe's peer is -- unless the peer is a relay and s already names its
 * handler's own process, which the relay does not replace. */
static void
reattach_ident(const struct ms *ms, const struct proto_hello *m,
    uint64_t pipe_id, struct ms_sess *s)
{
	struct pool_session r;

	hello_ident(ms, m, pipe_id, &r);
	if ((r.flags & POOL_SESS_RELAYED) &&
	    (s->flags & POOL_SESS_PEERCRED) &&
	    !(s->flags & POOL_SESS_RELAYED)) {
		return;
	}
	s->pid = r.pid;
	s->start_time = r.start_time;
	s->flags = r.flags;
}

static int
hello_reattach(struct ms *ms, const struct proto_req_hdr *h,
    const struct proto_hello *m, uint64_t pipe_id, struct ms_sess **out)
{
	struct ms_sess *s;

	ms_sess_lock(ms);
	s = sess_find(ms, h->session);
	if (s == NULL || s->token != h->token || s->fenced) {
		ms_sess_unlock(ms);
		return cxlp_fail(CXLP_E_SESSION, "reattach: no session %llu "
		    "with that token%s", (unsigned long long)h->session,
		    s != NULL && s->fenced ? " (ended: silent too long)" : "");
	}
	reattach_ident(ms, m, pipe_id, s);
	s->giveback = (m->flags & PROTO_HELLO_GIVEBACK) != 0;
	s->lease_ms = m->lease_ms;
	sess_bind(ms, s, pipe_id);
	ms_sess_unlock(ms);
	*out = s;
	return 0;
}

/* The live session a HELLO with this nonce (the header's token, random,
 * chosen by the handler) from this process already created, or NULL: a
 * HELLO resent after a lost WELCOME gets the session it made, not a
 * second one. sess_lock held. */
static struct ms_sess *
hello_find(struct ms *ms, uint64_t nonce, const struct proto_hello *m,
    uint64_t pipe_id)
{
	struct pool_session r;

	if (nonce == 0) {
		return NULL;
	}
	hello_ident(ms, m, pipe_id, &r);
	for (size_t b = 0; b < MS_SESS_BUCKETS; b++) {
		for (struct ms_sess *s = ms->sess[b]; s != NULL; s = s->next) {
			if (s->hello_nonce == nonce && !s->dead &&
			    !s->fenced && s->pid == r.pid &&
			    s->start_time == r.start_time) {
				return s;
			}
		}
	}
	return NULL;
}

static bool
hello_repeated(struct ms *ms, const struct proto_req_hdr *h,
    const struct proto_hello *m, uint64_t pipe_id, struct ms_sess **out)
{
	struct ms_sess *s;

	ms_sess_lock(ms);
	s = hello_find(ms, h->token, m, pipe_id);
	if (s != NULL) {
		sess_bind(ms, s, pipe_id);
		log_info("op=hello_again session=%llu pid=%u",
		    (unsigned long long)s->id, m->pid);
	}
	ms_sess_unlock(ms);
	*out = s;
	return s != NULL;
}

/* The record of a new session for HELLO m on pipe_id, admitted under
 * --max-sessions-per-process (sess_lock taken here). */
static int
hello_record(struct ms *ms, const struct proto_hello *m, uint64_t pipe_id,
    struct pool_session *r)
{
	int rc = new_token(&r->token);

	if (rc != 0) {
		return rc;
	}
	r->instance = m->instance_id;
	r->keepalive_ms = (m->flags & PROTO_HELLO_KEEPALIVE) ?
	    m->keepalive_ms : 0;
	memcpy(r->host, m->host,
	    m->host_len < sizeof(r->host) ? m->host_len : sizeof(r->host) - 1);
	ms_sess_lock(ms);
	hello_ident(ms, m, pipe_id, r);
	rc = ms_sess_admit(ms, r);
	ms_sess_unlock(ms);
	return rc;
}

/* A HELLO with PROTO_HELLO_HOSTID: its host gets an access slice in the
 * pool's host table (sw and sim; pool/evict.c note 8) before the WELCOME
 * leaves, so the handler finds it there. Never a refusal: a full table
 * leaves that host's direct reads uncounted, said once per host. The
 * hash is the handler's claim; a handler that names made-up hosts can
 * fill the table, which bends the eviction order and nothing else. */
static void
hello_host(struct ms *ms, const struct proto_hello *m)
{
	static uint64_t said[POOL_HOSTS_MAX]; /* hosts told "full", ms->lock */
	int rc;

	if (!(m->flags & PROTO_HELLO_HOSTID)) {
		return;
	}
	if ((rc = pool_host_slice(ms->pool, m->host_hash)) >= 0) {
		log_dbg("op=hello host=%016llx slice=%d",
		    (unsigned long long)m->host_hash, rc);
		return;
	}
	for (size_t i = 0; i < POOL_HOSTS_MAX; i++) {
		if (said[i] == m->host_hash) {
			return;
		}
		if (said[i] == 0) {
			said[i] = m->host_hash;
			break;
		}
	}
	log_err("op=hello host=%016llx rc=%d msg=\"%s\"",
	    (unsigned long long)m->host_hash, rc, cxlp_errormsg());
}

/* sess_hello -- HELLO: a new session (or the one an earlier copy of this
 * HELLO created), or with PROTO_HELLO_REATTACH the one the header names
 * (token checked). ms->lock held for writing, which keeps *out alive until
 * it is released. Returns 0, CXLP_E_SESSION, CXLP_E_NOSPACE (session table
 * full, or this process holds --max-sessions-per-process; the message
 * says which) or -errno. */
int
sess_hello(struct ms *ms, const struct proto_req_hdr *h,
    const struct proto_hello *m, uint64_t pipe_id, struct ms_sess **out)
{
	struct pool_session r = { 0 };
	struct ms_sess *s;
	int rc;

	*out = NULL;
	if (m->flags & PROTO_HELLO_REATTACH) {
		rc = hello_reattach(ms, h, m, pipe_id, out);
		if (rc == 0) {
			hello_host(ms, m);
		}
		return rc;
	}
	if (__atomic_load_n(&ms->pool_replaced, __ATOMIC_ACQUIRE)) {
		return cxlp_fail(CXLP_E_STALE, "%s no longer names the pool "
		    "file this metaserver serves (removed or replaced under "
		    "it): no new handlers; restart the metaserver",
		    pool_path(ms->pool));
	}
	if (hello_repeated(ms, h, m, pipe_id, out)) {
		hello_host(ms, m);
		return 0;
	}
	if ((rc = hello_record(ms, m, pipe_id, &r)) != 0) {
		return rc;
	}
	rc = pool_session_add(ms->pool, &r);
	if (rc != 0) {
		return rc == CXLP_E_NOSPACE ? ms_sess_table_full(ms) : rc;
	}
	ms_sess_lock(ms);
	s = sess_track(ms, &r);
	if (s != NULL) {
		s->hello_nonce = h->token;
		s->giveback = (m->flags & PROTO_HELLO_GIVEBACK) != 0;
		s->lease_ms = m->lease_ms;
		sess_bind(ms, s, pipe_id);
	}
	ms_sess_unlock(ms);
	if (s == NULL) {
		pool_session_remove(ms->pool, r.id);
		return cxlp_fail(-ENOMEM, "no memory for a session");
	}
	hello_host(ms, m);
	*out = s;
	return 0;
}

/* ms_pool_id -- see ms_int.h */
void
ms_pool_id(const struct ms *ms, struct proto_poolid *id)
{
	id->nonce = pool_open_nonce(ms->pool);
	id->boot = procstat_boot_hash();
	pool_file_id(ms->pool, &id->dev, &id->ino);
}

/* ms_pool_watch -- see ms_int.h */
bool
ms_pool_watch(struct ms *ms)
{
	const char *path = pool_path(ms->pool), *what = "";
	bool was = __atomic_load_n(&ms->pool_replaced, __ATOMIC_ACQUIRE);
	bool now = pool_path_changed(ms->pool, &what);
	uint64_t dev, ino;

	pool_file_id(ms->pool, &dev, &ino);
	if (now && !was) {
		log_err("op=pool_watch path=%s rc=%d msg=\"%s: the path names "
		    "%s, not the pool this metaserver serves (dev %llu ino "
		    "%llu): refusing new handlers, serving the sessions it "
		    "has; restart the metaserver\"", path, CXLP_E_STALE, path,
		    what, (unsigned long long)dev, (unsigned long long)ino);
	} else if (!now && was) {
		log_err("op=pool_watch path=%s rc=0 msg=\"%s names the "
		    "served pool again: new handlers are taken\"", path, path);
	}
	__atomic_store_n(&ms->pool_replaced, now, __ATOMIC_RELEASE);
	return now;
}

/* Constant-time equality of the HELLO's secret with the server's: every
 * byte of the longest possible secret is looked at, whatever matches. */
static bool
secret_ok(const struct ms *ms, const struct proto_hello *m)
{
	unsigned diff = m->secret_len ^ ms->secret_len;

	for (size_t i = 0; i < PROTO_SECRET_MAX; i++) {
		uint8_t a = i < m->secret_len ? m->secret[i] : 0;

		diff |= (unsigned)(a ^ ms->secret[i]);
	}
	return diff == 0;
}

/* ms_hello_admit -- a HELLO from a non-ipc peer must carry the shared
 * secret (when the server has one). Returns 0 to go on with ms_dispatch,
 * or CXLP_E_PERM with the error reply in reply. */
int
ms_hello_admit(struct ms *ms, const void *frame, size_t len,
    struct pbuf *reply)
{
	struct proto_rep_hdr rh = { .version = PROTO_VERSION,
		.op = PROTO_OP_HELLO, .status = CXLP_E_PERM };
	struct proto_req_hdr h;
	struct proto_hello m;
	struct preader body;

	if (ms->secret_len == 0 ||
	    proto_get_req_hdr(frame, len, &h, &body) != 0 ||
	    h.op != PROTO_OP_HELLO || proto_get_hello(&body, &m) != 0 ||
	    secret_ok(ms, &m)) {
		return 0;
	}
	rh.version = h.version; /* a version-2 HELLO gets a version-2 reply */
	rh.term = ms->term;
	log_err("op=hello pid=%u rc=%d msg=\"%s shared secret from a "
	    "non-ipc peer: refused\"", m.pid, CXLP_E_PERM,
	    m.secret_len == 0 ? "no" : "wrong");
	rh.req_id = h.req_id;
	pbuf_reset(reply);
	proto_put_rep_hdr(reply, &rh);
	return cxlp_fail(CXLP_E_PERM, "HELLO without the shared secret");
}
