/*
 * ops.c -- the key operations that are not store: retrieve, exists, pin,
 * unpin, delete, each single and batched.
 *
 * Each single call is its batch of one, and each batch is one round trip
 * through keys_call: every argument is checked before any I/O (-EINVAL,
 * CXLP_E_BATCH, CXLP_E_KEYLEN), and the reply's result count is checked
 * against what was sent. Retrieve turns a location into a pointer through
 * the region map cache (regions.c) and never takes the page lock; only
 * delete does, to free my page when the deleted key was in it. Unpinned
 * retrieve and exists read the index in shared memory first (direct.c)
 * and send only the keys it leaves, in one request. A versioned retrieve
 * (cxlp_retrieve_v) is the same call that also keeps each key's version,
 * from the direct read or, for keys the server answered, read back from
 * the index afterwards (version.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "kv.h"
#include "log.h"

/* The results of one call, res[0..n), in memory taken from the
 * handler's scratch cache (scratch.c) until results_fini. */
struct results {
	struct cxlp_handler *h;
	struct scratch *s;
	struct proto_result *res;
	uint32_t got;
};

/* Checks, then a scratch and an n-entry result array from it. */
static int
results_init(struct cxlp_handler *h, uint16_t op, size_t n,
    const void *const keys[], const size_t key_lens[], struct results *r)
{
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = h_check_open(h)) != 0 ||
	    (rc = h_check_keys(n, keys, key_lens)) != 0) {
		return rc;
	}
	if ((r->s = scratch_get(&h->scratch)) == NULL ||
	    (r->res = scratch_array(r->s, n, sizeof(*r->res))) == NULL) {
		scratch_put(&h->scratch, r->s);
		memset(r, 0, sizeof(*r));
		return cxlp_fail(-ENOMEM, "%s: out of memory",
		    proto_op_name(op));
	}
	r->h = h;
	return 0;
}

/* results_fini -- give the memory back; r->res is gone afterwards. */
static void
results_fini(struct results *r)
{
	if (r->s != NULL) {
		scratch_put(&r->h->scratch, r->s);
	}
	memset(r, 0, sizeof(*r));
}

/* One keys request (op, flags) encoded in s's body; its results go to
 * res[]: exactly n of them when exact, else at most n (PIN). */
static int
keys_request(struct cxlp_handler *h, struct scratch *s, uint16_t op,
    uint32_t flags, size_t n, const void *const keys[],
    const size_t key_lens[], bool exact, struct proto_result res[],
    uint32_t *got)
{
	struct pbuf *body = scratch_body(s);
	struct creply rep;
	int rc;

	pbuf_reset(body);
	proto_put_keys(body, flags, n, keys, key_lens);
	rc = h_call(h, op, body, &rep);
	if (rc == 0) {
		rc = h_get_results(&rep, res, n, exact, got);
		client_reply_fini(&rep);
	}
	return rc;
}

/* keys_call -- checks and one keys request; 0 with *r (release with
 * results_fini) or an error with nothing to release. */
static int
keys_call(struct cxlp_handler *h, uint16_t op, uint32_t flags, size_t n,
    const void *const keys[], const size_t key_lens[], bool exact,
    struct results *r)
{
	int rc = results_init(h, op, n, keys, key_lens, r);

	if (rc == 0 && (rc = keys_request(h, r->s, op, flags, n, keys,
	    key_lens, exact, r->res, &r->got)) != 0) {
		results_fini(r);
	}
	return rc;
}

/* Ask the server for the keys with ask[i] set and put its results in
 * r->res[i]; the others keep what the direct read found. */
static int
ask_server(struct results *r, uint16_t op, size_t n,
    const void *const keys[], const size_t key_lens[], const bool ask[],
    size_t nask)
{
	const void **k = scratch_array(r->s, nask, sizeof(*k));
	size_t *kl = scratch_array(r->s, nask, sizeof(*kl)), m = 0;
	struct proto_result *sub = scratch_array(r->s, nask, sizeof(*sub));
	uint32_t got;
	int rc;

	if (k == NULL || kl == NULL || sub == NULL) {
		return cxlp_fail(-ENOMEM, "%s: out of memory",
		    proto_op_name(op));
	}
	for (size_t i = 0; i < n; i++) {
		if (ask[i]) {
			k[m] = keys[i];
			kl[m++] = key_lens[i];
		}
	}
	rc = keys_request(r->h, r->s, op, 0, nask, k, kl, true, sub, &got);
	for (size_t i = 0, j = 0; rc == 0 && i < n; i++) {
		if (ask[i]) {
			r->res[i] = sub[j++];
		}
	}
	return rc;
}

