/*
 * cxlpool.h -- public API of libcxlpool, the handler library that inference
 * processes load to share a KV-cache pool on CXL (or file-backed) memory.
 *
 * Model: a handler connects to a cxlpool-metaserver, which hands it regions
 * of the pool. The handler carves pages out of its regions, writes KV chunks
 * into them directly, then registers keys for those pages (store). Any
 * handler can look a key up and read the bytes in place (retrieve), through
 * a read-only mapping of the writer's region. Only metadata crosses the
 * socket.
 *
 * Conventions:
 * - Every function returning int returns 0 (or a documented non-negative
 *   value) on success and a negative error on failure: -errno for OS
 *   failures, or a CXLP_E_* code. cxlp_strerror() names a code and
 *   cxlp_errormsg() says why the last call on this thread failed.
 * - Handles are opaque. A handler is thread-safe: any number of threads may
 *   call into one handler at once. Reads (retrieve, exists) never wait for
 *   the lock that serializes page allocation.
 * - The library never prints, exits or aborts on bad input. It logs through
 *   cxlp_set_log_fn(); the default writes errors to stderr, and CXLP_LOG=
 *   debug|info|err|off in the environment sets the level.
 */
#ifndef CXLPOOL_H
#define CXLPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CXLP_API __attribute__((visibility("default")))

#define CXLP_VERSION_MAJOR 0
#define CXLP_VERSION_MINOR 1

/* Keys are opaque byte strings of 1..CXLP_KEY_MAX bytes. */
#define CXLP_KEY_MAX 1024
/* A batch call takes at most CXLP_BATCH_MAX keys. */
#define CXLP_BATCH_MAX 4096

/* Error codes (negative). -errno values are used for OS errors and for
 * invalid arguments (-EINVAL). */
enum cxlp_error {
	CXLP_E_BADMAGIC = -1000, /* file or device is not a cxlpool pool */
	CXLP_E_VERSION = -1001,  /* pool layout or protocol version mismatch */
	CXLP_E_CHECKSUM = -1002, /* on-media record fails its checksum */
	CXLP_E_CORRUPT = -1003,  /* pool metadata inconsistent */
	CXLP_E_NOSPACE = -1004,  /* no free region/page/index slot */
	CXLP_E_NOTFOUND = -1005, /* key not in the pool */
	CXLP_E_PINNED = -1006,   /* delete refused: the key is pinned */
	CXLP_E_NOTPINNED = -1007, /* unpin: the caller holds no pin */
	CXLP_E_PERM = -1008,     /* not the owner (region or live key) */
	CXLP_E_BOUNDS = -1009,   /* location outside the region or page */
	CXLP_E_PROTO = -1010,    /* malformed or unexpected frame */
	CXLP_E_BADOP = -1011,    /* unknown operation */
	CXLP_E_KEYLEN = -1012,   /* key empty or longer than CXLP_KEY_MAX */
	CXLP_E_BATCH = -1013,    /* batch empty or larger than CXLP_BATCH_MAX */
	CXLP_E_SESSION = -1014,  /* unknown session or wrong token */
	CXLP_E_TIMEOUT = -1015,  /* no reply from the metaserver in time */
	CXLP_E_CLOSED = -1016,   /* handler closed or closing */
	CXLP_E_CONN = -1017,     /* cannot reach the metaserver */
	CXLP_E_BADPAGE = -1018,  /* page not allocated by this handler */
	CXLP_E_STALE = -1019,    /* volatile pool from an earlier boot, or
	                          * the pool file replaced under its
	                          * metaserver (cxlp_errormsg() names it) */
	CXLP_E_BUSY = -1020,     /* page already holds a registered key */
	CXLP_E_TOOBIG = -1021,   /* value longer than the page */
	CXLP_E_UNKNOWN = -1022,  /* outcome unknown: reply lost, or a retry
	                          * found its request applied once and its
	                          * reply no longer kept; see store */
	CXLP_E_CHANGED = -1023,  /* validate: the key changed or went since
	                          * the retrieve; the copy may be bad */
	CXLP_E_NOVERSION = -1024, /* validate: the retrieve could not take
	                          * a version to check; see cxlp_validate */
	CXLP_E_GROUP = -1025,    /* request group refused: no declared
	                          * total, past its total, id in use, not
	                          * open, or not the caller's */
	CXLP_E_CANCELED = -1026, /* request group rolled back: aborted,
	                          * cancelled by another handler, a failed
	                          * batch, or a metaserver restart */
	CXLP_E_HOST = -1027,     /* this host may not attach: the pool is
	                          * formatted for one host (coherence host,
	                          * cxlp_errormsg() says how to share it) */
	CXLP_E_LAST = -1027,
};

/* cxlp_strerror -- short name and meaning of an error code; never NULL. */
CXLP_API const char *cxlp_strerror(int err);

/* cxlp_errormsg -- why the last failing call on this thread failed. The
 * string is thread-local and valid until the next failing call. */
CXLP_API const char *cxlp_errormsg(void);

/* Log levels and the log callback. */
enum cxlp_log_level {
	CXLP_LOG_OFF = 0,
	CXLP_LOG_ERR = 1,
	CXLP_LOG_INFO = 2,
	CXLP_LOG_DEBUG = 3,
};
typedef void (*cxlp_log_fn)(int level, const char *msg, void *arg);

/* cxlp_set_log_fn -- route the library's log lines to fn (NULL restores the
 * stderr default) and set the level. Process-wide; call before connect. */
CXLP_API void cxlp_set_log_fn(cxlp_log_fn fn, void *arg, int level);

/*
 * Configuration. A config is a plain heap object; the handler copies what
 * it needs at connect, so the config may be deleted right after.
 */
struct cxlp_config;

/* cxlp_config_new -- a config with defaults: server
 * "ipc:///tmp/cxlpool.sock", page size 64 KiB, region size 64 MiB,
 * auto-expand on, no region limit, a reserve of 1 empty region, timeout
 * 5000 ms, 3 retries, instance id 0, direct reads on, keepalive 1000 ms,
 * 8 asynchronous requests in flight.
 * Returns 0 or -ENOMEM; *out is NULL on failure. */
CXLP_API int cxlp_config_new(struct cxlp_config **out);
/* cxlp_config_delete -- NULL-safe; sets *cfg to NULL. */
CXLP_API void cxlp_config_delete(struct cxlp_config **cfg);
/* Setters return 0 or -EINVAL (value out of range; the config is kept). */
/* cxlp_config_set_server -- the metaserver's endpoint, an nng URL
 * (ipc:///path, tcp://host:port, tls+tcp://host:port; default
 * ipc:///tmp/cxlpool.sock), or several, comma-separated, at most 16 and
 * 511 bytes in all: a leader and its standbys ("tcp://a:7000,tcp://b:7000",
 * cxlpool-metaserver --elect; docs/standby.md). cxlp_connect takes the
 * first that answers (a standby listens on nothing, so it is passed at
 * once). A handler whose endpoint stops answering (no connection for a
 * whole timeout, or a metaserver that answers CXLP_E_CONN because it lost
 * its term) moves on its own to another that answers: the endpoints the
 * pool's owner record names first (with cxlp_config_set_pool), then the
 * others configured; calls in flight are resent there and the session
 * reattached, as across a metaserver restart (docs/recovery.md). A
 * connection that is up but silent is dialed afresh at the same endpoint
 * first. Every endpoint must fit the TLS options (below); connect
 * returns -EINVAL for an empty item or more than 16. */
