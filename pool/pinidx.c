/*
 * pinidx.c -- the pin table's DRAM index: three chained hashes over the
 * pin records, rebuilt at open (pintab_rebuild), so that no question
 * about pins scans the table.
 *
 * Why this shape: the records on media (pintab.c) are the one copy of
 * the counts; the index holds links only, so a total is a walk of one
 * bucket and cannot drift from the media unless a link does. One chain
 * per question: by (session, slot) finds a pair's record on every pin
 * change [pool_pin_held, pool_pin_change]; by slot sums every session's
 * pins on a key [pool_pin_total: a delete's refusal, and eviction for
 * each candidate key]; by session walks one session's records
 * [pool_pin_session_total, pool_pin_release_session]. The pair and slot
 * hashes have at least as many buckets as the table has records, the
 * session hash as many as the session table, so a walk costs the records
 * it is after plus O(1) expected. Chains are doubly linked because all
 * of a session's records share one bucket: a singly linked unlink would
 * cost the session's size for each record freed.
 *
 * DESIGN NOTES
 *
 * 1. A record is on each chain, once, in the bucket its words hash to
 *    (the chain's key: keyed[] below), iff live[i] is set; only
 *    pinidx_link and pinidx_unlink change either. Session and slot do
 *    not change while a record is live (pintab.c note 1), so a record
 *    never moves between buckets.
 * 2. records, pins and retired count the live records, the sum of their
 *    counts and those of count 0 [pinidx_link, pinidx_unlink; pintab.c's
 *    pin_step when a count changes in place].
 * 3. pool_pin_total(slot) and pool_pin_session_total(session) are the
 *    sums of the counts of the live records that name them, read off the
 *    chains of 1 alone. pinidx_check verifies 1; pool_check (check.c)
 *    verifies 2 and 3 against the media.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "pool_int.h"

/* the words each chain hashes and matches (note 1) */
static const struct {
	bool session, slot;
	const char *name;
} keyed[PIN_BY_COUNT] = {
	[PIN_BY_PAIR] = { true, true, "pair" },
	[PIN_BY_SLOT] = { false, true, "slot" },
	[PIN_BY_SESSION] = { true, false, "session" },
};

static uint32_t
bucket(const struct pool *p, enum pin_by by, uint64_t session, uint64_t slot)
{
	uint64_t a = keyed[by].session ? session : 0;
	uint64_t b = keyed[by].slot ? slot : 0;
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (uint32_t)(h & p->pin.by[by].mask);
}

static uint32_t
bucket_of(const struct pool *p, enum pin_by by, uint32_t i)
{
	return bucket(p, by, p->ptab[i].session, p->ptab[i].slot);
}

static bool
matches(const struct pool *p, enum pin_by by, uint32_t i, uint64_t session,
    uint64_t slot)
{
	return (!keyed[by].session || p->ptab[i].session == session) &&
	    (!keyed[by].slot || p->ptab[i].slot == slot);
}

/* the record after i (PIN_NONE: the first) on by's chain that matches
 * (session, slot) in by's key, or PIN_NONE */
static uint32_t
chain_next(const struct pool *p, enum pin_by by, uint64_t session,
    uint64_t slot, uint32_t i)
{
	const struct pin_chain *c = &p->pin.by[by];

	if (c->head == NULL) {
		return PIN_NONE;
	}
	i = i == PIN_NONE ? c->head[bucket(p, by, session, slot)] : c->next[i];
	while (i != PIN_NONE && !matches(p, by, i, session, slot)) {
		i = c->next[i];
	}
	return i;
}

/* pins of the records on by's chain that match (session, slot) (note 3) */
static uint64_t
chain_sum(const struct pool *p, enum pin_by by, uint64_t session,
    uint64_t slot)
{
	uint64_t n = 0;
	uint32_t i = chain_next(p, by, session, slot, PIN_NONE);

	for (; i != PIN_NONE; i = chain_next(p, by, session, slot, i)) {
		n += pin_count(p->ptab[i].word);
	}
	return n;
}