/* An unpinned LOOKUP or EXISTS: direct reads first (direct.c), one
 * round trip for what they leave; same returns as keys_call. vers (NULL:
 * not wanted) gets the version of each key found (version.c). */
static int
lookup_call(struct cxlp_handler *h, uint16_t op, size_t n,
    const void *const keys[], const size_t key_lens[],
    cxlp_version_t vers[], struct results *r)
{
	size_t nask;
	bool *ask;
	int rc;

	if (h == NULL || h->direct == NULL) {
		rc = keys_call(h, op, 0, n, keys, key_lens, true, r);
		if (rc == 0 && vers != NULL) {
			version_settle(h, r->s, n, keys, key_lens, r->res,
			    NULL, false, vers);
		}
		return rc;
	}
	if ((rc = results_init(h, op, n, keys, key_lens, r)) != 0) {
		return rc;
	}
	if ((ask = scratch_array(r->s, n, sizeof(*ask))) == NULL) {
		rc = cxlp_fail(-ENOMEM, "%s: out of memory",
		    proto_op_name(op));
		goto out;
	}
	nask = direct_lookup_batch(h, n, keys, key_lens, r->res, ask, vers);
	if (vers != NULL) {
		version_hits(n, ask, r->res, vers);
	}
	h_count(h, direct_reads, n - nask);
	if (nask > 0) {
		rc = ask_server(r, op, n, keys, key_lens, ask, nask);
		if (rc == 0 && vers != NULL) {
			version_settle(h, r->s, n, keys, key_lens, r->res,
			    ask, false, vers);
		}
	}
out:
	if (rc != 0) {
		results_fini(r);
	}
	return rc;
}

static int
result_status(const struct proto_result *r, const char *what)
{
	if (r->status != 0) {
		return cxlp_fail(r->status, "%s: %s", what,
		    cxlp_strerror(r->status));
	}
	return 0;
}

/* Point data[i]/lens[i] at each found key's bytes; status[i] is the
 * server's answer or the failure to map the bytes. Returns how many keys
 * were found but could not be mapped. */
static size_t
retrieve_resolve(struct cxlp_handler *h, size_t n,
    const struct proto_result *res, const void *data[], size_t lens[],
    int status[])
{
	size_t nbad = 0;

	for (size_t i = 0; i < n; i++) {
		data[i] = NULL;
		lens[i] = 0;
		status[i] = res[i].status;
		if (status[i] != 0) {
			continue;
		}
		status[i] = rmap_resolve_ptr(h, &res[i].loc,
		    (res[i].flags & RES_F_DROPPED) != 0, &data[i]);
		if (status[i] == 0) {
			lens[i] = res[i].loc.len;
		} else {
			log_err("retrieve: key %zu: %s", i, cxlp_errormsg());
			nbad++;
		}
	}
	return nbad;
}

/* A pinned retrieve took a pin on every key found; the caller gets no
 * pointer, so no unpin, for those it could not map: release their pins
 * here. A failed release is logged and leaves the pin to the session's
 * end. */
static void
retrieve_unpin_failed(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    const struct proto_result *res, const int status[], size_t nbad)
{
	const void **bk = calloc(nbad, sizeof(*bk));
	size_t *bl = calloc(nbad, sizeof(*bl));
	int *st = calloc(nbad, sizeof(*st));
	size_t m = 0;

	for (size_t i = 0; i < n && bk != NULL && bl != NULL; i++) {
		if (res[i].status == 0 && status[i] != 0) {
			bk[m] = keys[i];
			bl[m++] = key_lens[i];
		}
	}
	if (m != nbad || st == NULL ||
	    cxlp_batch_unpin(h, m, bk, bl, st) != 0) {
		log_err("retrieve: %zu unmapped keys stay pinned until the "
		    "session ends: %s", nbad, m != nbad || st == NULL ?
		    "out of memory" : cxlp_errormsg());
	}
	free(st);
	free(bl);
	free(bk);
}

/* The LOOKUP of a retrieve: pinned through the server, else direct reads
 * first; vers (NULL: not wanted) as lookup_call's. */
static int
retrieve_lookup(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], unsigned flags, cxlp_version_t vers[],
    struct results *r)
{
	int rc;

	if (!(flags & (CXLP_RETRIEVE_PIN | CXLP_RETRIEVE_LEASE))) {
		return lookup_call(h, PROTO_OP_LOOKUP, n, keys, key_lens, vers,
		    r);
	}
	rc = keys_call(h, PROTO_OP_LOOKUP,
	    ((flags & CXLP_RETRIEVE_PIN) ? PROTO_F_PIN : 0) |
	    ((flags & CXLP_RETRIEVE_LEASE) ? PROTO_F_LEASE : 0), n, keys,
	    key_lens, true, r);
	if (rc == 0 && vers != NULL) {
		version_settle(h, r->s, n, keys, key_lens, r->res, NULL, true,
		    vers);
	}
	return rc;
}