CXLP_API int cxlp_config_set_server(struct cxlp_config *cfg, const char *url);
/* cxlp_config_set_pool -- the path of the pool the metaserver serves (as
 * this host names the file or device; at most 1023 bytes; NULL or ""
 * clears, the default). The handler then reads, from the pool's owner
 * record in shared memory, where the leader listens: at connect when no
 * configured endpoint answers (from this path), and whenever its
 * endpoint stops answering (from the path the metaserver named at
 * connect, the one the handler maps), so it follows a standby that takes
 * the pool over without being told its address (docs/standby.md). An
 * endpoint of a leader on another host that reaches its own host only
 * (ipc://, tcp:// on a wildcard or loopback address) is not tried.
 * Without it, a handler moves only among its configured endpoints (which
 * keeps one configured with a relay's endpoint behind its relay). The
 * pool is only read, and only when the record is needed. */
CXLP_API int cxlp_config_set_pool(struct cxlp_config *cfg, const char *path);
/* cxlp_config_set_page_size -- at least 64 bytes, any size (a 1 KiB or
 * a 4 KiB + 64 chunk is fine: regions, not pages, are what is mapped;
 * below one cache line is refused, with cxlp_errormsg() saying so), at
 * most the region size: a page above the 64 MiB default region needs
 * cxlp_config_set_region_size first. */
CXLP_API int cxlp_config_set_page_size(struct cxlp_config *cfg, size_t bytes);
CXLP_API int cxlp_config_set_region_size(struct cxlp_config *cfg,
    size_t bytes);
CXLP_API int cxlp_config_set_auto_expand(struct cxlp_config *cfg, bool on);
CXLP_API int cxlp_config_set_max_regions(struct cxlp_config *cfg,
    unsigned n); /* 0 = no limit */
/* cxlp_config_set_reserve_regions -- how many empty regions (every page
 * free: no page allocated, registered, or kept after a lost reply) a
 * handler keeps; default 1, 0 allowed. A free or delete that leaves it
 * more empty regions than this gives the others back to the pool, so
 * that other handlers can have the space: within moments, from the
 * handler's own thread (no call of the caller waits for it, and none is
 * needed). A page handle, or buffer pointer, of a region given back is
 * invalid; a write through such a pointer faults. The reserve saves a
 * handler that frees and allocates around a region's end the round
 * trips of giving a region back and asking for it again. */
CXLP_API int cxlp_config_set_reserve_regions(struct cxlp_config *cfg,
    unsigned n);
CXLP_API int cxlp_config_set_timeout_ms(struct cxlp_config *cfg,
    unsigned ms);
CXLP_API int cxlp_config_set_retries(struct cxlp_config *cfg, unsigned n);
CXLP_API int cxlp_config_set_instance_id(struct cxlp_config *cfg,
    uint64_t id);
/* cxlp_config_set_keepalive_ms -- a handler that has heard nothing from
 * the metaserver for this long sends it a heartbeat (from a thread of its
 * own; a busy handler sends none), so its session is reattached soon after
 * a metaserver restart or a dropped connection, and a handler on another
 * host is not ended for silence (--grace-ms). The period is promised to
 * the metaserver at connect: a session silent for max(--grace-ms, 5
 * periods) is taken for one whose handler closed unheard and is ended
 * (pins released; its regions held until the process exits), so a
 * process that stops its handler's thread that long loses the session.
 * 0 turns it off, and the session then lasts while the process runs. */
CXLP_API int cxlp_config_set_keepalive_ms(struct cxlp_config *cfg,
    unsigned ms);
/* cxlp_config_set_lease_ms -- how long a lease taken by a retrieve or
 * store with CXLP_RETRIEVE_LEASE / CXLP_STORE_LEASE lasts, 1..3600000 ms
 * (default CXLP_LEASE_MS_DEFAULT; the metaserver cuts it to its
 * --lease-max-ms). */
#define CXLP_LEASE_MS_DEFAULT 10000u
CXLP_API int cxlp_config_set_lease_ms(struct cxlp_config *cfg,
    unsigned ms);
/* cxlp_config_set_alloc_wait_ms -- how long cxlp_alloc waits for room
 * when the pool is full and nothing can be evicted (every key pinned,
 * leased, or in other live handlers' regions), 0..3600000 ms; default 0:
 * CXLP_E_NOSPACE at once, which a cache usually wants (the chunk is
 * simply not cached). While it waits, the metaserver serves waiting
 * handlers in arrival order and wakes them as soon as something makes
 * room (a delete, an unpin, a lease that ends, a region given back, a
 * handler that leaves); then CXLP_E_NOSPACE with what holds the pool. */
CXLP_API int cxlp_config_set_alloc_wait_ms(struct cxlp_config *cfg,
    unsigned ms);
/* cxlp_config_set_direct_reads -- on (the default): retrieve and exists
 * without CXLP_RETRIEVE_PIN read the pool's KV index straight from shared
 * memory (mapped read-only at connect), with no round trip and no
 * metaserver CPU; a key the read cannot settle (a write in progress that
 * does not finish, values that fail their checks) is asked of the
 * metaserver. Off, or when the pool file cannot be mapped or validated at
 * connect: every lookup is a LOOKUP/EXISTS request. Pinned retrieves
 * always go to the metaserver, which holds the pins. cxlp_validate reads
 * the same mapping; without it, unpinned versions cannot be checked
 * (CXLP_E_NOVERSION). */
CXLP_API int cxlp_config_set_direct_reads(struct cxlp_config *cfg, bool on);
/* cxlp_config_set_secret -- shared secret (1..256 bytes, NUL-terminated
 * string) sent when the session opens. A metaserver listening on tcp://
 * refuses a handler without the secret from its --secret-file with
 * CXLP_E_PERM (cxlp_errormsg() then says "secret required" when none is
 * set, "wrong secret" otherwise); ipc:// endpoints do not need one. NULL
 * or "" clears it. Without one, cxlp_connect reads the file named by the
 * environment variable CXLP_SECRET_FILE, if set (libcxlpool(3)): set but
 * unusable, the connect fails naming the file.
 * The config keeps a copy and wipes it when deleted. */
CXLP_API int cxlp_config_set_secret(struct cxlp_config *cfg,
    const char *secret);

/*
 * TLS (tls+tcp://host:port). A handler that dials a metaserver's
 * tls+tcp:// endpoint needs the CA that signed the server's certificate;
 * the certificate is verified (chain, validity dates, and that it names
 * the server) before anything is sent. A metaserver with
 * --tls-verify-peer also wants a client certificate signed by its
 * --tls-ca. A shared secret (cxlp_config_set_secret) is still sent and
 * checked over TLS. Each setter takes a PEM file's path (read at
 * cxlp_connect; NULL or "" clears it) and returns -EINVAL for a path
 * longer than 1023 bytes. cxlp_connect returns -EINVAL when a tls+tcp://
 * URL has no CA, a certificate comes without its key (or a key without
 * its certificate), or any TLS option is set for another kind of URL,
 * and -ENOENT (or -EINVAL for a file that is not PEM) naming the file it
 * cannot use. A handshake that fails is CXLP_E_CONN, and cxlp_errormsg()
 * names the likely cause, first: "unknown CA", "expired certificate",
 * "name mismatch", "requires a client certificate", "refused this
 * handler's certificate", "TLS client against plain tcp" (a tcp://
 * endpoint dialed as tls+tcp://), or, for a tcp:// URL whose server
 * speaks TLS, "plaintext client against a TLS endpoint".
 */
/* cxlp_config_set_tls_ca -- the CAs (PEM) that sign the server's cert. */
CXLP_API int cxlp_config_set_tls_ca(struct cxlp_config *cfg,
    const char *path);
