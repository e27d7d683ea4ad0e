/*
 * damage.c -- the damage report of an open: which records recovery would
 * drop because they are damaged, and what dropping them loses.
 *
 * Why this module: recovery (regtab.c, sesstab.c, kvindex.c, kv.c,
 * pintab.c) was built to roll back what a crash leaves half written, and
 * it used to drop everything else that failed validation the same way,
 * with one log line at most: one flipped bit in a region record lost all
 * the region's keys. A crash and damage leave different marks, though,
 * because every record is published by one 8-byte store after its body
 * is persisted (kvindex.c design notes 4 and 10):
 *   - torn by a crash: a body written under a word that still says
 *     "not there" (a FREE region record, a session record with id 0, a
 *     pin record with session 0: never read), an index slot whose word
 *     is odd with its old EMPTY/TOMB state and no checksum, the later
 *     steps of a multi-record change not yet made (pins of an ended
 *     session, an ORPHAN region with no keys);
 *   - damage: a published record that fails its checksum or holds a
 *     value no write path produces (a bad state, an extent outside the
 *     data area, two regions over the same space, an odd word on a LIVE
 *     slot, a key pointing at no free page of a live region, two pin
 *     records for one key).
 * Each rebuild step tells the two apart where it drops a record and
 * reports damage here; pool.c runs the steps once without writing to get
 * the whole report before anything is dropped (pool.c, "Recovery in two
 * phases"). This file only collects and formats: no I/O, no logging.
 */
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "damage.h"
#include "pool_int.h"

static struct pool_damage_rec *
add(struct pool *p, enum pool_damage_kind kind, uint64_t id,
    const char *why)
{
	struct pool_damage *d = p->damage;
	struct pool_damage_rec *r;

	if (d->nrec++ >= POOL_DAMAGE_KEEP) {
		return NULL;
	}
	r = &d->rec[d->nrec - 1];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->id = id;
	r->why = why;
	return r;
}

/* key as text: printable ASCII as is, other bytes as \xNN, cut short */
static void
key_text(char *out, const void *key, size_t klen)
{
	const unsigned char *k = key;
	size_t o = 0;

	for (size_t i = 0; i < klen && o + 5 < POOL_DAMAGE_KEYTEXT; i++) {
		if (k[i] >= 0x20 && k[i] < 0x7f && k[i] != '"' &&
		    k[i] != '\\') {
			out[o++] = (char)k[i];
		} else {
			o += (size_t)snprintf(out + o, 5, "\\x%02x", k[i]);
		}
	}
	if (o + 5 >= POOL_DAMAGE_KEYTEXT) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

/* damage_region -- see damage.h */
void
damage_region(struct pool *p, uint32_t id, const char *why)
{
	p->reg[id].damaged = true;
	(void)add(p, POOL_DAMAGE_REGION, id, why);
}

static struct pool_damage_rec *
find(struct pool *p, enum pool_damage_kind kind, uint64_t id)
{
	struct pool_damage *d = p->damage;
	uint32_t n = d->nrec < POOL_DAMAGE_KEEP ? d->nrec : POOL_DAMAGE_KEEP;

	for (uint32_t i = 0; i < n; i++) {
		if (d->rec[i].kind == kind && d->rec[i].id == id) {
			return &d->rec[i];
		}
	}
	return NULL;
}

/* damage_key -- see damage.h */
void
damage_key(struct pool *p, uint64_t slot, const struct kv_val *v,
    const void *key, size_t klen)
{
	struct pool_damage_rec *r = NULL;

	p->damage->keys++;
	p->damage->bytes += v->len;
	if (v->region < p->nregions && p->reg[v->region].damaged) {
		r = find(p, POOL_DAMAGE_REGION, v->region);
	} else if ((r = add(p, POOL_DAMAGE_ENTRY, slot, "points at no free "
	    "page of a live region")) != NULL) {
		key_text(r->key, key, klen);
	}
	if (r != NULL) {
		r->keys++;
		r->bytes += v->len;
	}
}

/* damage_session -- see damage.h */
void
damage_session(struct pool *p, uint32_t i, const char *why)
{
	p->damage->sessions++;
	(void)add(p, POOL_DAMAGE_SESSION, i, why);
}

/* damage_pin -- see damage.h */
void
damage_pin(struct pool *p, uint32_t i, const char *why)
{
	struct pool_damage_rec *r = add(p, POOL_DAMAGE_PIN, i, why);
	uint32_t n = pin_count(p->ptab[i].word);

	p->damage->pins += n;
	if (r != NULL) {
		r->pins = n;
	}
}

/* a damaged slot: its key is lost; named when its record still reads
 * back as the key the slot's tag and the record's hash say (a flipped
 * key reference or tag would name another key) */
static void
slot_damaged(void *arg, uint64_t i, const char *why)
{
	struct pool *p = arg;
	const struct kv_slot *s = &p->kv.slots[i];
	struct pool_damage_rec *r = add(p, POOL_DAMAGE_SLOT, i, why);
	const void *key;
	size_t klen;
	uint32_t hlo;

	p->damage->keys++;
	p->damage->bytes += s->len;
	if (r == NULL) {
		return;
	}
	r->keys = 1;
	r->bytes = s->len;
	if (keyheap_read(&p->heap, s->key, &key, &klen, &hlo) == 0 &&
	    XXH3_64bits(key, klen) == ((uint64_t)s->tag << 32 | hlo)) {
		key_text(r->key, key, klen);
	}
}

/* damage_index_recover -- see damage.h */
int
damage_index_recover(struct pool *p, bool repair)
{
	struct kv_recovery rec = { .damage = slot_damaged, .arg = p };
	int rc = kvindex_recover_report(&p->kv, repair, &rec);

	p->damage->torn += rec.torn;
	p->damage->tidy += rec.sweep;
	return rc;
}

/* pool_damage_bytes -- see damage.h */
char *
pool_damage_bytes(uint64_t bytes, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double x = (double)bytes;
	unsigned u = 0;

	while (x >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		x /= 1024;
		u++;
	}
	if (u == 0) {
		snprintf(buf, n, "%llu B", (unsigned long long)bytes);
	} else {
		snprintf(buf, n, "%.1f %s", x, unit[u]);
	}
	return buf;
}

/* pool_damage_describe -- see damage.h */
char *
pool_damage_describe(const struct pool_damage_rec *r, char *buf, size_t n)
{
	static const char *const name[] = {
		[POOL_DAMAGE_REGION] = "region", [POOL_DAMAGE_SLOT] = "index slot",
		[POOL_DAMAGE_ENTRY] = "index slot",
		[POOL_DAMAGE_SESSION] = "session record",
		[POOL_DAMAGE_PIN] = "pin record",
	};
	unsigned long long id = (unsigned long long)r->id;
	char b[32];

	if (r->kind == POOL_DAMAGE_REGION) {
		snprintf(buf, n, "region %llu record: %s (%llu keys, %s)", id,
		    r->why, (unsigned long long)r->keys,
		    pool_damage_bytes(r->bytes, b, sizeof(b)));
	} else if (r->kind == POOL_DAMAGE_PIN) {
		snprintf(buf, n, "pin record %llu: %s (%llu pins)", id, r->why,
		    (unsigned long long)r->pins);
	} else if (r->key[0] != '\0') {
		snprintf(buf, n, "%s %llu (key \"%s\"): %s", name[r->kind], id,
		    r->key, r->why);
	} else {
		snprintf(buf, n, "%s %llu: %s", name[r->kind], id, r->why);
	}
	return buf;
}
