/*
 * ms_int.h -- the metaserver's internals: the server state (struct ms),
 * sessions, pipes and the reply cache, and the pure request dispatcher.
 * Pins are the pool's (pool/pintab.c keeps them on media, pool/pinidx.c
 * answers held and totals from DRAM); the metaserver asks it directly.
 *
 * Only server.c and tls.c include nng (tls.c's calls are in ms_tls.h).
 * Everything declared here works on plain
 * frames and pipe ids, so tests and the fuzz target drive it without
 * sockets.
 *
 * Locking (two locks, always taken in this order):
 *   ms->lock      rwlock: the pool, pins included. Ops that change it
 *                 take it for writing; reads share it.
 *   ms->sess_lock mutex: the DRAM session table, pipe table and every
 *                 session's reply cache. Never held while waiting for
 *                 ms->lock.
 * A session is ended (pins released, regions disowned, record removed)
 * only with both held, and its `dead` flag is set then, so an op running
 * under ms->lock sees a consistent answer to "is my session alive".
 */
#ifndef CXLP_MS_INT_H
#define CXLP_MS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h" /* cxlp_now_ms: every module's clock */
#include "err.h"
#include "pool.h"
#include "proto.h"
#include "ratelimit.h"

struct pool_own; /* owner.h */

#define MS_VERSION "0.2.0"
#define MS_URLS_MAX 16
#define MS_WORKERS_MAX 32
#define MS_GRACE_MS_DEFAULT 10000u
#define MS_SESS_PER_PROC_DEFAULT 64u /* --max-sessions-per-process */
#define MS_SESS_PER_PROC_MAX 65535u
#define MS_DEFAULT_URL "ipc:///tmp/cxlpool.sock"
#define MS_URL_MAX 512

/* ---- configuration (main.c fills it, server.c and ms_init use it) ------ */

struct ms_config {
	const char *pool_path;
	uint64_t size;        /* bytes, used when creating */
	uint64_t index_slots; /* 0 = derived from size */
	const char *urls[MS_URLS_MAX];
	unsigned nurls;
	unsigned workers;
	uint64_t grace_ms;    /* detached session lifetime, ms */
	unsigned sess_per_proc; /* sessions one process may hold; 0 means
	                         * MS_SESS_PER_PROC_DEFAULT (silence.c) */
	bool reformat;
	int coherence;        /* --coherence: enum pool_coh of a format;
	                       * POOL_COH_AUTO by default */
	bool coherence_set;   /* given: an existing pool must be of it */
	bool repair;          /* --repair: drop damaged records (repair.c) */
	int log_level;        /* CXLP_LOG_* */
	const char *secret_file; /* shared secret for non-ipc peers, or NULL */
	bool evict;           /* --evict on|off (evict.c) */
	unsigned evict_free_pct; /* --evict-free: low watermark, percent */
	bool evict_clock;     /* --evict-order clock (else sweep) */
	uint32_t lease_max_ms; /* --lease-max-ms: the longest lease */
	bool drain_orphans;   /* --drain-orphans: empty them at start */
	const char *metrics_url; /* --metrics: http://host:port, or NULL */
	char metrics_buf[MS_URL_MAX]; /* metrics_url, a bare :PORT bound to
	                               * 127.0.0.1 */
	const char *ready_file;  /* --ready-file: written once serving */
	char url_buf[MS_URLS_MAX][MS_URL_MAX]; /* rewritten listen URLs */
	/* TLS (tls.c): PEM file paths, or NULL */
	const char *tls_cert;  /* --tls-cert: this server's certificate */
	const char *tls_key;   /* --tls-key: its private key */
	const char *tls_ca;    /* --tls-ca: CAs that sign client certs */
	bool tls_verify_peer;  /* --tls-verify-peer: require client certs */
	bool allow_plaintext;  /* --allow-plaintext: tcp:// off loopback */
	/* standby election (elect.h, standby.c; issue 28) */
	const char *elect;     /* --elect etcd://HOST:PORT[,...], or NULL */
	const char *elect_key; /* --elect-key; NULL: ELECT_KEY_PREFIX +
	                        * the pool's uuid, filled by the caller */
	uint32_t elect_ttl_ms; /* --elect-ttl; ELECT_TTL_MS_DEFAULT */
	bool elect_term_reset; /* --elect-term-reset: a term below the
	                        * pool's is served (pool/owner.c note 3) */
	uint64_t elect_term;   /* not a flag: the term won, set by
	                        * ms_init_elected for ms_init; 0: none */
	struct elect *elect_e; /* not a flag: that term's election */
};

/* ms_config_defaults -- fill cfg with the documented defaults. */
void ms_config_defaults(struct ms_config *cfg);
/* ms_config_parse -- parse argv into cfg. Returns 0 to run, 1 when --help
 * or --version was printed (exit 0), 2 after a usage message (exit 2). */
