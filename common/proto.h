/*
 * proto.h -- the cxlpool wire protocol and its one codec, shared by the
 * handler, the metaserver, pool-inspect and the fuzz targets.
 *
 * Frames are little-endian and carried whole in one nng message (REQ/REP).
 * Every length is bounded before it is trusted: a decoder never reads past
 * the frame and never allocates from an unchecked count. Decoded keys
 * point into the frame (zero copy), so a decoded request lives only as
 * long as its frame buffer.
 *
 * Versions. The codec speaks PROTO_VERSION_MIN..PROTO_VERSION (2..3); a
 * frame's header says its version and all of the frame follows it. The
 * header encoders set the pbuf's version, so a body appended after a
 * header takes its layout (a body built apart takes the pbuf's version,
 * 0 = PROTO_VERSION); the header decoders set the body reader's. Which
 * version a session speaks is chosen at HELLO (below: "Negotiation").
 *   2  strict: every decoder rejects trailing bytes, so a frame has one
 *      reading and a field a newer peer added is refused, not skipped.
 *   3  extensible, fixed in the codec, not in each op:
 *      - each header carries its own length (hdr_len) and the sender's
 *        minor; a decoder reads the fields it knows and skips to hdr_len;
 *      - a body ends at the frame's end: a decoder reads the fields it
 *        knows and skips the rest (a newer 3.x appends fields at the end
 *        of a body, never inserts or changes one);
 *      - arrays of fixed-size records (results, asks, reclaimed pages)
 *        carry their record size (u16 rec after the count, >= the size
 *        3.0 knows): each record is read by the prefix its decoder knows
 *        and the rest of it skipped; SESSIONS entries, which vary in
 *        size, each carry their length (u16);
 *      - request bodies other than HELLO's are the same bytes as in 2;
 *      - a body whose parts depend on a request flag or on bytes being
 *        left (the WELCOME's identity, HEARTBEAT's asks) grows only after
 *        them: a newer minor sends the part (asks with n 0) before what
 *        it appends.
 *      A change that is not an append is a new version.
 *   [v3] below marks what version 2 does not have.
 *
 * Request frame:
 *   u32 magic    PROTO_MAGIC ("CXLP")
 *   u16 version  PROTO_VERSION_MIN..PROTO_VERSION: the session's
 *   u16 op       enum proto_op
 *   u64 req_id   per session, chosen by the client; a retry reuses it
 *   u64 session  0 before HELLO
 *   u64 token    session token from HELLO (0 before)
 *   [v3] u16 hdr_len  bytes of this header (36 in 3.0, >= 36)
 *   [v3] u16 minor    the sender's minor of version 3 (PROTO_MINOR)
 *   ... body, per op (below)
 *
 * Reply frame:
 *   u32 magic, u16 version (the request's), u16 op (request op |
 *                PROTO_REPLY)
 *   u64 req_id   echoed
 *   i32 status   0 or a negative cxlp error for the whole request
 *   u32 flags    0, or PROTO_REP_F_MSG on an error reply to a request
 *                that asked for reasons (HELLO with PROTO_HELLO_ERRMSG);
 *                PROTO_REP_F_ASK on a success reply to a session that
 *                gives regions back (PROTO_HELLO_GIVEBACK): the server
 *                asks it for regions, its HEARTBEAT reply says which
 *   [v3] u64 term     the metaserver's election term (its epoch, the
 *                     pool's sb.term; 0 without --elect): a handler
 *                     drops a reply of an older term than the newest it
 *                     has seen (contract 12), as if it were lost
 *   [v3] u16 hdr_len  bytes of this header (36 in 3.0, >= 36)
 *   [v3] u16 minor    the sender's minor of version 3 (PROTO_MINOR)
 *   ... body, per op, present only when status == 0; with
 *       PROTO_REP_F_MSG (status != 0) the body is u16 len + the reason
 *       text (1..PROTO_ERRMSG_MAX bytes, not NUL-terminated) and nothing
 *       else (in 3: nothing else that 3.0 reads)
 *
 * Negotiation. A handler sends every HELLO (reattaches too) at the highest
 * version it speaks, with [v3] the range it speaks; the server answers at the
 * highest version both speak (the WELCOME's header version), and every later
 * frame of the session is of that version: the server refuses a frame of
 * another with CXLP_E_VERSION naming both (a session loaded from the pool at a
 * restart takes the version of its first frame). A HELLO of a version the
 * server does not speak is refused with CXLP_E_VERSION in a reply header of the
 * nearest version it speaks, and the message names the frame's version and the
 * server's range; a handler that speaks that version sends its HELLO again at
 * it, once (a version-2 server answers a version-3 frame so: the handler then
 * speaks 2, and its replies carry no term). A later request refused for its
 * version (a server of another release took over) makes the handler HELLO again
 * and repeat it. A version-2 HELLO is served at 2 exactly as a version-2 server
 * serves it. A request that needs what the session's version lacks is refused
 * by its sender with CXLP_E_VERSION naming the version that has it
 * (proto_op_check), never sent to be misread.
 *
 * Bodies ("keys" = u32 n, then n times { u16 len, len bytes }):
 *   HELLO       req: [v3] u16 ver_min, u16 ver_max: the versions the
 *                    handler speaks (the header's is within them), then
 *                    u32 pid, u32 flags (PROTO_HELLO_REATTACH: the header's
 *                    session/token name the session to resume; without
 *                    it, session is 0 and token a random nonce: a resent
 *                    HELLO with the same nonce, pid and start time gets
 *                    the session the first one created),
 *                    u64 start_time (clock ticks since boot, /proc stat),
 *                    u64 instance_id, u16 len + hostname (<= 255 bytes),
 *                    u16 len + shared secret (<= 256 bytes; 0 = none;
 *                    required on tcp:// listeners, see metaserver),
 *                    then, only with PROTO_HELLO_KEEPALIVE, u32
 *                    keepalive_ms (> 0: the handler sends a request at
 *                    least that often while it is open, so a session
 *                    silent for many periods belongs to a handler that
 *                    closed). PROTO_HELLO_ERRMSG: the handler reads the
 *                    reason text of an error reply to this HELLO.
 *                    then, only with PROTO_HELLO_LEASE, u32 lease_ms
 *                    (> 0: how long PROTO_F_LEASE leases last).
 *                    PROTO_HELLO_GIVEBACK: the handler gives regions
 *                    back when asked (HEARTBEAT's reply, REP_F_ASK).
 *                    A HELLO with neither flag is the original layout;
 *                    a server that predates them refuses the flags, so
 *                    upgrade the metaserver before its handlers.
 *                    PROTO_HELLO_POOLID: the handler reads the pool's
 *                    identity in the reply.
 *                    then, only with PROTO_HELLO_HOSTID, u64 host
 *                    (coh_host_hash() of the handler's host, not 0):
 *                    before its WELCOME the server gives that host an
 *                    access slice in the host table of an sw or sim
 *                    pool (pool/evict.c note 8). A handler sends it
 *                    only to the server of such a pool (which knows
 *                    it), so old servers of host pools never see it.
 *               rep: u64 session, u64 token, u64 pool_size (bytes),
 *                    u64 align (bytes), u16 len + pool path (<= 4095),
 *                    then, only to a HELLO with PROTO_HELLO_POOLID,
 *                    u64 open nonce, u64 boot hash, u64 st_dev,
 *                    u64 st_ino (struct proto_poolid)
 *   REGION_ALLOC req: u64 len (bytes), u64 page_size (bytes)
 *               rep: loc (region id, gen, region_off, region_len; off=len=0)
 *   REGION_FREE req: u32 region, u32 gen          rep: empty
 *   REGISTER    req: u32 flags (PROTO_F_PIN, PROTO_F_LEASE), u32 n, n times
 *                    { u16 len, key, u32 region, u64 off, u64 len }
 *               rep: u32 n, [v3] u16 rec (>= PROTO_RESULT_LEN), n times
 *                    result (in 3: rec bytes each); every "results"
 *                    below is such a list
 *   LOOKUP      req: u32 flags (PROTO_F_PIN, _LEASE), keys  rep: u32 n,
 *                    results
 *   EXISTS      req: u32 flags (0), keys              rep: u32 n, results
 *   PIN         req: u32 flags (0), keys   rep: u32 m <= n, results (stops
 *               after the first entry whose status is not 0)
 *   UNPIN       req: u32 flags (0), keys              rep: u32 n, results
 *   DELETE      req: u32 flags (0), keys              rep: u32 n, results
 *   STATS       req: empty   rep: u32 n (<= PROTO_STATS_MAX), n times u64
 *               in enum proto_stat order (a newer server may send more)
 *   HEARTBEAT   req: empty   rep: empty; to a PROTO_HELLO_GIVEBACK
 *                    session: u32 n (<= PROTO_ASKS_MAX), [v3] u16 rec
 *                    (>= 8), n times { u32 region, u32 gen }: regions
 *                    the server asks back
 *   BYE         req: empty   rep: empty (ends the session)
 *   SESSIONS    req: empty   rep: u32 n (<= PROTO_SESSIONS_MAX), n times
 *                    { [v3] u16 len (of the rest of the entry),
 *                    u64 id, u32 pid, u32 flags (PROTO_SESS_*),
 *                    u64 start_time, u64 instance, u32 regions owned,
 *                    u32 pins held, u16 len + host (<= PROTO_HOST_MAX) }
 *               (every session the server knows, the caller's included)
 *   LEASE       req: u32 lease_ms (0: release the caller's lease), then
 *                    u32 flags (0), keys      rep: u32 n, results (each
 *                    key found is leased, renewed or released)
 *   RECLAIM     req: u64 len, u64 page_size (as REGION_ALLOC), u32 want
 *                    (1..PROTO_RECLAIM_MAX pages the handler is short of),
 *                    u32 wait (bits 0..30: how many ms the server may
 *                    wait for room when there is none, 0: answer at
 *                    once; PROTO_RECLAIM_MORE: the handler will ask again
 *                    after this wait, keep its place among the waiters)
 *               rep: u32 kind; PROTO_RECLAIM_REGION: loc (a new region,
 *                    as REGION_ALLOC's reply); PROTO_RECLAIM_PAGES: u32 n
 *                    (1..PROTO_RECLAIM_MAX), [v3] u16 rec (>= 12), n
 *                    times { u32 region, u32
 *                    gen, u32 page }: pages of the caller's own regions
 *                    whose keys were evicted to make room (durably gone
 *                    from the index; free for the caller again). Its
 *                    error replies carry the reason (PROTO_REP_F_MSG)
 *   GROUP       req: u32 cmd (PROTO_GROUP_*), u16 len + group id
 *                    (1..PROTO_GROUP_ID_MAX bytes), u32 total (OPEN: the
 *                    chunks the group declares, 0 = none), u32 flags
 *                    (OPEN: PROTO_GF_PIN; else 0)
 *               rep: OPEN, ABORT, CANCEL: empty; COMMIT: u32 n, results
 *                    (one per key staged, in order: where it now is)
 *   GROUP_REGISTER req: u16 len + group id, then a REGISTER body (flags
 *                    0): the keys are staged in the group, not in the
 *                    index      rep: u32 n, results (a key already in
 *                    the index is pinned and answered with its place)
 *   GROUP_LOOKUP req: u16 len + group id, then keys (flags 0): each key
 *                    found is pinned and counted as a chunk of the group
 *               rep: u32 n, results
 *
 * A result is 48 bytes: i32 status, u32 flags (PROTO_R_NEW: this register
 * created the key), then a loc: u32 region, u32 gen, u64 region_off,
 * u64 region_len, u64 off, u64 len. region_off/off are byte offsets from the
 * start of the pool; gen tells a reused region id from its earlier life.
 * Entries whose status is not 0 carry a zero loc.
 */
