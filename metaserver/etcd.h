/*
 * etcd.h -- a small client of etcd's v3 JSON gateway (etcd 3.4: POSTs of
 * JSON to /v3/...), enough for an election: leases, single-key put,
 * range and delete, and the "create if absent" transaction.
 *
 * Errors: every call returns 0 or a negative errno, with cxlp_errormsg()
 * saying why; the module never prints or exits:
 *   -ECONNREFUSED  no endpoint could be reached (each was tried)
 *   -ETIMEDOUT     no answer within the call's timeout
 *   -EPROTO        an answer that is not what etcd sends (bad JSON,
 *                  wrong types, bad base64, an HTTP error without etcd's
 *                  error body)
 *   -EMSGSIZE      an answer larger than ETCD_BODY_MAX, or a value
 *                  larger than ETCD_VALUE_MAX
 *   -ENOENT        etcd said NOT_FOUND (e.g. the lease is gone)
 *   -EAGAIN        etcd said UNAVAILABLE (no leader, no quorum)
 *   -EREMOTEIO     any other error etcd reported (message kept)
 *   -EINVAL        bad arguments
 * The response parser (etcd_parse_*) is pure: it takes a body and fills
 * a struct, so hostile bodies are tested without a server.
 */
#ifndef CXLP_ETCD_H
#define CXLP_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETCD_ENDPOINTS_MAX 8
#define ETCD_URL_MAX 288        /* "http://" + host + ":" + port */
#define ETCD_HOST_MAX 255       /* bytes of one host name */
#define ETCD_KEY_MAX 1024       /* bytes of a key we send */
#define ETCD_VALUE_MAX 4096     /* bytes of a value we keep */
#define ETCD_BODY_MAX (64u << 10) /* bytes of an answer we accept */
#define ETCD_MSG_MAX 160        /* bytes of etcd's error message kept */
#define ETCD_LIST_MAX 16        /* keys of a prefix an ETCD_LIST keeps */
#define ETCD_ITEM_KEY 192       /* bytes kept of each one's key, NUL incl. */
#define ETCD_ITEM_VALUE 384     /* and of its value (longer: cut) */

/* The endpoints of one cluster, as http:// URLs. */
struct etcd_endpoints {
	unsigned n;
	char url[ETCD_ENDPOINTS_MAX][ETCD_URL_MAX];
};

/* etcd_endpoints_parse -- "etcd://HOST:PORT[,HOST:PORT...]" into out
 * (HOST a name, an IPv4 address or [IPv6]; PORT 1..65535). Returns 0, or
 * -EINVAL with cxlp_errormsg() naming the bad part. Pure. */
int etcd_endpoints_parse(const char *spec, struct etcd_endpoints *out);

/* One key's record (range, or the holder a failed create found). */
struct etcd_kv {
	int64_t create_rev; /* revision of the write that created it */
	int64_t mod_rev;    /* revision of its last write */
	int64_t version;    /* writes since created */
	int64_t lease;      /* lease it is attached to, 0 = none */
	size_t vlen;        /* bytes of value */
	char value[ETCD_VALUE_MAX + 1]; /* decoded, NUL-terminated */
};

/* ---- the parser (etcd_json.c): pure, for any bytes ---------------------- */

/* One key of a prefix (ETCD_LIST): key and value cut to fit, NUL
 * terminated. */
struct etcd_item {
	char key[ETCD_ITEM_KEY];
	char value[ETCD_ITEM_VALUE];
	int64_t lease;
};

/* An answer, whatever the call: the fields the calls read. Absent
 * fields are 0 (proto3's JSON leaves out default values: a failed txn
 * has no "succeeded", an empty range no "kvs" nor "count"). */
struct etcd_ans {
	int64_t revision;   /* header.revision: the store's, at the answer */
	int64_t id;         /* lease grant/keepalive: ID */
	int64_t ttl;        /* lease grant/keepalive: TTL, s (0: lease gone) */
	bool succeeded;     /* txn */
	int64_t count;      /* range: keys in range */
	bool has_kv;        /* range (or txn's failure range): kv is set */
	struct etcd_kv kv;  /* the first key of the range */
	unsigned nitems;    /* ETCD_LIST: items kept (<= ETCD_LIST_MAX; count
	                     * says how many keys there were) */
	struct etcd_item items[ETCD_LIST_MAX];
	int code;           /* error answer: gRPC code, 0 = none */
	char msg[ETCD_MSG_MAX]; /* error answer: etcd's message */
};