int ms_config_parse(struct ms_config *cfg, int argc, char **argv);
/* ms_config_check_access -- the endpoints of cfg are served safely: 0, or
 * 2 after a message on stderr (config_access.c). */
int ms_config_check_access(const struct ms_config *cfg);
/* ms_url_is_tls -- url is a tls+tcp:// (tls+tcp4/6) endpoint. */
bool ms_url_is_tls(const char *url);
/* ms_url_is_plain_remote -- url is a plaintext tcp:// or ws:// endpoint
 * on an address other than loopback (127.0.0.0/8, ::1, localhost), which
 * other hosts can reach and read (config.c needs --allow-plaintext). */
bool ms_url_is_plain_remote(const char *url);
/* ms_secret_load -- read the shared secret from path (1..PROTO_SECRET_MAX
 * bytes; one trailing newline is dropped) into buf. Returns 0 and *len, or
 * a negative error with cxlp_errormsg() set. */
int ms_secret_load(const char *path, uint8_t *buf, uint16_t *len);

/* ---- reply cache (replycache.c): the last replies of one session ------- */

#define RCACHE_ENTRIES 64
#define RCACHE_BYTES_MAX (4u << 20)
#define RCACHE_GONE 256 /* request ids of the last replies evicted */

enum rcache_state {
	RCACHE_EMPTY = 0,
	RCACHE_PENDING = 1, /* being applied; its reply is not known yet */
	RCACHE_DONE = 2,
};

struct rcache_ent {
	uint64_t req_id;
	uint64_t seq;   /* age: larger is newer */
	int state;      /* enum rcache_state */
	uint8_t *data;  /* RCACHE_DONE: the reply frame (owned) */
	size_t len;
};

struct rcache {
	struct rcache_ent ent[RCACHE_ENTRIES];
	uint64_t seq;
	size_t bytes; /* sum of len over RCACHE_DONE entries */
	uint64_t gone[RCACHE_GONE]; /* ring: ids whose applied reply went */
	unsigned gone_next;
};

/* rcache_begin results (non-negative; CXLP_E_UNKNOWN for a retry of a
 * request applied once whose reply was evicted, CXLP_E_BUSY) */
enum {
	RCACHE_NEW = 0,  /* not seen: now PENDING; apply, then rcache_finish */
	RCACHE_HIT = 1,  /* seen: the cached reply was copied into the pbuf */
	RCACHE_WAIT = 2, /* being applied by another thread: wait and retry */
};

void rcache_init(struct rcache *c);
void rcache_fini(struct rcache *c);
int rcache_begin(struct rcache *c, uint64_t req_id, bool gone_unknown,
    struct pbuf *reply);
void rcache_finish(struct rcache *c, uint64_t req_id, const void *data,
    size_t len);
void rcache_abort(struct rcache *c, uint64_t req_id);
size_t rcache_count(const struct rcache *c);

/* ---- sessions (session.c) ---------------------------------------------- */

struct ms_sess {
	struct ms_sess *next; /* hash chain */
	uint64_t id;
	uint64_t token;
	uint32_t pid;         /* its process (hello.c: ipc peer, or HELLO) */
	uint64_t start_time;  /* clock ticks since boot, of that process */
	uint64_t flags;       /* POOL_SESS_*: where pid came from */
	uint64_t hello_nonce; /* the creating HELLO's nonce; 0 = none */
	uint64_t pipe;        /* pipe it last spoke on; 0 = none */
	uint64_t peer_pid;    /* detached: pid behind the lost pipe, or 0 */
	bool detached;        /* its pipe is gone */
	uint64_t deadline_ms; /* monotonic ms; ends then if peer_pid is 0 */
	uint32_t keepalive_ms; /* heartbeat period its HELLO promised; 0 none */
	uint64_t heard_ms;    /* monotonic ms of its last request (or load) */
	bool giveback;        /* its HELLO said PROTO_HELLO_GIVEBACK */
	uint32_t lease_ms;    /* PROTO_F_LEASE's lease (HELLO); 0 none */
	bool fenced;          /* ended for silence, record kept (silence.c) */
	uint64_t fence_pid;   /* fenced: the process that may still write */
	char host[64];        /* as the HELLO (or the record) named it */
	bool dead;            /* ended; freed when refs drops to 0 */
	uint16_t version;     /* protocol version its HELLO chose (every
	                       * frame of it must be of it: sess_enter); 0
	                       * loaded from the pool, until its first frame */
	unsigned refs;        /* requests in flight */
	struct rcache rcache; /* its replies (replycache.c) */
};

#define MS_SESS_BUCKETS 256
#define MS_GONE_PIPES 64 /* removed pipes remembered (pipes.c) */

struct ms_pipe {
	uint64_t id;
	uint64_t pid;   /* peer pid (ipc), 0 unknown */
	uint64_t start; /* that peer's start time (/proc, read when the pipe
	                 * came), clock ticks since boot; 0 unknown */
};

