/*
 * pipes.c -- the pipe table: every live peer pipe (one nng connection)
 * with the peer pid the server saw on it, and the last MS_GONE_PIPES
 * pipes removed.
 *
 * server.c adds a pipe when nng reports it, before the pipe can receive
 * [ms_pipe_added: a failure closes it]; liveness.c
 * forgets it when nng reports it gone [ms_pipe_forget] and then decides
 * what becomes of the sessions that spoke on it. session.c asks the table
 * two questions: the pid behind a pipe (the one a HELLO's session keeps,
 * ms_pipe_pid), and whether a pipe a request came on has gone already
 * (ms_pipe_gone: such a request must not bind its session to it).
 *
 * The table is the bottom of the session lifecycle's call graph: it calls
 * nothing else of the metaserver, so liveness.c and session.c both use it
 * and neither has to call the other back. Every function but
 * ms_pipe_added runs with ms->sess_lock held; ms_pipe_added takes it.
 * ms_pid_checkable says which of the pids it keeps name a process of
 * this host that the server can look at (kill, /proc).
 */
#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "ms_int.h"
#include "procstat.h"

/* ms_pipe_added -- remember a new pipe, its peer pid (0: unknown) and
 * that peer's start time, read here from /proc while the peer is sure to
 * be the one that connected: with the pid, what identifies the process
 * (hello.c), where a HELLO's own claim could be anything. */
int
ms_pipe_added(struct ms *ms, uint64_t pipe_id, uint64_t peer_pid)
{
	uint64_t start = 0;
	char state;

	if (!ms_pid_checkable(peer_pid) ||
	    !procstat_read(peer_pid, &state, &start)) {
		start = 0;
	}
	ms_sess_lock(ms);
	if (ms->npipes == ms->cap_pipes) {
		size_t cap = ms->cap_pipes == 0 ? 16 : ms->cap_pipes * 2;
		struct ms_pipe *np = realloc(ms->pipes, cap * sizeof(*np));

		if (np == NULL) {
			ms_sess_unlock(ms);
			log_err("op=pipe_add pipe=%llu rc=%d msg=\"no memory\"",
			    (unsigned long long)pipe_id, -ENOMEM);
			return -ENOMEM;
		}
		ms->pipes = np;
		ms->cap_pipes = cap;
	}
	ms->pipes[ms->npipes].id = pipe_id;
	ms->pipes[ms->npipes].pid = peer_pid;
	ms->pipes[ms->npipes].start = start;
	ms->npipes++;
	ms_sess_unlock(ms);
	/* rate-limited: a port prober opens thousands a minute */
	log_rl_info("op=pipe_add pipe=%llu pid=%llu",
	    (unsigned long long)pipe_id,
	    (unsigned long long)peer_pid);
	return 0;
}

/* ms_pipe_forget -- see ms_int.h */
uint64_t
ms_pipe_forget(struct ms *ms, uint64_t pipe_id)
{
	for (size_t i = 0; i < ms->npipes; i++) {
		if (ms->pipes[i].id == pipe_id) {
			uint64_t pid = ms->pipes[i].pid;

			ms->gone[ms->gone_next++ % MS_GONE_PIPES] =
			    ms->pipes[i];
			ms->pipes[i] = ms->pipes[--ms->npipes];
			return pid;
		}
	}
	return 0;
}

/* ms_pipe_find -- see ms_int.h */
const struct ms_pipe *
ms_pipe_find(const struct ms *ms, uint64_t pipe_id)
{
	for (size_t i = 0; i < ms->npipes; i++) {
		if (ms->pipes[i].id == pipe_id) {
			return &ms->pipes[i];
		}
	}
	return ms_pipe_gone(ms, pipe_id);
}

/* ms_pipe_pid -- see ms_int.h */
uint64_t
ms_pipe_pid(const struct ms *ms, uint64_t pipe_id)
{
	const struct ms_pipe *p = ms_pipe_find(ms, pipe_id);

	return p != NULL ? p->pid : 0;
}

/* ms_pipe_gone -- see ms_int.h. A request can still be in a worker's
 * hands when its pipe's removal is handled; it must not bind its session
 * to that pipe again, or nothing would ever detach the session. */
const struct ms_pipe *
ms_pipe_gone(const struct ms *ms, uint64_t pipe_id)
{
	for (size_t i = 0; i < MS_GONE_PIPES; i++) {
		if (ms->gone[i].id == pipe_id && pipe_id != 0) {
			return &ms->gone[i];
		}
	}
	return NULL;
}

/* ms_pid_checkable -- see ms_int.h */
bool
ms_pid_checkable(uint64_t pid)
{
	return pid != 0 && pid <= INT32_MAX;
}

/* ms_pipes_fini -- free the table (at shutdown; no pipe event runs). */
void
ms_pipes_fini(struct ms *ms)
{
	free(ms->pipes);
	ms->pipes = NULL;
	ms->npipes = ms->cap_pipes = 0;
}