/* lookups, hits and misses of a retrieve of n keys */
static void
count_lookups(struct cxlp_handler *h, size_t n, const int status[])
{
	uint64_t hits = 0, misses = 0;

	for (size_t i = 0; i < n; i++) {
		hits += status[i] == 0;
		misses += status[i] == CXLP_E_NOTFOUND;
	}
	h_count(h, lookups, n);
	h_count(h, hits, hits);
	h_count(h, misses, misses);
}

/* cxlp_batch_retrieve_v -- see cxlpool.h; vers may be NULL here
 * (cxlp_batch_retrieve). */
static int
batch_retrieve(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], unsigned flags, const void *data[],
    size_t lens[], int status[], cxlp_version_t vers[])
{
	struct results r;
	size_t nbad;
	int rc;

	if (data == NULL || lens == NULL || status == NULL ||
	    (flags & ~(CXLP_RETRIEVE_PIN | CXLP_RETRIEVE_LEASE)) != 0) {
		return cxlp_fail(-EINVAL, "retrieve: NULL array or bad flags");
	}
	if (vers != NULL && n <= CXLP_BATCH_MAX) {
		memset(vers, 0, n * sizeof(*vers));
	}
	if ((rc = retrieve_lookup(h, n, keys, key_lens, flags, vers,
	    &r)) != 0) {
		return rc;
	}
	nbad = retrieve_resolve(h, n, r.res, data, lens, status);
	count_lookups(h, n, status);
	rmap_drain(h); /* a region mapped for them: MAPPED first */
	if (nbad > 0 && (flags & CXLP_RETRIEVE_PIN)) {
		retrieve_unpin_failed(h, n, keys, key_lens, r.res, status,
		    nbad);
	}
	for (size_t i = 0; vers != NULL && i < n; i++) {
		if (status[i] != 0) {
			memset(&vers[i], 0, sizeof(vers[i]));
		}
	}
	results_fini(&r);
	return 0;
}

/* cxlp_batch_retrieve -- see cxlpool.h. */
int
cxlp_batch_retrieve(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], unsigned flags,
    const void *data[], size_t lens[], int status[])
{
	return batch_retrieve(h, n, keys, key_lens, flags, data, lens, status,
	    NULL);
}

/* cxlp_batch_retrieve_v -- see cxlpool.h. */
int
cxlp_batch_retrieve_v(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], unsigned flags,
    const void *data[], size_t lens[], int status[], cxlp_version_t vers[])
{
	if (vers == NULL) {
		return cxlp_fail(-EINVAL, "retrieve: vers is NULL");
	}
	return batch_retrieve(h, n, keys, key_lens, flags, data, lens, status,
	    vers);
}

/* cxlp_retrieve_v -- see cxlpool.h; ver may be NULL here (cxlp_retrieve).
 */
static int
retrieve_one(struct cxlp_handler *h, const void *key, size_t key_len,
    unsigned flags, const void **data, size_t *len, cxlp_version_t *ver)
{
	const void *keys[1] = {key};
	int st, rc;

	if (data == NULL || len == NULL) {
		return cxlp_fail(-EINVAL, "retrieve: NULL data or len");
	}
	rc = batch_retrieve(h, 1, keys, &key_len, flags, data, len, &st, ver);
	if (rc == 0 && st != 0) {
		rc = cxlp_fail(st, "retrieve: %s", cxlp_strerror(st));
	}
	return rc;
}

/* cxlp_retrieve -- see cxlpool.h. */
int
cxlp_retrieve(struct cxlp_handler *h, const void *key, size_t key_len,
    unsigned flags, const void **data, size_t *len)
{
	return retrieve_one(h, key, key_len, flags, data, len, NULL);
}

/* cxlp_retrieve_v -- see cxlpool.h. */
int
cxlp_retrieve_v(struct cxlp_handler *h, const void *key, size_t key_len,
    unsigned flags, const void **data, size_t *len, cxlp_version_t *ver)
{
	if (ver == NULL) {
		return cxlp_fail(-EINVAL, "retrieve: ver is NULL");
	}
	return retrieve_one(h, key, key_len, flags, data, len, ver);
}

/* cxlp_batch_exists -- see cxlpool.h. Another error than NOTFOUND for a
 * key fails the call. */
