/*
 * handler_int.h -- the handler's private structures and the internal API
 * between its modules:
 *
 *   config.c   struct cxlp_config and its range-checked setters
 *   client.c   the nng REQ client (with csock.c, its sockets, the only
 *              nng users; client_int.h): client_call
 *   pages.c    pure page tables: per-region O(1) free list + page states
 *   regions.c  own regions (RW); cxlp_alloc / cxlp_free
 *   rmap.c     the region map of every mapping, and the foreign regions
 *              mapped into it (RO)
 *   prefaulter.c  the thread that prefaults regions mapped after connect
 *   giveback.c the return of emptied regions past the reserve
 *   call.c     HELLO, reattach and h_call, below every module that
 *              calls the server; the checks and decoders they share
 *   handler.c  connect, close, stats, healthcheck (the top)
 *   store.c    store / batch_store (and group batches)
 *   resolve.c  resolving registers whose reply was lost
 *   ops.c      retrieve, exists, pin, unpin, delete (+ batches)
 *   direct.c   unpinned lookups read straight from the pool's index
 *   version.c  versions of retrieved values; cxlp_validate (+ batch)
 *   keeper.c   the background thread: keepalive, and the give-back's
 *              round trips
 *   async.c    batch_store / batch_retrieve submitted without waiting:
 *              their threads, the bound on them, their callbacks
 *   regview.c  region views, value locations, the region callback
 *
 * Locks (never taken in the other order):
 *   h->expand_lock  serializes REGION_ALLOC and REGION_FREE round trips
 *                   (auto-expand, give-back) and guards the give-back's
 *                   lists
 *   h->page_lock    the write path: page table, own-region array, the
 *                   unresolved list
 *   h->regions.map_lock  rwlock over the region map cache; reads take
 *                   it shared and never wait on page_lock
 */
#ifndef CXLP_HANDLER_INT_H
#define CXLP_HANDLER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cxlpool.h"
#include "pages.h" /* pages.c: the page table */
#include "proto.h"
#include "scratch.h"

struct kvread;

/* ---- config.c ----------------------------------------------------------- */

#define CFG_SERVER_MAX 512
#define CFG_REGION_MAX (1ull << 40) /* region size cap, bytes */
#define CFG_TLS_PATH_MAX 1024 /* a TLS file's path, NUL included */
#define CFG_TLS_NAME_MAX 256  /* a TLS server name, NUL included */

/* The TLS options of a tls+tcp:// connection (tls.c): PEM file paths and
 * the server name to verify; "" means not set. */
struct cfg_tls {
	char ca[CFG_TLS_PATH_MAX];   /* CAs that sign the server's cert */
	char cert[CFG_TLS_PATH_MAX]; /* this handler's cert (mutual TLS) */
	char key[CFG_TLS_PATH_MAX];  /* its private key */
	char server_name[CFG_TLS_NAME_MAX]; /* "": the URL's host */
};

struct cxlp_config {
	char server[CFG_SERVER_MAX]; /* nng URL, NUL-terminated */
	size_t page_size;            /* bytes, >= 64 (config.c note 1) */
	size_t region_size;          /* bytes, >= page_size */
	bool auto_expand;
	unsigned max_regions; /* 0 = no limit */
	unsigned timeout_ms;  /* per attempt, > 0 */
	unsigned retries;     /* resends after a timeout */
	uint64_t instance_id;
	uint16_t secret_len;            /* bytes; 0 = no secret */
	uint8_t secret[PROTO_SECRET_MAX]; /* sent in HELLO (tcp listeners) */
	bool direct_reads; /* unpinned lookups from shared memory */
	unsigned keepalive_ms; /* heartbeat after this long silent; 0 off */
	unsigned lease_ms;     /* CXLP_*_LEASE leases, ms (HELLO) */
	unsigned alloc_wait_ms; /* alloc waits this long for room */
	unsigned reserve_regions; /* empty regions kept, not given back */
	unsigned max_inflight; /* async requests in flight at once (async.c) */
	struct cfg_tls tls;    /* tls+tcp:// only (tls.c) */
};

/* config_defaults -- fill *cfg with the documented defaults. */
void config_defaults(struct cxlp_config *cfg);
/* config_check -- 0 if cfg is usable for connect, else -EINVAL. */
int config_check(const struct cxlp_config *cfg);
/* config_secret_env -- cfg without a secret takes the one in the file
 * CXLP_SECRET_FILE names, if set (config.c note 2). 0, or -errno /
 * -EINVAL with the file named (cfg's secret left empty). */