static int
chain_init(struct pin_chain *c, uint32_t buckets, uint32_t records)
{
	uint32_t nb = 1;

	while (nb < buckets) {
		nb <<= 1;
	}
	c->mask = nb - 1;
	c->head = malloc(nb * sizeof(*c->head));
	c->next = malloc((records + 1) * sizeof(*c->next));
	c->prev = malloc((records + 1) * sizeof(*c->prev));
	if (c->head == NULL || c->next == NULL || c->prev == NULL) {
		return -ENOMEM;
	}
	memset(c->head, 0xff, nb * sizeof(*c->head));
	return 0;
}

/* pinidx_init -- see pool_int.h */
int
pinidx_init(struct pool *p)
{
	const uint32_t buckets[PIN_BY_COUNT] = {
		[PIN_BY_PAIR] = p->npins,
		[PIN_BY_SLOT] = p->npins,
		[PIN_BY_SESSION] = p->nsess,
	};
	int rc = 0;

	p->pin.live = calloc(p->npins + 1, 1);
	for (int by = 0; by < PIN_BY_COUNT; by++) {
		rc |= chain_init(&p->pin.by[by], buckets[by], p->npins);
	}
	if (rc != 0 || p->pin.live == NULL) {
		return cxlp_fail(-ENOMEM, "no memory to index %u pin records",
		    p->npins);
	}
	p->pin.records = p->pin.pins = p->pin.retired = 0;
	return 0;
}

/* pinidx_fini -- see pool_int.h */
void
pinidx_fini(struct pool *p)
{
	for (int by = 0; by < PIN_BY_COUNT; by++) {
		free(p->pin.by[by].head);
		free(p->pin.by[by].next);
		free(p->pin.by[by].prev);
		memset(&p->pin.by[by], 0, sizeof(p->pin.by[by]));
	}
	free(p->pin.live);
	p->pin.live = NULL;
}

/* pinidx_link -- see pool_int.h (notes 1, 2) */
void
pinidx_link(struct pool *p, uint32_t i)
{
	uint32_t count = pin_count(p->ptab[i].word);

	for (int by = 0; by < PIN_BY_COUNT; by++) {
		struct pin_chain *c = &p->pin.by[by];
		uint32_t b = bucket_of(p, by, i);

		c->next[i] = c->head[b];
		c->prev[i] = PIN_NONE;
		if (c->head[b] != PIN_NONE) {
			c->prev[c->head[b]] = i;
		}
		c->head[b] = i;
	}
	p->pin.live[i] = 1;
	p->pin.records++;
	p->pin.pins += count;
	p->pin.retired += count == 0;
}

/* pinidx_unlink -- see pool_int.h (notes 1, 2) */
void
pinidx_unlink(struct pool *p, uint32_t i)
{
	uint32_t count = pin_count(p->ptab[i].word);

	cxlp_assert(p->pin.live[i]);
	for (int by = 0; by < PIN_BY_COUNT; by++) {
		struct pin_chain *c = &p->pin.by[by];

		if (c->prev[i] == PIN_NONE) {
			c->head[bucket_of(p, by, i)] = c->next[i];
		} else {
			c->next[c->prev[i]] = c->next[i];
		}
		if (c->next[i] != PIN_NONE) {
			c->prev[c->next[i]] = c->prev[i];
		}
	}
	p->pin.live[i] = 0;
	p->pin.records--;
	p->pin.pins -= count;
	p->pin.retired -= count == 0;
}

/* pinidx_find -- see pool_int.h */
uint32_t
pinidx_find(const struct pool *p, uint64_t session, uint64_t slot)
{
	return chain_next(p, PIN_BY_PAIR, session, slot, PIN_NONE);
}

/* pinidx_of_session -- see pool_int.h */
uint32_t
pinidx_of_session(const struct pool *p, uint64_t session, uint32_t i)
{
	return chain_next(p, PIN_BY_SESSION, session, 0, i);
}

