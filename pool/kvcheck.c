/*
 * kvcheck.c -- the KV index read whole, slot by slot: recovery at open,
 * which rebuilds the index's DRAM state from the slots and drops what a
 * crash tore or damage broke (kvindex.c design note 6), and the scan that
 * checks every invariant of the index (note 9), for pool_check and
 * pool-inspect check.
 *
 * Apart from kvindex.c, which changes the index one key at a time: both
 * walk every slot, neither is on a request's path, and both only judge
 * slots by the rules kvindex.c writes them by (kvindex_slot_valid and the
 * other helpers of pool_int.h), so the notes stay in one place.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "err.h"
#include "kvindex.h"
#include "pool_int.h"

/* slot_damage for a PEND slot (kvindex.c note 11): with no commit under
 * way, damage; one that fails validation was whole when it was written,
 * so damage too, unless its commit is rolled back anyway (torn: nothing
 * acknowledged is lost); one kept has its record marked. */
static const char *
pend_damage(const struct kvindex *kv, uint64_t i, bool *torn)
{
	const struct kv_slot *s = &kv->slots[i];
	const void *key;
	size_t klen;

	if (kv->pend == KV_PEND_NONE) {
		return "pending slot with no commit under way";
	}
	if (!kvindex_slot_held(kv, i, &key, &klen)) {
		*torn = kv->pend == KV_PEND_DROP;
		return *torn ? NULL : "pending slot of a decided commit: "
		    "checksum or key record bad";
	}
	if (kv->pend == KV_PEND_KEEP &&
	    keyheap_mark(kv->heap, s->key, klen) != 0) {
		return "key record overlaps another key's";
	}
	return NULL;
}

/* Why recovery drops slot i as damage, or NULL if it keeps it or rolls
 * it back as torn (*torn). Torn is exactly what kvindex_put leaves: an
 * odd word, the old state EMPTY or TOMB, no checksum (note 4c). An odd
 * LIVE word (a flipped low bit) is never written, nor is a word with
 * another state; a LIVE slot that fails kvindex_slot_valid was whole
 * when it was published (4d before 4e), so it is damage too. */
static const char *
slot_damage(const struct kvindex *kv, uint64_t i, bool *torn)
{
	const struct kv_slot *s = &kv->slots[i];
	uint64_t w = kvindex_load_word(s);
	uint32_t st = kv_state(w), hlo;
	const void *key;
	size_t klen;

	*torn = false;
	if (kv_seq(w) & 1u) {
		*torn = (st == KV_EMPTY || st == KV_TOMB) && kv_sum(w) == 0;
		return *torn ? NULL : "odd sequence word on a published slot";
	}
	if (st == KV_EMPTY || st == KV_TOMB) {
		return NULL;
	}
	if (st == KV_PEND) {
		return pend_damage(kv, i, torn);
	}
	if (st != KV_LIVE) {
		return "bad state";
	}
	if (kv_sum(w) != layout_slot_checksum(s, i)) {
		return "checksum mismatch";
	}
	if (keyheap_read(kv->heap, s->key, &key, &klen, &hlo) != 0 ||
	    XXH3_64bits(key, klen) != ((uint64_t)s->tag << 32 | hlo)) {
		return "key record unreadable or not its key";
	}
	if (keyheap_mark(kv->heap, s->key, klen) != 0) {
		return "key record overlaps another key's";
	}
	return NULL;
}

/* a valid PEND slot at recovery (design note 11): LIVE if its commit
 * was decided (KEEP), else TOMB */
static void
settle_pend(struct kvindex *kv, uint64_t i, bool repair,
    struct kv_recovery *rec)
{
	struct kv_slot *s = &kv->slots[i];
	uint64_t w = kvindex_load_word(s);
	bool keep = kv->pend == KV_PEND_KEEP;

	if (repair) {
		kvindex_store_word(kv, s, kv_word(kv_seq(w) + 2,
		    keep ? KV_LIVE : KV_TOMB, keep ? kv_sum(w) : 0), true);
	}
	kv->live += keep;
	kv->tombs += !keep;
	rec->pend++;
}

/* one slot of recovery (design note 6): drop it if torn or damaged */
static void
recover_slot(struct kvindex *kv, uint64_t i, bool repair,
    struct kv_recovery *rec)
{
	struct kv_slot *s = &kv->slots[i];
	uint64_t w = kvindex_load_word(s);
	uint32_t st = kv_state(w), seq = kv_seq(w);
	bool torn;
	const char *why = slot_damage(kv, i, &torn);

	if (why == NULL && !torn && st == KV_PEND) {
		settle_pend(kv, i, repair, rec);
		return;
	}
	if (why == NULL && !torn) {
		kv->live += st == KV_LIVE;
		kv->tombs += st == KV_TOMB;
		return;
	}
	/* odd: back to the old state; a LIVE (or odd LIVE) slot: TOMB */
	st = (seq & 1u) && st == KV_EMPTY ? KV_EMPTY : KV_TOMB;
	if (repair) {
		kvindex_store_word(kv, s, kv_word(seq + 1 + !(seq & 1u), st, 0),
		    true);
	}
	kv->tombs += st == KV_TOMB;
	if (torn) {
		rec->torn++;
	} else {
		rec->damaged++;
		if (rec->damage != NULL) {
			rec->damage(rec->arg, i, why);
		}
	}
}