int config_secret_env(struct cxlp_config *cfg);

/* ---- client.c ----------------------------------------------------------- */

struct client;

/* A validated reply: header decoded, op and req_id matched, status 0.
 * body is positioned at the reply body. Release with client_reply_fini. */
struct creply {
	void *msg; /* nng_msg, owned */
	struct proto_rep_hdr hdr;
	struct preader body;
	unsigned sends; /* copies of the request sent, set whether or not
	                 * the call succeeded: more than one means a copy
	                 * may still reach the server later (doubt.c) */
};

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
void client_reply_fini(struct creply *rep);

/* ---- tls.c, tlsprobe.c: tls+tcp:// ------------------------------------ */

/* tls_url -- url names a TLS transport (tls+tcp://, tls+tcp4/6://). */
bool tls_url(const char *url);
/* tls_check -- the TLS options fit url: a tls+tcp:// url has a CA, a
 * cert and a key come together, and no other url has any. 0 or -EINVAL
 * with cxlp_errormsg() set. */
int tls_check(const char *url, const struct cfg_tls *tls);

/* What a probe of a server that refused a handshake found (tlsprobe.c). */
struct tlsprobe {
	bool reached;       /* a TCP connection was made */
	bool plain_sp;      /* the server sent an SP header in the clear */
	bool tls;           /* it answered a ClientHello with TLS */
	bool got_cert;      /* it presented a certificate (flags valid) */
	uint32_t flags;     /* MBEDTLS_X509_BADCERT_* of its certificate,
	                     * of which these four: */
	bool untrusted, expired, future, mismatch;
	bool cert_asked;    /* it asked for a client certificate */
	bool handshake_ok;  /* the whole handshake completed */
	int rc;             /* mbedtls' last error, 0 none */
	char subject[96];   /* its certificate's subject */
	char not_after[32]; /* and end of validity, "YYYY-MM-DD HH:MM:SS" */
	char server_name[CFG_TLS_NAME_MAX]; /* the name it checked */
};
/* tlsprobe_run -- connect to url's host and port (TCP) and try a TLS
 * handshake with tls's CA, cert and key (verification optional: the
 * probe reports what failed, it never trusts), for at most timeout_ms.
 * Never fails: *out says what was seen. */
void tlsprobe_run(const char *url, const struct cfg_tls *tls,
    unsigned timeout_ms, struct tlsprobe *out);

/* ---- regions.c, rmap.c ------------------------------------------------- */

struct pmap;

/* One region this handler owns, mapped read-write; or, on a list of
 * giveback.c, one on its way back to the pool or gone back. */
struct own_region {
	struct proto_loc loc; /* id, gen, region_off, region_len */
	struct pmap *map;     /* owned */
	uint8_t *base;        /* pmap_addr(map) */
	struct own_region *next; /* on a giveback list */
};

/* One cached mapping, keyed by region id; own entries borrow their map. */
struct rmap_ent {
	uint32_t region, gen;
	uint64_t region_off, region_len;
	struct pmap *map; /* owned unless own */
	bool own;
	struct rmap_ent *next;
	uint64_t page_size; /* foreign: the owner's, from the region table
	                     * (0: unknown); own: unused (cfg.page_size) */
};

#define RMAP_BUCKETS 256

/* The regions' state (regions.c, rmap.c), embedded in the handler:
 * owntab_state_init at handler_new, owntab_state_fini at handler_free;
 * between them regions_init (connect) takes the first region and
 * regions_fini (close) unmaps every region. */
struct regions {
	struct own_region **own; /* indexed like pages.sets; page_lock */
	uint32_t nown, cap_own;  /* page_lock */

	pthread_rwlock_t map_lock; /* over rmap, retired, nforeign */
	struct rmap_ent *rmap[RMAP_BUCKETS];
	struct rmap_ent *retired; /* replaced foreign maps, unmapped at close */
	uint64_t nforeign;

	uint64_t req; /* a REGION_ALLOC (or RECLAIM) whose every try timed
	               * out: the next asks again under its id (the server
	               * finds the region it granted); expand_lock */
	bool unfit;   /* the last region refused is larger than the pool's
	               * whole data area (regfit_why); expand_lock */

	/* the thread that prefaults regions added after connect and foreign
	 * regions as they are mapped (prefaulter.c); NULL until first
	 * needed */
	struct prefaulter *prefaulter;
};

