/*
 * session.h -- the session layer: HELLO, reattach, h_call and the checks
 * every call makes; the pool identity; the BYEs kept for later.
 *
 * A file of handler/session/ includes this header, and through it those of
 * the layers below (handler_int.h draws them; tests/handler/check_layers.py
 * checks the rule).
 */
#ifndef CXLP_HANDLER_SESSION_H
#define CXLP_HANDLER_SESSION_H

#include "net.h"

/* ---- poolid.c ----------------------------------------------------------- */

/* poolid_map_match -- m, mapped from h->pool_path, is of the file the
 * metaserver last said it serves: same device and inode where the server
 * runs on this kernel, and the server's open nonce in the file's
 * superblock. 0 (also before the first WELCOME), or CXLP_E_STALE naming
 * the path. Asks nothing of the server (h_check_mapping does). */
int poolid_map_match(struct cxlp_handler *h, const struct pmap *m);
/* poolid_welcome -- take a WELCOME's identity (first: the first
 * WELCOME, whose file the handler's mappings are of); a later one that
 * names another file switches the handler to poolid_stale for good. */
void poolid_welcome(struct cxlp_handler *h, const struct proto_poolid *id,
    bool first);
/* poolid_moved -- before a call: the first file's nonce is not the
 * server's last (it restarted) or the path names another file now, so
 * the server's identity must be asked (h_call_id does) before a
 * REGISTER of bytes written into the first file. Two system calls
 * (pread, stat) when nothing changed; false with no file kept. */
bool poolid_moved(struct cxlp_handler *h);
/* poolid_stale -- CXLP_E_STALE naming the path once a reattach found
 * the server on another file than the handler's mappings (poolid.c);
 * 0 otherwise. */
int poolid_stale(const struct cxlp_handler *h);

/* ---- call.c ------------------------------------------------------------- */

/* h_hello -- HELLO (flags 0, or PROTO_HELLO_REATTACH with the session's
 * token), taking the session and the pool from the WELCOME. 0 or an
 * error; CXLP_E_PERM says which secret was lacking. */
int h_hello(struct cxlp_handler *h, uint32_t flags);
/* h_call -- client_call that reattaches once on CXLP_E_SESSION and
 * repeats the call. Same returns as client_call. */
int h_call(struct cxlp_handler *h, uint16_t op, const struct pbuf *body,
    struct creply *rep);
/* h_call_id -- h_call under request id id (0: a new one), repeated under
 * the same id after a reattach. */
int h_call_id(struct cxlp_handler *h, uint16_t op, uint64_t id,
    const struct pbuf *body, struct creply *rep);
/* h_check_mapping -- m, mapped from h->pool_path, is of the file the
 * metaserver serves (poolid_map_match); on a mismatch the identity is
 * asked again once (a reattaching HELLO: the server may have restarted,
 * or moved to a copy). 0, or CXLP_E_STALE naming the path (at once once
 * poolid_stale says so), or the reattach's error. */
int h_check_mapping(struct cxlp_handler *h, const struct pmap *m);
/* h_pool_stats -- the metaserver's STATS, decoded into v (indexed by
 * enum proto_stat; zero where the server sent none): cxlp_stats, and
 * regfit.c below it. 0 or an error. */
int h_pool_stats(struct cxlp_handler *h, uint64_t v[PROTO_STATS_MAX]);
/* h_ping -- one HEARTBEAT, one try (keeper.c); reattaches, or loses the
 * session, as h_call does. 0 or an error. */
int h_ping(struct cxlp_handler *h);
/* h_keepalive_task -- the keepalive as a keeper task: a HEARTBEAT
 * (h_ping) keepalive_ms after the last reply and the last heartbeat. */
extern const struct keeper_task h_keepalive_task;
/* h_check_session -- CXLP_E_SESSION once the metaserver has refused to
 * reattach this handler's session: its regions may be another's now, so
 * no page of theirs is handed out or registered again. */
int h_check_session(const struct cxlp_handler *h);
/* h_check_open -- CXLP_E_CLOSED if h is closing or was connected before
 * this process forked (fork.c), -EINVAL if NULL, CXLP_E_STALE once a
 * reattach found the server on another file (poolid_stale). */
int h_check_open(const struct cxlp_handler *h);
/* h_check_keys -- validate a batch of keys (-EINVAL, CXLP_E_BATCH,
 * CXLP_E_KEYLEN). */
int h_check_keys(size_t n, const void *const keys[],
    const size_t key_lens[]);
/* h_heartbeat_body -- check a HEARTBEAT reply's body: empty, or the
 * regions the server asks back (then h->asked, note_ask). 0 or
 * CXLP_E_PROTO. */
int h_heartbeat_body(struct cxlp_handler *h, struct creply *rep);
/* h_get_results -- decode a result list of exactly n entries (or at most
 * n when exact is false) and the end of the reply. */
int h_get_results(struct creply *rep, struct proto_result *res, size_t n,
    bool exact, uint32_t *got);

/* ---- leader.c ----------------------------------------------------------- */

/* leader_finder -- the finder (net.h) of a handler configured with its
 * pool (cxlp_config_set_pool): the endpoints its owner record names now
 * (leader.c); NULL without a pool. Its argument is h. */
client_finder_fn leader_finder(const struct cxlp_handler *h);
/* leader_watch_terms -- h's client asks h's pool whether a reply of an
 * older term is the pool's current term (a term reset: leader.c) before
 * it drops it. After client_open, before any call. */
void leader_watch_terms(struct cxlp_handler *h);

/* ---- latebye.c ---------------------------------------------------------- */

/* latebye_unanswered -- rc (of a BYE) says it got no answer (timeout, no
 * connection), so the server may still hold the session. */
bool latebye_unanswered(int rc);
/* latebye_add -- remember an unanswered BYE of (session, token) at url,
 * process-wide (thread-safe), for the next connect to url. */
void latebye_add(const char *url, uint64_t session, uint64_t token);
/* latebye_send -- send the BYEs kept for h's url over h->cl, which no
 * other thread may use yet (cxlp_connect, before HELLO); leaves h->cl
 * with no session and clears the error message. */
void latebye_send(struct cxlp_handler *h);
/* latebye_atfork_child -- in a child of fork(): a new lock, no BYE kept
 * (fork.c note 3). */
void latebye_atfork_child(void);

#endif /* CXLP_HANDLER_SESSION_H */
