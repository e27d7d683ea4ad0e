/*
 * errlog.c -- the metaserver's error lines about requests, bounded per
 * peer pipe: RL_BURST lines per RL_WINDOW_MS, then one summary line
 * "suppressed K similar messages from pipe P" (ratelimit.h). A peer that
 * sends 100k bad frames costs the log a few lines a second, not 100k
 * lines; every suppressed line is still counted in a summary.
 *
 * The limiter is pure; this file gives it the clock (cxlp_now_ms), the
 * lock (ms->sess_lock, held only around the table) and the log.
 */
#include "log.h"
#include "ms_int.h"

static void
log_suppressed(const struct rl_report *rep)
{
	log_err("op=log pipe=%llu suppressed=%llu msg=\"suppressed %llu "
	    "similar messages from pipe %llu\"", (unsigned long long)rep->pipe,
	    (unsigned long long)rep->n, (unsigned long long)rep->n,
	    (unsigned long long)rep->pipe);
}

/* ms_errlog_admit -- see ms_int.h */
bool
ms_errlog_admit(struct ms *ms, uint64_t pipe)
{
	struct rl_report rep;
	bool admit;

	ms_sess_lock(ms);
	admit = rl_admit(&ms->errlog, pipe, cxlp_now_ms(), &rep);
	ms_sess_unlock(ms);
	if (rep.n > 0) {
		log_suppressed(&rep);
	}
	return admit;
}

/* ms_errlog_flush -- see ms_int.h */
void
ms_errlog_flush(struct ms *ms)
{
	struct rl_report rep;
	bool got;

	if (!rl_pending(&ms->errlog)) {
		return;
	}
	do {
		ms_sess_lock(ms);
		got = rl_take_expired(&ms->errlog, cxlp_now_ms(), &rep);
		ms_sess_unlock(ms);
		if (got) {
			log_suppressed(&rep);
		}
	} while (got);
}