/* cxlp_config_set_tls_cert -- this handler's certificate (PEM), for a
 * metaserver that verifies its peers (mutual TLS). */
CXLP_API int cxlp_config_set_tls_cert(struct cxlp_config *cfg,
    const char *path);
/* cxlp_config_set_tls_key -- the certificate's private key (PEM, not
 * encrypted). */
CXLP_API int cxlp_config_set_tls_key(struct cxlp_config *cfg,
    const char *path);
/* cxlp_config_set_tls_server_name -- the name the server's certificate
 * must carry (a DNS name of its subjectAltName, or its CN); default the
 * URL's host. mbedTLS 2 matches names, not IP addresses: a URL with an
 * IP address needs the certificate's DNS name set here. */
CXLP_API int cxlp_config_set_tls_server_name(struct cxlp_config *cfg,
    const char *name);

struct cxlp_handler;

/* cxlp_connect -- open a session with the metaserver named in cfg (NULL:
 * defaults) and take a first region. Returns 0 and a new handler in *out
 * (caller owns it; release with cxlp_close), or a negative error with
 * *out == NULL. A pool with no room for a region now does not fail the
 * connect: the handler can read, and its first cxlp_alloc asks for a
 * region again (CXLP_E_NOSPACE if there is still none). A region larger
 * than the pool's whole data area fails it with CXLP_E_NOSPACE, and
 * cxlp_errormsg() names a region size or pool size that would fit.
 *
 * Fork: a handler belongs to the process that connected it. In a child
 * of fork() (Python multiprocessing's fork start method, a connector
 * that forks workers) every call on a handler connected before the fork
 * fails with CXLP_E_CLOSED, at once and without a lock, a socket or a
 * round trip, even while the parent's threads were inside calls on it at
 * the fork; its cxlp_close in the child ends nothing and frees nothing
 * (the session, pages and memory stay the parent's, and the parent goes
 * on using it). The child connects handlers of its own, any number, as
 * any process does. (With an nng other than the one cxlpool builds,
 * e.g. -Dnng=system, a child of a process that had connected gets
 * -ENOTSUP from cxlp_connect instead: that nng would abort it; see
 * deps/nng/README.md.) */
CXLP_API int cxlp_connect(struct cxlp_handler **out,
    const struct cxlp_config *cfg);

/* cxlp_close -- end the session and free the handler. NULL-safe; sets *h
 * to NULL. Regions holding registered keys stay readable by others until
 * their last key is deleted; unregistered pages return to the pool with
 * their region. Every pointer obtained from this handler becomes invalid.
 * The caller must ensure no other thread is inside a call on *h. The
 * connection itself is closed by a short-lived background thread, which
 * first waits (up to 60 s) for replies still owed on it after a timeout.
 * In a child of fork(), a handler connected before the fork is only
 * forgotten (see cxlp_connect). */
CXLP_API void cxlp_close(struct cxlp_handler **h);

/*
 * Pages. A page is a fixed-size slot (the configured page size) in one of
 * the handler's own regions, named by an opaque handle.
 */
typedef uint64_t cxlp_page_t;

/* cxlp_page_size -- the handler's page size in bytes. */
CXLP_API size_t cxlp_page_size(const struct cxlp_handler *h);

/* cxlp_alloc -- take a free page in O(1). On success *page names it and
 * *buf points at its first byte (writable, cxlp_page_size bytes). When the
 * owned regions are full, a new region is requested if auto-expand is on
 * (and, auto-expand or not, when the handler holds no region at all: it
 * found none at connect, or gave its last back); otherwise, or when the
 * pool has no room for one, returns CXLP_E_NOSPACE, and cxlp_errormsg()
 * says what the pool has free. Once the
 * metaserver has refused to reattach this handler's session (a reformatted
 * pool, or a handler of another host silent past --grace-ms), its regions
 * may be another handler's: alloc and store return CXLP_E_SESSION, and the
 * handler must be closed and connected again. Stop writing into pages
 * taken before that. */
CXLP_API int cxlp_alloc(struct cxlp_handler *h, cxlp_page_t *page,
    void **buf);

/* cxlp_free -- give back an allocated, unregistered page. Returns
 * CXLP_E_BADPAGE for a page this handler did not allocate, already freed,
 * or registered under a key. A region left empty may go back to the pool
 * (cxlp_config_set_reserve_regions). */
CXLP_API int cxlp_free(struct cxlp_handler *h, cxlp_page_t page);

/* Reservations: n pages set aside at once, for a writer that must know
 * before it starts that all of a request's chunks fit, then allocates
 * each without a wait or a round trip. The pages are allocated up front
 * (so the sum of reservations never exceeds the pool), all or nothing. */
struct cxlp_reservation;
#define CXLP_RESERVE_MAX (1u << 20) /* pages one reservation may hold */
/* cxlp_reserve -- allocate n pages (1..CXLP_RESERVE_MAX) into a new
 * reservation *out, as cxlp_alloc would (regions, eviction), waiting up to
 * wait_ms for room when nothing can be evicted (as the handler's alloc
 * wait does, for this call). On failure no page is held and the error is
 * the one that stopped it (CXLP_E_NOSPACE with what holds the pool). */
CXLP_API int cxlp_reserve(struct cxlp_handler *h, size_t n, unsigned wait_ms,
    struct cxlp_reservation **out);
/* cxlp_reserve_alloc -- one page of r: never waits, never asks the
 * metaserver; CXLP_E_NOSPACE once all of r's pages are taken. The page is
 * then an ordinary allocated page (store it, or cxlp_free it). */
CXLP_API int cxlp_reserve_alloc(struct cxlp_handler *h,
    struct cxlp_reservation *r, cxlp_page_t *page, void **buf);
/* cxlp_reserve_left -- pages of r not taken yet (0 for NULL). */
CXLP_API size_t cxlp_reserve_left(const struct cxlp_reservation *r);
/* cxlp_reserve_release -- free the pages of *r not taken, then *r; *r =
 * NULL. Release before cxlp_close; after it, pass h = NULL to free only
 * the memory (the close freed the pages). In a child of fork(), for a
 * handler connected before the fork, only the memory is freed. */
CXLP_API int cxlp_reserve_release(struct cxlp_handler *h,
    struct cxlp_reservation **r);

/* Flags for store/batch_store. */
#define CXLP_STORE_PIN 0x1u /* return every key pinned by this session,
                               winner or loser, atomically with register */
#define CXLP_STORE_LEASE 0x2u /* the same with a lease of the handler's
                                 lease_ms instead of a pin (cxlp_lease) */

/*
 * cxlp_batch_store -- register keys[i] (key_lens[i] bytes) for pages[i]
 * holding lens[i] bytes, for i < n, in one round trip.
 *
 * The bytes of each page are made visible (and durable on persistent
 * media) before the register is sent. Per key, stored[i] is set to:
 *   true  -- the key is in the pool: either this page now holds it, or the
 *            key was already registered (by another handler or an earlier
 *            key of this batch) and this page was freed;
 *   false -- the server did not confirm the key (error entry, short or
 *            malformed reply, no reply); the page was freed.
 * If the outcome of the register is unknown (no reply after the configured
 * retries), pages are neither freed nor reported stored: they are kept
 * until the handler can resolve them and stored[i] is false; the call
 * returns CXLP_E_UNKNOWN. With CXLP_STORE_PIN each key may then hold one
 * pin of this session or none: cxlp_batch_unpin the keys once the caller
 * no longer needs them pinned (CXLP_E_NOTPINNED where none was taken).
 *
 * Errors before any page is consumed, leaving every page with the caller:
 * -EINVAL (NULL arrays, n == 0 or n > CXLP_BATCH_MAX), CXLP_E_KEYLEN,
 * CXLP_E_TOOBIG (lens[i] > page size), CXLP_E_BADPAGE (a page not
 * allocated by this handler, already registered, or named twice),
 * CXLP_E_CLOSED, CXLP_E_SESSION (the session is gone, see cxlp_alloc).
 * Otherwise returns 0 (or CXLP_E_UNKNOWN as above) and every page has been
 * consumed exactly once. When it returns 0 with some stored[i] false,
 * cxlp_errormsg() says how many keys were not stored, names the first
 * (its index and the start of its key) and why (e.g. CXLP_E_NOSPACE: the
 * pool's KV index or key heap is full); cxlp_batch_store_status gives the
 * reason of every key.
 */