/* Eviction settings (evict.c), from the config. */
struct ms_evict {
	bool on;
	unsigned free_pct; /* low watermark of free data bytes, percent */
	uint32_t lease_max_ms; /* leases are cut to this */
	uint64_t hold_ns;  /* CLOCK_REALTIME ns: no eviction before (leases
	                    * an earlier server granted may run; lease.c) */
};

/* RECLAIMs waiting for room (waitq.c). */
#define MS_WAITERS_MAX 16
#define MS_WAIT_MAX_MS 60000u /* the longest wait a request may ask for */
struct ms_waitq {
	pthread_mutex_t lock; /* after ms->lock */
	pthread_cond_t cond;  /* CLOCK_MONOTONIC: an event, or a head left */
	uint64_t epoch;       /* space events so far (note 1) */
	uint64_t next;        /* the last ticket handed out */
	struct ms_waiter {
		uint64_t ticket;  /* arrival order */
		uint64_t sess;    /* one entry a session */
		bool here;        /* a request of it waits now */
		bool region;      /* its last request would take a region */
		uint64_t left_ms; /* when its last wait ended (!here) */
	} e[MS_WAITERS_MAX];  /* unordered */
	unsigned n, max;
	bool closing;         /* shutdown: no one waits any more */
};

/* One request's wait. */
struct ms_wait {
	uint64_t sess;     /* whose place in the queue it takes */
	bool region;       /* it would take a region (RECLAIM len > 0) */
	const bool *dead;  /* its session's dead flag (atomic): ends the
	                    * wait */
	uint64_t epoch;    /* the epoch of its last try */
	uint64_t until_ms; /* cxlp_now_ms time its wait ends */
};

/* A region asked back from its owner (asks.c), per region id. */
struct ms_ask {
	uint64_t owner;    /* the session asked */
	uint32_t gen;      /* the region's gen when asked */
	uint64_t asked_ms; /* monotonic ms; 0 = no ask */
};

/* ---- request groups (group.c) ------------------------------------------ */

#define MS_GROUPS_MAX 4096u /* open groups, all sessions */
#define MS_GROUPS_PER_SESSION 256u /* open groups of one session */
#define MS_GROUP_KEY_BYTES_MAX (256ull << 20) /* staged key bytes, all */
#define MS_GROUP_ENTRIES_MAX (4u << 20) /* staged keys and pins, all */
/* ... of one session: a quarter, so that one peer cannot take it all */
#define MS_GROUP_ENTRIES_PER_SESSION (MS_GROUP_ENTRIES_MAX / 4)
#define MS_GROUP_KEY_BYTES_PER_SESSION (MS_GROUP_KEY_BYTES_MAX / 4)

/* What a group holds: a staged key (copied) and the page it points at,
 * or the slot of a key already in the index that the group pinned. */
struct ms_gentry {
	bool staged;
	uint16_t klen;
	uint8_t *key;   /* staged: malloc'd copy */
	uint32_t region;
	uint64_t off, len;
	uint64_t slot;  /* pinned */
};

struct ms_group {
	uint8_t id[PROTO_GROUP_ID_MAX];
	uint16_t id_len;
	uint64_t owner;        /* session id */
	uint32_t total;        /* chunks declared (0: none) */
	uint32_t count;        /* chunks its batches brought */
	uint32_t flags;        /* PROTO_GF_* */
	uint64_t cancelled_by; /* 0: open; else who rolled it back */
	uint64_t open_req;     /* request id of its OPEN (note 5) */
	struct ms_gentry *e;   /* n entries, in arrival order */
	uint32_t n, cap, staged;
	uint64_t key_bytes;    /* of its staged keys */
	struct ms_group *next;
};

struct ms_groups {
	struct ms_group *list;
	unsigned n;
	uint64_t key_bytes; /* of the staged keys */
	uint64_t entries;   /* of all groups */
};

/* ---- metrics (metrics.c) ----------------------------------------------- */

#define MET_BUCKETS 14 /* request latency buckets, and one for +Inf */
/* result codes counted apart: 0, each CXLP_E_*, and one for -errno */
#define MET_CODES (2 - (CXLP_E_LAST + 1000) + 1)

/* What the metaserver counts for /metrics; updated with relaxed atomics
 * by the workers, read the same way when scraped. */
struct ms_metrics {
	uint64_t req[PROTO_OP_MAX + 1][MET_CODES]; /* by op, result code */
	uint64_t lat[PROTO_OP_MAX + 1][MET_BUCKETS + 1]; /* by op, bucket */
	uint64_t lat_sum_us[PROTO_OP_MAX + 1];
	uint64_t rcache_hits; /* requests answered from the reply cache */
	uint64_t reattaches;  /* HELLO REATTACH that succeeded */
	uint64_t lookup_found, lookup_missing; /* keys of LOOKUPs */
	uint64_t start_ms;    /* when the server started (monotonic) */
};

