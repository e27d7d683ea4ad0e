/*
 * handler_int.h -- the handler's struct (struct cxlp_handler) and the
 * state it embeds, for every layer; the functions are declared by the
 * layers' headers, each a folder that calls only the layers below it:
 *
 *   handler.h  handler.c (connect, close, stats, healthcheck) and
 *              async.c (submits that do not wait): the top
 *   kv.h       kv/: store, resolve (registers whose reply was lost),
 *              ops (retrieve, exists, pin, unpin, delete), version,
 *              lease, group, group_end
 *   region.h   region/: owntab (the own-region table), rmap (the region
 *              map and its queue of events), direct (the pool's index
 *              and region table read in place), giveback, pagelife (the
 *              page transitions several modules share), regions (asking
 *              for and mapping own regions), reclaim, alloc (cxlp_alloc,
 *              cxlp_free), reserve, regfit, prefaulter, regview
 *   session.h  session/: call (HELLO, reattach, h_call, the checks and
 *              decoders every call shares, the keepalive), poolid,
 *              latebye
 *   net.h      net/: client, csock, tls (the only nng users;
 *              client_int.h), tlsprobe (the only mbedTLS user)
 *   core.h     core/: config, pages (pure page tables), scratch, doubt,
 *              trace, fork (the fork generation), keeper (the thread
 *              that runs a table of tasks, knowing none by name)
 *
 * A file includes its own layer's header, which includes the one below
 * (tests/handler/check_layers.py checks it); this file includes core
 * headers only.
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

#define CFG_SERVER_MAX 512
#define CFG_REGION_MAX (1ull << 40) /* region size cap, bytes */
#define CFG_TLS_PATH_MAX 1024 /* a TLS file's path, NUL included */
#define CFG_TLS_NAME_MAX 256  /* a TLS server name, NUL included */
#define CFG_POOL_MAX 1024     /* a pool's path, NUL included */

/* The TLS options of a tls+tcp:// connection (tls.c): PEM file paths and
 * the server name to verify; "" means not set. */
struct cfg_tls {
	char ca[CFG_TLS_PATH_MAX];   /* CAs that sign the server's cert */
	char cert[CFG_TLS_PATH_MAX]; /* this handler's cert (mutual TLS) */
	char key[CFG_TLS_PATH_MAX];  /* its private key */
	char server_name[CFG_TLS_NAME_MAX]; /* "": the URL's host */
};

struct cxlp_config {
	char server[CFG_SERVER_MAX]; /* nng URLs, comma-separated,
	                              * NUL-terminated (endpoints.c) */
	char pool[CFG_POOL_MAX];     /* the pool's path, whose owner record
	                              * names the leader; "": not set
	                              * (session/leader.c) */
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
 * zero is empty, resolve_fini frees it. */
struct store_state {
	struct unresolved *unres; /* registers whose outcome was lost */
	size_t nunres, cap_unres;
	uint64_t quar_logged; /* quarantined pages when last logged */
};

/* One task of the keeper's (keeper.c): due -- when it is due unasked
 * (cxlp_now_coarse_ms time; UINT64_MAX: only when poked), called by the
 * keeper thread with its lock held; run -- run it (no keeper lock held),
 * false when the session is gone for good and the thread must end. */
struct keeper_task {
	uint64_t (*due)(struct cxlp_handler *h);
	bool (*run)(struct cxlp_handler *h);
};

#define KEEPER_TASKS_MAX 8

/* The keeper's state, embedded in the handler: keeper_init at
 * handler_new, keeper_fini at handler_free; between them the thread runs
 * from keeper_start to keeper_stop. */
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

/* Room from a full pool (reclaim.c), embedded in the handler:
 * reclaim_init at handler_new, reclaim_fini at handler_free. */
struct reclaimer {
	pthread_rwlock_t gate; /* RECLAIMs hold it shared from request to
	                        * applied reply; resolve_run exclusive
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

struct cxlp_handler {
	struct cxlp_config cfg;
	struct client *cl;
	char *pool_path; /* owned; from WELCOME */
	struct coh *coh; /* how this process maps pool_path: every mapping
	                  * is made through it (pool/coh.h); from the first
	                  * WELCOME, for the handler's life */
	uint64_t pool_size, align;
	pthread_mutex_t poolid_lock;
	struct proto_poolid poolid; /* the served file, from the last WELCOME
	                             * (poolid.c); poolid_lock */
	bool poolid_known;  /* a WELCOME came; poolid_lock */
	struct proto_poolid poolid_first; /* the first WELCOME's, which the
	                             * handler's mappings are of; poolid_lock */
	int poolid_fd;      /* the file the first WELCOME named, kept open to
	                     * read its nonce at a reattach (-1: none);
	                     * poolid_lock */
	uint64_t poolid_fd_dev, poolid_fd_ino; /* its fstat, as this kernel
	                     * sees it (pmap_stat_id) */
	int poolid_switched; /* atomic: a reattach found the server on
	                      * another file (poolid.c): every call STALE */
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

#endif /* CXLP_HANDLER_INT_H */