/* An unresolved page: a register whose outcome was lost. */
struct unresolved {
	cxlp_page_t page;
	uint16_t key_len;
	uint8_t *key;    /* owned copy */
	uint32_t region; /* where the lost REGISTER put it */
	uint64_t off;    /* bytes from pool start */
	uint64_t len;    /* bytes */
};

/* The store module's state (store.c, doubt.c), embedded in the handler;
 * zero is empty, store_fini frees it. */
struct store_state {
	struct unresolved *unres; /* registers whose outcome was lost */
	size_t nunres, cap_unres;
	uint64_t quar_logged; /* quarantined pages when last logged */
};

/* ---- keeper.c (its state; the functions are below) ---------------------- */

/* The keeper's state, embedded in the handler: keeper_init at
 * handler_new, keeper_fini at handler_free; between them the thread runs
 * from keeper_start to keeper_stop. */
/* One task of the keeper's (keeper.c): due -- when it is due unasked
 * (cxlp_now_coarse_ms time; UINT64_MAX: only when poked), called by the
 * keeper thread with its lock held; run -- run it (no keeper lock held),
 * false when the session is gone for good and the thread must end. */
struct keeper_task {
	uint64_t (*due)(struct cxlp_handler *h);
	bool (*run)(struct cxlp_handler *h);
};

#define KEEPER_TASKS_MAX 8

struct keeper {
	pthread_mutex_t lock; /* guards stop, poked, running's reads */
	pthread_cond_t cond;  /* CLOCK_MONOTONIC; signalled by keeper_stop
	                       * and keeper_poke */
	bool stop;
	bool running;     /* the thread runs; set by connect/close, read by
	                   * keeper_poke */
	unsigned poked;   /* bit i: task i poked */
	unsigned ntasks;
	struct keeper_task task[KEEPER_TASKS_MAX]; /* by priority, filled
	                   * before keeper_start (keeper_add) */
	int ask_task;     /* the task a reply's ASK pokes, or -1 */
	pthread_t tid;
};

/* ---- reclaim.c (its state; the functions are below) --------------------- */

/* Room from a full pool (reclaim.c), embedded in the handler:
 * reclaim_init at handler_new, reclaim_fini at handler_free. */
struct reclaimer {
	pthread_rwlock_t gate; /* RECLAIMs hold it shared from request to
	                        * applied reply; store_resolve exclusive
	                        * (reclaim.c note 2) */
	uint64_t pages;        /* pages handed back by eviction, in all
	                        * (atomic) */
	uint64_t calls;        /* RECLAIM round trips (atomic) */
	uint64_t refills;      /* of them, made ahead of need by the keeper
	                        * (note 7; atomic) */
	pthread_mutex_t refill_lock; /* held by a refill's RECLAIM (after
	                        * expand_lock), and by cxlp_stats */
	bool full;             /* the last RECLAIM answered with pages: the
	                        * pool has no free region (atomic) */
	uint32_t low;          /* refill below this many free pages (atomic) */
	int refill_task;       /* its keeper task (keeper_add) */
};

/* ---- giveback.c (its state; the functions are below) -------------------- */

/* The regions taken out of the page table (giveback.c note 2), both
 * lists guarded by expand_lock; emptied at regions_fini. */
struct giveback {
	struct own_region *leaving; /* unreachable, REGION_FREE unanswered */
	struct own_region *retired; /* given back: read-only, kept for
	                             * stale readers and for reuse */
	int task;                   /* its keeper task (keeper_add) */
	uint64_t retry_ms;          /* 0, or when the task is due again
	                             * (the keeper thread's alone) */
};

/* ---- handler.c ---------------------------------------------------------- */

struct cxlp_handler {
	struct cxlp_config cfg;
	struct client *cl;
	char *pool_path; /* owned; from WELCOME */
	uint64_t pool_size, align;
	pthread_mutex_t poolid_lock;
	struct proto_poolid poolid; /* the served file, from the last WELCOME
	                             * (poolid.c); poolid_lock */
	bool poolid_known;  /* the WELCOME carried it; poolid_lock */
	int closing;      /* atomic */
	unsigned fork_gen; /* fork_gen_now() at connect (fork.c note 2) */
	int session_lost; /* atomic: the metaserver refused to reattach */
	int asked;        /* atomic: a reply's ASK, the server asks regions
	                   * back (giveback.c note 7) */
	uint64_t beat_ms; /* the last heartbeat's start (call.c keepalive;
	                   * the keeper thread's alone) */

	pthread_mutex_t reattach_lock;

