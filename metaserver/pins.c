/*
 * pins.c -- pins owned by sessions and counted (contract 5).
 *
 * A pin belongs to the session that took it: the server keeps, per
 * (session id, key slot), how many pins that session holds, and per key
 * slot how many all sessions hold together (delete asks that). Both are
 * small open-addressing hash tables over a pair of u64 with linear probing
 * and backward-shift deletion (no tombstones, so a table never degrades).
 * A cell whose count is 0 is empty: a count never reaches 0 while stored.
 *
 * The pool's pin table (pool/pintab.c) holds the pins on media, so a
 * restarted server keeps them; the maps here are its DRAM mirror, loaded
 * at start [ms_pins_load] and changed only after the pool applied a change
 * [ms_pin_change], so held/total questions never touch the media. The
 * caller serializes access (ms->lock held for writing to change pins).
 *
 * DESIGN NOTES
 *  1. total(slot) == sum over sessions of held(session, slot), and
 *     p->count == sum of all totals. [pins_add, pins_drop,
 *     pins_release_session keep both; pins_check verifies]
 *  2. Every batch that may pin first calls ms_pins_reserve(n) (pool
 *     records and DRAM cells), so a pin inside the batch never fails for
 *     want of room: a key is never registered "pinned" without its pin.
 *  3. Mirror: for every (session, slot), held() == pool_pin_held(). The
 *     media changes first; the DRAM map follows only if it applied
 *     [ms_pin_change, ms_pins_release_session].
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "ms_int.h"
#include "pool.h"

#define LOAD_NUM 7 /* grow past 7/10 full */
#define LOAD_DEN 10
#define CAP_MIN 64

static uint64_t
mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return h;
}

static size_t
home(const struct pins_map *m, uint64_t a, uint64_t b)
{
	return (size_t)mix(a, b) & (m->cap - 1);
}

static struct pins_ent *
map_find(const struct pins_map *m, uint64_t a, uint64_t b)
{
	if (m->cap == 0) {
		return NULL;
	}
	for (size_t i = home(m, a, b);; i = (i + 1) & (m->cap - 1)) {
		struct pins_ent *e = &m->tab[i];

		if (e->count == 0) {
			return NULL;
		}
		if (e->a == a && e->b == b) {
			return e;
		}
	}
}

/* Place a key known to be absent; the table has a free cell. */
static struct pins_ent *
map_place(struct pins_map *m, uint64_t a, uint64_t b)
{
	size_t i = home(m, a, b);

	while (m->tab[i].count != 0) {
		i = (i + 1) & (m->cap - 1);
	}
	m->tab[i].a = a;
	m->tab[i].b = b;
	m->n++;
	return &m->tab[i];
}

static int
map_grow(struct pins_map *m, size_t want)
{
	size_t cap = m->cap == 0 ? CAP_MIN : m->cap;
	struct pins_map nm;

	while (want * LOAD_DEN > cap * LOAD_NUM) {
		cap *= 2;
	}
	if (cap == m->cap) {
		return 0;
	}
	nm.tab = calloc(cap, sizeof(*nm.tab));
	if (nm.tab == NULL) {
		return cxlp_fail(-ENOMEM, "pins: no memory for %zu cells", cap);
	}
	nm.cap = cap;
	nm.n = 0;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->tab[i].count != 0) {
			*map_place(&nm, m->tab[i].a, m->tab[i].b) = m->tab[i];
		}
	}
	free(m->tab);
	*m = nm;
	return 0;
}

/* Empty cell i, then shift later cells of its cluster back toward their
 * home so every key stays reachable without tombstones. */
static void
map_erase(struct pins_map *m, size_t i)
{
	size_t mask = m->cap - 1;
	size_t j = i;

	m->tab[i].count = 0;
	m->n--;
	for (;;) {
		size_t h;

		j = (j + 1) & mask;
		if (m->tab[j].count == 0) {
			return;
		}
		h = home(m, m->tab[j].a, m->tab[j].b);
		/* j moves into the hole unless its home lies cyclically
		 * in (i, j] */
		if (((j - h) & mask) >= ((j - i) & mask)) {
			m->tab[i] = m->tab[j];
			m->tab[j].count = 0;
			i = j;
		}
	}
}