enum etcd_call {
	ETCD_GRANT, ETCD_KEEPALIVE, ETCD_REVOKE, ETCD_PUT, ETCD_RANGE,
	ETCD_DELETE, ETCD_TXN,
	ETCD_LIST, /* a range over a prefix: items[] */
};

/* etcd_parse -- parse body (len bytes, not NUL-terminated) as the answer
 * to call into *ans. Returns 0 (ans->code says whether etcd reported an
 * error), or -EPROTO/-EMSGSIZE with cxlp_errormsg() set. */
int etcd_parse(enum etcd_call call, const char *body, size_t len,
    struct etcd_ans *ans);

/* etcd_b64_encode -- base64 of src into dst (dstlen bytes incl. NUL).
 * Returns the length, or -EMSGSIZE if dst is too small. */
int etcd_b64_encode(const void *src, size_t len, char *dst, size_t dstlen);
/* etcd_b64_decode -- strict base64 (padded) into dst, at most cap bytes.
 * Returns the length, -EPROTO for bad input, -EMSGSIZE past cap. */
int etcd_b64_decode(const char *src, size_t len, void *dst, size_t cap);

/* ---- the client (etcd.c) ------------------------------------------------ */

struct etcd; /* opaque */

/* etcd_new -- a client of ep; each call takes at most timeout_ms in all,
 * shared among the endpoints it tries. Returns 0 and *out (free with
 * etcd_delete), or a negative error and *out == NULL. A client serializes
 * its calls (one lock): share it between threads freely. */
int etcd_new(struct etcd **out, const struct etcd_endpoints *ep,
    unsigned timeout_ms);
/* etcd_delete -- free e (NULL-safe; sets *e = NULL). */
void etcd_delete(struct etcd **e);
/* etcd_set_timeout -- change the per-call timeout, ms. */
void etcd_set_timeout(struct etcd *e, unsigned timeout_ms);

/* etcd_lease_grant -- a new lease of ttl_s seconds: *id, and the TTL etcd
 * granted (it raises a TTL below its minimum) in *granted_s. */
int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id,
    int64_t *granted_s);
/* etcd_lease_keepalive -- renew lease id once: 0 and its TTL in *ttl_s
 * (counted by etcd from its receipt of this call), or -ENOENT when etcd
 * no longer has the lease (it answers TTL 0). */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s);
/* etcd_lease_revoke -- end lease id and delete its keys (0 also when the
 * lease is already gone). */
int etcd_lease_revoke(struct etcd *e, int64_t id);
/* etcd_put -- key = value (vlen bytes), attached to lease (0: none).
 * *rev (may be NULL): the revision of the write. */
int etcd_put(struct etcd *e, const char *key, const void *value,
    size_t vlen, int64_t lease, int64_t *rev);
/* etcd_get -- the record of key into *kv: 0, or -ENOENT if absent. */
int etcd_get(struct etcd *e, const char *key, struct etcd_kv *kv);
/* etcd_list -- the keys under prefix (those that begin with it), in key
 * order: at most max (<= ETCD_LIST_MAX) into items; *n how many were
 * kept, *count how many there are. */
int etcd_list(struct etcd *e, const char *prefix, struct etcd_item *items,
    unsigned max, unsigned *n, int64_t *count);
/* etcd_del -- delete key; *deleted (may be NULL): whether it existed. */
int etcd_del(struct etcd *e, const char *key, bool *deleted);
/* etcd_create -- one transaction: if key does not exist (its
 * create_revision is 0), put key = value on lease and set *created;
 * else leave it and return its record. Either way *kv is the key's
 * record afterwards (on creation: create_rev = mod_rev = the txn's
 * revision, value ours). */
int etcd_create(struct etcd *e, const char *key, const void *value,
    size_t vlen, int64_t lease, bool *created, struct etcd_kv *kv);

#endif /* CXLP_ETCD_H */
