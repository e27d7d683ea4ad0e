/*
 * store.c -- store and batch_store: publish pages under keys, and resolve
 * registers whose reply was lost.
 *
 * The shape follows DESIGN contracts 1, 2 and 4 step by step:
 *   1. check every argument, touching no page (any error here leaves all
 *      pages with the caller);
 *   2. under the page lock, move every page ALLOCATED -> INFLIGHT; a page
 *      not ALLOCATED, or named twice (it is already INFLIGHT when met the
 *      second time), rolls the batch back and fails with CXLP_E_BADPAGE;
 *   3. persist each page's [0, len) so its bytes are visible (and durable)
 *      before the register leaves (contract 1);
 *   4. one REGISTER for the whole batch; existence is decided there, under
 *      the server's lock (contract 3);
 *   5. consume every page exactly once (contract 2): the key at my page ->
 *      REGISTERED; the key elsewhere (lost the race, in-batch duplicate) ->
 *      FREE, stored; anything not confirmed -> FREE, not stored.
 * When no reply comes (timeout after retries, connection lost while the
 * request may have reached the server) the outcome is unknown: pages go
 * UNRESOLVED and are neither freed nor reported stored (contract 4). Their
 * keys are kept in h->store.unres; resolve_run (resolve.c) registers
 * them again at the start of the next store (and after stats /
 * healthcheck round trips) and settles each page from the answer: key at this page -> REGISTERED, key
 * elsewhere or refused -> FREE. Registering again, rather than looking the
 * key up, is what makes this safe when the lost request is still queued
 * at the server: whichever of the two lands second finds the key present
 * at this same page and changes nothing. A page whose REGISTER went out
 * more than once, or was parked, is never freed at all while the handler
 * lives, since a copy of it may land after the server forgot its request
 * id: it is quarantined instead (doubt.c has the design note).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "kv.h"
#include "log.h"
#include "map.h"
#include "trace.h"

/* The keys a store left unstored: how many, and the first. */
struct store_tally {
	size_t refused;
	size_t first;     /* index of the first refused key */
	int first_status; /* its error */
};

/* A batch of a request group (group.c): GROUP_REGISTER under id, and
 * what the group needs back. */
struct store_group {
	const void *id;
	uint16_t id_len;
	bool *kept;  /* kept[i]: key i staged at its page (kept, REGISTERED) */
	int *reg_rc; /* the request's own error (0: results came) */
};

struct batch {
	size_t n;
	const struct store_group *grp; /* NULL: a plain REGISTER */
	struct scratch *s;          /* where the arrays and the body live */
	struct proto_reg *regs;     /* what REGISTER sends */
	uint32_t *gens;             /* gen of each page's region */
	struct proto_result *res;   /* what came back */
	uint8_t **addr;             /* each page's RW address */
	const struct pmap **maps;   /* each page's region mapping */
};

/* store_check_call -- see kv.h */
int
store_check_call(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const size_t lens[],
    bool have_out, unsigned flags, unsigned flags_ok)
{
	int rc;

	if ((rc = h_check_open(h)) != 0 || (rc = h_check_session(h)) != 0) {
		return rc;
	}
	if (n == 0 || n > CXLP_BATCH_MAX) {
		return cxlp_fail(-EINVAL, "store: batch of %zu keys (1..%d)", n,
		    CXLP_BATCH_MAX);
	}
	if (pages == NULL || lens == NULL || !have_out ||
	    (flags & ~flags_ok) != 0) {
		return cxlp_fail(-EINVAL, "store: NULL array or callback, or "
		    "bad flags");
	}
	return store_check_keys(h, n, keys, key_lens, lens);
}

/* store_check_keys -- see kv.h */
int
store_check_keys(const struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], const size_t lens[])
{
	int rc = h_check_keys(n, keys, key_lens);

	if (rc != 0) {
		return rc == CXLP_E_BATCH ? -EINVAL : rc;
	}
	for (size_t i = 0; i < n; i++) {
		if (lens[i] > h->cfg.page_size) {
			return cxlp_fail(CXLP_E_TOOBIG, "store: key %zu: %zu "
			    "bytes in a %zu-byte page", i, lens[i],
			    h->cfg.page_size);
		}
	}
	return 0;
}

static void
batch_fini(struct cxlp_handler *h, struct batch *b)
{
	scratch_put(&h->scratch, b->s);
	b->s = NULL;
}