struct ms {
	struct pool *pool;
	bool pool_replaced; /* atomic: its path names another file or none
	                     * (ms_pool_watch); no new sessions */
	struct ms_metrics metrics; /* metrics.c */
	struct ms_groups groups; /* group.c; ms->lock */
	struct ms_evict evict;
	struct ms_waitq waitq; /* waitq.c */
	struct ms_ask *asks;   /* pool_region_max entries (asks.c); ms->lock */
	unsigned asks_out;     /* entries with asked_ms set */
	pthread_rwlock_t lock;     /* the pool (its pins included) */
	pthread_mutex_t sess_lock; /* sessions, pipes, reply caches */
	pthread_cond_t sess_cond;  /* a PENDING reply was finished */
	struct ms_sess *sess[MS_SESS_BUCKETS];
	size_t nsess;
	struct ms_pipe *pipes;
	size_t npipes, cap_pipes;
	struct ms_pipe gone[MS_GONE_PIPES]; /* the last pipes removed */
	unsigned gone_next;
	uint64_t grace_ms;
	unsigned sess_per_proc; /* sessions one process may hold (HELLO) */
	size_t nfenced;         /* shadows with fenced set */
	uint64_t reap_last_ms;  /* the reaper's previous pass (monotonic ms) */
	uint64_t awake_ms;      /* silence is counted from here at the least:
	                         * start, or a reaper pass after a stall */
	bool closing; /* pipe events are ignored once set */
	uint16_t secret_len;              /* 0: non-ipc peers need none */
	uint8_t secret[PROTO_SECRET_MAX]; /* what a non-ipc HELLO must carry */
	struct ratelimit errlog; /* dispatch.c: error lines per pipe;
	                          * sess_lock */
	struct elect *elect; /* --elect: this server's term (standby.c), or
	                      * NULL; set once the pool is open */
	uint64_t term;       /* that term's epoch (cfg->elect_term), 0
	                      * without --elect: in every version-3 reply
	                      * (op_put_hdr), so handlers drop older terms' */
};

/* Lock wrappers: a lock failure is a bug, so they abort (nng style). */
#define MS_LOCK_OK(call) cxlp_assert((call) == 0)
#define ms_rdlock(ms) MS_LOCK_OK(pthread_rwlock_rdlock(&(ms)->lock))
#define ms_wrlock(ms) MS_LOCK_OK(pthread_rwlock_wrlock(&(ms)->lock))
#define ms_unlock(ms) MS_LOCK_OK(pthread_rwlock_unlock(&(ms)->lock))
#define ms_sess_lock(ms) MS_LOCK_OK(pthread_mutex_lock(&(ms)->sess_lock))
#define ms_sess_unlock(ms) MS_LOCK_OK(pthread_mutex_unlock(&(ms)->sess_lock))

/* ms_init -- open (or create) the pool named in cfg and load the sessions
 * it records as detached (they end after the grace period unless they
 * reattach). Returns 0, or a negative error with cxlp_errormsg() set. */
int ms_init(struct ms *ms, const struct ms_config *cfg);
/* ms_pool_open -- pool_open_owned for serving (repair.c): the pool's
 * one server (own), which refuses a damaged pool (CXLP_E_CORRUPT,
 * nothing written, one err line per damaged record, cxlp_errormsg()
 * saying what would be lost) unless cfg->repair, which drops the damage
 * and logs what went. */
int ms_pool_open(struct pool **out, const struct ms_config *cfg,
    unsigned flags, const struct pool_params *params,
    const struct pool_own *own);
/* ms_fini -- free everything and close the pool. */
void ms_fini(struct ms *ms);
/* ms_join_urls -- cfg's endpoints, comma-separated, into buf (truncated
 * to n - 1 bytes): the owner record's and the election value's. */
void ms_join_urls(const struct ms_config *cfg, char *buf, size_t n);

/* ---- standby (standby.c, issue 28; docs/standby.md) ------------------- */

/* The exit status of a leader that lost its term: it stops serving and
 * exits without another write, and its service manager starts it again,
 * as a standby (the unit's Restart=on-failure). */
#define MS_EXIT_LOST 3
struct elect;
/* ms_standby_wait -- with --elect: campaign for the pool and wait, a
 * standby (no endpoint listens, nothing of the pool is written), until
 * this server is elected: 0 and *out (elect_stop it). 1: SIGINT or
 * SIGTERM came first (stopped, *out NULL). Negative: an error, with
 * cxlp_errormsg(). SIGINT and SIGTERM must be blocked. */
int ms_standby_wait(const struct ms_config *cfg, struct elect **out);
/* ms_init_elected -- ms_init for the leader of term e: while the term
 * holds, tries again while the pool's owner record still beats (-EBUSY:
 * the leader before, deposed but not yet gone). 0 (ms->elect = e),
 * MS_EXIT_LOST when the term ended first (nothing opened), 1 after
 * SIGINT/SIGTERM, or ms_init's error. */