	pthread_mutex_t expand_lock;
	pthread_mutex_t page_lock;
	struct pagetab pages;
	struct store_state store; /* store.c, doubt.c; page_lock */

	struct regions regions; /* regions.c, rmap.c */
	struct direct *direct; /* NULL: direct reads off */
	struct keeper keeper;  /* keeper.c */
	struct reclaimer reclaim; /* reclaim.c */
	struct giveback giveback; /* giveback.c */

	struct scratch_cache scratch; /* batch calls' transient memory */
	uint64_t reserved; /* pages held by reservations (reserve.c; atomic) */
	struct async *async; /* async.c; NULL until the first submit or the
	                      * close (set once, atomic), freed by
	                      * async_fini */
	struct cxlp_counters counters; /* cxlp_counters; relaxed atomics */
	struct regview *regview; /* regview.c; NULL until the first
	                      * cxlp_set_region_fn (set once, atomic), freed
	                      * by rmap_events_fini */
};

/* h_count -- add v to one of h->counters (relaxed, any thread). */
#define h_count(h, field, v)                                               \
	__atomic_fetch_add(&(h)->counters.field, (uint64_t)(v),            \
	    __ATOMIC_RELAXED)

/* ---- store.c, for group.c ---------------------------------------------- */

/* store_check_call -- the checks a store makes before it touches a page:
 * h open, its session alive, 1..CXLP_BATCH_MAX keys, arrays (and the
 * caller's result array or callback: have_out) given, flags within
 * flags_ok, then store_check_keys. */
int store_check_call(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], bool have_out,
    unsigned flags, unsigned flags_ok);
/* store_check_keys -- the checks of a store's keys and value lengths:
 * 0, -EINVAL, CXLP_E_KEYLEN or CXLP_E_TOOBIG. */
int store_check_keys(const struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], const size_t lens[]);
/* store_group_batch -- one GROUP_REGISTER of group id: the contracts of
 * cxlp_batch_store_status (every page consumed once, stored[], status[])
 * but for a lost outcome, whose pages are freed (store.c, store_batch).
 * kept[i]: key i was staged at its page, which stays REGISTERED until
 * the group commits or rolls back. *reg_rc: the request's own error, 0
 * when results came. Returns as cxlp_batch_store_status, and
 * CXLP_E_UNKNOWN when the outcome was lost. */
int store_group_batch(struct cxlp_handler *h, const void *id,
    uint16_t id_len, size_t n, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const size_t lens[],
    bool stored[], int status[], bool kept[], int *reg_rc);

/* ---- call.c ------------------------------------------------------------- */

/* ---- poolid.c ---------------------------------------------------------- */

/* h_poolid_check -- m, mapped from h->pool_path, is of the file the
 * metaserver serves: same device and inode where the server runs on
 * this kernel, and the server's open nonce in the file's superblock.
 * On a mismatch the identity is asked again once (a reattaching HELLO:
 * the server may have restarted, or moved to a copy), then
 * CXLP_E_STALE naming the path. 0 when the server sent no identity. */
int h_poolid_check(struct cxlp_handler *h, const struct pmap *m);

/* h_hello -- HELLO (flags 0, or PROTO_HELLO_REATTACH with the session's
 * token), taking the session and the pool from the WELCOME. 0 or an
 * error; CXLP_E_PERM says which secret was lacking. */
int h_hello(struct cxlp_handler *h, uint32_t flags);
/* h_call -- client_call that reattaches once on CXLP_E_SESSION and
 * repeats the call. Same returns as client_call. */
int h_call(struct cxlp_handler *h, uint16_t op, const struct pbuf *body,
    struct creply *rep);
/* h_call_id -- h_call under request id id (0: a new one), repeated under
 * the same id after a reattach. */
int h_call_id(struct cxlp_handler *h, uint16_t op, uint64_t id,
    const struct pbuf *body, struct creply *rep);
/* h_pool_stats -- the metaserver's STATS, decoded into v (indexed by
 * enum proto_stat; zero where the server sent none): cxlp_stats, and
 * regfit.c below it. 0 or an error. */
int h_pool_stats(struct cxlp_handler *h, uint64_t v[PROTO_STATS_MAX]);
/* h_ping -- one HEARTBEAT, one try (keeper.c); reattaches, or loses the
 * session, as h_call does. 0 or an error. */
int h_ping(struct cxlp_handler *h);
/* h_keepalive_task -- the keepalive as a keeper task: a HEARTBEAT
 * (h_ping) keepalive_ms after the last reply and the last heartbeat. */