static int
batch_init(struct cxlp_handler *h, struct batch *b, size_t n)
{
	struct scratch *s = scratch_get(&h->scratch);

	memset(b, 0, sizeof(*b));
	if (s == NULL) {
		return -ENOMEM;
	}
	b->n = n;
	b->s = s;
	b->regs = scratch_array(s, n, sizeof(*b->regs));
	b->gens = scratch_array(s, n, sizeof(*b->gens));
	b->res = scratch_array(s, n, sizeof(*b->res));
	b->addr = scratch_array(s, n, sizeof(*b->addr));
	b->maps = scratch_array(s, n, sizeof(*b->maps));
	if (b->regs == NULL || b->gens == NULL || b->res == NULL ||
	    b->addr == NULL || b->maps == NULL) {
		batch_fini(h, b);
		return cxlp_fail(-ENOMEM, "store: out of memory");
	}
	return 0;
}

/* Step 2: ALLOCATED -> INFLIGHT for every page, or none; with claimed,
 * the pages are INFLIGHT already (an asynchronous request's, async.c
 * note 3) and only checked. */
static int
store_take(struct cxlp_handler *h, struct batch *b, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const size_t lens[],
    bool claimed)
{
	size_t i, bad;
	int rc = 0;

	pthread_mutex_lock(&h->page_lock);
	for (i = 0; i < b->n; i++) {
		const struct own_region *r;

		if (claimed) {
			rc = pagetab_state(&h->pages, pages[i]) ==
			    PAGE_INFLIGHT ? 0 : CXLP_E_BADPAGE;
		} else {
			rc = pagetab_move(&h->pages, pages[i], PAGE_ALLOCATED,
			    PAGE_INFLIGHT);
		}
		if (rc != 0) {
			break;
		}
		r = h->regions.own[page_set(pages[i])];
		b->regs[i].key.data = keys[i];
		b->regs[i].key.len = (uint16_t)key_lens[i];
		b->regs[i].region = r->loc.region;
		b->regs[i].len = lens[i];
		b->gens[i] = r->loc.gen;
		b->maps[i] = r->map;
		b->addr[i] = owntab_page_addr(h, pages[i], &b->regs[i].off);
	}
	bad = i;
	while (rc != 0 && !claimed && i-- > 0) {
		(void)pagetab_move(&h->pages, pages[i], PAGE_INFLIGHT,
		    PAGE_ALLOCATED);
	}
	pthread_mutex_unlock(&h->page_lock);
	if (rc != 0) {
		return cxlp_fail(CXLP_E_BADPAGE, "store: key %zu: page %#llx "
		    "is not allocated here, is registered, or is named twice",
		    bad, (unsigned long long)pages[bad]);
	}
	return 0;
}

/* Move an in-flight page of a store to `to` (page_lock held); true if a
 * delete of its key by another thread came first (INFLIGHT_DELETED): the
 * key was registered at this page and is gone, so the page is free. */
static bool
settle_page(struct cxlp_handler *h, cxlp_page_t pg, enum page_state to)
{
	bool deleted = pagetab_state(&h->pages, pg) == PAGE_INFLIGHT_DELETED;
	int rc = deleted ?
	    pagetab_move(&h->pages, pg, PAGE_INFLIGHT_DELETED, PAGE_FREE) :
	    pagetab_move(&h->pages, pg, PAGE_INFLIGHT, to);

	cxlp_assert(rc == 0);
	return deleted;
}

/* What a refusal of one key means, for the message of a store that
 * refused some (the server's per-key status carries a code only). */
static const char *
refusal_hint(int st)
{
	switch (st) {
	case CXLP_E_NOSPACE:
		return "the pool's KV index or key heap is full";
	case CXLP_E_PERM:
		return "the page's region is not this session's";
	case CXLP_E_BOUNDS:
		return "the page is outside its region";
	case CXLP_E_PROTO:
		return "no result for it in the reply";
	default:
		return cxlp_strerror(st);
	}
}

/* Set the message of a store that left keys unstored: how many, which
 * came first (index and up to 24 bytes of key, escaped), and why. */
static void
store_report(const struct batch *b, const struct store_tally *t)
{
	char key[24 * 4 + 4];
	const struct proto_key *k = &b->regs[t->first].key;
	size_t o = 0;

	for (size_t i = 0; i < k->len && i < 24; i++) {
		unsigned char c = ((const unsigned char *)k->data)[i];

		o += (size_t)snprintf(key + o, sizeof(key) - o,
		    c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? "%c" :
		    "\\x%02x", c);
	}
	snprintf(key + o, sizeof(key) - o, "%s", k->len > 24 ? "..." : "");
	(void)cxlp_fail(t->first_status, "store: %zu of %zu keys not stored; "
	    "first key %zu \"%s\": %s (%s)", t->refused, b->n, t->first, key,
	    cxlp_strerror(t->first_status), refusal_hint(t->first_status));
}

