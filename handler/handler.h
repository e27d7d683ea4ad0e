/*
 * handler.h -- the top: connect and close (handler.c) and the async submits
 * (async.c).
 *
 * A file of handler/ (the top) includes this header, and through it those
 * of the layers below (handler_int.h draws them;
 * tests/handler/check_layers.py checks the rule).
 */
#ifndef CXLP_HANDLER_TOP_H
#define CXLP_HANDLER_TOP_H

#include "kv.h"

/* ---- async.c ------------------------------------------------------------ */

/* async_atfork_child -- in a child of fork(): async's closed state gets
 * new locks (fork.c note 3). */
void async_atfork_child(void);
/* async_close_deferred -- cxlp_close of h called from one of h's own
 * callbacks: refuse new submits and return true (the caller hands the
 * close to a new detached thread, which runs it once the callback
 * returned); false when called from any other thread (close here). */
bool async_close_deferred(struct cxlp_handler *h);
/* async_stop -- at close, before h->closing is set: refuse new submits
 * (for good: h->async stays a state that refuses them), let every request
 * submitted run to its callback, and join the threads. */
void async_stop(struct cxlp_handler *h);
/* async_fini -- free h->async (handler_free, after async_stop). */
void async_fini(struct cxlp_handler *h);

#endif /* CXLP_HANDLER_TOP_H */
