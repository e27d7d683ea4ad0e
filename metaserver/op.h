/*
 * op.h -- what dispatch.c and the op files (op_session.c, op_region.c,
 * op_kv.c, op_report.c) share: the decoded request, the row of the op
 * table, two reply helpers, and the apply function of every op.
 *
 * An apply function runs under ms->lock (the lock its row names), with
 * the request's body decoded and its session checked, and either writes a
 * complete success reply into rq->reply or returns an error, which
 * dispatch.c turns into the error reply. Only the metaserver's own .c
 * files include this; tests go through ms_dispatch (ms_int.h).
 */
#ifndef CXLP_MS_OP_H
#define CXLP_MS_OP_H

#include <stdbool.h>
#include <stdint.h>

#include "ms_int.h"
#include "proto.h"

struct occ;

/* One request being dispatched. */
struct req {
	struct ms *ms;
	uint64_t pipe;
	struct proto_req_hdr h;
	uint16_t ver;        /* of the reply: the frame's, or the version
	                      * HELLO negotiated (dec_hello) */
	struct preader body;
	struct ms_sess *s;   /* NULL for HELLO */
	struct pbuf *reply;
	/* decoded body (pointers into the frame, arrays owned) */
	uint32_t flags;
	uint32_t n;
	struct proto_key *keys;
	struct proto_reg *regs;
	struct proto_hello hello;
	struct proto_group group; /* GROUP; GROUP_*: only id, id_len */
	uint64_t len, page_size;
	uint32_t region, gen;
	uint32_t want;       /* RECLAIM: pages the caller is short of;
	                      * LEASE: lease_ms */
	uint32_t wait_ms;    /* RECLAIM: how long it may wait for room */
	struct ms_wait wait; /* RECLAIM: its place among the waiters */
	/* per key, one allocation (batch_new, dispatch.c) */
	struct proto_result *res;
	uint64_t *slots;     /* index slot of each key found (res[i] ok) */
	uint64_t *hash;      /* index hash of each key (pool_kv_hash) */
	struct occ *occ;     /* scratch for nth */
	unsigned *nth;       /* pin changes: occurrence number of each key */
};

/* scratch of pin changes: the key of result i found slot (op_kv.c) */
struct occ {
	uint64_t slot;
	uint32_t i;
};

enum op_lock {
	LK_READ,
	LK_WRITE,
	LK_PINFLAG, /* write if the request asks for PROTO_F_PIN or _LEASE,
	             * else read */
};

/* A row of the op table (dispatch.c). */
struct op_def {
	int (*decode)(struct req *rq);
	int (*apply)(struct req *rq);
	bool needs_session;
	uint8_t lock;      /* enum op_lock */
	uint32_t flags_ok; /* request flag bits this op accepts */
	bool self_replay;  /* run again under its request id, it finds what
	                    * its first run did, so a retry whose reply was
	                    * evicted is run, not answered CXLP_E_UNKNOWN */
	bool frees;        /* success may make room: wake RECLAIMs waiting
	                    * for it (waitq.c note 1) */
	bool waits;        /* may wait for room (rq->wait_ms) */
};

/* op_put_hdr -- the success (or status) reply header for rq. */
static inline void
op_put_hdr(struct req *rq, int status)
{
	struct proto_rep_hdr h = {
		.version = rq->ver,
		.op = rq->h.op,
		.req_id = rq->h.req_id,
		.status = status,
		.ask = status == 0 && ms_ask_pending(rq->ms, rq->s),
		.term = rq->ms->term,
	};

	proto_put_rep_hdr(rq->reply, &h);
}

/* op_sess_id -- the id of rq's session, 0 for HELLO. */
static inline uint64_t
op_sess_id(const struct req *rq)
{
	return rq->s == NULL ? 0 : rq->s->id;
}

/* Apply functions, one per op (ms->lock held as the op's row says). */

/* op_session.c */
int op_hello(struct req *rq);
int op_heartbeat(struct req *rq);
int op_bye(struct req *rq);
/* op_region.c */
int op_region_alloc(struct req *rq);
int op_region_free(struct req *rq);
int op_reclaim(struct req *rq);
/* What op_pin_results does with a change pool_pin_change refuses (an unpin
 * without a pin, or a pin past PIN_COUNT_MAX on one key). */
enum refused {
	REFUSED_MARK, /* the key's result reports it; go on */
	REFUSED_STOP, /* the same, and stop there (PIN: in order) */
	REFUSED_KEEP, /* REGISTER: the key stays registered, unpinned, and
	               * is reported stored (its page must not be freed) */
};

/* op_kv.c */
/* op_results_new -- under the op's lock, before its per-key loop: room
 * for the pins it may take (pin), the index warmed for its keys (insert:
 * they are about to be registered). 0 or CXLP_E_NOSPACE. */
int op_results_new(struct req *rq, bool pin, bool insert);
/* op_kv_loc -- kv's place, with its region's extent, as a result's. */
void op_kv_loc(const struct pool *p, const struct pool_kv *kv,
    struct proto_loc *loc);
/* op_res_ok -- result i: found at kv, with flags. */
void op_res_ok(struct req *rq, uint32_t i, const struct pool_kv *kv,
    uint32_t flags);
/* op_pin_results -- pin (+1) or unpin (-1) the key of every good result
 * of res[0..m), in order; how many results to reply with. */
uint32_t op_pin_results(struct req *rq, uint32_t m, int delta,
    enum refused on);
/* op_put_results -- the success reply with results res[0..n). */
void op_put_results(struct req *rq, uint32_t n);
int op_register(struct req *rq);
int op_lookup(struct req *rq);
int op_pin(struct req *rq);
int op_unpin(struct req *rq);
int op_delete(struct req *rq);
int op_lease(struct req *rq);
/* op_group.c */
int op_group(struct req *rq);
int op_group_register(struct req *rq);
int op_group_lookup(struct req *rq);
/* op_report.c */
int op_stats(struct req *rq);
int op_sessions(struct req *rq);

#endif /* CXLP_MS_OP_H */
