/*
 * ratelimit.h -- a per-peer budget for the metaserver's complaint lines,
 * so that a peer sending a flood of bad frames cannot fill the log (100k
 * bad frames wrote 9.7 MB at --log-level err).
 *
 * Each peer pipe may have RL_BURST lines written per RL_WINDOW_MS; the
 * lines past that are counted, not written, and the count is reported in
 * one summary line ("suppressed K similar messages from pipe P") on the
 * pipe's next line after its window, or by rl_take_expired. A pure
 * module: no clock (the caller passes now_ms), no lock (the caller
 * serializes), and all zeros is a valid empty limiter.
 */
#ifndef CXLP_MS_RATELIMIT_H
#define CXLP_MS_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define RL_SLOTS 256       /* pipes tracked at once */
#define RL_PROBE 8         /* slots a pipe may use: from pipe id mod */
#define RL_BURST 10        /* lines per pipe per window */
#define RL_WINDOW_MS 1000u /* ms */

struct rl_ent {
	uint64_t pipe;       /* pipe id this slot counts for */
	uint64_t start_ms;   /* start of its window */
	uint32_t lines;      /* lines written in the window */
	uint64_t suppressed; /* lines not written since the last report */
};

struct ratelimit {
	struct rl_ent ent[RL_SLOTS];
	uint64_t pending; /* slots with suppressed > 0 (atomic reads) */
};

/* A summary to write: n lines about pipe were suppressed (n 0: none). */
struct rl_report {
	uint64_t pipe;
	uint64_t n;
};

/* rl_admit -- may a line about pipe be written at now_ms? When *rep
 * comes back with n > 0, write its summary first (the pipe's previous
 * window, or the pipe whose slot this one takes over). */
bool rl_admit(struct ratelimit *rl, uint64_t pipe, uint64_t now_ms,
    struct rl_report *rep);

/* rl_take_expired -- one slot whose window has ended with lines
 * suppressed: true and its summary in *rep (its count cleared), or
 * false when there is none. */
bool rl_take_expired(struct ratelimit *rl, uint64_t now_ms,
    struct rl_report *rep);

/* rl_pending -- some slot holds a count not yet reported (a cheap
 * check, safe without the caller's lock, before rl_take_expired). */
bool rl_pending(const struct ratelimit *rl);

#endif /* CXLP_MS_RATELIMIT_H */