#ifndef CXLP_PROTO_H
#define CXLP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cxlpool.h"

#define PROTO_MAGIC 0x504c5843u /* "CXLP" little-endian */
/* 2: RECLAIM and LEASE, the reply header's ask flag and HELLO's GIVEBACK
 * and LEASE flags (eviction), RECLAIM's wait (backpressure).
 * 3: negotiation (HELLO's range), the term in every reply, headers and
 * bodies that a decoder skips the unknown end of, records that carry
 * their size. The versions the codec speaks interoperate (the top
 * comment); a peer of any other is refused with CXLP_E_VERSION naming
 * both ranges (check_frame, proto.c). */
#define PROTO_VERSION 3
#define PROTO_VERSION_MIN 2
#define PROTO_MINOR 0 /* of PROTO_VERSION: what this codec appended */
#define PROTO_REPLY 0x8000u
#define PROTO_REQ_HDR_LEN 32    /* version 2 */
#define PROTO_REP_HDR_LEN 24    /* version 2 */
#define PROTO_REQ_HDR_LEN_V3 36 /* + u16 hdr_len, u16 minor */
#define PROTO_REP_HDR_LEN_V3 36 /* + u64 term, u16 hdr_len, u16 minor */
#define PROTO_RESULT_LEN 48
/* proto_req_hdr_len, proto_rep_hdr_len -- the header's length at
 * version v (the one this codec writes). */