CXLP_API int cxlp_batch_store(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], unsigned flags,
    bool stored[]);

/* cxlp_batch_store_status -- cxlp_batch_store that also fills status[i]
 * (n entries, or NULL for none) once a page has been consumed: 0 where
 * stored[i] is true, else why the key is not stored: the server's error
 * for the key (CXLP_E_NOSPACE when the index or key heap is full,
 * CXLP_E_PERM, CXLP_E_BOUNDS ...), the REGISTER's error when the request
 * as a whole failed, CXLP_E_PROTO when the reply held no result for it,
 * or CXLP_E_UNKNOWN when the call returns CXLP_E_UNKNOWN. Left untouched
 * by the errors returned before any page is consumed. */
CXLP_API int cxlp_batch_store_status(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], unsigned flags,
    bool stored[], int status[]);

/* cxlp_store -- cxlp_batch_store of one key. */
CXLP_API int cxlp_store(struct cxlp_handler *h, const void *key,
    size_t key_len, cxlp_page_t page, size_t len, unsigned flags,
    bool *stored);

/*
 * Request groups: the chunks of one request (a prefill instance's KV
 * cache for a decoder) sent in several batches, which readers see all at
 * once or not at all.
 *
 *   cxlp_group_open(h, "req-17", 5, 2, 64, CXLP_GROUP_ATOMIC, 1000, &g);
 *   cxlp_group_skip_present(h, g, 64, keys, klens, present);  (optional)
 *   for each chunk not present: cxlp_group_alloc(h, g, &pg, &buf), write
 *   it; then, per batch, cxlp_group_store(h, g, n, ...);
 *   the batch that brings the 64th chunk commits the group;
 *   cxlp_group_close(h, &g);
 *
 * - Admission: open declares the total of chunks and reserves that many
 *   pages (cxlp_reserve, waiting up to wait_ms in arrival order; then
 *   CXLP_E_NOSPACE, nothing held). A total of 0 opens a group that
 *   refuses its first batch (CXLP_E_GROUP). Anonymous transfers use
 *   cxlp_batch_store and skip all of this.
 * - Visibility: the keys of an open group are in no index: lookups,
 *   eviction and other writers do not see them. The commit puts them all
 *   in at once, and a batch lookup (cxlp_batch_exists, batch_retrieve,
 *   direct or not) sees either none or all of them. A key another writer
 *   stored meanwhile keeps its value; this group's page for it is freed.
 * - A batch that would take the group past its total is refused with
 *   CXLP_E_GROUP, its pages left with the caller, and the group is rolled
 *   back. Rolling back (cxlp_group_abort, closing an open group, with
 *   CXLP_GROUP_ATOMIC a batch with a key not stored or a failed
 *   cxlp_group_alloc, a cancel by any handler, a failed commit) frees
 *   every page the group staged, releases its pins and its reservation;
 *   the call that finds it returns CXLP_E_CANCELED with why (a failed
 *   cxlp_group_alloc of a CXLP_GROUP_ATOMIC group returns the alloc's
 *   own error, its message saying the group was rolled back), and later
 *   calls fail (a batch with CXLP_E_GROUP, its pages left with the
 *   caller).
 * - The group lives in the metaserver's memory and in this handler: a
 *   session that ends rolls its groups back; so does a metaserver
 *   restart (the next call on the group returns CXLP_E_CANCELED, and the
 *   handler has released the group's pins). A commit is one durable
 *   step: a metaserver killed (kill -9, power cut) in the middle of one
 *   completes it or rolls it back whole when it restarts, before it
 *   serves, so no reader ever sees part of a group, whether the writer
 *   lives or not. The writer, retrying (within the call, or at a
 *   cxlp_group_commit again after CXLP_E_UNKNOWN), looks the keys up and
 *   reports the commit if all are in, or rolls back. handler/kv/group.c
 *   notes 5 and 6 list what else a restart can leave.
 * - A group is used by one thread at a time; a handler may have many.
 */
struct cxlp_group;
#define CXLP_GROUP_ID_MAX 255      /* bytes of a group id */
#define CXLP_GROUP_TOTAL_MAX 65536 /* chunks one group may declare */
#define CXLP_GROUP_ATOMIC 0x1u    /* all or nothing: a batch with a key
                                     not stored, or an alloc that fails,
                                     rolls the group back */
#define CXLP_GROUP_PIN 0x2u       /* after commit, this session keeps a
                                     pin on every key of the group
                                     (release with cxlp_batch_unpin);
                                     without it the group's pins go */
#define CXLP_GROUP_NORESERVE 0x4u /* no reservation at open: the group's
                                     allocs are cxlp_alloc's, with the
                                     handler's alloc wait */
/* cxlp_group_open -- open group id (1..CXLP_GROUP_ID_MAX bytes, unique
 * among the open groups of the metaserver: CXLP_E_GROUP if taken, by
 * another handler or by an open group of this one) of
 * total chunks (0..CXLP_GROUP_TOTAL_MAX), reserving them (above). Returns
 * 0 and *out (free with cxlp_group_close), or an error with *out NULL. */
CXLP_API int cxlp_group_open(struct cxlp_handler *h, const void *id,
    size_t id_len, size_t total, unsigned flags, unsigned wait_ms,
    struct cxlp_group **out);
/* cxlp_group_alloc -- a page for a chunk of g: from its reservation (no
 * wait, no round trip), else as cxlp_alloc. */
CXLP_API int cxlp_group_alloc(struct cxlp_handler *h, struct cxlp_group *g,
    cxlp_page_t *page, void **buf);
/* cxlp_group_skip_present -- which of keys are already in the pool:
 * present[i] true for each, pinned for the group atomically with finding
 * it (no eviction can take it before the decoder reads it), and counted
 * as a chunk of the group, whose page need not be written. */
CXLP_API int cxlp_group_skip_present(struct cxlp_handler *h,
    struct cxlp_group *g, size_t n, const void *const keys[],
    const size_t key_lens[], bool present[]);
/* cxlp_group_store -- one batch of g: as cxlp_batch_store (flags 0; the
 * same rules for pages and stored[]), but the keys are staged until the
 * commit; stored[i] true: the chunk counts toward the total. The batch
 * that completes the total commits g (the call's return is the
 * commit's). Returns 0; CXLP_E_GROUP with no page consumed (no total,
 * past the total, or g no longer open: committed or rolled back before);
 * CXLP_E_CANCELED with every page consumed (freed: g was rolled back by
 * this batch, a cancel, or a restart the batch found); or an error of
 * cxlp_batch_store (consuming pages as it says). */
CXLP_API int cxlp_group_store(struct cxlp_handler *h, struct cxlp_group *g,
    size_t n, const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], bool stored[]);