extern const struct keeper_task h_keepalive_task;
/* h_check_session -- CXLP_E_SESSION once the metaserver has refused to
 * reattach this handler's session: its regions may be another's now, so
 * no page of theirs is handed out or registered again. */
int h_check_session(const struct cxlp_handler *h);
/* h_check_open -- CXLP_E_CLOSED if h is closing or was connected before
 * this process forked (fork.c), -EINVAL if NULL. */
int h_check_open(const struct cxlp_handler *h);
/* h_check_keys -- validate a batch of keys (-EINVAL, CXLP_E_BATCH,
 * CXLP_E_KEYLEN). */
int h_check_keys(size_t n, const void *const keys[],
    const size_t key_lens[]);
/* h_heartbeat_body -- check a HEARTBEAT reply's body: empty, or the
 * regions the server asks back (then h->asked, note_ask). 0 or
 * CXLP_E_PROTO. */
int h_heartbeat_body(struct cxlp_handler *h, struct creply *rep);
/* h_get_results -- decode a result list of exactly n entries (or at most
 * n when exact is false) and the end of the reply. */
int h_get_results(struct creply *rep, struct proto_result *res, size_t n,
    bool exact, uint32_t *got);

/* ---- regions.c, continued (its structs are above) ---------------------- */

/* owntab_state_init -- set up rg: no region, no mapping, no
 * prefaulter. */
void owntab_state_init(struct regions *rg);
/* owntab_state_fini -- tear rg down, after regions_fini. */
void owntab_state_fini(struct regions *rg);
int regions_init(struct cxlp_handler *h);
void regions_fini(struct cxlp_handler *h);
/* owntab_loc_ok -- loc's region extent is not empty, 4096-aligned and
 * inside the pool. */
bool owntab_loc_ok(const struct cxlp_handler *h,
    const struct proto_loc *loc);

/* owntab_find -- local index of my region (id, gen) or -1. Caller
 * holds page_lock. */
int owntab_find(const struct cxlp_handler *h, uint32_t region,
    uint32_t gen);
/* owntab_page_of -- the page at loc in one of my regions (page_lock
 * held): 0 and *pg, or CXLP_E_NOTFOUND. */
int owntab_page_of(const struct cxlp_handler *h, const struct proto_loc *loc,
    cxlp_page_t *pg);
/* owntab_page_addr -- RW address and pool offset of an own page
 * (page_lock held; pg valid). */
uint8_t *owntab_page_addr(const struct cxlp_handler *h, cxlp_page_t pg,
    uint64_t *pool_off);

/* ---- rmap.c: the region map (its structs are above) --------------------- */

/* rmap_put -- enter e (new) in the region map, replacing any entry for
 * its region id (a foreign one is retired, an own one freed). map_lock
 * held for writing. */
void rmap_put(struct cxlp_handler *h, struct rmap_ent *e);
/* rmap_fini -- unmap and free every entry, and the retired mappings (at
 * close, prefaulter stopped). */
void rmap_fini(struct cxlp_handler *h);
int rmap_resolve_ptr(struct cxlp_handler *h, const struct proto_loc *loc,
    const void **data);
uint64_t rmap_foreign_count(struct cxlp_handler *h);
/* rmap_own_unlink -- take my region (loc's id and gen) out of the
 * region map, so that no location resolves to its mapping any more (a
 * no-op when it is not there). Takes map_lock. */
void rmap_own_unlink(struct cxlp_handler *h, const struct proto_loc *loc);

/* ---- prefaulter.c ------------------------------------------------------- */

/* prefault_queue -- queue a prefault of m (own regions ahead of foreign
 * ones). Best effort: without memory or a thread, m is faulted in on
 * first use. m must stay mapped until prefaulter_stop. Takes none of h's
 * locks, so callers may hold any of them. */
void prefault_queue(struct cxlp_handler *h, const struct pmap *m, bool own);
/* prefaulter_stop -- end h's prefaulter, if any; before any mapping is
 * closed. */
void prefaulter_stop(struct cxlp_handler *h);

/* ---- giveback.c ---------------------------------------------------------- */

/* giveback_page_unlock -- release page_lock after pages went FREE; pokes
 * the keeper when more sets are empty than the reserve. */
void giveback_page_unlock(struct cxlp_handler *h);
/* giveback_task -- the give-back as a keeper task (giveback_run, and
 * again GIVEBACK_RETRY_MS after a run that left regions unanswered). */