#define proto_req_hdr_len(v) ((v) >= 3 ? PROTO_REQ_HDR_LEN_V3 :            \
	PROTO_REQ_HDR_LEN)
#define proto_rep_hdr_len(v) ((v) >= 3 ? PROTO_REP_HDR_LEN_V3 :            \
	PROTO_REP_HDR_LEN)
#define PROTO_HOST_MAX 255
#define PROTO_SECRET_MAX 256
#define PROTO_PATH_MAX 4095
#define PROTO_STATS_MAX 64
#define PROTO_SESSIONS_MAX 4096
/* Largest frame either side accepts: a full batch of largest keys. */
#define PROTO_FRAME_MAX                                                    \
	(PROTO_REQ_HDR_LEN_V3 + 8 +                                        \
	(size_t)CXLP_BATCH_MAX * (2 + CXLP_KEY_MAX + 20))

enum proto_op {
	PROTO_OP_HELLO = 1,
	PROTO_OP_REGION_ALLOC = 2,
	PROTO_OP_REGION_FREE = 3,
	PROTO_OP_REGISTER = 4,
	PROTO_OP_LOOKUP = 5,
	PROTO_OP_EXISTS = 6,
	PROTO_OP_PIN = 7,
	PROTO_OP_UNPIN = 8,
	PROTO_OP_DELETE = 9,
	PROTO_OP_STATS = 10,
	PROTO_OP_HEARTBEAT = 11,
	PROTO_OP_BYE = 12,
	PROTO_OP_SESSIONS = 13,
	PROTO_OP_RECLAIM = 14,
	PROTO_OP_LEASE = 15,
	PROTO_OP_GROUP = 16,
	PROTO_OP_GROUP_REGISTER = 17,
	PROTO_OP_GROUP_LOOKUP = 18,
	PROTO_OP_MAX = 18,
};