/* cxlp_group_commit -- make every staged key of g visible, at once, and
 * release what is left of its reservation. 0, CXLP_E_CANCELED (rolled
 * back instead: cancelled, or a key could not go in, e.g. the index is
 * full), or CXLP_E_UNKNOWN (no answer: the keys may be in; their pages
 * are kept). Called again after CXLP_E_UNKNOWN (also when the batch that
 * brought the last chunk returned it), it finds out: it sends the commit
 * again, which commits a group the metaserver still holds, and looks
 * the keys up when it holds none (committed already, or restarted: a
 * commit that a restart cut short it finds completed or rolled back);
 * it returns 0 or CXLP_E_CANCELED as above, or CXLP_E_UNKNOWN again
 * while there is still no answer. */
CXLP_API int cxlp_group_commit(struct cxlp_handler *h, struct cxlp_group *g);
/* cxlp_group_abort -- roll g back (above). 0, or an error if g is not
 * open. */
CXLP_API int cxlp_group_abort(struct cxlp_handler *h, struct cxlp_group *g);
/* cxlp_group_cancel -- roll back the open group id of any handler (a
 * decoder that gives up): its staged keys and pins go at once, its owner
 * learns of it at its next call. 0 or CXLP_E_NOTFOUND. */
CXLP_API int cxlp_group_cancel(struct cxlp_handler *h, const void *id,
    size_t id_len);
enum cxlp_group_state {
	CXLP_GROUP_OPEN = 0,
	CXLP_GROUP_COMMITTED = 1,
	CXLP_GROUP_ROLLED_BACK = 2,
	CXLP_GROUP_UNKNOWN = 3, /* the commit's answer was lost */
};
/* cxlp_group_state -- enum cxlp_group_state of g; -EINVAL for NULL. */
CXLP_API int cxlp_group_state(const struct cxlp_group *g);
/* cxlp_group_count -- chunks g holds so far (staged or present). */
CXLP_API size_t cxlp_group_count(const struct cxlp_group *g);
/* cxlp_group_close -- roll g back if it is still open, free it; *g =
 * NULL. After cxlp_close, pass h = NULL to free only the memory. */
CXLP_API void cxlp_group_close(struct cxlp_handler *h,
    struct cxlp_group **g);

/* Flags for retrieve/batch_retrieve. */
#define CXLP_RETRIEVE_PIN 0x1u /* pin the key; release with cxlp_unpin */
#define CXLP_RETRIEVE_LEASE 0x2u /* lease the key for the handler's
                                    lease_ms (through the metaserver) */

/* cxlp_retrieve -- find key and return a pointer to its bytes in the
 * shared mapping (*data, *len). Zero copy: the memory is read-only unless
 * the page is this handler's own. The bytes are the key's value while the
 * key stays as it was: once it is deleted (or evicted) its owner may
 * write another value into the page at any moment, the pointer still
 * readable. So a reader either pins (CXLP_RETRIEVE_PIN keeps the key
 * from being deleted until cxlp_unpin), or takes a version with
 * cxlp_retrieve_v and checks it with cxlp_validate after its copy.
 * On a pool several hosts share without hardware coherence (sw, sim) the
 * index is read and the value's lines are dropped from this host's cache
 * before the pointer is returned, so a copy made now reads what the
 * device holds (cxlp_prepare_read drops them again later).
 * Returns 0, CXLP_E_NOTFOUND, or an error. */
CXLP_API int cxlp_retrieve(struct cxlp_handler *h, const void *key,
    size_t key_len, unsigned flags, const void **data, size_t *len);

/* cxlp_batch_retrieve -- retrieve n keys in one round trip. status[i] is 0
 * or the key's error (CXLP_E_NOTFOUND ...); data[i]/lens[i] are set for
 * keys with status 0. With CXLP_RETRIEVE_PIN, exactly the keys with status
 * 0 are pinned: a key found but whose bytes cannot be mapped (e.g.
 * CXLP_E_BOUNDS, -ENOMEM) is unpinned again. Returns 0 if the round trip
 * succeeded. If it failed after the request was sent (CXLP_E_TIMEOUT,
 * CXLP_E_CONN: no answer; CXLP_E_PROTO: a bad one), the server may have
 * pinned some of the keys: with CXLP_RETRIEVE_PIN, cxlp_batch_unpin them
 * all (CXLP_E_NOTPINNED for each it did not pin), or they stay pinned
 * until the session ends. */
CXLP_API int cxlp_batch_retrieve(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], unsigned flags,
    const void *data[], size_t lens[], int status[]);

/*
 * Versions: zero-copy reads that are safe without a pin or a round trip.
 * A versioned retrieve also returns the version of the key it found: the
 * KV index slot that holds the key and the slot's sequence word at that
 * moment. Every change of the slot (delete, eviction, a new store of the
 * key) changes the word before the value's page can be written again.
 * After copying the bytes out, the reader validates the version: 0 says
 * the slot did not change since the retrieve, so what was copied is the
 * key's value, whole, for the whole copy.
 *
 *   cxlp_retrieve_v(h, key, klen, 0, &data, &len, &ver);
 *   memcpy(dst, data, len);                  (or a device copy, waited for)
 *   if (cxlp_validate(h, &ver) != 0) ...     (retry, or retrieve pinned)
 *
 * A version is a plain value: copy it, keep it, pass it back; its bits
 * are the library's. It names nothing once its handler is closed.
 */
typedef struct cxlp_version {
	uint64_t opaque[2];
} cxlp_version_t;

/* cxlp_retrieve_v -- cxlp_retrieve that also sets *ver, the version of
 * the value found (on success only). ver must not be NULL. */
CXLP_API int cxlp_retrieve_v(struct cxlp_handler *h, const void *key,
    size_t key_len, unsigned flags, const void **data, size_t *len,
    cxlp_version_t *ver);

/* cxlp_batch_retrieve_v -- cxlp_batch_retrieve that also sets vers[i] (n
 * entries, not NULL) for every key with status 0; the others' are zeroed
 * and validate as -EINVAL. */
CXLP_API int cxlp_batch_retrieve_v(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], unsigned flags,
    const void *data[], size_t lens[], int status[],
    cxlp_version_t vers[]);

/* cxlp_validate -- was the copy the caller made of a value retrieved with
 * version *ver good? Call it after the copy has completed: a CPU copy
 * needs nothing more (validate's read of the index comes after an
 * acquire fence, so after every load the calling thread made before
 * it); a device copy (DMA, cudaMemcpyAsync ...) must have been waited
 * for (event or stream synchronized) before validate is called.
 * Returns:
 *   0                 the key held that value, unchanged, from the
 *                     retrieve until now: the copy is exactly the value
 *                     retrieve returned;
 *   CXLP_E_CHANGED    the key was deleted, evicted or stored again since
 *                     (even with the same bytes: a new store is a new
 *                     version), or the handler no longer reads the pool
 *                     the version names (the pool file was replaced or
 *                     formatted again, the session refused): the copy
 *                     may be torn or another key's; retrieve again;
 *   CXLP_E_NOVERSION  the retrieve could take no version to check: it was
 *                     unpinned and answered by the metaserver, either
 *                     because direct reads are off (config, or the pool
 *                     file could not be mapped at connect) or because the
 *                     index could not be read back at that moment; no
 *                     check is possible, with or without a round trip
 *                     (the server's answer cannot tell a value from its
 *                     replacement in the same page): retrieve pinned;
 *   -EINVAL           ver is NULL, zeroed or not a version of this
 *                     handler's pool;
 *   CXLP_E_CLOSED (h closing; -EINVAL if h is NULL).
 * Lock-free, no round trip, no system call: one load from the index the
 * handler maps read-only (direct reads); on a pool of sw coherence the
 * load is of the line dropped first, so it reads the device, not this
 * host's cache (sim: the simulator's drop, which takes a file lock). A
 * pinned retrieve's version
 * validates while the pin is held; after cxlp_unpin it is checked like
 * an unpinned one where the handler could read the key back from the
 * index, and still validates where it could not (direct reads off, or
 * the index busy at that moment: the library trusts the pin then, so
 * validate before you unpin). Sets cxlp_errormsg() on failure.
 * Limit: the slot's sequence is 24 bits and moves by 2 per change, so a
 * copy spanning 2^23 changes of its key's index slot (each a metaserver
 * round trip) would be taken for good; nothing shorter can. */