int ms_init_elected(struct ms *ms, const struct ms_config *cfg,
    struct elect *e);
/* ms_takeover_record -- an elected leader that serves now records its
 * takeover in the pool (standby.c note 6); nothing without --elect. */
void ms_takeover_record(struct ms *ms);
/* ms_term_ok -- ms may write its pool: it has no election, or its term
 * holds (elect_may_write). Lock-free: checked before every write batch
 * (dispatch.c apply_locked, the reaper). */
bool ms_term_ok(const struct ms *ms);
/* ms_term_lost -- ms was elected and its term is over. */
bool ms_term_lost(const struct ms *ms);

/* ms_dispatch -- handle one request frame received on pipe_id and encode
 * its reply into reply (reset first). Always encodes a reply; returns 0,
 * or -ENOMEM when the reply could not be built (send nothing then).
 * Thread-safe: any number of threads may dispatch at once. */
int ms_dispatch(struct ms *ms, uint64_t pipe_id, const void *frame,
    size_t len, struct pbuf *reply);

/* ms_errlog_admit -- may an error line about a request from pipe be
 * written now (errlog.c: RL_BURST per pipe per RL_WINDOW_MS)? Writes the
 * summary of lines it suppressed before, when one is due. */
bool ms_errlog_admit(struct ms *ms, uint64_t pipe);
/* ms_errlog_flush -- write the summaries of pipes whose window ended with
 * lines suppressed (cheap when there are none: one atomic load). */
void ms_errlog_flush(struct ms *ms);

/* ---- the pool's file (hello.c) ------------------------------------------ */

/* ms_pool_id -- what a WELCOME tells of the file this server serves. */
void ms_pool_id(const struct ms *ms, struct proto_poolid *id);
/* ms_pool_watch -- does the pool's path still name the file the server
 * mapped? Logs once when it stops (or starts again) doing so and sets
 * ms->pool_replaced; a HELLO for a new session is then refused. Cheap (a
 * stat): the reaper's tick calls it. Returns ms->pool_replaced. */
bool ms_pool_watch(struct ms *ms);

/* ---- pipes (pipes.c): the peer pipes and their pids -------------------- */

/* ms_pipe_added -- remember a new pipe and its peer pid (0: unknown);
 * server.c calls it from nng's threads, before the pipe can receive.
 * Takes ms->sess_lock. 0, or -ENOMEM (not recorded: close the pipe). */
int ms_pipe_added(struct ms *ms, uint64_t pipe_id, uint64_t peer_pid);
/* ms_pipe_forget -- pipe_id is gone: drop it from the live pipes and
 * remember it among the last MS_GONE_PIPES removed. Returns its peer pid
 * (0 unknown). sess_lock held. */
uint64_t ms_pipe_forget(struct ms *ms, uint64_t pipe_id);
/* ms_pipe_gone -- pipe_id was removed lately: the entry (its peer pid), or
 * NULL. sess_lock held. */
const struct ms_pipe *ms_pipe_gone(const struct ms *ms, uint64_t pipe_id);
/* ms_pipe_pid -- the peer pid the server saw on pipe_id (ipc; a pid of
 * the server's own pid namespace), live or lately gone; 0 unknown.
 * sess_lock held. */
uint64_t ms_pipe_pid(const struct ms *ms, uint64_t pipe_id);
/* ms_pipe_find -- the entry of pipe_id (its peer pid and start time),
 * live or lately gone, or NULL. sess_lock held. */
const struct ms_pipe *ms_pipe_find(const struct ms *ms, uint64_t pipe_id);
/* ms_pid_checkable -- pid names a process of this host whose life the
 * server can look at (kill, /proc): nonzero, and a pid_t. */
bool ms_pid_checkable(uint64_t pid);
/* ms_pipes_fini -- free the pipe table (ms_fini). */
void ms_pipes_fini(struct ms *ms);

/* ---- liveness (liveness.c): pipe removals and the reaper --------------- */

/* ms_pipe_removed -- pipe_id is gone (server.c, from nng's threads): each
 * session that last spoke on it ends now if its process is gone, else is
 * detached. Takes both locks. */
void ms_pipe_removed(struct ms *ms, uint64_t pipe_id, uint64_t now_ms);
/* ms_reap -- end detached sessions whose deadline passed; returns how
 * many ended. */
unsigned ms_reap(struct ms *ms, uint64_t now_ms);

/* ms_hello_admit (hello.c) -- access rule for a frame from a non-ipc
 * peer: when the server has a shared secret, a HELLO must carry it
 * (constant-time compare). Returns 0 to hand the frame to ms_dispatch (also for frames
 * that are not a decodable HELLO: ms_dispatch answers those), or
 * CXLP_E_PERM with the error reply encoded into reply and nothing
 * created. Thread-safe (reads only the secret). */