#define PROTO_HELLO_REATTACH 0x1u
#define PROTO_HELLO_KEEPALIVE 0x2u /* HELLO: u32 keepalive_ms follows */
#define PROTO_HELLO_ERRMSG 0x4u    /* HELLO: error reply may carry text */
#define PROTO_HELLO_GIVEBACK 0x8u  /* HELLO: gives regions back if asked */
#define PROTO_HELLO_LEASE 0x10u    /* HELLO: u32 lease_ms follows */
#define PROTO_HELLO_POOLID 0x20u   /* HELLO: WELCOME carries the pool's
                                    * identity (struct proto_poolid) */
#define PROTO_HELLO_HOSTID 0x40u   /* HELLO: u64 host follows (the host
                                    * table of sw and sim pools) */
#define PROTO_HELLO_FLAGS                                                  \
	(PROTO_HELLO_REATTACH | PROTO_HELLO_KEEPALIVE | PROTO_HELLO_ERRMSG | \
	PROTO_HELLO_GIVEBACK | PROTO_HELLO_LEASE | PROTO_HELLO_POOLID |      \
	PROTO_HELLO_HOSTID)
#define PROTO_REP_F_MSG 0x1u       /* reply: reason text follows */
#define PROTO_REP_F_ASK 0x2u       /* reply: regions are asked back */
#define PROTO_ERRMSG_MAX 255       /* bytes of a reply's reason text */
#define PROTO_F_PIN 0x1u   /* REGISTER/LOOKUP: pin each key found */
#define PROTO_F_LEASE 0x2u /* REGISTER/LOOKUP: lease each key found for
                            * the session's lease_ms (HELLO) */