CXLP_API int cxlp_validate(struct cxlp_handler *h, const cxlp_version_t *ver);

/* cxlp_prepare_read -- drop this host's cached copy of [data, data + len)
 * before a device copy of it (DMA, cudaMemcpyAsync ...) is started, or
 * before the CPU reads again a range retrieved a while ago: on a pool
 * that several hosts share without hardware coherence (coherence sw, or
 * sim), a device reading through this host, or this CPU, may otherwise
 * be served stale lines of bytes another host wrote since. Every
 * retrieve already drops the lines of the values it returns, so a copy
 * started right after it needs no call; the version check
 * (cxlp_validate, after the copy) stays what says the copy is good. The
 * range must lie inside one region this handler maps (cxlp_region_list:
 * a retrieved value, a page, a region view). On host and hw pools it
 * only checks the range. Returns 0, -EINVAL (data NULL, or the range not
 * inside one mapped region), CXLP_E_CLOSED (h closing; -EINVAL if h is
 * NULL). Thread-safe, no round trip. */
CXLP_API int cxlp_prepare_read(struct cxlp_handler *h, const void *data,
    size_t len);

/* cxlp_batch_validate -- cxlp_validate of vers[0..n) at once: status[i]
 * is its result. Returns the number of versions whose status is not 0
 * (0: every copy is good), or -EINVAL (NULL array or h), CXLP_E_BATCH (n
 * is 0 or above CXLP_BATCH_MAX) or CXLP_E_CLOSED with status untouched.
 */
CXLP_API int cxlp_batch_validate(struct cxlp_handler *h, size_t n,
    const cxlp_version_t vers[], int status[]);

/* cxlp_exists -- 1 if key is in the pool, 0 if not, or a negative error. */
CXLP_API int cxlp_exists(struct cxlp_handler *h, const void *key,
    size_t key_len);

/* cxlp_batch_exists -- exists[i] for each key, one round trip. */
CXLP_API int cxlp_batch_exists(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], bool exists[]);

/* cxlp_pin -- take one pin on key for this session. A pinned key cannot be
 * deleted. Pins are counted per session, up to 1048575 per key. Returns 0,
 * CXLP_E_NOTFOUND, or CXLP_E_NOSPACE (this session holds the most pins
 * one key takes, or the pool's pin table is full). */
CXLP_API int cxlp_pin(struct cxlp_handler *h, const void *key,
    size_t key_len);

/* cxlp_unpin -- release one of this session's pins on key. Returns
 * CXLP_E_NOTPINNED if this session holds none (another session's pins
 * never count), CXLP_E_NOTFOUND if the key does not exist. */
CXLP_API int cxlp_unpin(struct cxlp_handler *h, const void *key,
    size_t key_len);

/* cxlp_batch_pin -- pin keys in order, stopping at the first key that
 * cannot be pinned. *npinned is the number of keys pinned (those before
 * it). Returns 0 if all were pinned, else keys[*npinned]'s error as
 * cxlp_pin's (CXLP_E_NOTFOUND if it is missing). */
CXLP_API int cxlp_batch_pin(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], size_t *npinned);

/* cxlp_batch_unpin -- unpin each key; status[i] as cxlp_unpin. Returns 0 if
 * the round trip succeeded. */
CXLP_API int cxlp_batch_unpin(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], int status[]);

/* cxlp_lease -- hold key out of eviction and delete for lease_ms (cut to
 * the metaserver's --lease-max-ms), as a pin would, without having to
 * release it: the lease ends at its time, at the session's end, or at
 * cxlp_lease(.., 0), which releases it early (CXLP_E_NOTPINNED if this
 * session holds none). Taking it again sets its end to lease_ms from now,
 * whatever was left: a renewal may lengthen or shorten it (the Python
 * binding refuses an ms outside 0..UINT_MAX rather than wrap it). A
 * zero-copy reader that leases a key and finishes its copy within the
 * lease needs no cxlp_validate. Returns 0, CXLP_E_NOTFOUND, or an
 * error. */
CXLP_API int cxlp_lease(struct cxlp_handler *h, const void *key,
    size_t key_len, unsigned lease_ms);
/* cxlp_batch_lease -- cxlp_lease of each key in one round trip;
 * status[i] as cxlp_lease's. Returns 0 if the round trip succeeded. */
CXLP_API int cxlp_batch_lease(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], unsigned lease_ms,
    int status[]);

/* cxlp_delete -- remove key from the pool. Refused with CXLP_E_PINNED while
 * any session pins it, CXLP_E_PERM when another live handler owns it
 * (eviction is the owner's); a key whose owner closed or died may be
 * deleted by anyone. When the page is this handler's, it becomes free,
 * and a region left empty may go back to the pool
 * (cxlp_config_set_reserve_regions). */
CXLP_API int cxlp_delete(struct cxlp_handler *h, const void *key,
    size_t key_len);

/* cxlp_batch_delete -- delete n keys; status[i] as cxlp_delete. */
CXLP_API int cxlp_batch_delete(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], int status[]);

/* Statistics: the pool's, from the metaserver, and this handler's own. */
struct cxlp_stats {
	/* pool (server side) */
	uint64_t pool_bytes;       /* whole pool, bytes */
	uint64_t data_bytes;       /* data area, bytes */
	uint64_t free_bytes;       /* data area not in any region, bytes */
	uint64_t regions;          /* regions allocated (owned or orphaned) */
	uint64_t orphan_regions;   /* regions whose owner is gone */
	uint64_t keys;             /* keys registered */
	uint64_t value_bytes;      /* sum of registered value lengths */
	uint64_t sessions;         /* live sessions */
	uint64_t pins;             /* pins held, all sessions */
	uint64_t index_slots;      /* capacity of the key index */
	/* this handler */
	uint64_t own_regions;      /* regions this handler owns (given
				      back ones no longer count) */
	uint64_t pages_total;      /* pages in them */
	uint64_t pages_free;       /* free for cxlp_alloc */
	uint64_t pages_allocated;  /* allocated, not registered */
	uint64_t pages_registered; /* holding a key */
	uint64_t pages_unresolved; /* kept after a lost reply */
	uint64_t foreign_maps;     /* read-only region mappings cached */
	uint64_t redials;          /* connections replaced after repeated
				      timeouts on them */
	uint64_t pages_quarantined; /* out of use until close: a REGISTER
				      of theirs was resent or lost, and a
				      copy of it may still land (see
				      docs/recovery.md) */
	/* eviction (server side, then this handler) */
	uint64_t largest_free;     /* largest free extent of the data area */
	uint64_t evicted_pressure; /* keys evicted because a store found
				      the pool full */
	uint64_t evicted_watermark; /* keys evicted to keep free space */
	uint64_t evicted_orphan;   /* keys evicted from regions whose owner
				      closed or died */
	uint64_t evicted_bytes;    /* value bytes of all evicted keys */
	uint64_t pages_reclaimed;  /* pages of this handler whose keys
				      were evicted for its allocations */
	uint64_t reclaims;         /* RECLAIM round trips it made */
	uint64_t leases;           /* leases held, all sessions */
	uint64_t lease_expiries;   /* leases that ran out */
	uint64_t refills;          /* of the reclaims, those made ahead of
				      need, from the handler's own thread */
	uint64_t pages_reserved;   /* of pages_allocated, those held by
				      reservations and not yet taken */
	uint64_t endpoint_switches; /* moves to another metaserver endpoint
				      after this one stopped answering (a
				      standby that took over: see
				      cxlp_config_set_server) */
	uint64_t reserved[1];
};

