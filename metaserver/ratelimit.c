/*
 * ratelimit.c -- per-pipe budgets for complaint lines (see ratelimit.h).
 *
 * Why this shape: the lines to bound come from one peer at a time (a
 * hostile or broken client on one pipe), so the budget is per pipe, and
 * a fixed table needs no allocation on the path that a flood exercises.
 * A pipe's slot is one of RL_PROBE slots from its id mod RL_SLOTS: the
 * one it has, else one whose window has ended with nothing to report,
 * else the one whose window started first, taken over (its count is
 * reported then, so no suppressed line goes unaccounted). Probing keeps
 * two flooding pipes with ids RL_SLOTS apart from resetting each other's
 * window on every line.
 *
 * DESIGN NOTES
 * 1. Every line asked about is either written (rl_admit true) or counted
 *    in exactly one slot's suppressed, and every count is handed out in
 *    exactly one rl_report. [rl_admit, rl_take_expired]
 * 2. pending == the number of slots with suppressed > 0.
 */
#include <stddef.h>

#include "ratelimit.h"

static void
take_count(struct ratelimit *rl, struct rl_ent *e, struct rl_report *rep)
{
	rep->pipe = e->pipe;
	rep->n = e->suppressed;
	if (e->suppressed > 0) {
		e->suppressed = 0;
		__atomic_store_n(&rl->pending, rl->pending - 1,
		    __ATOMIC_RELAXED);
	}
}

static bool
window_over(const struct rl_ent *e, uint64_t now_ms)
{
	return now_ms - e->start_ms >= RL_WINDOW_MS || now_ms < e->start_ms;
}

/* The slot of pipe (note: header comment): its own, a free one, or the
 * oldest of its RL_PROBE. */
static struct rl_ent *
find_slot(struct ratelimit *rl, uint64_t pipe, uint64_t now_ms)
{
	struct rl_ent *free_e = NULL, *old = NULL;

	for (unsigned k = 0; k < RL_PROBE; k++) {
		struct rl_ent *e = &rl->ent[(pipe + k) % RL_SLOTS];

		if (e->pipe == pipe) {
			return e;
		}
		if (free_e == NULL && e->suppressed == 0 &&
		    window_over(e, now_ms)) {
			free_e = e;
		}
		if (old == NULL || e->start_ms < old->start_ms) {
			old = e;
		}
	}
	return free_e != NULL ? free_e : old;
}

/* rl_admit -- see ratelimit.h */
bool
rl_admit(struct ratelimit *rl, uint64_t pipe, uint64_t now_ms,
    struct rl_report *rep)
{
	struct rl_ent *e = find_slot(rl, pipe, now_ms);

	rep->pipe = pipe;
	rep->n = 0;
	if (e->pipe != pipe || window_over(e, now_ms)) {
		take_count(rl, e, rep); /* its window is over */
		e->pipe = pipe;
		e->start_ms = now_ms;
		e->lines = 0;
	}
	if (e->lines < RL_BURST) {
		e->lines++;
		return true;
	}
	if (e->suppressed++ == 0) {
		__atomic_store_n(&rl->pending, rl->pending + 1,
		    __ATOMIC_RELAXED);
	}
	return false;
}

/* rl_take_expired -- see ratelimit.h */
bool
rl_take_expired(struct ratelimit *rl, uint64_t now_ms,
    struct rl_report *rep)
{
	for (unsigned i = 0; i < RL_SLOTS && rl->pending > 0; i++) {
		struct rl_ent *e = &rl->ent[i];

		if (e->suppressed > 0 &&
		    now_ms - e->start_ms >= RL_WINDOW_MS) {
			take_count(rl, e, rep);
			return true;
		}
	}
	return false;
}

/* rl_pending -- see ratelimit.h */
bool
rl_pending(const struct ratelimit *rl)
{
	return __atomic_load_n(&rl->pending, __ATOMIC_RELAXED) > 0;
}
