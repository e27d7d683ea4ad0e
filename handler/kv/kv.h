/*
 * kv.h -- the key-value layer: store, resolve, retrieve and the other key
 * ops, versions, leases, request groups.
 *
 * A file of handler/kv/ includes this header, and through it those of the
 * layers below (handler_int.h draws them; tests/handler/check_layers.py
 * checks the rule).
 */
#ifndef CXLP_HANDLER_KV_H
#define CXLP_HANDLER_KV_H

#include "region.h"

/* ---- store.c ------------------------------------------------------------ */

/* store_check_call -- the checks a store makes before it touches a page:
 * h open, its session alive, 1..CXLP_BATCH_MAX keys, arrays (and the
 * caller's result array or callback: have_out) given, flags within
 * flags_ok, then store_check_keys. */
int store_check_call(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], bool have_out,
    unsigned flags, unsigned flags_ok);
/* store_check_keys -- the checks of a store's keys and value lengths:
 * 0, -EINVAL, CXLP_E_KEYLEN or CXLP_E_TOOBIG. */
int store_check_keys(const struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], const size_t lens[]);
/* store_group_batch -- one GROUP_REGISTER of group id: the contracts of
 * cxlp_batch_store_status (every page consumed once, stored[], status[])
 * but for a lost outcome, whose pages are freed (store.c, store_batch).
 * kept[i]: key i was staged at its page, which stays REGISTERED until
 * the group commits or rolls back. *reg_rc: the request's own error, 0
 * when results came. Returns as cxlp_batch_store_status, and
 * CXLP_E_UNKNOWN when the outcome was lost. */
int store_group_batch(struct cxlp_handler *h, const void *id,
    uint16_t id_len, size_t n, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const size_t lens[],
    bool stored[], int status[], bool kept[], int *reg_rc);
/* store_claimed -- cxlp_batch_store_status of pages that are INFLIGHT
 * already, an asynchronous request's (async.c note 3): the same returns;
 * on the errors before any page is consumed they stay INFLIGHT. */
int store_claimed(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const size_t lens[],
    unsigned flags, bool stored[], int status[]);

/* ---- version.c ---------------------------------------------------------- */

/* version_hits -- turn the (word, slot) that direct_lookup_batch left in
 * vers[i] of each key it found (ask[i] false, status 0) into its
 * version token (note 1). */
void version_hits(size_t n, const bool ask[], const struct proto_result res[],
    cxlp_version_t vers[]);
/* version_settle -- versions for the keys the server answered with status
 * 0 in res (those with asked[i], or all n when asked is NULL; pinned:
 * the server pinned them): each read back from the index (version.c note
 * 3). Arrays come from s; out of memory, the fallback kinds are used. */
void version_settle(struct cxlp_handler *h, struct scratch *s, size_t n,
    const void *const keys[], const size_t key_lens[],
    const struct proto_result res[], const bool asked[], bool pinned,
    cxlp_version_t vers[]);

/* ---- resolve.c ---------------------------------------------------------- */

int resolve_run(struct cxlp_handler *h);
/* resolve_push -- append u to h->store.unres (page_lock held; the
 * entry's key is then the list's). resolve.c */
void resolve_push(struct cxlp_handler *h, const struct unresolved *u);
void resolve_fini(struct cxlp_handler *h);

#endif /* CXLP_HANDLER_KV_H */