int ms_hello_admit(struct ms *ms, const void *frame, size_t len,
    struct pbuf *reply);

/* ---- sessions (session.c): shadows and every transition --------------- */

/* Used by hello.c: (sess_lock held) */
/* sess_find -- the live shadow of session id, or NULL. */
struct ms_sess *sess_find(struct ms *ms, uint64_t id);
/* sess_track -- add a DRAM shadow for session record r. Returns it, or
 * NULL on ENOMEM. */
struct ms_sess *sess_track(struct ms *ms, const struct pool_session *r);
/* sess_bind -- bind s to the pipe it just spoke on; a detached session
 * is live again. */
void sess_bind(struct ms *ms, struct ms_sess *s, uint64_t pipe_id);
/* Used by dispatch.c: */
/* sess_hello (hello.c) -- HELLO: a new session, the one an earlier copy
 * of this HELLO created, or the one it reattaches. */
int sess_hello(struct ms *ms, const struct proto_req_hdr *h,
    const struct proto_hello *m, uint64_t pipe_id, struct ms_sess **out);
int sess_enter(struct ms *ms, const struct proto_req_hdr *h,
    uint64_t pipe_id, bool gone_unknown, struct pbuf *reply,
    struct ms_sess **out);
void sess_leave(struct ms *ms, struct ms_sess *s, uint64_t req_id,
    const struct pbuf *reply);
/* sess_set_version -- the protocol version a HELLO chose for s: its every
 * later frame must be of it (sess_enter refuses others). */
void sess_set_version(struct ms *ms, struct ms_sess *s, uint16_t version);
int ms_sess_load(struct ms *ms, uint64_t now_ms);
void ms_sess_free_all(struct ms *ms);
/* Transitions (session.c design note 1), called by liveness.c: */
/* sess_end_locked -- end s as BYE would (pins, regions, record); both
 * locks held. */
void sess_end_locked(struct ms *ms, struct ms_sess *s, const char *why);
/* ms_sess_detach -- s lost its pipe (peer pid, 0 unknown). The reaper
 * ends it once it finds its process gone; a peer whose pid is unknown
 * (another host) also ends at now + grace unless it speaks on a live pipe
 * first (liveness.c). sess_lock held. */
void ms_sess_detach(struct ms *ms, struct ms_sess *s, uint64_t pid,
    uint64_t now_ms);
/* ms_sess_silence_end -- end s for silence (ms_sess_silent): its pins go;
 * with regions and a process of this host that runs (pid, 0 none), it is
 * fenced (record and regions kept, token refused), else ended. Both
 * locks held. */
void ms_sess_silence_end(struct ms *ms, struct ms_sess *s, uint64_t pid);
/* sess_usable -- s may run op: it has not ended, and is not fenced
 * unless op is BYE. Stable while ms->lock is held. */
bool sess_usable(struct ms *ms, const struct ms_sess *s, uint16_t op);
/* ms_sess_fenced_id -- the session with this id is fenced (ended for
 * silence, its record kept); takes ms->sess_lock. */
bool ms_sess_fenced_id(struct ms *ms, uint64_t id);
/* What the session with this id does with an ask (asks.c). */
enum ms_giveback {
	MS_GIVEBACK_NO,     /* none, or one that does not give back */
	MS_GIVEBACK_YES,    /* live, attached, gives regions back if asked */
	MS_GIVEBACK_ENDING, /* lost its pipe: ends once its process is found
	                     * gone (its regions turn ORPHAN), or reattaches */
};
/* ms_sess_giveback -- see above; takes ms->sess_lock. */
enum ms_giveback ms_sess_giveback(struct ms *ms, uint64_t id);
/* sess_list_flags -- set v[i].flags (PROTO_SESS_*) from the shadow of
 * session v[i].id, for i < n; takes ms->sess_lock. */
void sess_list_flags(struct ms *ms, struct proto_session_info *v, size_t n);

/* ---- silence (silence.c): the rules for handlers that closed unheard --- */

#define MS_SILENT_PERIODS 5     /* keepalive periods of silence that end */
#define MS_REAP_STALL_MS 1000u  /* a reaper pass this late restarts silence */

/* ms_silence_clock -- called by ms_reap with each pass's time: a pass
 * later than MS_REAP_STALL_MS after the previous one (the server was
 * stopped or starved) counts silence afresh from now_ms. sess_lock held. */
void ms_silence_clock(struct ms *ms, uint64_t now_ms);
/* ms_sess_silent -- s promised heartbeats and has been silent for
 * max(grace, MS_SILENT_PERIODS periods) since it last spoke, the server
 * started or the last stall. sess_lock held. */
bool ms_sess_silent(const struct ms *ms, const struct ms_sess *s,
    uint64_t now_ms);