#define PROTO_R_NEW 0x1u   /* result: this register created the key */
#define PROTO_SESS_ATTACHED 0x1u /* session: has a live pipe */
#define PROTO_SESS_DETACHED 0x2u /* session: pipe gone, awaits reattach */
#define PROTO_SESS_FENCED 0x4u /* session: ended for silence; the record
                                * fences its regions until its process
                                * exits or a late BYE comes */

enum proto_stat {
	PROTO_STAT_POOL_BYTES,
	PROTO_STAT_DATA_BYTES,
	PROTO_STAT_FREE_BYTES,
	PROTO_STAT_REGIONS,
	PROTO_STAT_ORPHAN_REGIONS,
	PROTO_STAT_KEYS,
	PROTO_STAT_VALUE_BYTES,
	PROTO_STAT_SESSIONS,
	PROTO_STAT_PINS,
	PROTO_STAT_INDEX_SLOTS,
	PROTO_STAT_LARGEST_FREE,     /* largest free extent, bytes */
	PROTO_STAT_EVICT_PRESSURE,   /* keys evicted: a store found no room */
	PROTO_STAT_EVICT_WATERMARK,  /* keys evicted: free below the mark */
	PROTO_STAT_EVICT_ORPHAN,     /* keys evicted: their owner was gone */
	PROTO_STAT_EVICT_BYTES,      /* value bytes of all of them */
	PROTO_STAT_EVICT_SWEEPS,     /* CLOCK hand laps of the index */
	PROTO_STAT_LEASES,           /* leases held */
	PROTO_STAT_LEASE_EXPIRED,    /* leases that ran out */
	PROTO_STAT_LOOKUP_FOUND,     /* keys the server's LOOKUPs found */
	PROTO_STAT_LOOKUP_MISSING,   /* keys they did not find */
	PROTO_STAT_REQUESTS,         /* requests answered of op 1, then one
	                              * counter per op up to PROTO_OP_MAX */
	PROTO_STAT_COUNT = PROTO_STAT_REQUESTS + PROTO_OP_MAX,
};
_Static_assert(PROTO_STAT_COUNT <= PROTO_STATS_MAX, "STATS reply bound");

struct proto_req_hdr {
	uint16_t version; /* 0 encodes PROTO_VERSION */
	uint16_t op;
	uint64_t req_id;
	uint64_t session;
	uint64_t token;
	uint16_t minor;   /* decoded (v3; 0 in 2); PROTO_MINOR is encoded */
};

struct proto_rep_hdr {
	uint16_t version;
	uint16_t op; /* without PROTO_REPLY */
	uint64_t req_id;
	int32_t status;
	const char *msg;  /* reason text (PROTO_REP_F_MSG), not NUL-terminated:
	                   * into the frame when decoded; NULL when none */
	uint16_t msg_len; /* bytes, <= PROTO_ERRMSG_MAX; 0 = none */
	bool ask;         /* PROTO_REP_F_ASK (success replies only) */
	uint64_t term;    /* v3: the server's election term; 0 in 2 */
	uint16_t minor;   /* decoded (v3; 0 in 2); PROTO_MINOR is encoded */
};

struct proto_key {
	const uint8_t *data; /* points into the frame */
	uint16_t len;        /* 1..CXLP_KEY_MAX */
};

struct proto_reg {
	struct proto_key key;
	uint32_t region;
	uint64_t off; /* bytes from pool start */
	uint64_t len; /* bytes */
};

struct proto_loc {
	uint32_t region;
	uint32_t gen;
	uint64_t region_off; /* bytes from pool start */
	uint64_t region_len; /* bytes */
	uint64_t off;        /* bytes from pool start */
	uint64_t len;        /* bytes */
};

struct proto_result {
	int32_t status;
	uint32_t flags; /* PROTO_R_* */
	struct proto_loc loc;
};