/* Step 5: consume every page exactly once; got results arrived, or the
 * REGISTER as a whole failed with reg_rc, after `sends` copies went out
 * (more than one: its pages are tainted, doubt.c). Fills stored[] and,
 * when not NULL, status[]; counts the refusals into *t. */
static void
store_settle(struct cxlp_handler *h, const struct batch *b,
    const cxlp_page_t pages[], uint32_t got, int reg_rc, unsigned sends,
    bool stored[], int status[], struct store_tally *t)
{
	pthread_mutex_lock(&h->page_lock);
	if (sends > 1) {
		doubt_taint(h, pages, b->n);
	}
	for (size_t i = 0; i < b->n; i++) {
		const struct proto_result *r = &b->res[i];
		int st = reg_rc != 0 ? reg_rc : i < got ? r->status :
		    CXLP_E_PROTO;
		bool ok = st == 0;
		bool mine = ok && r->loc.region == b->regs[i].region &&
		    r->loc.gen == b->gens[i] && r->loc.off == b->regs[i].off;

		ok |= settle_page(h, pages[i], mine ? PAGE_REGISTERED :
		    PAGE_FREE);
		stored[i] = ok;
		if (mine && b->grp == NULL) {
			h_count(h, keys_stored, 1);
			h_count(h, bytes_stored, b->regs[i].len);
		}
		if (b->grp != NULL) {
			b->grp->kept[i] = mine &&
			    pagetab_state(&h->pages, pages[i]) ==
			    PAGE_REGISTERED;
		}
		if (status != NULL) {
			status[i] = ok ? 0 : st;
		}
		if (!ok && t->refused++ == 0) {
			t->first = i;
			t->first_status = st;
		}
		if (!ok) {
			log_info("store: key %zu not confirmed (%d)", i, st);
		}
	}
	doubt_note(h);
	pagelife_unlock(h);
}

/* Outcome unknown: pages INFLIGHT -> UNRESOLVED, keys remembered, and
 * tainted: a copy of the REGISTER may still land (doubt.c). */
static void
store_park(struct cxlp_handler *h, const struct batch *b,
    const cxlp_page_t pages[])
{
	pthread_mutex_lock(&h->page_lock);
	doubt_taint(h, pages, b->n);
	for (size_t i = 0; i < b->n; i++) {
		struct unresolved u = {.page = pages[i],
		    .key_len = b->regs[i].key.len,
		    .region = b->regs[i].region, .off = b->regs[i].off,
		    .len = b->regs[i].len};

		if (settle_page(h, pages[i], PAGE_UNRESOLVED)) {
			continue; /* registered, then deleted: known */
		}
		u.key = malloc(u.key_len);
		if (u.key == NULL) {
			log_err("store: no memory for key of page %#llx: "
			    "kept unresolved", (unsigned long long)pages[i]);
			continue;
		}
		memcpy(u.key, b->regs[i].key.data, u.key_len);
		resolve_push(h, &u);
	}
	doubt_note(h);
	pagelife_unlock(h);
}

/* Step 3: persist every page's [0, len). Pages handed out one after the
 * other are adjacent, so runs of full pages in one mapping persist as one
 * range: one msync per run instead of one per page on media where a
 * persist is msync (a fence on tmpfs either way). */
static void
store_persist(const struct batch *b)
{
	size_t i = 0;

	while (i < b->n) {
		size_t len = b->regs[i].len, j = i + 1;

		while (j < b->n && b->maps[j] == b->maps[i] &&
		    b->addr[j] == b->addr[i] + len && b->regs[j].len > 0) {
			len += b->regs[j++].len;
		}
		if (len > 0) {
			pmap_persist(b->maps[i], b->addr[i], len);
			trace_persist(b->regs[i].off, len);
		}
		i = j;
	}
}

/* Step 4; *sends says how many copies of it went out (creply.sends). */
static int
store_register(struct cxlp_handler *h, struct batch *b, unsigned flags,
    uint32_t *got, unsigned *sends)
{
	struct pbuf *body = scratch_body(b->s);
	struct creply rep;
	int rc;

	*got = 0;
	if (b->grp != NULL) {
		proto_put_group_id(body, b->grp->id, b->grp->id_len);
	}
	proto_put_regs(body, ((flags & CXLP_STORE_PIN) ? PROTO_F_PIN : 0) |
	    ((flags & CXLP_STORE_LEASE) ? PROTO_F_LEASE : 0), b->n, b->regs);
	rc = h_call(h, b->grp != NULL ? PROTO_OP_GROUP_REGISTER :
	    PROTO_OP_REGISTER, body, &rep);
	*sends = rep.sends;
	if (rc != 0) {
		return rc;
	}
	rc = h_get_results(&rep, b->res, b->n, false, got);
	client_reply_fini(&rep);
	return rc;
}

