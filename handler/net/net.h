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

/* client_open -- see client.c; tls: the TLS options (a tls+tcp:// url
 * needs a CA; any other url none), copied. */
int client_open(struct client **out, const char *url, unsigned timeout_ms,
    unsigned retries, const struct cfg_tls *tls);
void client_close(struct client **cl);
void client_set_session(struct client *cl, uint64_t session,
    uint64_t token);
void client_get_session(const struct client *cl, uint64_t *session,
    uint64_t *token);
uint64_t client_new_id(struct client *cl);
void client_set_version(struct client *cl, uint16_t version);
uint16_t client_version(const struct client *cl);
uint64_t client_stale_replies(const struct client *cl);
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

/* ---- tls.c -------------------------------------------------------------- */

/* tls_url -- url names a TLS transport (tls+tcp://, tls+tcp4/6://). */
bool tls_url(const char *url);
/* tls_check -- the TLS options fit url: a tls+tcp:// url has a CA, a
 * cert and a key come together, and no other url has any. 0 or -EINVAL
 * with cxlp_errormsg() set. */
int tls_check(const char *url, const struct cfg_tls *tls);

#endif /* CXLP_HANDLER_NET_H */