struct proto_hello {
	uint32_t pid;
	uint32_t flags;
	uint64_t start_time;
	uint64_t instance_id;
	const char *host; /* points into the frame, not NUL-terminated */
	uint16_t host_len;
	const uint8_t *secret; /* points into the frame; NULL when len 0 */
	uint16_t secret_len;   /* bytes, <= PROTO_SECRET_MAX */
	uint32_t keepalive_ms; /* ms; sent (and > 0) iff PROTO_HELLO_KEEPALIVE */
	uint32_t lease_ms;     /* ms; sent (and > 0) iff PROTO_HELLO_LEASE */
	uint64_t host_hash;    /* coh_host_hash(); sent (and != 0) iff
	                        * PROTO_HELLO_HOSTID */
	uint16_t ver_min;      /* v3: versions the handler speaks; encoded
	                        * as PROTO_VERSION_MIN.. when 0, decoded from */
	uint16_t ver_max;      /* a version-2 HELLO as 2..2 */
};

/* Which file the server serves, so a handler can tell that what it
 * mapped by the path is that file (handler/session/poolid.c). */
struct proto_poolid {
	uint64_t nonce; /* the pool's open_nonce: this server's open */
	uint64_t boot;  /* procstat_boot_hash() of the server's host: dev
	                 * and ino mean something where it is the handler's */
	uint64_t dev;   /* st_dev of the file the server mapped */
	uint64_t ino;   /* st_ino of it */
};

struct proto_welcome {
	uint64_t session;
	uint64_t token;
	uint64_t pool_size;
	uint64_t align;
	const char *path; /* points into the frame, not NUL-terminated */
	uint16_t path_len;
	bool has_id;      /* id follows the path (PROTO_HELLO_POOLID;
	                   * proto_get_welcome_id) */
	struct proto_poolid id;
};

/* One entry of a SESSIONS reply. */
struct proto_session_info {
	uint64_t id;
	uint32_t pid;
	uint32_t flags; /* PROTO_SESS_* */
	uint64_t start_time;
	uint64_t instance;
	uint32_t regions; /* regions the session owns */
	uint32_t pins;    /* pins the session holds */
	const char *host; /* points into the frame, not NUL-terminated */
	uint16_t host_len; /* <= PROTO_HOST_MAX */
};

/*
 * Growable output buffer. Encoders append to it; on allocation failure the
 * buffer records -ENOMEM in err and further appends do nothing, so a caller
 * checks err once at the end.
 */
struct pbuf {
	uint8_t *data;
	size_t len;
	size_t cap;
	int err;
	uint16_t version; /* the layout encoders write: set by the header
	                   * encoders; 0 (pbuf_init, pbuf_reset) means
	                   * PROTO_VERSION */
};

void pbuf_init(struct pbuf *b);
void pbuf_fini(struct pbuf *b); /* frees data; b may be reused after init */
void pbuf_reset(struct pbuf *b); /* len = 0, err = 0, keeps the memory */
bool pbuf_reserve(struct pbuf *b, size_t n); /* room for n more bytes */
void pbuf_put_u16(struct pbuf *b, uint16_t v);
void pbuf_put_u32(struct pbuf *b, uint32_t v);
void pbuf_put_u64(struct pbuf *b, uint64_t v);
void pbuf_put_bytes(struct pbuf *b, const void *p, size_t n);

/*
 * Bounded reader over a frame. Getters fail (return false and set err to
 * CXLP_E_PROTO) instead of reading past the end; once failed, every later
 * getter fails too.
 */
struct preader {
	const uint8_t *p;
	size_t left;
	int err;
	uint16_t version; /* the layout decoders read: PROTO_VERSION from
	                   * preader_init, the frame's from the header
	                   * decoders (3: the unknown end of a body is
	                   * skipped, 2: refused) */
};

void preader_init(struct preader *r, const void *buf, size_t len);
bool preader_u16(struct preader *r, uint16_t *v);
bool preader_u32(struct preader *r, uint32_t *v);
bool preader_u64(struct preader *r, uint64_t *v);
bool preader_bytes(struct preader *r, size_t n, const uint8_t **p);
/* preader_end -- 0 if everything was consumed without error (version
 * 3: what is left is skipped), else CXLP_E_PROTO (version 2: trailing
 * bytes; or an earlier failure). */