/* pool_pin_held -- see pool.h */
uint32_t
pool_pin_held(const struct pool *p, uint64_t session, uint64_t slot)
{
	uint32_t i = pinidx_find(p, session, slot);

	return i == PIN_NONE ? 0 : pin_count(p->ptab[i].word);
}

/* pool_pin_total -- see pool.h. With no pin held anywhere (the common
 * case of a delete, or of eviction's candidates) it answers without
 * touching a bucket, which is a cache miss in a table of npins heads. */
uint64_t
pool_pin_total(const struct pool *p, uint64_t slot)
{
	return p->pin.pins == 0 ? 0 : chain_sum(p, PIN_BY_SLOT, 0, slot);
}

/* pool_pin_session_total -- see pool.h */
uint64_t
pool_pin_session_total(const struct pool *p, uint64_t session)
{
	return chain_sum(p, PIN_BY_SESSION, session, 0);
}

/* ---- pinidx_check: note 1 ----------------------------------------------- */

struct pck {
	const struct pool *p;
	void (*report)(void *arg, const char *problem);
	void *arg;
	int problems;
	uint8_t *seen; /* per record: met on the chain being walked */
	bool walkable; /* no chain leaves the table or loops */
};

static void
problem(struct pck *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
problem(struct pck *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	problem_vreport(c->report, c->arg, &c->problems, fmt, ap);
	va_end(ap);
}

/* one record met in bucket b of by's chain, after record prev; false
 * stops the walk (a link out of the table, or a cycle) */
static bool
check_link(struct pck *c, enum pin_by by, uint32_t b, uint32_t prev,
    uint32_t i)
{
	const struct pool *p = c->p;
	const char *name = keyed[by].name;

	if (i >= p->npins || c->seen[i]) {
		problem(c, "pins by %s: bucket %u links to record %u %s", name,
		    b, i, i >= p->npins ? "past the table" : "a second time");
		c->walkable = false;
		return false;
	}
	c->seen[i] = 1;
	if (!p->pin.live[i] || p->ptab[i].session == 0) {
		problem(c, "pins by %s: record %u is on a chain but %s", name,
		    i, p->pin.live[i] ? "free on media" : "not live");
	} else if (bucket_of(p, by, i) != b) {
		problem(c, "pins by %s: record %u is in bucket %u, not %u",
		    name, i, b, bucket_of(p, by, i));
	}
	if (p->pin.by[by].prev[i] != prev) {
		problem(c, "pins by %s: record %u links back to %u, not %u",
		    name, i, p->pin.by[by].prev[i], prev);
	}
	return true;
}

static void
check_chain(struct pck *c, enum pin_by by)
{
	const struct pool *p = c->p;
	const struct pin_chain *ch = &p->pin.by[by];

	memset(c->seen, 0, p->npins + 1);
	for (uint32_t b = 0; b <= ch->mask; b++) {
		uint32_t prev = PIN_NONE;

		for (uint32_t i = ch->head[b]; i != PIN_NONE; i = ch->next[i]) {
			if (!check_link(c, by, b, prev, i)) {
				break;
			}
			prev = i;
		}
	}
	for (uint32_t i = 0; i < p->npins; i++) {
		if (p->pin.live[i] && !c->seen[i]) {
			problem(c, "pins by %s: live record %u is on no chain",
			    keyed[by].name, i);
		}
	}
}

/* pinidx_check -- see pool_int.h */
int
pinidx_check(const struct pool *p,
    void (*report)(void *arg, const char *problem), void *arg,
    bool *walkable)
{
	struct pck c = { p, report, arg, 0, NULL, true };

	*walkable = false;
	if (p->pin.live == NULL) {
		return 0; /* not indexed: nothing to agree with */
	}
	c.seen = calloc(p->npins + 1, 1);
	if (c.seen == NULL) {
		problem(&c, "pins: out of memory for the check");
		return c.problems;
	}
	for (int by = 0; by < PIN_BY_COUNT; by++) {
		check_chain(&c, by);
	}
	free(c.seen);
	*walkable = c.walkable;
	return c.problems;
}
