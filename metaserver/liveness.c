/*
 * liveness.c -- how the server learns that a handler is gone: pipe events
 * and process liveness, and the reaper of detached sessions.
 *
 * nng tells server.c when a pipe (one connection) comes and goes; server.c
 * records a new one with its peer's pid (ipc only) in the pipe table
 * (pipes.c) and passes its removal here. The process a session's life is
 * that of is the one its HELLO's peer was (hello.c, sess_pid): a relay
 * between handler and server (socat on the ipc socket) is no such
 * process, and its session is kept as one of another host is. When the pipe a
 * session last spoke on goes away, the session ends at once if its process
 * is gone (kill(pid, 0) says ESRCH, or /proc/<pid>/stat shows another
 * start time than the HELLO's: the pid was reused), since nothing can come
 * back for it. Otherwise it is only detached: nng redials by itself, and a
 * handler reattaches after a metaserver restart.
 *
 * How long a detached session lasts depends on what the server can see.
 * A process of this host (its pid known: from the ipc pipe, or after a
 * restart from the session record, when the record names this host) keeps
 * its session for as long as
 * it runs, however long it stays silent: its mappings outlive its
 * connection, so it may still be writing into the pages of its regions,
 * and handing those to another handler would let the two write over
 * each other. It ends when the process exits (or says BYE). A peer whose
 * life the server cannot see (another host) ends after the grace period
 * unless it speaks again. A session whose handler promised heartbeats
 * and has gone silent is ended (or fenced) by the rule of silence.c,
 * attached or not. ms_reap ends what is due.
 *
 * This file decides; it does not change a session itself. The
 * transitions (detach, end, fence) are session.c's, the pipe table is
 * pipes.c's and the rule of silence silence.c's, and none of them calls
 * back here: liveness.c -> session.c -> {silence.c, pipes.c}.
 *
 * No nng here: times are passed in, so tests drive the same code with a
 * fake clock.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "err.h"
#include "log.h"
#include "ms_int.h"
#include "procstat.h"

/* The process behind pid is gone: no such pid, a zombie (dead, not yet
 * reaped by its parent), or pid now names another process (start time). */
static bool
peer_gone(uint64_t pid, uint64_t start_time)
{
	uint64_t st = 0;
	char state = '?';

	if (!ms_pid_checkable(pid)) {
		return false;
	}
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
		return true;
	}
	if (!procstat_read(pid, &state, &st)) {
		return false;
	}
	return state == 'Z' || state == 'X' ||
	    (start_time != 0 && st != start_time);
}

/* The process whose life is the session's, seen on pipe pid: the one
 * its HELLO's peer credentials named (the pipe's peer may be a relay it
 * reattached through), none when that was a relay itself (the session
 * is kept like one of another host), else the pipe's peer. */
static uint64_t
sess_pid(const struct ms_sess *s, uint64_t pid)
{
	if (s->flags & POOL_SESS_RELAYED) {
		return 0;
	}
	return (s->flags & POOL_SESS_PEERCRED) ? s->pid : pid;
}

/* Detach or end one session whose pipe is gone; both locks held. */
static void
pipe_lost(struct ms *ms, struct ms_sess *s, uint64_t pid, uint64_t now_ms)
{
	pid = sess_pid(s, pid);
	if (peer_gone(pid, s->start_time)) {
		sess_end_locked(ms, s, "peer_exited");
		return;
	}
	ms_sess_detach(ms, s, pid, now_ms);
}

/* ms_pipe_removed -- pipe_id is gone: each session that last spoke on it
 * ends now if its process is gone, else is detached until now + grace. */
void
ms_pipe_removed(struct ms *ms, uint64_t pipe_id, uint64_t now_ms)
{
	uint64_t pid;

	ms_wrlock(ms);
	ms_sess_lock(ms);
	pid = ms_pipe_forget(ms, pipe_id);
	log_rl_info("op=pipe_rem pipe=%llu pid=%llu",
	    (unsigned long long)pipe_id,
	    (unsigned long long)pid);
	for (size_t b = 0; b < MS_SESS_BUCKETS && !ms->closing; b++) {
		struct ms_sess *next;

		for (struct ms_sess *s = ms->sess[b]; s != NULL; s = next) {
			next = s->next;
			if (s->pipe == pipe_id && !s->detached) {
				pipe_lost(ms, s, pid, now_ms);
			}
		}
	}
	ms_sess_unlock(ms);
	ms_unlock(ms);
}

#define WHY_SILENT "silent" /* ms_reap fences or ends (silence.c) */

/* Why a session should end now, or NULL. A process may close its
 * sockets before it is a zombie, so a peer that looked alive when its pipe
 * went is looked at again on every pass; so is a fenced one's. */
static const char *
end_reason(const struct ms *ms, const struct ms_sess *s, uint64_t now_ms)
{
	if (s->fenced) {
		return peer_gone(s->fence_pid, s->start_time) ? "peer_exited" :
		    NULL;
	}
	if (s->detached && peer_gone(s->peer_pid, s->start_time)) {
		return "peer_exited";
	}
	if (ms_sess_silent(ms, s, now_ms)) {
		return WHY_SILENT;
	}
	if (!s->detached || ms_pid_checkable(s->peer_pid)) {
		return NULL; /* it runs: it may still write its regions */
	}
	return s->deadline_ms <= now_ms ? "grace_expired" : NULL;
}

/* The process of this host behind s that may write its regions, or 0
 * when the server cannot look at one (another host). */
static uint64_t
local_pid(const struct ms *ms, const struct ms_sess *s)
{
	uint64_t pid = s->detached ? s->peer_pid :
	    sess_pid(s, ms_pipe_pid(ms, s->pipe));

	return ms_pid_checkable(pid) ? pid : 0;
}

/* End s for why; both locks held. */
static void
reap_one(struct ms *ms, struct ms_sess *s, const char *why)
{
	if (strcmp(why, WHY_SILENT) == 0) {
		ms_sess_silence_end(ms, s, local_pid(ms, s));
	} else {
		sess_end_locked(ms, s, why);
	}
}

static bool
any_due(struct ms *ms, uint64_t now_ms)
{
	bool found = false;

	ms_sess_lock(ms);
	ms_silence_clock(ms, now_ms);
	for (size_t b = 0; b < MS_SESS_BUCKETS && !found; b++) {
		for (struct ms_sess *s = ms->sess[b]; s != NULL && !found;
		    s = s->next) {
			found = end_reason(ms, s, now_ms) != NULL;
		}
	}
	ms_sess_unlock(ms);
	return found;
}

/* ms_reap -- end every detached session whose process is gone or whose
 * deadline is <= now_ms, and every silent one (silence.c: fenced or
 * ended). Returns how many ended or were fenced. Takes the pool lock only
 * when one is due. */
unsigned
ms_reap(struct ms *ms, uint64_t now_ms)
{
	unsigned n = 0;

	if (!any_due(ms, now_ms)) {
		return 0;
	}
	ms_wrlock(ms);
	ms_sess_lock(ms);
	for (size_t b = 0; b < MS_SESS_BUCKETS; b++) {
		struct ms_sess *next;

		for (struct ms_sess *s = ms->sess[b]; s != NULL; s = next) {
			const char *why = end_reason(ms, s, now_ms);

			next = s->next;
			if (why != NULL) {
				reap_one(ms, s, why);
				n++;
			}
		}
	}
	ms_sess_unlock(ms);
	ms_unlock(ms);
	return n;
}
