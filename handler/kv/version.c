/*
 * version.c -- versions of retrieved values and their check: how a reader
 * that holds no pin learns, after its copy, that the bytes it copied were
 * the key's value for the whole copy (DESIGN.md, contract 10).
 *
 * Why this shape: the KV index slot that holds a key already carries a
 * word that changes on every write of the slot (kvindex.c notes 1, 3-5).
 * A key's value is replaced only by removing the key first (its slot
 * leaves LIVE), and only then may the value's page be written again. So
 * a reader that saw word w on the key's slot when it located the value,
 * copies, and then finds w there again knows that the slot held the key
 * at that location, and so the page held that value, for the whole copy.
 * The version is (slot, w), and validate is one load per version from
 * the index the handler already maps for direct reads: no lock, no round
 * trip, no system call, and no work for the metaserver.
 *
 * DESIGN NOTES
 *
 * 1. Token (cxlp_version_t, opaque): opaque[0] the slot word seen,
 *    opaque[1] kind << 56 | slot. Kinds, made by [version_hits,
 *    version_settle] and read by [version_check]:
 *      SLOT  (slot, word) from a read of the index: 0 while the slot's
 *            word is still word, else CXLP_E_CHANGED
 *      PIN   pinned, and the index could not be read back: the pin
 *            vouches for the value, 0
 *      NONE  unpinned, answered by the metaserver, not read back:
 *            CXLP_E_NOVERSION (nothing can be checked)
 *      GONE  unpinned, and the index no longer held the server's answer
 *            when read back: CXLP_E_CHANGED
 *    A zeroed token (kind 0), an unknown kind, or a SLOT token whose
 *    word is not an even LIVE one or whose slot is out of range, is
 *    -EINVAL: not a version of this handler's.
 *
 * 2. Why an unchanged word means a good copy:
 *    a. w was read before and after the slot's body and equal, even and
 *       LIVE (kvread.c note 1): the body, so the location, is w's.
 *    b. A LIVE slot is never rewritten, and every write of a slot adds 2
 *       to its seq (kvindex.c note 3): while the word reads w, the key
 *       is at that location under that registration.
 *    c. A registered page is never written (its bytes are written
 *       before the register, and a registered chunk is never changed in
 *       place), and a page is handed out again only after its key's
 *       removal is stored in the index (delete: kvindex_drop before the
 *       reply that frees the page; eviction: contract 9). So every byte
 *       of a later value is written after w left the slot, and a reader
 *       whose copy saw any such byte sees the new word when it loads the
 *       word afterwards: the publish order travels through the reply
 *       and the owner's stores, and kvread_word's acquire fence keeps the
 *       copy's loads before its own load.
 *    d. A device copy is ordered only by the caller's wait for its
 *       completion; cxlp_validate must come after that wait.
 *    e. Limit: seq has 24 bits and moves by 2, so the same word could
 *       come back after 2^23 writes of the one slot (each a metaserver
 *       round trip: minutes of churn on one key's slot) during one copy.
 *
 * 3. Retrieves the server answered [version_settle]: a pinned retrieve,
 *    or an unpinned one whose direct read said KVREAD_ASK. The LOOKUP
 *    reply carries no slot or word (and the wire protocol stays as it
 *    is), so right after the reply the handler reads the key back from
 *    the index. If the index holds it at the location the server gave,
 *    that slot and word are the version: the caller's copy starts later,
 *    so the version covers it. A pinned key's word cannot change while
 *    pinned (delete is refused, eviction skips it), so its version
 *    validates while the pin is held and, after unpin, until the key
 *    changes. Read back elsewhere or not at all: GONE (unpinned; the
 *    key changed after the server answered) or PIN (pinned). Not
 *    settled by the read back (KVREAD_ASK again, or no index): PIN or
 *    NONE.
 *
 * 4. No index (direct reads off by config, or the mapping failed at
 *    connect): pinned versions are PIN, unpinned ones NONE. No round
 *    trip could do better: LOOKUP tells where a key is, not which
 *    registration put it there, so a value replaced in the same page
 *    (delete, then the owner stores the key again in its freed page)
 *    looks the same to it. When direct reads are turned off after
 *    connect (the pool path names another file, the session was
 *    refused), a SLOT version is CXLP_E_CHANGED: the pool it names is
 *    not the one served any more. So it is when the mapped pool is being
 *    or was reformatted in place (its magic cleared, a new uuid): its
 *    slots restart from seq 0, and a replayed workload could bring back
 *    a word [direct_intact, after the loads].
 */
#include <errno.h>
#include <string.h>

#include "err.h"
#include "kv.h"
#include "kvread.h"
#include "layout.h"