/* Subtract k from the count at (a, b), erasing the cell at 0. */
static void
map_sub(struct pins_map *m, uint64_t a, uint64_t b, uint64_t k)
{
	struct pins_ent *e = map_find(m, a, b);

	cxlp_assert(e != NULL && e->count >= k);
	e->count -= k;
	if (e->count == 0) {
		map_erase(m, (size_t)(e - m->tab));
	}
}

/* pins_init -- an empty pin set. */
void
pins_init(struct pins *p)
{
	memset(p, 0, sizeof(*p));
}

/* pins_fini -- free the tables; p may be initialized again. */
void
pins_fini(struct pins *p)
{
	free(p->held.tab);
	free(p->total.tab);
	memset(p, 0, sizeof(*p));
}

/* pins_reserve -- make room so that `more` pins_add calls cannot fail.
 * Returns 0 or -ENOMEM (nothing changed that matters). */
int
pins_reserve(struct pins *p, size_t more)
{
	int rc = map_grow(&p->held, p->held.n + more);

	if (rc == 0) {
		rc = map_grow(&p->total, p->total.n + more);
	}
	return rc;
}

/* pins_add -- sess takes one more pin on slot. Returns 0 or -ENOMEM. */
int
pins_add(struct pins *p, uint64_t sess, uint64_t slot)
{
	struct pins_ent *h;
	struct pins_ent *t;
	int rc = pins_reserve(p, 1);

	if (rc != 0) {
		return rc;
	}
	h = map_find(&p->held, sess, slot);
	if (h == NULL) {
		h = map_place(&p->held, sess, slot);
	}
	t = map_find(&p->total, slot, 0);
	if (t == NULL) {
		t = map_place(&p->total, slot, 0);
	}
	h->count++;
	t->count++;
	p->count++;
	return 0;
}

/* pins_drop -- release one of sess's own pins on slot. Returns 0, or
 * CXLP_E_NOTPINNED when sess holds none (others' pins never count). */
int
pins_drop(struct pins *p, uint64_t sess, uint64_t slot)
{
	if (map_find(&p->held, sess, slot) == NULL) {
		return cxlp_fail(CXLP_E_NOTPINNED,
		    "session %llu holds no pin on slot %llu",
		    (unsigned long long)sess, (unsigned long long)slot);
	}
	map_sub(&p->held, sess, slot, 1);
	map_sub(&p->total, slot, 0, 1);
	p->count--;
	return 0;
}

/* pins_held -- pins sess holds on slot. */
uint64_t
pins_held(const struct pins *p, uint64_t sess, uint64_t slot)
{
	const struct pins_ent *e = map_find(&p->held, sess, slot);

	return e == NULL ? 0 : e->count;
}

/* pins_total -- pins all sessions hold on slot. */
uint64_t
pins_total(const struct pins *p, uint64_t slot)
{
	const struct pins_ent *e = map_find(&p->total, slot, 0);

	return e == NULL ? 0 : e->count;
}

/* pins_release_session -- drop every pin sess holds; returns how many. */
uint64_t
pins_release_session(struct pins *p, uint64_t sess)
{
	uint64_t released = 0;
	size_t i = 0;

	/* Erasing cell i may shift a later (or wrapped, already seen) cell
	 * into i, so i is looked at again after an erase. The table always
	 * has an empty cell, so no cluster spans it whole. */
	while (i < p->held.cap) {
		struct pins_ent *e = &p->held.tab[i];

		if (e->count == 0 || e->a != sess) {
			i++;
			continue;
		}
		map_sub(&p->total, e->b, 0, e->count);
		released += e->count;
		p->count -= e->count;
		map_erase(&p->held, i);
	}
	return released;
}

