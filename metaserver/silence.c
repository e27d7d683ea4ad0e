/*
 * silence.c -- sessions whose handler closed without being heard, and
 * the bound on sessions per process.
 *
 * A handler that closes while the metaserver is away sends its BYE once
 * and it fails; a connect whose HELLO or first REGION_ALLOC reply is lost
 * fails on the handler's side after the server made a session. Such a
 * session used to last as long as its process (liveness.c keeps a
 * silent handler of this host, since it may still write into its
 * regions), holding its pins: nobody could delete those keys.
 *
 * The handler says in its HELLO how often it will speak (keepalive_ms: a
 * heartbeat when idle, handler/core/keeper.c), and the promise is kept in the
 * session record, so a restarted server knows it too. A session that
 * made the promise and has sent nothing for max(--grace-ms,
 * MS_SILENT_PERIODS periods) -- counted from its last request, the
 * server's start, or the last stall of the server itself -- belongs to a
 * handler that closed (or one whose process is stopped or wedged). It is
 * ended for silence [ms_sess_silence_end, in session.c with the other
 * transitions]:
 *   - its pins are released at once, durably;
 *   - if it owns no region, or its process cannot be seen (another
 *     host), it ends as BYE would (sess_end_locked), exactly as the grace
 *     period ends a silent peer of another host today;
 *   - else it is FENCED: its token is refused (a handler that was only
 *     stopped gets CXLP_E_SESSION on its next call and hands out no more
 *     pages), its keys may be deleted by anyone (op_kv.c delete_one),
 *     but its record stays, and with it the ownership of its regions, so
 *     none of their pages goes to another handler while its process may
 *     still write into pages it took before. A fenced session ends for
 *     good when its process exits (liveness.c end_reason) or when its
 *     handler's late BYE comes (the handler library resends failed BYEs
 *     at its process's next connect, handler/session/latebye.c): a handler that
 *     sends BYE has unmapped its regions.
 * A handler with keepalive 0 (or one that predates the promise) keeps
 * the old rule: its session lasts while its process runs.
 *
 * The fence lives in DRAM only. After a restart a fenced session is
 * loaded like any other, detached with its promise, and is fenced again
 * after the same silence: its pins are already gone, only the deletion
 * of its keys waits that long once more.
 *
 * Stall: CLOCK_MONOTONIC runs on while the server is stopped (SIGSTOP, a
 * starved VM), and its handlers' heartbeats wait in the socket. A reaper
 * pass that comes MS_REAP_STALL_MS late therefore counts every silence
 * afresh [ms_silence_clock], so a live handler is never ended because
 * the server, not the handler, was silent.
 *
 * Per-process bound [ms_sess_admit]: one process may hold at most
 * --max-sessions-per-process sessions (default 64; fenced ones count,
 * they hold a table slot), so that one process cannot fill the pool's
 * session table and lock every other one out. Processes are told apart
 * by what the server reads itself where it can: on ipc the peer's pid
 * (peer credentials) and that pid's start time in /proc, whatever the
 * HELLO claims, so a client sending a new start time (or host) in each
 * HELLO is still one process. Over tcp nothing the peer sends names a
 * process, and its address names a host, not a process: there the HELLO's
 * pid, start time and host are taken as they come (a bound on mistakes,
 * not on an attacker holding the shared secret; hello.c).
 *
 * What is left here are rules that change nothing: the clock of silence,
 * the test of it and the per-process bound. liveness.c asks the first
 * two, session.c the bound; this file calls neither.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "ms_int.h"

/* ms_silence_clock -- see ms_int.h */
void
ms_silence_clock(struct ms *ms, uint64_t now_ms)
{
	if (ms->reap_last_ms != 0 &&
	    now_ms > ms->reap_last_ms + MS_REAP_STALL_MS) {
		log_info("op=stall_seen ms=%llu msg=\"silence is counted "
		    "afresh\"", (unsigned long long)(now_ms -
		    ms->reap_last_ms));
		ms->awake_ms = now_ms;
	}
	ms->reap_last_ms = now_ms;
}

static uint64_t
silence_limit(const struct ms *ms, const struct ms_sess *s)
{
	uint64_t periods = (uint64_t)s->keepalive_ms * MS_SILENT_PERIODS;

	return periods > ms->grace_ms ? periods : ms->grace_ms;
}

/* ms_sess_silent -- see ms_int.h */
bool
ms_sess_silent(const struct ms *ms, const struct ms_sess *s,
    uint64_t now_ms)
{
	uint64_t since = s->heard_ms > ms->awake_ms ? s->heard_ms :
	    ms->awake_ms;

	if (s->keepalive_ms == 0 || s->fenced || s->dead || s->refs > 0) {
		return false; /* a request in flight is not silence */
	}
	return now_ms >= since && now_ms - since >= silence_limit(ms, s);
}

/* s is a session of the process r names: by the identity the server
 * read itself (POOL_SESS_PEERCRED: pid and start time of the ipc peer;
 * the HELLO's host is only a claim there), else by what the HELLO said */
static bool
same_process(const struct ms_sess *s, const struct pool_session *r)
{
	bool cred = (r->flags & POOL_SESS_PEERCRED) != 0;

	if (((s->flags & POOL_SESS_PEERCRED) != 0) != cred ||
	    s->pid != r->pid || s->start_time != r->start_time) {
		return false;
	}
	return cred || strcmp(s->host, r->host) == 0;
}

/* ms_sess_admit -- see ms_int.h */
int
ms_sess_admit(const struct ms *ms, const struct pool_session *r)
{
	unsigned n = 0, fenced = 0;

	for (size_t b = 0; b < MS_SESS_BUCKETS; b++) {
		for (const struct ms_sess *s = ms->sess[b]; s != NULL;
		    s = s->next) {
			if (same_process(s, r)) {
				n++;
				fenced += s->fenced;
			}
		}
	}
	if (n < ms->sess_per_proc) {
		return 0;
	}
	return cxlp_fail(CXLP_E_NOSPACE, "this process already has %u "
	    "sessions (--max-sessions-per-process %u; %u of them ended "
	    "unheard and held until the process exits): close some",
	    n, ms->sess_per_proc, fenced);
}

/* ms_sess_table_full -- see ms_int.h */
int
ms_sess_table_full(const struct ms *ms)
{
	return cxlp_fail(CXLP_E_NOSPACE, "session table full (%zu "
	    "sessions, the pool's bound; %zu of them ended unheard and held "
	    "until their processes exit)", ms->nsess, ms->nfenced);
}