extern const struct keeper_task giveback_task;
/* giveback_run -- take the empty regions past the reserve out of use and
 * return them (REGION_FREE), and ask again for those whose REGION_FREE
 * went unanswered. Takes expand_lock and page_lock (caller holds none).
 * Returns true when some are left to ask again. */
bool giveback_run(struct cxlp_handler *h);
/* giveback_retire -- keep r, out of use and still mapped, until close
 * (a region whose entry failed after the region callback may have heard
 * of it: its UNMAPPING comes before the munmap). expand_lock held. */
void giveback_retire(struct cxlp_handler *h, struct own_region *r);
/* giveback_reuse -- the retired mapping of a region at loc's extent, made
 * writable again and no longer the give-back's (caller owns it), or NULL.
 * expand_lock held. */
struct pmap *giveback_reuse(struct cxlp_handler *h,
    const struct proto_loc *loc);
/* giveback_call -- REGION_FREE of (loc->region, loc->gen): 0 or the
 * call's error. */
int giveback_call(struct cxlp_handler *h, const struct proto_loc *loc);
/* giveback_fini -- unmap and free the give-back's regions (at close). */
void giveback_fini(struct cxlp_handler *h);

/* ---- doubt.c ------------------------------------------------------------ */

/* doubt_taint -- the REGISTER of pages[0..n) may still land later (sent
 * more than once, or no answer): taint each (pagetab_taint), so that it
 * is quarantined instead of freed. page_lock held; pages in flight,
 * unresolved or registered. */
void doubt_taint(struct cxlp_handler *h, const cxlp_page_t pages[],
    size_t n);
/* doubt_note -- after pages may have gone QUARANTINED (page_lock held):
 * log at err level when the quarantined pages pass a quarter of the
 * handler's pages, and again at every doubling. */
void doubt_note(struct cxlp_handler *h);

/* ---- regfit.c ----------------------------------------------------------- */

/* owntab_may_grow -- max_regions allows one more region (takes
 * page_lock). */
bool owntab_may_grow(struct cxlp_handler *h);
/* owntab_region_len -- the length of the regions this handler asks for. */
uint64_t owntab_region_len(const struct cxlp_handler *h);
/* owntab_grant_check -- a region the server granted fits the pool and
 * the page size: 0, or CXLP_E_PROTO. */
int owntab_grant_check(const struct cxlp_handler *h,
    const struct proto_loc *loc);
/* alloc_wait -- cxlp_alloc with a wait of wait_ms for room (reclaim.c
 * note 6) instead of the configured one, for a caller that needs need
 * pages in all (reserve.c's, per call; 1 for cxlp_alloc). */
int alloc_wait(struct cxlp_handler *h, cxlp_page_t *page, void **buf,
    unsigned wait_ms, uint32_t need);
/* regions_add -- ask the server for one more region and enter it (expand_lock
 * held); with pg, hand out its first page. */
int regions_add(struct cxlp_handler *h, cxlp_page_t *pg);
/* regions_enter -- map the region the server granted at loc and enter it
 * in the page table, taking its first page into *pg (pg NULL: none);
 * on failure it is given back. Caller holds expand_lock. */
int regions_enter(struct cxlp_handler *h, const struct proto_loc *loc,
    cxlp_page_t *pg);
/* pagelife_key_gone -- a key of mine at loc went (deleted, or evicted):
 * its page is free again, or settles as its store decides (ops.c).
 * Takes page_lock. */
void pagelife_key_gone(struct cxlp_handler *h, const struct proto_loc *loc);

/* regfit_why -- the metaserver had no room for a region of len bytes:
 * CXLP_E_NOSPACE with a message giving the data area, its free bytes, a
 * region size that would fit and the --size that would (asks for the
 * pool's stats; caller holds no handler lock but expand_lock). Sets
 * h->regions.unfit when the region is larger than the whole data area. */
int regfit_why(struct cxlp_handler *h, uint64_t len);

/* ---- direct.c ----------------------------------------------------------- */

/* direct_open -- map the pool's metadata area read-only for direct reads
 * (after HELLO: needs pool_path, pool_size, align). Never fails: on any
 * problem it logs why and leaves h->direct NULL (lookups use RPC). */