/* pins_each_held -- call fn(arg, sess, count) for every (session, slot)
 * cell: count pins sess holds on one slot (a session may get several
 * calls). One pass over the table, whatever the number of sessions. */
void
pins_each_held(const struct pins *p,
    void (*fn)(void *arg, uint64_t sess, uint64_t count), void *arg)
{
	for (size_t i = 0; i < p->held.cap; i++) {
		const struct pins_ent *e = &p->held.tab[i];

		if (e->count != 0) {
			fn(arg, e->a, e->count);
		}
	}
}

/* pins_check -- verify design note 1; 0 or CXLP_E_CORRUPT with why. */
int
pins_check(const struct pins *p, char *why, size_t n)
{
	uint64_t sum_held = 0;
	uint64_t sum_total = 0;

	for (size_t i = 0; i < p->total.cap; i++) {
		const struct pins_ent *t = &p->total.tab[i];
		uint64_t s = 0;

		if (t->count == 0) {
			continue;
		}
		sum_total += t->count;
		for (size_t j = 0; j < p->held.cap; j++) {
			const struct pins_ent *h = &p->held.tab[j];

			s += (h->count != 0 && h->b == t->a) ? h->count : 0;
		}
		if (s != t->count) {
			if (why != NULL) {
				snprintf(why, n, "slot %llu: total %llu, "
				    "held %llu", (unsigned long long)t->a,
				    (unsigned long long)t->count,
				    (unsigned long long)s);
			}
			return CXLP_E_CORRUPT;
		}
	}
	for (size_t j = 0; j < p->held.cap; j++) {
		sum_held += p->held.tab[j].count;
	}
	if (sum_held != p->count || sum_total != p->count) {
		if (why != NULL) {
			snprintf(why, n, "count %llu, held %llu, total %llu",
			    (unsigned long long)p->count,
			    (unsigned long long)sum_held,
			    (unsigned long long)sum_total);
		}
		return CXLP_E_CORRUPT;
	}
	return 0;
}

/* ---- durable pins: the pool's pin table, mirrored here ----------------- */

/* ms_pins_reserve -- see ms_int.h; 0, CXLP_E_NOSPACE or -ENOMEM */
int
ms_pins_reserve(struct ms *ms, size_t n)
{
	int rc = pool_pin_reserve(ms->pool, n);

	return rc != 0 ? rc : pins_reserve(&ms->pins, n);
}

/* ms_pin_change -- see ms_int.h. The DRAM mirror changes only when the
 * pool applied the change (not on a replay, pool.h). */
int
ms_pin_change(struct ms *ms, uint64_t sess, uint64_t slot, int delta,
    uint64_t req, unsigned nth)
{
	bool applied = false;
	int rc = pool_pin_change(ms->pool, sess, slot, delta, req, nth,
	    &applied);

	if (rc != 0 || !applied) {
		return rc;
	}
	if (delta > 0) {
		rc = pins_add(&ms->pins, sess, slot);
	} else {
		rc = pins_drop(&ms->pins, sess, slot);
	}
	cxlp_assert(rc == 0); /* reserved; the mirror agrees with the pool */
	return 0;
}

/* ms_pins_release_session -- see ms_int.h */
uint64_t
ms_pins_release_session(struct ms *ms, uint64_t sess)
{
	uint64_t n = pool_pin_release_session(ms->pool, sess);
	uint64_t m = pins_release_session(&ms->pins, sess);

	cxlp_assert(n == m);
	return n;
}

/* ms_pins_load -- see ms_int.h; 0 or -ENOMEM */
int
ms_pins_load(struct ms *ms)
{
	struct pool_pin pin;
	uint64_t cursor = 0;
	int rc;

	while (pool_pin_next(ms->pool, &cursor, &pin) == 1) {
		for (uint32_t i = 0; i < pin.count; i++) {
			if ((rc = pins_add(&ms->pins, pin.session,
			    pin.slot)) != 0) {
				return rc;
			}
		}
	}
	return 0;
}
