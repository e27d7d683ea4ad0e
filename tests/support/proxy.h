/*
 * proxy.h -- a test-only fault-injection proxy between handlers and the
 * metaserver.
 *
 * The proxy listens with an nng REP socket on listen_url and forwards each
 * request frame, unchanged, over an nng REQ socket dialed to server_url,
 * then returns the server's reply. Up to PROXY_WORKERS requests are in
 * flight at once. A hook chosen by the test decides, per request, whether
 * to pass it, lose the request, lose the reply, delay the reply, send the
 * request twice, rewrite the reply, or hold the request back to deliver it
 * much later (proxy_release_held), as a relay that kept a copy across a
 * metaserver restart would.
 */
#ifndef CXLP_TEST_PROXY_H
#define CXLP_TEST_PROXY_H

#include <stddef.h>
#include <stdint.h>

#define PROXY_WORKERS 8
#define PROXY_PIPES_MAX 64 /* connections proxy_stall_seen can tell apart */
#define PROXY_HELD_MAX 16  /* requests PROXY_HOLD_REQUEST can keep */

struct proxy;

enum proxy_action {
	PROXY_PASS,         /* forward, return the reply */
	PROXY_DROP_REPLY,   /* forward, discard the reply, answer nothing */
	PROXY_DROP_REQUEST, /* do not forward, answer nothing */
	PROXY_DELAY_REPLY,  /* forward, sleep *delay_ms, then reply */
	PROXY_DUP_REQUEST,  /* forward twice, reply with the second answer */
	PROXY_HOLD_REQUEST, /* do not forward, answer nothing, keep a copy
	                     * for proxy_release_held (dropped when
	                     * PROXY_HELD_MAX are held already) */
};

/*
 * proxy_hook -- the test's decision, called twice per request:
 *
 * 1. Request phase, before forwarding: reply == NULL, reply_len == NULL.
 *    Return PROXY_DROP_REQUEST, PROXY_DUP_REQUEST, PROXY_HOLD_REQUEST or
 *    PROXY_PASS; any other
 *    value means PROXY_PASS in this phase.
 * 2. Reply phase, after the (last) reply arrived; not called if the
 *    request was dropped. reply[0..*reply_len) is the reply frame: the
 *    hook may rewrite it in place and may shorten *reply_len (never grow
 *    it; see proxy_truncate_results). Return PROXY_PASS, PROXY_DROP_REPLY
 *    or PROXY_DELAY_REPLY (with *delay_ms set; it starts at 0); any other
 *    value means PROXY_PASS in this phase.
 *
 * op and req_id come from the request header (0 if the frame is too short
 * to hold them). The hook runs on the proxy's worker threads, up to
 * PROXY_WORKERS at once: it must lock any state it shares.
 */
typedef enum proxy_action (*proxy_hook)(void *arg, uint16_t op,
    uint64_t req_id, uint8_t *reply, size_t *reply_len, unsigned *delay_ms);

/* proxy_start -- listen on listen_url, forward to server_url (dialed in
 * the background, so the server may start later). hook may be NULL (pass
 * everything). Returns 0 and a running proxy in *out (stop it with
 * proxy_stop), or a negative error (-errno style, nng's text in
 * cxlp_errormsg()) with *out == NULL. */
int proxy_start(struct proxy **out, const char *listen_url,
    const char *server_url, proxy_hook hook, void *arg);

/* proxy_stop -- close both sockets, join the workers, free; NULL-safe,
 * sets *p = NULL. Requests in flight are dropped. */
void proxy_stop(struct proxy **p);

/* proxy_requests -- requests received for op (0 counts frames whose op
 * is unknown or unreadable), whatever the hook then did with them. */
uint64_t proxy_requests(struct proxy *p, unsigned op);

/* proxy_forwarded -- request frames sent to the server, in all (a
 * PROXY_DUP_REQUEST counts two, a PROXY_DROP_REQUEST none). */
uint64_t proxy_forwarded(struct proxy *p);

/* proxy_refuse_version -- from now on (from != 0), answer every request
 * frame of protocol version `from` or later as a metaserver of version
 * from - 1 does, without forwarding it: CXLP_E_VERSION in a reply header
 * of that version (from 0: forward them again). Returns how many frames
 * were answered so before this call. */
uint64_t proxy_refuse_version(struct proxy *p, unsigned from);

/* proxy_stall_seen -- from now on, drop every request that arrives on a
 * connection a request already came through (the connection stays up but
 * answers nothing, like a peer that hangs); new connections pass. */
void proxy_stall_seen(struct proxy *p);

/* proxy_held -- requests held now (PROXY_HOLD_REQUEST, not released). */
unsigned proxy_held(struct proxy *p);

/* proxy_release_held -- forward every held request, in the order held,
 * over a connection of its own dialed afresh to server_url (the proxy's
 * own may have died with the server), waiting up to timeout_ms for each
 * reply; the replies go nowhere (the client gave up long ago). Held
 * requests are released whether or not they are answered. Returns how
 * many were answered, or a negative error (nng's text in cxlp_errormsg())
 * if the connection could not be made. Not to be called from the hook. */
int proxy_release_held(struct proxy *p, unsigned timeout_ms);

/* proxy_truncate_results -- rewrite the result-list reply in
 * reply[0..*len) to keep only its first `keep` results (n and *len are
 * updated). Returns 0 (also when it already has <= keep results), or
 * CXLP_E_PROTO if the frame is not a successful reply with a result list. */
int proxy_truncate_results(uint8_t *reply, size_t *len, uint32_t keep);

/* proxy_set_term -- rewrite the term of the version-3 reply in
 * reply[0..len) (common/proto.h: u64 at byte 24), as a metaserver of
 * that term would have sent it. 0, or CXLP_E_PROTO for a frame that is
 * not such a reply. */
int proxy_set_term(uint8_t *reply, size_t len, uint64_t term);

#endif /* CXLP_TEST_PROXY_H */
