/*
 * damage.h -- what opening a pool found damaged, as data: which records,
 * why, and what dropping them loses (keys, value bytes, sessions, pins).
 * See damage.c for how damage is told from what a crash leaves.
 *
 * The pool never prints: pool_open_report fills a struct pool_damage and
 * the caller (the metaserver) decides what to say and whether to go on.
 */
#ifndef CXLP_POOL_DAMAGE_H
#define CXLP_POOL_DAMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

enum pool_damage_kind {
	POOL_DAMAGE_REGION = 0,  /* region record; id = region id */
	POOL_DAMAGE_SLOT = 1,    /* index slot; id = slot */
	POOL_DAMAGE_ENTRY = 2,   /* a valid index entry that fits no free
	                          * page of a live region; id = slot */
	POOL_DAMAGE_SESSION = 3, /* session record; id = record number */
	POOL_DAMAGE_PIN = 4,     /* pin record; id = record number */
};

#define POOL_DAMAGE_KEYTEXT 48 /* bytes of a key kept, printable, NUL */

/* One damaged record. */
struct pool_damage_rec {
	enum pool_damage_kind kind;
	uint64_t id;     /* see the kinds */
	const char *why; /* static string: what is wrong with it */
	uint64_t keys;   /* acknowledged keys lost with it */
	uint64_t bytes;  /* their value bytes */
	uint64_t pins;   /* pins lost with it */
	char key[POOL_DAMAGE_KEYTEXT]; /* SLOT, ENTRY: the key as far as it
	                                * reads back, escaped; "" if not */
};

#define POOL_DAMAGE_KEEP 32u /* records kept in detail; more only counted */

/* What an open found. Records beyond POOL_DAMAGE_KEEP are counted in
 * nrec and in the totals but not kept. Plain data: nothing to free. */
struct pool_damage {
	struct pool_damage_rec rec[POOL_DAMAGE_KEEP];
	uint32_t nrec;     /* damaged records found (may exceed KEEP) */
	uint64_t keys;     /* acknowledged keys dropping them loses */
	uint64_t bytes;    /* their value bytes */
	uint64_t sessions; /* session records lost */
	uint64_t pins;     /* pins lost */
	uint64_t torn;     /* records a crash left mid-write: rolled back or
	                    * reaped silently, nothing acknowledged lost */
	uint64_t restored; /* damaged records restored from their mirror:
	                    * nothing lost */
	uint64_t tidy;     /* other writes open makes (tombstone sweep,
	                    * session id raised) */
	bool dropped;      /* the damaged records were dropped on media */
};

/* pool_open_report -- pool_open that also says what it found damaged.
 * Opening recovers in two phases: first it rebuilds the DRAM state
 * without writing and fills *dmg (NULL: not wanted); then, unless the
 * pool is opened read-only, it writes the recovery back. With
 * POOL_NODROP in flags and damage found (dmg->nrec > 0), the second
 * phase does not run: it returns CXLP_E_CORRUPT with *out NULL, the
 * file untouched, cxlp_errormsg() naming the first damaged record, and
 * *dmg saying all of it. Without POOL_NODROP the damaged records are
 * dropped (dmg->dropped). Torn records are rolled back either way. */
int pool_open_report(struct pool **out, const char *path, unsigned flags,
    const struct pool_params *params, struct pool_damage *dmg);

/* pool_damage_describe -- one line for r into buf[n] (e.g. "region 0
 * record: checksum mismatch (899 keys, 56.2 MiB)"); returns buf. */
char *pool_damage_describe(const struct pool_damage_rec *r, char *buf,
    size_t n);
/* pool_damage_bytes -- bytes as "56.2 MiB" into buf[n]; returns buf. */
char *pool_damage_bytes(uint64_t bytes, char *buf, size_t n);

/* ---- inside the pool: what the rebuild steps report ------------------- */

struct pool;
struct kv_val;

/* damage_region -- region record id is damaged (why). */
void damage_region(struct pool *p, uint32_t id, const char *why);
/* damage_key -- the valid entry in slot (value v, key[klen]) is
 * dropped: its region's record was damaged (counted there) or it fits no
 * free page of a live region. */
void damage_key(struct pool *p, uint64_t slot, const struct kv_val *v,
    const void *key, size_t klen);
/* damage_session -- session record i is damaged. */
void damage_session(struct pool *p, uint32_t i, const char *why);
/* damage_pin -- pin record i is damaged. */
void damage_pin(struct pool *p, uint32_t i, const char *why);
/* damage_index_recover -- kvindex_recover_report over p's index, slot
 * damage into p's report, torn slots and the sweep counted. */
int damage_index_recover(struct pool *p, bool repair);

#endif /* CXLP_POOL_DAMAGE_H */