/* No answer about the register: none came, or the server had applied an
 * earlier attempt and no longer keeps its reply (CXLP_E_UNKNOWN). */
static bool
outcome_unknown(int rc)
{
	return rc == CXLP_E_TIMEOUT || rc == CXLP_E_CONN ||
	    rc == CXLP_E_CLOSED || rc == CXLP_E_UNKNOWN;
}

/* Outcome unknown: every page kept (store_park), none reported. */
static int
store_unknown(struct cxlp_handler *h, const struct batch *b,
    const cxlp_page_t pages[], int rc, int status[])
{
	store_park(h, b, pages);
	for (size_t i = 0; status != NULL && i < b->n; i++) {
		status[i] = CXLP_E_UNKNOWN;
	}
	return cxlp_fail(CXLP_E_UNKNOWN, "store: no reply (%s): %zu pages "
	    "kept until resolved", cxlp_strerror(rc), b->n);
}

/* store_batch -- cxlp_batch_store_status, or with grp a batch of a
 * request group. A group's keys are only staged by the server until
 * its commit, which the handler alone sends: so a batch whose outcome
 * is lost can change no index entry once the group is rolled back, and
 * its pages are freed, not kept (group.c note 2). claimed as
 * store_take's (store_claimed). */
static int
store_batch(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const size_t lens[],
    unsigned flags, bool stored[], int status[],
    const struct store_group *grp, bool claimed)
{
	struct store_tally t = { 0 };
	struct batch b;
	uint32_t got = 0;
	unsigned sends = 0;
	int rc;

	rc = store_check_call(h, n, keys, key_lens, pages, lens,
	    stored != NULL, flags, CXLP_STORE_PIN | CXLP_STORE_LEASE);
	if (rc != 0 || (rc = batch_init(h, &b, n)) != 0) {
		return rc;
	}
	b.grp = grp;
	(void)resolve_run(h);
	if ((rc = store_take(h, &b, keys, key_lens, pages, lens,
	    claimed)) != 0) {
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		stored[i] = false;
	}
	store_persist(&b);
	rc = store_register(h, &b, flags, &got, &sends);
	if (grp != NULL) {
		*grp->reg_rc = rc;
		sends = 1; /* a late copy only stages: nothing to doubt */
		rc = outcome_unknown(rc) ? CXLP_E_UNKNOWN : rc;
	}
	if (outcome_unknown(rc) && grp == NULL) {
		rc = store_unknown(h, &b, pages, rc, status);
		goto out;
	}
	if (rc != 0) {
		log_err("store: REGISTER failed: %s", cxlp_errormsg());
	}
	store_settle(h, &b, pages, got, rc, sends, stored, status, &t);
	if (t.refused > 0) {
		store_report(&b, &t);
	}
	rc = 0;
out:
	batch_fini(h, &b);
	return rc;
}

/* cxlp_batch_store_status -- see cxlpool.h (contracts 1, 2, 4). */
int
cxlp_batch_store_status(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], unsigned flags,
    bool stored[], int status[])
{
	return store_batch(h, n, keys, key_lens, pages, lens, flags, stored,
	    status, NULL, false);
}

/* store_claimed -- see kv.h. */
int
store_claimed(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const size_t lens[],
    unsigned flags, bool stored[], int status[])
{
	return store_batch(h, n, keys, key_lens, pages, lens, flags, stored,
	    status, NULL, true);
}

/* store_group_batch -- see kv.h */
int
store_group_batch(struct cxlp_handler *h, const void *id, uint16_t id_len,
    size_t n, const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], bool stored[],
    int status[], bool kept[], int *reg_rc)
{
	struct store_group g = {id, id_len, kept, reg_rc};

	*reg_rc = 0;
	return store_batch(h, n, keys, key_lens, pages, lens, 0, stored,
	    status, &g, false);
}

/* cxlp_batch_store -- cxlp_batch_store_status without status. */
int
cxlp_batch_store(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const size_t lens[],
    unsigned flags, bool stored[])
{
	return cxlp_batch_store_status(h, n, keys, key_lens, pages, lens,
	    flags, stored, NULL);
}

/* cxlp_store -- cxlp_batch_store of one key. */
int
cxlp_store(struct cxlp_handler *h, const void *key, size_t key_len,
    cxlp_page_t page, size_t len, unsigned flags, bool *stored)
{
	const void *keys[1] = {key};

	return cxlp_batch_store(h, 1, keys, &key_len, &page, &len, flags,
	    stored);
}