/* This handler's own counters, kept without a round trip, for a
 * connector to export (e.g. as Prometheus counters: each only grows). */
struct cxlp_counters {
	uint64_t lookups;      /* keys asked by retrieve (all forms) */
	uint64_t hits;         /* of them, found */
	uint64_t misses;       /* of them, CXLP_E_NOTFOUND */
	uint64_t direct_reads; /* keys of unpinned lookups (retrieve,
	                          exists) answered from shared memory */
	uint64_t keys_stored;  /* keys this handler's stores put in the
	                          pool at its own pages */
	uint64_t bytes_stored; /* their value bytes */
	uint64_t stale_replies; /* replies of an older metaserver term than
	                          one seen (a deposed leader's) dropped */
	uint64_t term_resets;  /* times a reply of an older term was the
	                          pool's own term (a leader started with
	                          --elect-term-reset), accepted, and the
	                          handler's newest term moved down to it */
};
/* cxlp_counters -- copy the first size bytes of this handler's counters
 * into *c (pass sizeof(*c): a newer library fills only what the caller
 * knows). Never fails for a valid h; -EINVAL for NULL, CXLP_E_CLOSED in
 * a child of fork() for a handler connected before it. Thread-safe. */
CXLP_API int cxlp_counters(const struct cxlp_handler *h,
    struct cxlp_counters *c, size_t size);

/* cxlp_stats -- fill *st (one round trip). */
CXLP_API int cxlp_stats(struct cxlp_handler *h, struct cxlp_stats *st);

/* cxlp_healthcheck -- 0 if the metaserver answers and knows this session. */
CXLP_API int cxlp_healthcheck(struct cxlp_handler *h);

/*
 * Asynchronous calls: batch_store and batch_retrieve submitted without
 * waiting for their round trip. A submit copies what it needs (the
 * arrays, the keys' bytes: the caller may free or reuse them as soon as
 * it returns) and queues the request; a thread of the handler's own runs
 * the synchronous call (cxlp_batch_store_status, cxlp_batch_retrieve),
 * so every contract of that call holds, and then calls the request's
 * callback, exactly once, with the call's return code and its per-key
 * results. Synchronous calls may be made at the same time, from any
 * thread, on the same handler.
 *
 * The bound: at most max_inflight requests (cxlp_config_set_max_inflight)
 * of a handler are in flight at once, each from its submit until its
 * callback has returned; a submit that finds them all in flight waits
 * for one to end (with CXLP_ASYNC_NOWAIT: returns -EAGAIN instead). The
 * handler runs at most max_inflight threads for them, started as needed
 * from the first submit on and ended at cxlp_close.
 *
 * Callbacks run on those threads, one request's at a time per thread,
 * and may call into the handler, synchronously or not. A submit from a
 * callback never waits (waiting there could wait for itself): with no
 * slot free it takes over the slot of the request whose callback is
 * running, once per callback, and otherwise returns -EAGAIN. A callback
 * that calls cxlp_close on its own handler gets it closed by a thread of
 * the library once every request in flight has ended (cxlp_close returns
 * at once). The arrays a callback is given are valid during the callback
 * only; cxlp_errormsg() in a callback says why its call failed.
 *
 * cxlp_close first lets every request already submitted run to its end,
 * each with its real result and its callback (a submit made meanwhile,
 * from a callback too, returns CXLP_E_CLOSED), then closes the handler:
 * nothing submitted is lost or left without its callback.
 */
#define CXLP_MAX_INFLIGHT_DEFAULT 8u
#define CXLP_MAX_INFLIGHT_MAX 1024u
/* cxlp_config_set_max_inflight -- at most n asynchronous requests of a
 * handler in flight at once (1..CXLP_MAX_INFLIGHT_MAX; default
 * CXLP_MAX_INFLIGHT_DEFAULT), and as many threads at most to run them.
 * Each request holds the memory of its copied arguments and results
 * while in flight. */
CXLP_API int cxlp_config_set_max_inflight(struct cxlp_config *cfg,
    unsigned n);

/* A flag of the _async calls (with the call's own flags): fail with
 * -EAGAIN rather than wait when max_inflight requests are in flight. */
#define CXLP_ASYNC_NOWAIT (1u << 16)

/* cxlp_store_done_fn -- the end of a cxlp_batch_store_async: rc, stored
 * and status as cxlp_batch_store_status returned and filled them (n
 * entries each). rc 0 or CXLP_E_UNKNOWN: every page was consumed, as
 * the synchronous call says. Any other rc (CXLP_E_SESSION: the session
 * was lost after the submit; -ENOMEM) consumed no page: every page is
 * the caller's again, allocated; stored[i] is then false and status[i]
 * rc. */
typedef void (*cxlp_store_done_fn)(void *arg, int rc, size_t n,
    const bool stored[], const int status[]);

/* cxlp_retrieve_done_fn -- the end of a cxlp_batch_retrieve_async: rc,
 * data, lens and status as cxlp_batch_retrieve returned and filled them
 * (with CXLP_RETRIEVE_PIN, exactly the keys with status 0 are pinned:
 * cxlp_unpin each when done). When rc is not 0, every status[i] is rc;
 * no key is pinned, except that after CXLP_E_TIMEOUT, CXLP_E_CONN or
 * CXLP_E_PROTO the server may have pinned some, as cxlp_batch_retrieve
 * says (cxlp_batch_unpin them all). data[i] points into the shared
 * mapping as the synchronous call's does (a pinned key's bytes stay put
 * until it is unpinned); the arrays themselves are valid during the
 * callback only.
 */
typedef void (*cxlp_retrieve_done_fn)(void *arg, int rc, size_t n,
    const void *const data[], const size_t lens[], const int status[]);

/*
 * cxlp_batch_store_async -- cxlp_batch_store_status of the same
 * arguments, run on a thread of the handler's; done(arg, ...) is called
 * once with its results. flags: the store's (CXLP_STORE_PIN,
 * CXLP_STORE_LEASE), and CXLP_ASYNC_NOWAIT.
 *
 * From the submit until the store consumes them, the pages are the
 * request's: a free, store or submit of one of them meanwhile fails
 * CXLP_E_BADPAGE. Their bytes must be written before the submit.
 *
 * Returns 0 (done will be called), or an error with no callback and
 * every page left with the caller, as the synchronous call's errors
 * before it consumes a page: -EINVAL (NULL arrays or done, n == 0 or n >
 * CXLP_BATCH_MAX, bad flags), CXLP_E_KEYLEN, CXLP_E_TOOBIG,
 * CXLP_E_BADPAGE (a page not allocated by this handler, registered,
 * named twice, or in another request in flight), CXLP_E_SESSION,
 * CXLP_E_CLOSED (also while cxlp_close lets the requests in flight
 * end), -EAGAIN (CXLP_ASYNC_NOWAIT, or a submit from a callback, with
 * no slot free; or no thread could be started), -ENOMEM.
 */
