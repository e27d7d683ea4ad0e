/*
 * async_fixture.h -- what the asynchronous-submit tests (test_async.c,
 * test_async_close.c) share: a slow metaserver (a proxy that holds
 * REGISTER and LOOKUP replies back and counts the REGISTERs inside it),
 * handlers with a bound on requests in flight, what the callbacks saw,
 * and requests of KPR keys. async_fixture.c implements it.
 */
#ifndef CXLP_ASYNC_FIXTURE_H
#define CXLP_ASYNC_FIXTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "clock.h"
#include "itest.h"
#include "leak.h"
#include "proto.h"
#include "proxy.h"

#define VLEN 1000
#define NREQ_MAX 256
#define KPR 4 /* keys per request */

/* what the callbacks saw (cb_lock guards it) */
struct async_cb {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int calls[NREQ_MAX];  /* callbacks per request */
	int rcs[NREQ_MAX];    /* their rc */
	int notstored;        /* keys a callback saw not stored */
	int done;             /* callbacks in all */
	int outstanding;      /* submits returned - callbacks ended */
	int outstanding_max;
	int resubmit_rc;      /* what a callback's submit returned */
};
extern struct async_cb cb;

struct req {
	char keys[KPR][24];
	const void *kp[KPR];
	size_t kl[KPR], lens[KPR];
	cxlp_page_t pages[KPR];
};

enum proxy_action slow_hook(void *arg, uint16_t op, uint64_t req_id,
    uint8_t *reply, size_t *reply_len, unsigned *delay_ms);
void slow_set(unsigned delay_ms);
int slow_regs_max(void);
void async_start(void);
void async_stop_all(void);
/* connect_n -- a handler through the proxy with max_inflight n, or on
 * srv directly. */
struct cxlp_handler *connect_n(unsigned n, bool direct);
void cb_reset(void);
void cb_submitted(void);
void cb_end(intptr_t idx, int rc, size_t n, const bool stored[]);
void stored_cb(void *arg, int rc, size_t n, const bool stored[],
    const int status[]);
void cb_wait(int want);
void wait_idle(struct cxlp_handler *h);
void cb_assert_each_once(int nreq, int want_rc);
void req_fill(struct cxlp_handler *h, struct req *r, const char *prefix,
    uint32_t base);
int req_submit_cb(struct cxlp_handler *h, struct req *r, unsigned flags,
    cxlp_store_done_fn done, intptr_t idx);
int req_submit(struct cxlp_handler *h, struct req *r, unsigned flags,
    intptr_t idx);
void assert_keys(struct cxlp_handler *h, const char *prefix,
    uint32_t nkeys);

#endif
