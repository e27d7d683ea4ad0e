/*
 * rawclient.h -- test support: speak the wire protocol directly, without
 * libcxlpool, to send what a well-behaved handler never would (foreign
 * regions, out-of-bounds pages, stolen tokens, malformed frames).
 * Functions return 0 or a negative error and never assert.
 */
#ifndef CXLP_TEST_RAWCLIENT_H
#define CXLP_TEST_RAWCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct raw_client {
	void *sock;       /* nng_socket, boxed to keep nng.h out of tests */
	uint64_t session; /* from raw_hello */
	uint64_t token;
	uint64_t next_id;
	uint16_t version; /* of raw_hello's and raw_request's frames (0 after
	                   * raw_open: PROTO_VERSION) */
};

int raw_open(struct raw_client *c, const char *url);
/* raw_open_async -- as raw_open, but the dial goes on in the background
 * (requests wait for it): for a server that may be down right now. */
int raw_open_async(struct raw_client *c, const char *url);
void raw_close(struct raw_client *c);
/* raw_redial -- replace c's socket by one dialed afresh (in the
 * background, as raw_open_async), keeping its session, token and request
 * ids: the way round nng 1.5's ipc dialer, which sometimes never redials
 * a restarted server (a send then times out after 10 s). The old socket
 * stays open to the end of the process. 0 or a negative error. */
int raw_redial(struct raw_client *c, const char *url);

/* raw_call -- send frame, receive the reply; *rep is malloc'd (caller
 * frees). */
int raw_call(struct raw_client *c, const void *frame, size_t len,
    uint8_t **rep, size_t *rep_len);

/* raw_frame -- pbuf_init b and write a request header into it: op under
 * c's session with c's next request id, and version and token as given
 * (a test may send a wrong one). The caller appends the body, sends it
 * with raw_call (as often as it likes: a resend keeps the id) and
 * pbuf_fini's b. */
void raw_frame(struct pbuf *b, struct raw_client *c, uint16_t version,
    uint16_t op, uint64_t token);
/* raw_reply -- the status of reply rep[0..len) to op (its decode error,
 * or CXLP_E_PROTO for a reply to another op), with *rd on its body; rep
 * stays the caller's. */
int raw_reply(uint16_t op, const uint8_t *rep, size_t len,
    struct preader *rd);

/* raw_request -- send op with body (may be NULL) under c's session and
 * return the reply's status; on status 0 with res != NULL, decode up to max
 * results into res and *n. */
int raw_request(struct raw_client *c, uint16_t op, const struct pbuf *body,
    struct proto_result *res, uint32_t max, uint32_t *n);

/* raw_stats -- STATS under c's session: 0 and v[0..*n), at most max,
 * or an error. */
int raw_stats(struct raw_client *c, uint64_t *v, uint32_t max, uint32_t *n);

/* raw_hello -- open a session (fills c->session/token). */
int raw_hello(struct raw_client *c);

/* raw_nng_usable -- whether nng still works in this process: a req/rep
 * pair over inproc exchanges a message and both sockets close within
 * deadline_ms (a close needs nng's reaper thread, which nng 1.5.2 can
 * wedge for good; handler/net/client.c csock_retire). 0, or -ETIMEDOUT (the
 * helper thread is left behind), or another negative error. */
int raw_nng_usable(unsigned deadline_ms);
/* raw_region -- REGION_ALLOC of len bytes with page_size pages. */
int raw_region(struct raw_client *c, uint64_t len, uint64_t page_size,
    struct proto_loc *loc);
/* raw_register -- REGISTER one key at (region, off, len); returns the
 * request status, and the entry's result in *res. */
int raw_register(struct raw_client *c, const char *key, uint32_t region,
    uint64_t off, uint64_t len, struct proto_result *res);

#endif