int
cxlp_batch_exists(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], bool exists[])
{
	struct results r;
	int rc;

	if (exists == NULL) {
		return cxlp_fail(-EINVAL, "exists: exists is NULL");
	}
	rc = lookup_call(h, PROTO_OP_EXISTS, n, keys, key_lens, NULL, &r);
	if (rc != 0) {
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		const struct proto_result *x = &r.res[i];

		exists[i] = x->status == 0;
		if (x->status != 0 && x->status != CXLP_E_NOTFOUND &&
		    rc == 0) {
			rc = result_status(x, "exists");
		}
	}
	results_fini(&r);
	return rc;
}

/* cxlp_exists -- 1, 0, or a negative error. */
int
cxlp_exists(struct cxlp_handler *h, const void *key, size_t key_len)
{
	const void *keys[1] = {key};
	bool e = false;
	int rc = cxlp_batch_exists(h, 1, keys, &key_len, &e);

	return rc != 0 ? rc : (int)e;
}

/* Results of PIN: at most n, every one but the last 0, and if fewer than
 * n the last one failed. */
static int
pin_results_check(const struct proto_result *res, uint32_t got, size_t n)
{
	if (got == 0) {
		return cxlp_fail(CXLP_E_PROTO, "PIN: no results");
	}
	for (uint32_t i = 0; i + 1 < got; i++) {
		if (res[i].status != 0) {
			return cxlp_fail(CXLP_E_PROTO, "PIN: went on after a "
			    "failed key");
		}
	}
	if (got < n && res[got - 1].status == 0) {
		return cxlp_fail(CXLP_E_PROTO, "PIN: %u results for %zu keys",
		    got, n);
	}
	return 0;
}

/* cxlp_batch_pin -- see cxlpool.h. */
int
cxlp_batch_pin(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], size_t *npinned)
{
	struct results r;
	int rc;

	if (npinned == NULL) {
		return cxlp_fail(-EINVAL, "pin: npinned is NULL");
	}
	*npinned = 0;
	rc = keys_call(h, PROTO_OP_PIN, 0, n, keys, key_lens, false, &r);
	if (rc != 0) {
		return rc;
	}
	rc = pin_results_check(r.res, r.got, n);
	if (rc == 0) {
		const struct proto_result *last = &r.res[r.got - 1];

		*npinned = last->status == 0 ? r.got : r.got - 1;
		rc = result_status(last, "pin");
	}
	results_fini(&r);
	return rc;
}

/* cxlp_pin -- see cxlpool.h. */
int
cxlp_pin(struct cxlp_handler *h, const void *key, size_t key_len)
{
	const void *keys[1] = {key};
	size_t np;

	return cxlp_batch_pin(h, 1, keys, &key_len, &np);
}

/* cxlp_batch_unpin -- see cxlpool.h. */
int
cxlp_batch_unpin(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], int status[])
{
	struct results r;
	int rc;

	if (status == NULL) {
		return cxlp_fail(-EINVAL, "unpin: status is NULL");
	}
	rc = keys_call(h, PROTO_OP_UNPIN, 0, n, keys, key_lens, true, &r);
	if (rc != 0) {
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		status[i] = r.res[i].status;
	}
	results_fini(&r);
	return 0;
}

/* cxlp_unpin -- see cxlpool.h. */
int
cxlp_unpin(struct cxlp_handler *h, const void *key, size_t key_len)
{
	const void *keys[1] = {key};
	int st = 0;
	int rc = cxlp_batch_unpin(h, 1, keys, &key_len, &st);

	if (rc == 0 && st != 0) {
		rc = cxlp_fail(st, "unpin: %s", cxlp_strerror(st));
	}
	return rc;
}

/* cxlp_batch_delete -- see cxlpool.h. */
int
cxlp_batch_delete(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], int status[])
{
	struct results r;
	int rc;

	if (status == NULL) {
		return cxlp_fail(-EINVAL, "delete: status is NULL");
	}
	rc = keys_call(h, PROTO_OP_DELETE, 0, n, keys, key_lens, true, &r);
	if (rc != 0) {
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		status[i] = r.res[i].status;
		if (status[i] == 0) {
			pagelife_key_gone(h, &r.res[i].loc);
		}
	}
	results_fini(&r);
	return 0;
}

/* cxlp_delete -- see cxlpool.h. */
int
cxlp_delete(struct cxlp_handler *h, const void *key, size_t key_len)
{
	const void *keys[1] = {key};
	int st = 0;
	int rc = cxlp_batch_delete(h, 1, keys, &key_len, &st);

	if (rc == 0 && st != 0) {
		rc = cxlp_fail(st, "delete: %s", cxlp_strerror(st));
	}
	return rc;
}