int preader_end(struct preader *r);

/* Headers. The decoders return 0, CXLP_E_PROTO (short frame, bad magic,
 * reserved bits set, reply bit wrong), CXLP_E_VERSION (not in
 * PROTO_VERSION_MIN..PROTO_VERSION; the message names both) or
 * CXLP_E_BADOP; on success *body is positioned at the body, with the
 * frame's version. The encoders set b->version to the header's. */
void proto_put_req_hdr(struct pbuf *b, const struct proto_req_hdr *h);
void proto_put_rep_hdr(struct pbuf *b, const struct proto_rep_hdr *h);
int proto_get_req_hdr(const void *frame, size_t len, struct proto_req_hdr *h,
    struct preader *body);
int proto_get_rep_hdr(const void *frame, size_t len, struct proto_rep_hdr *h,
    struct preader *body);

/* HELLO bodies. */
void proto_put_hello(struct pbuf *b, const struct proto_hello *m);
int proto_get_hello(struct preader *r, struct proto_hello *m);
void proto_put_welcome(struct pbuf *b, const struct proto_welcome *m);
int proto_get_welcome(struct preader *r, struct proto_welcome *m);
/* proto_get_welcome_id -- a WELCOME to a HELLO with PROTO_HELLO_POOLID:
 * m->has_id and m->id set. 0 or CXLP_E_PROTO. */
int proto_get_welcome_id(struct preader *r, struct proto_welcome *m);

/* REGION_ALLOC / REGION_FREE bodies. */
void proto_put_region_req(struct pbuf *b, uint64_t len, uint64_t page_size);
int proto_get_region_req(struct preader *r, uint64_t *len,
    uint64_t *page_size);
void proto_put_region_free(struct pbuf *b, uint32_t region, uint32_t gen);
int proto_get_region_free(struct preader *r, uint32_t *region,
    uint32_t *gen);
void proto_put_loc(struct pbuf *b, const struct proto_loc *loc);
int proto_get_loc(struct preader *r, struct proto_loc *loc);

/*
 * Key batches (LOOKUP, EXISTS, PIN, UNPIN, DELETE requests). The getter
 * validates n (1..CXLP_BATCH_MAX, else CXLP_E_BATCH) and every key length
 * (1..CXLP_KEY_MAX, else CXLP_E_KEYLEN) before returning, and returns a
 * malloc'd array in *keys (caller frees) or -ENOMEM.
 */
void proto_put_keys(struct pbuf *b, uint32_t flags, size_t n,
    const void *const keys[], const size_t key_lens[]);
int proto_get_keys(struct preader *r, uint32_t *flags,
    struct proto_key **keys, uint32_t *n);

/* REGISTER requests: as keys, each with its location. */
void proto_put_regs(struct pbuf *b, uint32_t flags, size_t n,
    const struct proto_reg *regs);
int proto_get_regs(struct preader *r, uint32_t *flags,
    struct proto_reg **regs, uint32_t *n);

/* Result lists (every batch reply). The getter checks n <= max (else
 * CXLP_E_PROTO) and fills res[0..n). */
void proto_put_results(struct pbuf *b, size_t n,
    const struct proto_result *res);
int proto_get_results(struct preader *r, struct proto_result *res,
    uint32_t max, uint32_t *n);

/* STATS reply: values[0..n), n <= PROTO_STATS_MAX; the getter stores at
 * most max values and skips the rest. */
void proto_put_stats(struct pbuf *b, size_t n, const uint64_t *values);
int proto_get_stats(struct preader *r, uint64_t *values, uint32_t max,
    uint32_t *n);

/* SESSIONS reply: v[0..n). The getter checks n <= PROTO_SESSIONS_MAX,
 * each host length and flag word, and returns a malloc'd array in *v
 * (caller frees; NULL when n is 0) whose hosts point into the frame, or
 * CXLP_E_PROTO / -ENOMEM with *v NULL and *n 0. */
void proto_put_sessions(struct pbuf *b, size_t n,
    const struct proto_session_info *v);
int proto_get_sessions(struct preader *r, struct proto_session_info **v,
    uint32_t *n);

