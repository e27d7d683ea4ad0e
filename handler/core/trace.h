/*
 * trace.h -- test-only recording hooks on the handler's write path, so
 * that a test can check DESIGN contract 1 (write, then register) from the
 * order of what the handler did, not only from what a reader saw.
 *
 * Built with meson option test_hooks (trace.c), and when the environment
 * names a file in CXLP_TRACE_FILE at the first hook, each hook appends
 * lines to it, in the order they happened, across every thread:
 *
 *   persist OFF LEN      pool bytes [OFF, OFF + LEN) of own pages were
 *                        persisted (store_persist, after pmap_persist)
 *   register N           a REGISTER of N entries is about to be sent
 *                        (h_call_id, before each client_call_id), then
 *   reg OFF LEN          N lines: each entry's page offset (bytes from
 *                        pool start) and value length, as on the wire
 *
 * Without test_hooks (trace_none.c) both calls are empty, and without
 * CXLP_TRACE_FILE they cost one atomic load.
 */
#ifndef CXLP_HANDLER_TRACE_H
#define CXLP_HANDLER_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* trace_persist -- pool bytes [off, off + len) were just persisted. */
void trace_persist(uint64_t off, uint64_t len);
/* trace_register -- a REGISTER with this body is about to be sent. */
void trace_register(const struct pbuf *body);

#endif /* CXLP_HANDLER_TRACE_H */