void direct_open(struct cxlp_handler *h);
/* direct_close -- end the metadata walker, unmap; NULL-safe. */
void direct_close(struct cxlp_handler *h);
/* direct_lookup_batch -- answer unpinned LOOKUP/EXISTS for keys (already
 * validated) from shared memory: res[i] (status 0 and loc, or
 * CXLP_E_NOTFOUND) with ask[i] false, or ask[i] true where the server
 * must answer; vers[i] (vers may be NULL) gets the slot's word and
 * slot for each key found, which version_hits makes a token of.
 * Returns how many are left to ask (n when direct reads are off).
 * Thread-safe. */
size_t direct_lookup_batch(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    struct proto_result res[], bool ask[], cxlp_version_t vers[]);
/* direct_reader -- the reader of the mapped index, or NULL when direct
 * reads are off (at connect, or turned off since). No system call. */
const struct kvread *direct_reader(struct cxlp_handler *h);
/* direct_intact -- the mapped pool still carries its magic and the uuid
 * it had at connect (a pool being reformatted in place clears the magic
 * first and gets a new uuid); false with direct reads off. */
bool direct_intact(struct cxlp_handler *h);

/* ---- version.c ---------------------------------------------------------- */

/* version_hits -- turn the (word, slot) that direct_lookup_batch left in
 * vers[i] of each key it found (ask[i] false, status 0) into its
 * version token (note 1). */
void version_hits(size_t n, const bool ask[], const struct proto_result res[],
    cxlp_version_t vers[]);
/* version_settle -- versions for the keys the server answered with status
 * 0 in res (those with asked[i], or all n when asked is NULL; pinned:
 * the server pinned them): each read back from the index (version.c note
 * 3). Arrays come from s; out of memory, the fallback kinds are used. */
void version_settle(struct cxlp_handler *h, struct scratch *s, size_t n,
    const void *const keys[], const size_t key_lens[],
    const struct proto_result res[], const bool asked[], bool pinned,
    cxlp_version_t vers[]);

/* ---- latebye.c ---------------------------------------------------------- */

/* latebye_unanswered -- rc (of a BYE) says it got no answer (timeout, no
 * connection), so the server may still hold the session. */
bool latebye_unanswered(int rc);
/* latebye_add -- remember an unanswered BYE of (session, token) at url,
 * process-wide (thread-safe), for the next connect to url. */
void latebye_add(const char *url, uint64_t session, uint64_t token);
/* latebye_send -- send the BYEs kept for h's url over h->cl, which no
 * other thread may use yet (cxlp_connect, before HELLO); leaves h->cl
 * with no session and clears the error message. */
void latebye_send(struct cxlp_handler *h);
/* latebye_atfork_child -- in a child of fork(): a new lock, no BYE kept
 * (fork.c note 3). */
void latebye_atfork_child(void);

/* ---- fork.c ------------------------------------------------------------- */

/* fork_gen_now -- how many forks this process is from the one that
 * loaded the library (0 there); one relaxed load. */
unsigned fork_gen_now(void);
/* fork_child_gen -- in a child of fork(): one generation more. */
void fork_child_gen(void);
/* h_forked -- h was connected before this process forked: in the child
 * it is closed (fork.c note 1). */
bool h_forked(const struct cxlp_handler *h);
/* async_atfork_child -- in a child of fork(): async's closed state gets
 * new locks (fork.c note 3). */
void async_atfork_child(void);

/* ---- reclaim.c ----------------------------------------------------------- */

/* reclaim_init -- set up r. */
void reclaim_init(struct reclaimer *r);
/* reclaim_fini -- tear it down. */
void reclaim_fini(struct reclaimer *r);
/* reclaim -- the regions are full: one RECLAIM round trip for a region
 * (only if grow, and max_regions allows) or pages of this handler's own
 * that eviction freed (need of them at least, when more than one batch:
 * a reservation's), waiting up to wait_ms for room when none can be
 * made (note 6), then take one into *pg. Returns 0, CXLP_E_NOSPACE (with
 * the reason), CXLP_E_BADOP (the metaserver predates RECLAIM: ask for a
 * region the old way) or another error. Caller holds expand_lock, not
 * page_lock. */
int reclaim(struct cxlp_handler *h, cxlp_page_t *pg, bool grow,
    unsigned wait_ms, uint32_t need);
/* reclaim_low_locked -- the pool is full and this handler's free pages
 * are below the refill mark (reclaim.c note 7). Caller holds page_lock. */
bool reclaim_low_locked(const struct cxlp_handler *h);
/* reclaim_refill_task -- the keeper's RECLAIM ahead of need (note 7),
 * unless an alloc holds expand_lock; run when poked only. */