/* RECLAIM bodies. */
#define PROTO_RECLAIM_MAX 4096u   /* pages one RECLAIM asks for or returns */
#define PROTO_RECLAIM_REGION 1u
#define PROTO_RECLAIM_PAGES 2u
#define PROTO_RECLAIM_MORE 0x80000000u /* in wait: not my last wait */

struct proto_page {
	uint32_t region;
	uint32_t gen;
	uint32_t page; /* index in the region */
};

struct proto_reclaimed {
	uint32_t kind;            /* PROTO_RECLAIM_REGION or _PAGES */
	struct proto_loc loc;     /* REGION */
	uint32_t n;               /* PAGES: entries */
	struct proto_page *pages; /* PAGES: decoded: malloc'd (caller frees);
	                           * encoded: the caller's */
};

/* HEARTBEAT reply to a PROTO_HELLO_GIVEBACK session: regions asked back. */
#define PROTO_ASKS_MAX 64u
struct proto_region_ref {
	uint32_t region;
	uint32_t gen;
};
void proto_put_asks(struct pbuf *b, uint32_t n,
    const struct proto_region_ref *v);
/* proto_get_asks -- v has room for PROTO_ASKS_MAX entries. */
int proto_get_asks(struct preader *r, struct proto_region_ref *v,
    uint32_t *n);

/* LEASE request: u32 lease_ms, then a key batch (flags 0). */
void proto_put_lease_req(struct pbuf *b, uint32_t lease_ms, size_t n,
    const void *const keys[], const size_t key_lens[]);
int proto_get_lease_req(struct preader *r, uint32_t *lease_ms,
    uint32_t *flags, struct proto_key **keys, uint32_t *n);

void proto_put_reclaim_req(struct pbuf *b, uint64_t len, uint64_t page_size,
    uint32_t want, uint32_t wait_ms);
int proto_get_reclaim_req(struct preader *r, uint64_t *len,
    uint64_t *page_size, uint32_t *want, uint32_t *wait_ms);
void proto_put_reclaimed(struct pbuf *b, const struct proto_reclaimed *m);
int proto_get_reclaimed(struct preader *r, struct proto_reclaimed *m);

/* Request groups (proto_group.c). */
#define PROTO_GROUP_ID_MAX 255u
#define PROTO_GROUP_TOTAL_MAX 65536u /* chunks one group may declare */
enum proto_group_cmd {
	PROTO_GROUP_OPEN = 1,
	PROTO_GROUP_COMMIT = 2,
	PROTO_GROUP_ABORT = 3,
	PROTO_GROUP_CANCEL = 4,
};
#define PROTO_GF_PIN 0x1u /* OPEN: the group's keys stay pinned by the
                           * session after commit */
struct proto_group {
	uint32_t cmd;      /* enum proto_group_cmd */
	const uint8_t *id; /* points into the frame */
	uint16_t id_len;   /* 1..PROTO_GROUP_ID_MAX */
	uint32_t total;    /* OPEN: <= PROTO_GROUP_TOTAL_MAX */
	uint32_t flags;    /* OPEN: PROTO_GF_*; else 0 */
};
void proto_put_group(struct pbuf *b, const struct proto_group *g);
int proto_get_group(struct preader *r, struct proto_group *g);
/* the id that opens a GROUP_REGISTER or GROUP_LOOKUP body */
void proto_put_group_id(struct pbuf *b, const void *id, size_t len);
int proto_get_group_id(struct preader *r, const uint8_t **id,
    uint16_t *len);

/* proto_op_name -- "REGISTER" etc., "UNKNOWN" for anything else. */
const char *proto_op_name(unsigned op);

/* proto_op_version -- the first protocol version that has op (0 for an
 * unknown op). */
unsigned proto_op_version(unsigned op);
/* proto_op_check -- a sender's check before it sends op in a session of
 * the given version: 0, or CXLP_E_VERSION with a message naming the
 * version that has op (the peer would misread or refuse it). */
int proto_op_check(unsigned op, uint16_t version);
/* proto_version_ok -- PROTO_VERSION_MIN <= v <= PROTO_VERSION. */
bool proto_version_ok(unsigned v);

#endif /* CXLP_PROTO_H */