enum ver_kind {
	VER_BAD = 0,  /* zeroed: not a version */
	VER_SLOT = 1, /* opaque[0] the word seen on the slot */
	VER_PIN = 2,  /* pinned, not read back: the pin vouches */
	VER_NONE = 3, /* unpinned, from the server, not read back */
	VER_GONE = 4, /* unpinned, the index had moved on when read back */
};

#define VER_KIND_SHIFT 56
#define VER_SLOT_MASK ((1ull << VER_KIND_SHIFT) - 1)

static void
version_set(cxlp_version_t *v, enum ver_kind kind, uint64_t slot,
    uint64_t word)
{
	v->opaque[0] = word;
	v->opaque[1] = (uint64_t)kind << VER_KIND_SHIFT | slot;
}

static enum ver_kind
version_kind(const cxlp_version_t *v)
{
	return (enum ver_kind)(v->opaque[1] >> VER_KIND_SHIFT);
}

static uint64_t
version_slot_of(const cxlp_version_t *v)
{
	return v->opaque[1] & VER_SLOT_MASK;
}

/* version_hits -- see kv.h */
void
version_hits(size_t n, const bool ask[], const struct proto_result res[],
    cxlp_version_t vers[])
{
	for (size_t i = 0; i < n; i++) {
		if (!ask[i] && res[i].status == 0) {
			version_set(&vers[i], VER_SLOT, vers[i].opaque[1],
			    vers[i].opaque[0]);
		}
	}
}

/* ---- read back [version_settle], note 3 --------------------------------- */

/* The keys read back: sub-arrays of one call's, from its scratch. */
struct readback {
	const void **keys;
	size_t *key_lens;
	size_t *idx; /* index in the caller's arrays */
	struct proto_result *res;
	bool *ask;
	cxlp_version_t *vers;
	size_t m;
};

static bool
readback_init(struct readback *b, struct scratch *s, size_t m)
{
	b->keys = scratch_array(s, m, sizeof(*b->keys));
	b->key_lens = scratch_array(s, m, sizeof(*b->key_lens));
	b->idx = scratch_array(s, m, sizeof(*b->idx));
	b->res = scratch_array(s, m, sizeof(*b->res));
	b->ask = scratch_array(s, m, sizeof(*b->ask));
	b->vers = scratch_array(s, m, sizeof(*b->vers));
	b->m = 0;
	return b->keys != NULL && b->key_lens != NULL && b->idx != NULL &&
	    b->res != NULL && b->ask != NULL && b->vers != NULL;
}

static bool
loc_same(const struct proto_loc *a, const struct proto_loc *b)
{
	return a->region == b->region && a->gen == b->gen &&
	    a->off == b->off && a->len == b->len;
}

/* version_settle -- see kv.h */
void
version_settle(struct cxlp_handler *h, struct scratch *s, size_t n,
    const void *const keys[], const size_t key_lens[],
    const struct proto_result res[], const bool asked[], bool pinned,
    cxlp_version_t vers[])
{
	struct readback b;
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		if ((asked == NULL || asked[i]) && res[i].status == 0) {
			version_set(&vers[i], pinned ? VER_PIN : VER_NONE, 0,
			    0);
			m++;
		}
	}
	if (m == 0 || direct_reader(h) == NULL || !readback_init(&b, s, m)) {
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if ((asked == NULL || asked[i]) && res[i].status == 0) {
			b.keys[b.m] = keys[i];
			b.key_lens[b.m] = key_lens[i];
			b.idx[b.m++] = i;
		}
	}
	direct_lookup_batch(h, m, b.keys, b.key_lens, b.res, b.ask, b.vers);
	version_hits(m, b.ask, b.res, b.vers);
	for (size_t j = 0; j < m; j++) {
		size_t i = b.idx[j];

		if (b.ask[j]) {
			continue; /* not settled: PIN or NONE stays */
		}
		if (b.res[j].status == 0 && loc_same(&b.res[j].loc,
		    &res[i].loc)) {
			vers[i] = b.vers[j];
		} else if (!pinned) {
			version_set(&vers[i], VER_GONE, 0, 0);
		}
	}
}

/* ---- validate ------------------------------------------------------------ */

/* The status of version v (note 1); r is the index, NULL when direct
 * reads are off, and mapped says whether this handler ever read one. */