/* kvindex_recover_report -- see kvindex.h */
int
kvindex_recover_report(struct kvindex *kv, bool repair,
    struct kv_recovery *rec)
{
	rec->torn = rec->damaged = rec->pend = 0;
	keyheap_reset(kv->heap);
	kv->live = kv->tombs = 0;
	for (uint64_t i = 0; i < kv->nslots; i++) {
		recover_slot(kv, i, repair, rec);
	}
	keyheap_sweep(kv->heap);
	/* e.g. a pool written before sweeps (3) */
	rec->sweep = kv->tombs > kv->nslots / 16;
	if (repair && rec->sweep) {
		kvindex_sweep_table(kv);
	}
	return 0;
}

/* kvindex_recover -- see kvindex.h */
int
kvindex_recover(struct kvindex *kv, bool repair, uint64_t *dropped)
{
	struct kv_recovery rec = { 0 };

	kvindex_recover_report(kv, repair, &rec);
	if (dropped != NULL) {
		*dropped = rec.torn + rec.damaged;
	}
	return 0;
}

struct scan {
	void (*report)(void *arg, const char *problem);
	void *arg;
	int problems;
};

static void
scan_report(struct scan *sc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
scan_report(struct scan *sc, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	sc->problems++;
	if (sc->report == NULL) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sc->report(sc->arg, msg);
}

/* one slot of the scan; adds its record's granules to *gran */
static void
scan_slot(const struct kvindex *kv, uint64_t i, struct scan *sc,
    uint64_t *live, uint64_t *tombs, uint64_t *gran)
{
	uint64_t w = kvindex_load_word(&kv->slots[i]);
	const void *key;
	size_t klen;
	uint32_t g;

	if (kv_seq(w) & 1u) {
		scan_report(sc, "index slot %llu is mid-write (odd seq %u)",
		    (unsigned long long)i, kv_seq(w));
		return;
	}
	*tombs += kv_state(w) == KV_TOMB;
	if (kv_state(w) == KV_EMPTY || kv_state(w) == KV_TOMB) {
		return;
	}
	if (kv_state(w) == KV_PEND && kv->pend != KV_PEND_KEEP) {
		/* DROP: a tombstone-to-be, its record free (note 11) */
		*tombs += kv->pend == KV_PEND_DROP;
		if (kv->pend == KV_PEND_NONE) {
			scan_report(sc, "index slot %llu is pending (a request "
			    "group's key) with no commit under way",
			    (unsigned long long)i);
		}
		return;
	}
	if (!kvindex_slot_held(kv, i, &key, &klen)) {
		scan_report(sc, "index slot %llu: bad state, checksum or key "
		    "record", (unsigned long long)i);
		return;
	}
	(*live)++;
	if (!kvindex_slot_reachable(kv, i)) {
		scan_report(sc, "index slot %llu: key unreachable by probing "
		    "or duplicated", (unsigned long long)i);
	}
	g = keyheap_rec_gran(klen);
	*gran += g;
	for (uint32_t j = 0; j < g; j++) {
		if (!keyheap_is_live(kv->heap, kv->slots[i].key + j)) {
			scan_report(sc, "index slot %llu: key record not "
			    "allocated in the key heap", (unsigned long long)i);
			return;
		}
	}
}

/* kvindex_scan -- see kvindex.h */
int
kvindex_scan(const struct kvindex *kv,
    void (*report)(void *arg, const char *problem), void *arg)
{
	struct scan sc = { report, arg, 0 };
	uint64_t live = 0, tombs = 0, gran = 0;
	char why[200];

	for (uint64_t i = 0; i < kv->nslots; i++) {
		scan_slot(kv, i, &sc, &live, &tombs, &gran);
	}
	if (live != kv->live || tombs != kv->tombs) {
		scan_report(&sc, "index counts %llu live, %llu tombstones; "
		    "slots hold %llu and %llu", (unsigned long long)kv->live,
		    (unsigned long long)kv->tombs, (unsigned long long)live,
		    (unsigned long long)tombs);
	}
	if (gran != kv->heap->used) {
		scan_report(&sc, "live keys take %llu heap granules, the heap "
		    "counts %llu (overlap or leak)", (unsigned long long)gran,
		    (unsigned long long)kv->heap->used);
	}
	if (keyheap_check(kv->heap, why, sizeof(why)) != 0) {
		scan_report(&sc, "key heap: %s", why);
	}
	return sc.problems;
}

struct first {
	char *why;
	size_t n;
	bool got;
};

static void
first_report(void *arg, const char *problem)
{
	struct first *f = arg;

	if (!f->got && f->why != NULL) {
		snprintf(f->why, f->n, "%s", problem);
	}
	f->got = true;
}

/* kvindex_check -- see kvindex.h */
int
kvindex_check(const struct kvindex *kv, char *why, size_t n)
{
	struct first f = { why, n, false };

	return kvindex_scan(kv, first_report, &f) ? CXLP_E_CORRUPT : 0;
}