/* ms_sess_admit -- a new session for the process r names (its pid,
 * start_time, flags and host: hello.c) is within
 * --max-sessions-per-process; else CXLP_E_NOSPACE naming that limit.
 * sess_lock held. */
int ms_sess_admit(const struct ms *ms, const struct pool_session *r);
/* ms_sess_table_full -- the message for a full pool session table. */
int ms_sess_table_full(const struct ms *ms);

/* ---- eviction (evict.c): when, whose, who is told ---------------------- */

#define MS_EVICT_FREE_PCT_DEFAULT 5u
#define MS_LEASE_MAX_MS_DEFAULT 60000u

/* ms_evict_held -- eviction waits for leases an earlier server of the
 * pool granted (the lease horizon it found at start); 0, or CXLP_E_BUSY
 * saying until when. */
int ms_evict_held(const struct ms *ms);

/* ---- leases (lease.c) -------------------------------------------------- */

/* ms_lease_keys -- lease (lease_ms > 0, cut to --lease-max-ms) or
 * release (0) the key of every good result in rq's res[0..m) for its
 * session; a refusal becomes that key's result. ms->lock held for
 * writing. */
struct req;
void ms_lease_keys(struct req *rq, uint32_t m, uint32_t lease_ms);
/* ms_leases_expire -- the reaper's pass: drop leases that ran out. Takes
 * ms->lock. */
void ms_leases_expire(struct ms *ms);

/* ms_evict_orphans -- empty ORPHAN regions, fewest keys first, until the
 * pool has a free extent of need bytes and free_target free bytes in all
 * (or none is left to empty), counting the keys under cause; returns keys
 * evicted. ms->lock held for writing. */
size_t ms_evict_orphans(struct ms *ms, uint64_t need, uint64_t free_target,
    enum pool_evict_cause cause);
/* ms_evict_own -- evict up to want keys of session sess's own regions in
 * CLOCK order; their pages go into pages[0..n). Returns n. ms->lock held
 * for writing. */
uint32_t ms_evict_own(struct ms *ms, uint64_t sess, uint32_t want,
    struct proto_page *pages);
/* ms_drain_orphans -- empty every ORPHAN region (their unpinned keys
 * go), eviction on or off: the operator's --drain-orphans. Returns keys
 * evicted. ms->lock held for writing (or no request running). */
size_t ms_drain_orphans(struct ms *ms);
/* ms_evict_background -- the reaper's pass: below the low watermark,
 * empty orphan regions. Takes ms->lock. */
void ms_evict_background(struct ms *ms);
/* ---- asks (asks.c): regions asked back from live handlers ------------- */

#define MS_ASK_WAIT_MS 3000u /* an ask this old no longer stops another */
#define MS_ASK_BATCH 8u      /* regions asked of one owner at a time */

/* ms_asks_init -- the table (after the pool is open); 0 or -ENOMEM. */
int ms_asks_init(struct ms *ms);
/* ms_asks_fini -- free it. */
void ms_asks_fini(struct ms *ms);
/* ms_ask_regions -- requester needs a region and eviction freed none:
 * CXLP_E_BUSY (retry soon) when regions are asked back, now or lately;
 * CXLP_E_NOSPACE when no live handler that gives back holds more regions
 * than requester. ms->lock held for writing. */
int ms_ask_regions(struct ms *ms, uint64_t requester);
/* ms_asks_of -- the regions asked of sess that it still owns, into
 * out[0..n), n <= max; returns n. ms->lock held. */
uint32_t ms_asks_of(struct ms *ms, uint64_t sess,
    struct proto_region_ref *out, uint32_t max);
/* ms_ask_pending -- s gives back and has asks out (cheap when no ask is
 * out anywhere). ms->lock held. */
bool ms_ask_pending(struct ms *ms, const struct ms_sess *s);

/* ---- backpressure (waitq.c) -------------------------------------------- */

/* ms_waitq_init -- an empty queue; at most workers / 2 wait at once. */
void ms_waitq_init(struct ms_waitq *q, unsigned workers);
void ms_waitq_fini(struct ms_waitq *q);
/* ms_space_event -- something that may make room happened (a delete, an
 * unpin, a lease ended, a region given back, a session ended): wake the
 * waiters. Any locks held. */
void ms_space_event(struct ms *ms);
/* ms_waitq_epoch -- space events so far: read before a first try, so an
 * event between that try and the wait is not missed. */
uint64_t ms_waitq_epoch(struct ms *ms);
/* ms_waitq_may_take_region -- no one waits for a region, or sess is the
 * oldest that does. */
bool ms_waitq_may_take_region(struct ms *ms, uint64_t sess);
/* ms_waitq_wait -- wait in w->sess's place in the queue (taken at the
 * tail by its first wait, kept across its waits until it leaves or stays
 * away a second) until it is the head and an event happened since
 * w->epoch: 0 (try again), CXLP_E_TIMEOUT (w->until_ms passed) or
 * CXLP_E_BUSY (the queue is full, or the session waits already). No lock
 * of ms held. */