CXLP_API int cxlp_batch_store_async(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    const cxlp_page_t pages[], const size_t lens[], unsigned flags,
    cxlp_store_done_fn done, void *arg);

/* cxlp_batch_retrieve_async -- cxlp_batch_retrieve of the same arguments
 * (flags: CXLP_RETRIEVE_PIN, CXLP_RETRIEVE_LEASE, and
 * CXLP_ASYNC_NOWAIT), run on a thread of the handler's; done(arg, ...)
 * is called once with its results. Worth it for pinned or leased
 * retrieves, which take a round trip; an unpinned one is usually read
 * from shared memory at once. Returns 0 (done will be called), or an
 * error with no callback: -EINVAL (NULL arrays or done, bad flags),
 * CXLP_E_BATCH, CXLP_E_KEYLEN, CXLP_E_CLOSED, -EAGAIN, -ENOMEM as
 * cxlp_batch_store_async. */
CXLP_API int cxlp_batch_retrieve_async(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[], unsigned flags,
    cxlp_retrieve_done_fn done, void *arg);

/* cxlp_async_inflight -- the number of this handler's asynchronous
 * requests in flight now (submitted, callback not yet returned), or
 * CXLP_E_CLOSED / -EINVAL; *peak (NULL: not wanted) gets the most there
 * have been at once since connect. Takes one lock, no round trip. */
CXLP_API int cxlp_async_inflight(struct cxlp_handler *h, unsigned *peak);

/*
 * Regions: the mappings a handler holds, for callers that keep their own
 * page tables (a Maru-style allocator addresses a page as region << 32 |
 * index) and for connectors that register the memory for DMA.
 *
 * A region is named by its id in the pool (the same in every process).
 * Own regions are mapped read-write, other handlers' read-only, on first
 * use (a retrieve that finds a key in them, or cxlp_region_view). Page i
 * of a region starts at byte i * page_size of it, where page_size is the
 * region owner's page size.
 */
struct cxlp_region_info {
	uint32_t region;   /* region id in the pool */
	uint32_t gen;      /* its generation (a reused id has a new one) */
	void *addr;        /* first byte of the mapping */
	size_t len;        /* bytes mapped: the whole region */
	size_t page_size;  /* bytes per page of its owner; 0: unknown (a
	                      foreign region with direct reads off) */
	uint32_t pages;    /* len / page_size (0 when unknown) */
	bool writable;     /* own region, mapped read-write */
	uint64_t reserved[2];
};

/* cxlp_locate -- which region ptr points into, among the regions h maps
 * now, and its offset from the region's start (a value's page index is
 * offset / page_size). For the pointers retrieve, batch_retrieve and
 * alloc return. Returns 0, CXLP_E_NOTFOUND (no region of h holds ptr),
 * -EINVAL or CXLP_E_CLOSED. Takes the region map's lock shared; no round
 * trip. */
CXLP_API int cxlp_locate(struct cxlp_handler *h, const void *ptr,
    uint32_t *region, uint64_t *offset);
/* cxlp_batch_locate -- cxlp_locate of ptrs[0..n): regions[i] and
 * offsets[i], or UINT32_MAX and UINT64_MAX for a pointer no region
 * holds (NULL included), and then CXLP_E_NOTFOUND saying how many. */
CXLP_API int cxlp_batch_locate(struct cxlp_handler *h, size_t n,
    const void *const ptrs[], uint32_t regions[], uint64_t offsets[]);

/* cxlp_region_list -- the regions h maps now (own and foreign), sorted
 * by id, into out[0..cap) (the cap lowest ids when there are more);
 * returns how many there are (which may be more than cap: call again
 * with a larger array), or an error. */
CXLP_API int cxlp_region_list(struct cxlp_handler *h,
    struct cxlp_region_info out[], size_t cap);

/* cxlp_region_view -- region id's mapping in *out, mapping a foreign
 * region read-only first if h has not yet (its location is read from the
 * pool's region table, which needs direct reads: without them only
 * regions already mapped can be viewed). The mapping stays until close,
 * and is read-only unless the region is h's own. Returns 0,
 * CXLP_E_NOTFOUND (no live region of that id, or not mappable without
 * direct reads), a mapping error, -EINVAL, CXLP_E_CLOSED. The bytes of a
 * foreign region are other handlers' values: read them under the rules
 * of cxlp_retrieve (pin, lease or validate). */
CXLP_API int cxlp_region_view(struct cxlp_handler *h, uint32_t region,
    struct cxlp_region_info *out);

/* cxlp_page_at -- the handle of page index of h's own region id (and,
 * buf not NULL, its address), for an allocator that keeps its own page
 * table. Names the page whatever its state: cxlp_store and cxlp_free
 * accept it only while it is allocated (CXLP_E_BADPAGE otherwise).
 * Returns 0, CXLP_E_NOTFOUND (not a region of h's), CXLP_E_BOUNDS (index
 * past its pages), CXLP_E_SESSION (the session is gone), -EINVAL,
 * CXLP_E_CLOSED. */
CXLP_API int cxlp_page_at(struct cxlp_handler *h, uint32_t region,
    uint32_t index, cxlp_page_t *page, void **buf);

/*
 * The region callback: told of every region h maps (CXLP_REGION_MAPPED)
 * and, before the mapping goes or is taken out of use, of its end
 * (CXLP_REGION_UNMAPPING): own and foreign regions, info giving exactly
 * the mapped range. Each mapping of a region is followed by one
 * UNMAPPING, at the latest in cxlp_close, before it unmaps. A GPU
 * connector registers [addr, addr + len) for DMA on MAPPED
 * (cudaHostRegister, in pieces below 512 GiB) and unregisters it on
 * UNMAPPING.
 *
 * - Set: replays a MAPPED of every region mapped now (in id order),
 *   then reports changes as they happen, in the order they happen, one
 *   at a time. fn NULL stops the reports (no UNMAPPING is replayed).
 *   Setting it again, even the same function, replays again (the Python
 *   binding's listeners rely on it): a MAPPED of a region fn has heard
 *   of already, with no UNMAPPING between, is such a replay.
 * - When: never under a lock of the library. An event is delivered by
 *   the call that caused it before that call returns (an alloc whose
 *   page is in a new region, a retrieve that mapped a region,
 *   cxlp_region_view), or by the handler's own thread (regions given
 *   back, regions taken ahead of need), or by cxlp_close. So a pointer
 *   into a region is never handed out before its MAPPED has returned.
 * - What fn may call: any function of this library on any handler,
 *   except cxlp_set_region_fn (-EDEADLK) and cxlp_close on h (refused:
 *   h stays open, *h is left as it was, and the refusal is logged).
 *   An asynchronous submit from fn on h never waits for a slot (-EAGAIN
 *   when all are held). Events its own calls cause are delivered right
 *   after it returns, on the same thread. During cxlp_close, calls on h
 *   fail CXLP_E_CLOSED. info is valid during the call only. fn must not
 *   block on another thread that is inside a call on h.
 * Returns 0, -EDEADLK (from fn), -ENOMEM, CXLP_E_CLOSED (-EINVAL: h
 * NULL, as every call here).
 */
#define CXLP_REGION_MAPPED 1
#define CXLP_REGION_UNMAPPING 2
typedef void (*cxlp_region_fn)(void *arg, int event,
    const struct cxlp_region_info *info);
CXLP_API int cxlp_set_region_fn(struct cxlp_handler *h, cxlp_region_fn fn,
    void *arg);

#ifdef __cplusplus
}
#endif
#endif /* CXLPOOL_H */
