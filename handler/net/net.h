/*
 * net.h -- the network layer: the nng REQ client, its sockets and TLS (the
 * only nng users).
 *
 * A file of handler/net/ includes this header, and through it those of the
 * layers below (handler_int.h draws them; tests/handler/check_layers.py
 * checks the rule).
 */
#ifndef CXLP_HANDLER_NET_H
#define CXLP_HANDLER_NET_H

#include "core.h"

/* ---- client.c ----------------------------------------------------------- */

#define CLIENT_LIST_MAX 256 /* a finder's list of endpoints, NUL included */

/* client_finder_fn -- where the pool's owner says it listens now: 0 and
 * its endpoints, comma-separated, in list (n bytes), and *local when the
 * owner runs on this host (its ipc:// endpoints reach it); or an error
 * (no owner, a claim under way, no pool). Called from any calling thread,
 * one at a time. */
typedef int (*client_finder_fn)(void *arg, char *list, size_t n,
    bool *local);

/* client_term_fn -- whether `term`, older than the newest term a reply
 * carried, is the pool's current term now (read from the pool itself,
 * fresh): a leader started after a term reset, not a deposed one.
 * Asked only for a reply that would otherwise be dropped, from the
 * calling thread; any number at once. */
typedef bool (*client_term_fn)(void *arg, uint64_t term);

/* client_open -- see client.c; url: one endpoint, or several
 * comma-separated (endpoints.c); tls: the TLS options (a tls+tcp:// url
 * needs a CA; any other url none), copied; finder (may be NULL): where
 * the pool's owner listens, asked when no endpoint answers, with arg,
 * which must outlive the client. */
int client_open(struct client **out, const char *url, unsigned timeout_ms,
    unsigned retries, const struct cfg_tls *tls, client_finder_fn finder,
    void *arg);
void client_close(struct client **cl);
void client_set_session(struct client *cl, uint64_t session,
    uint64_t token);
void client_get_session(const struct client *cl, uint64_t *session,
    uint64_t *token);
uint64_t client_new_id(struct client *cl);
void client_set_version(struct client *cl, uint16_t version);
uint16_t client_version(const struct client *cl);
uint64_t client_stale_replies(const struct client *cl);
uint64_t client_term_resets(const struct client *cl);
/* client_set_term_check -- the hook asked for a reply of an older term
 * (NULL: none, such a reply is dropped); arg must outlive the client.
 * Set before any call. */
void client_set_term_check(struct client *cl, client_term_fn fn, void *arg);
/* client_last_reply_ms -- cxlp_now_coarse_ms() when the last reply arrived (or
 * when the client opened). */
uint64_t client_last_reply_ms(const struct client *cl);
int client_call_id(struct client *cl, uint16_t op, uint64_t id,
    const struct pbuf *body, struct creply *rep);
int client_call(struct client *cl, uint16_t op, const struct pbuf *body,
    struct creply *rep);
uint64_t client_redials(const struct client *cl);
int client_call_once(struct client *cl, uint16_t op, const struct pbuf *body,
    struct creply *rep);
int client_hello(struct client *cl, uint16_t version, const struct pbuf *body,
    struct creply *rep);
void client_reply_fini(struct creply *rep);

/* ---- endpoints.c -------------------------------------------------------- */

/* client_switches -- how many times calls moved to another endpoint. */
uint64_t client_switches(const struct client *cl);

/* ---- tls.c -------------------------------------------------------------- */

/* tls_url -- url names a TLS transport (tls+tcp://, tls+tcp4/6://). */
bool tls_url(const char *url);
/* tls_check -- the TLS options fit url: a tls+tcp:// url has a CA, a
 * cert and a key come together, and no other url has any. 0 or -EINVAL
 * with cxlp_errormsg() set. */
int tls_check(const char *url, const struct cfg_tls *tls);

#endif /* CXLP_HANDLER_NET_H */