int ms_waitq_wait(struct ms *ms, struct ms_wait *w);
/* ms_waitq_close -- shutdown: every wait ends now, and no new one starts. */
void ms_waitq_close(struct ms *ms);
/* ms_waitq_leave -- sess gives up its place (got room, or stops
 * waiting); a no-op if it has none, or a request of it waits. */
void ms_waitq_leave(struct ms *ms, uint64_t sess);

/* ms_nospace -- CXLP_E_NOSPACE for a region of len bytes, saying what
 * holds the pool. ms->lock held. */
int ms_nospace(struct ms *ms, uint64_t len);

/* ---- server (server.c): the only nng user ------------------------------ */

/* ms_serve -- open the pool, listen, serve until SIGINT/SIGTERM. Returns
 * the process exit status (0 clean, 1 on startup failure). */
int ms_serve(const struct ms_config *cfg);

/* ---- metrics (metrics.c) and their HTTP endpoint (http.c) ------------- */

/* ms_metrics_note -- one request of op (0: undecodable) ended with rc
 * after us microseconds; reattach: it was a HELLO REATTACH. */
void ms_metrics_note(struct ms *ms, unsigned op, int rc, uint64_t us,
    bool reattach);
/* ms_metrics_lookups -- a LOOKUP found found keys and missed missing. */
void ms_metrics_lookups(struct ms *ms, uint32_t found, uint32_t missing);
/* ms_metrics_requests -- requests answered of op, all results. */
uint64_t ms_metrics_requests(const struct ms *ms, unsigned op);
/* ms_metrics_hit -- one request answered from the reply cache. */
void ms_metrics_hit(struct ms *ms);
/* ms_metrics_text -- the Prometheus text exposition of ms's metrics
 * into out (takes ms->lock for reading). 0 or -ENOMEM. */
int ms_metrics_text(struct ms *ms, struct pbuf *out);
/* ms_health_text -- a one-line JSON health report into out: 0 when the
 * server serves (the pool open, not shutting down), else 1. */
int ms_health_text(struct ms *ms, struct pbuf *out);

/* ms_notify_ready -- the pool is open and every endpoint listens: tell
 * the service manager ($NOTIFY_SOCKET, READY=1) and write --ready-file
 * (notify.c). 0, or -1 when one of them failed (logged). */
int ms_notify_ready(const struct ms_config *cfg);
/* ms_notify_waiting -- tell the service manager that this server is
 * still starting (a standby: not ready until elected): STATUS=status,
 * and EXTEND_TIMEOUT_USEC=extend_ms, the time it may take until the
 * next such word. Errors ignored. */
void ms_notify_waiting(const char *status, unsigned extend_ms);
/* ms_notify_starting -- remove a ready file an earlier run left (a
 * crash): it must not stand for this one, not ready yet. */
void ms_notify_starting(const struct ms_config *cfg);
/* ms_notify_stopping -- STOPPING=1, and the ready file removed. */
void ms_notify_stopping(const struct ms_config *cfg);

struct ms_http;
/* ms_http_start -- serve /metrics and /health on url (http://host:port)
 * from nng's HTTP server. 0 and *out, or an error with the reason. */
int ms_http_start(struct ms *ms, const char *url, struct ms_http **out);
/* ms_http_stop -- stop and free; NULL-safe, *h = NULL. */
void ms_http_stop(struct ms_http **h);

/* ---- request groups (group.c; ms->lock held, for writing to change) -- */

struct ms_group *ms_group_find(struct ms *ms, const void *id, size_t len);
int ms_group_open(struct ms *ms, uint64_t sid, const void *id, size_t len,
    uint32_t total, uint32_t flags, struct ms_group **out);
int ms_group_stage(struct ms *ms, struct ms_group *g, const void *key,
    uint16_t klen, uint32_t region, uint64_t off, uint64_t len);
void ms_group_pinned(struct ms *ms, struct ms_group *g, uint64_t slot);
/* ms_group_room -- make room in g for a batch of n entries with
 * key_bytes bytes of keys to stage, before any is staged or pinned (so
 * that remembering a pin cannot fail after it was taken): 0,
 * CXLP_E_NOSPACE (past the metaserver's or the session's bounds, note
 * 4) or -ENOMEM. */
int ms_group_room(struct ms *ms, struct ms_group *g, uint32_t n,
    uint64_t key_bytes);
unsigned ms_group_release_pins(struct ms *ms, struct ms_group *g);
void ms_group_rollback(struct ms *ms, struct ms_group *g, uint64_t by,
    const char *why);
void ms_group_close(struct ms *ms, struct ms_group *g);
void ms_groups_session_end(struct ms *ms, uint64_t sid);
void ms_groups_fini(struct ms *ms);

#endif /* CXLP_MS_INT_H */