extern const struct keeper_task reclaim_refill_task;
/* reclaim_low_locked and a poke of the refill task (alloc_wait) */
/* reclaim_gate_lock/unlock -- store_resolve's exclusive hold (note 2). */
void reclaim_gate_lock(struct cxlp_handler *h);
void reclaim_gate_unlock(struct cxlp_handler *h);

/* ---- keeper.c ------------------------------------------------------------ */

/* keeper_init -- set up k, with no thread running. */
void keeper_init(struct keeper *k);
/* keeper_fini -- tear down k (its thread stopped, or never started). */
void keeper_fini(struct keeper *k);
/* keeper_start -- start the keeper thread: 0, or the error (the connect
 * fails: without it there is no keepalive). */
int keeper_start(struct cxlp_handler *h);
/* keeper_stop -- stop and join it; a no-op when none runs. */
void keeper_stop(struct cxlp_handler *h);
/* keeper_add -- append task t to k's table (before keeper_start);
 * returns its number, for keeper_poke. */
int keeper_add(struct keeper *k, const struct keeper_task *t);
/* keeper_poke -- have the keeper run task soon: true; false when no
 * keeper thread runs (or task < 0), and the caller decides (run it
 * itself, or leave it to the next that needs it). Caller holds none of
 * h's locks. */
bool keeper_poke(struct cxlp_handler *h, int task);

/* ---- store.c, resolve.c ------------------------------------------------ */

int store_resolve(struct cxlp_handler *h);
/* store_unres_push -- append u to h->store.unres (page_lock held; the
 * entry's key is then the list's). resolve.c */
void store_unres_push(struct cxlp_handler *h, const struct unresolved *u);
/* pagelife_forget -- drop page pg's unresolved entry (page_lock held): true
 * if it was there, false if store_resolve has it in hand. */
bool pagelife_forget(struct cxlp_handler *h, cxlp_page_t pg);
void store_fini(struct cxlp_handler *h);
/* store_claimed -- cxlp_batch_store_status of pages that are INFLIGHT
 * already, an asynchronous request's (async.c note 3): the same returns;
 * on the errors before any page is consumed they stay INFLIGHT. */
int store_claimed(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], const cxlp_page_t pages[], const size_t lens[],
    unsigned flags, bool stored[], int status[]);

/* ---- async.c ------------------------------------------------------------ */

/* async_close_deferred -- cxlp_close of h called from one of h's own
 * callbacks: refuse new submits and return true (the caller hands the
 * close to a new detached thread, which runs it once the callback
 * returned); false when called from any other thread (close here). */
bool async_close_deferred(struct cxlp_handler *h);
/* rmap_delivering -- this thread is running one of h's region
 * callbacks (regview.c note 3). */
bool rmap_delivering(const struct cxlp_handler *h);
/* async_stop -- at close, before h->closing is set: refuse new submits
 * (for good: h->async stays a state that refuses them), let every request
 * submitted run to its callback, and join the threads. */
void async_stop(struct cxlp_handler *h);
/* async_fini -- free h->async (handler_free, after async_stop). */
void async_fini(struct cxlp_handler *h);

/* ---- regview.c ---------------------------------------------------------- */

/* rmap_note -- the region map entry e was put (CXLP_REGION_MAPPED) or
 * is taken out (CXLP_REGION_UNMAPPING): queue the event for the region
 * callback, if one is set. map_lock held for writing (or the handler
 * closing, single-threaded). Takes only the queue's leaf lock. */
void rmap_note(struct cxlp_handler *h, const struct rmap_ent *e,
    int kind);
/* rmap_drain -- deliver the queued events to the region callback.
 * Caller holds none of h's locks (regview.c note 1). */
void rmap_drain(struct cxlp_handler *h);
/* rmap_events_fini -- free the callback's state (handler_free). */
/* rmap_ent_info -- what the region callback and the views say of e. */
void rmap_ent_info(const struct cxlp_handler *h, const struct rmap_ent *e,
    struct cxlp_region_info *out);
/* rmap_collect -- every entry of the region map into out[0..cap), sorted
 * by id; returns how many there are. map_lock held. */
size_t rmap_collect(struct cxlp_handler *h, struct cxlp_region_info *out,
    size_t cap);
void rmap_events_fini(struct cxlp_handler *h);
/* direct_page_size -- the page size of foreign region (id, gen) from the
 * pool's region table, or 0 when it cannot be read (direct reads off). */
uint64_t direct_page_size(struct cxlp_handler *h, uint32_t region,
    uint32_t gen);

#endif /* CXLP_HANDLER_INT_H */