static int
version_check(const struct kvread *r, bool mapped, const cxlp_version_t *v)
{
	uint64_t slot = version_slot_of(v), w = v->opaque[0];

	switch (version_kind(v)) {
	case VER_SLOT:
		if (!mapped || kv_state(w) != KV_LIVE || (kv_seq(w) & 1u)) {
			return -EINVAL;
		}
		if (r == NULL) {
			return CXLP_E_CHANGED;
		}
		if (slot >= r->nslots) {
			return -EINVAL;
		}
		return kvread_word(r, slot) == w ? 0 : CXLP_E_CHANGED;
	case VER_PIN:
		return 0;
	case VER_NONE:
		return CXLP_E_NOVERSION;
	case VER_GONE:
		return CXLP_E_CHANGED;
	case VER_BAD:
	default:
		return -EINVAL;
	}
}

/* Why version v has status st (not 0), for cxlp_errormsg. */
static const char *
version_why(const struct kvread *r, const cxlp_version_t *v, int st)
{
	if (st == -EINVAL) {
		return "not a version of this handler's (zeroed, or another's)";
	}
	switch (version_kind(v)) {
	case VER_SLOT:
		return r == NULL ? "direct reads are off now: the pool the "
		    "version names is not the one served" : "the key's index "
		    "slot changed since the retrieve";
	case VER_GONE:
		return "the key had changed when the retrieve read it back";
	default:
		return "the retrieve was answered by the metaserver and could "
		    "not read the key's version; retrieve pinned";
	}
}

/* The reader to check vers[0..n) (n <= KVREAD_BATCH) with: r, or on a
 * pool that needs drops one that reads the versions' slot words after
 * they and the superblock's head were dropped with one fence
 * (direct_fresh_words: a drop each would wait for a fence each) */
static const struct kvread *
fresh_reader(struct cxlp_handler *h, const struct kvread *r,
    const cxlp_version_t vers[], size_t n)
{
	const struct kvread *fresh;
	uint64_t slot[KVREAD_BATCH];
	size_t m = 0;

	if (r == NULL || r->fresh == NULL) {
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		if (version_kind(&vers[i]) == VER_SLOT &&
		    version_slot_of(&vers[i]) < r->nslots) {
			slot[m++] = version_slot_of(&vers[i]);
		}
	}
	fresh = direct_fresh_words(h, slot, m);
	return fresh != NULL ? fresh : r;
}

/* status[i] of vers[0..n) (h open, arguments checked); returns how many
 * are not 0 and sets the message for the first of them. */
static int
validate_all(struct cxlp_handler *h, const char *what, size_t n,
    const cxlp_version_t vers[], int status[])
{
	const struct kvread *r = direct_reader(h);
	bool mapped = h->direct != NULL;
	size_t first = n;
	int nbad = 0;

	bool dropped = false;

	for (size_t i = 0; i < n; i += KVREAD_BATCH) {
		size_t k = n - i < KVREAD_BATCH ? n - i : KVREAD_BATCH;
		const struct kvread *rk = fresh_reader(h, r, vers + i, k);

		dropped = rk != r;
		for (size_t j = i; j < i + k; j++) {
			status[j] = version_check(rk, mapped, &vers[j]);
		}
	}
	if (r != NULL && !direct_intact(h, !dropped)) {
		r = NULL; /* reformatted: every slot version went with it */
		for (size_t i = 0; i < n; i++) {
			if (version_kind(&vers[i]) == VER_SLOT &&
			    status[i] == 0) {
				status[i] = CXLP_E_CHANGED;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (status[i] != 0 && nbad++ == 0) {
			first = i;
		}
	}
	if (nbad > 0 && n == 1) {
		cxlp_fail(status[0], "%s: %s", what,
		    version_why(r, &vers[0], status[0]));
	} else if (nbad > 0) {
		cxlp_fail(status[first], "%s: %d of %zu versions not good; "
		    "the first, %zu: %s", what, nbad, n, first,
		    version_why(r, &vers[first], status[first]));
	}
	return nbad;
}

/* cxlp_batch_validate -- see cxlpool.h */
int
cxlp_batch_validate(struct cxlp_handler *h, size_t n,
    const cxlp_version_t vers[], int status[])
{
	int rc;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if (vers == NULL || status == NULL) {
		return cxlp_fail(-EINVAL, "batch_validate: NULL array");
	}
	if (n == 0 || n > CXLP_BATCH_MAX) {
		return cxlp_fail(CXLP_E_BATCH, "batch_validate: %zu versions, "
		    "want 1..%d", n, CXLP_BATCH_MAX);
	}
	return validate_all(h, "batch_validate", n, vers, status);
}

/* cxlp_validate -- see cxlpool.h */
int
cxlp_validate(struct cxlp_handler *h, const cxlp_version_t *ver)
{
	int rc, st;

	if ((rc = h_check_open(h)) != 0) {
		return rc;
	}
	if (ver == NULL) {
		return cxlp_fail(-EINVAL, "validate: ver is NULL");
	}
	validate_all(h, "validate", 1, ver, &st);
	return st;
}
