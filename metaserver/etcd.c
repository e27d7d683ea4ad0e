/*
 * etcd.c -- the I/O half of the etcd client: POSTs of JSON to the v3
 * gateway through libcurl, over the endpoints in turn.
 *
 * DESIGN NOTES
 * 1. One curl easy handle per client, under the client's lock: calls are
 *    serialized, and the handle keeps its connection alive between
 *    calls (one TCP handshake per endpoint, not per call).
 * 2. A call has one budget (timeout_ms) for all its attempts. It starts
 *    at the endpoint that last answered and moves to the next when one
 *    cannot be reached, does not answer in time, or answers UNAVAILABLE
 *    (a member without quorum); each attempt gets the budget left
 *    divided by the endpoints left, so one hung member does not eat the
 *    whole budget. Any other answer, error or not, ends the call.
 * 3. Moving on after a timeout may send a request twice. Every call here
 *    is safe to repeat or its repeat is recognized: keepalive and put
 *    are idempotent; a revoke whose lease is gone is success; a create
 *    repeated after its first try applied finds the key held on the
 *    caller's own lease (elect.c takes that as won).
 * 4. Answers are capped at ETCD_BODY_MAX while they arrive (the write
 *    callback refuses more), whether they come with a Content-Length
 *    or chunked (the gateway chunks every streamed answer: keepalive,
 *    and errors). No proxy from the environment is used: etcd is
 *    reached directly.
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "etcd.h"
#include "log.h"

#define ETCD_ATTEMPT_MIN_MS 100u /* no attempt gets less */

struct etcd {
	pthread_mutex_t lock;
	CURL *curl;
	struct curl_slist *hdrs;
	struct etcd_endpoints ep;
	unsigned cur;          /* the endpoint that answered last */
	unsigned timeout_ms;   /* per call, all attempts */
	char *body;            /* the answer being read (ETCD_BODY_MAX + 1) */
	size_t blen;
	bool over;             /* the answer passed ETCD_BODY_MAX */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void
curl_init_once(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t
body_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct etcd *e = arg;
	size_t n = size * nmemb;

	if (n > ETCD_BODY_MAX - e->blen) {
		e->over = true;
		return 0; /* curl stops with CURLE_WRITE_ERROR */
	}
	memcpy(e->body + e->blen, data, n);
	e->blen += n;
	return n;
}

/* etcd_new -- see etcd.h. */
int
etcd_new(struct etcd **out, const struct etcd_endpoints *ep,
    unsigned timeout_ms)
{
	struct etcd *e;

	*out = NULL;
	if (ep->n == 0 || ep->n > ETCD_ENDPOINTS_MAX || timeout_ms == 0) {
		return cxlp_fail(-EINVAL, "etcd: no endpoints or no timeout");
	}
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK) {
		return cxlp_fail(-ENOMEM, "etcd: curl_global_init: %s",
		    curl_easy_strerror(curl_init_rc));
	}
	if ((e = calloc(1, sizeof(*e))) == NULL ||
	    (e->body = malloc(ETCD_BODY_MAX + 1)) == NULL) {
		goto err_free;
	}
	if ((e->curl = curl_easy_init()) == NULL) {
		goto err_free;
	}
	e->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (e->hdrs == NULL) {
		goto err_curl;
	}
	pthread_mutex_init(&e->lock, NULL);
	e->ep = *ep;
	e->timeout_ms = timeout_ms;
	*out = e;
	return 0;

err_curl:
	curl_easy_cleanup(e->curl);
err_free:
	if (e != NULL) {
		free(e->body);
	}
	free(e);
	return cxlp_fail(-ENOMEM, "etcd: no memory for a client");
}

/* etcd_delete -- see etcd.h. */
void
etcd_delete(struct etcd **ep)
{
	struct etcd *e = *ep;

	if (e == NULL) {
		return;
	}
	curl_slist_free_all(e->hdrs);
	curl_easy_cleanup(e->curl);
	pthread_mutex_destroy(&e->lock);
	free(e->body);
	free(e);
	*ep = NULL;
}

/* etcd_set_timeout -- see etcd.h. */
void
etcd_set_timeout(struct etcd *e, unsigned timeout_ms)
{
	pthread_mutex_lock(&e->lock);
	e->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
	pthread_mutex_unlock(&e->lock);
}

static const char *const paths[] = {
	[ETCD_GRANT] = "/v3/lease/grant",
	[ETCD_KEEPALIVE] = "/v3/lease/keepalive",
	[ETCD_REVOKE] = "/v3/lease/revoke",
	[ETCD_PUT] = "/v3/kv/put",
	[ETCD_RANGE] = "/v3/kv/range",
	[ETCD_DELETE] = "/v3/kv/deleterange",
	[ETCD_TXN] = "/v3/kv/txn",
	[ETCD_LIST] = "/v3/kv/range",
};

/* One POST to endpoint i within ms. Returns 0 with the answer's status
 * in *status and its body in e->body, or the transport's error. */
static int
attempt(struct etcd *e, unsigned i, enum etcd_call call, const char *req,
    unsigned ms, long *status)
{
	char url[ETCD_URL_MAX + 32];
	CURL *c = e->curl;
	CURLcode cc;

	snprintf(url, sizeof(url), "%s%s", e->ep.url[i], paths[call]);
	e->blen = 0;
	e->over = false;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->hdrs);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, e);
	cc = curl_easy_perform(c);
	if (cc == CURLE_WRITE_ERROR && e->over) {
		return cxlp_fail(-EMSGSIZE, "etcd %s: answer over %u bytes",
		    e->ep.url[i], ETCD_BODY_MAX);
	}
	if (cc == CURLE_OPERATION_TIMEDOUT) {
		return cxlp_fail(-ETIMEDOUT, "etcd %s: no answer in %u ms",
		    e->ep.url[i], ms);
	}
	if (cc != CURLE_OK) {
		return cxlp_fail(-ECONNREFUSED, "etcd %s: %s", e->ep.url[i],
		    curl_easy_strerror(cc));
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	return 0;
}

/* gRPC status code -> our error. */
static int
grpc_err(const struct etcd_ans *ans, const char *url)
{
	int rc = ans->code == 5 ? -ENOENT : ans->code == 14 ? -EAGAIN :
	    ans->code == 4 ? -ETIMEDOUT : -EREMOTEIO;

	return cxlp_fail(rc, "etcd %s: %s (code %d)", url, ans->msg,
	    ans->code);
}

/* Call: POST req over the endpoints (DESIGN NOTE 2), parse the answer
 * into *ans. Returns 0 for an answer without error, or the error. */
static int
call_locked(struct etcd *e, enum etcd_call call, const char *req,
    struct etcd_ans *ans)
{
	uint64_t end = cxlp_now_ms() + e->timeout_ms;
	char why[256]; /* a message that a new one quotes */
	int rc = -ETIMEDOUT;

	for (unsigned k = 0; k < e->ep.n; k++) {
		unsigned i = (e->cur + k) % e->ep.n;
		uint64_t now = cxlp_now_ms();
		unsigned ms = now >= end ? 0 : (unsigned)((end - now) /
		    (e->ep.n - k));
		long status = 0;

		if (ms < ETCD_ATTEMPT_MIN_MS) {
			ms = ETCD_ATTEMPT_MIN_MS;
		}
		if (k > 0 && now >= end) {
			break;
		}
		rc = attempt(e, i, call, req, ms, &status);
		if (rc == -ECONNREFUSED || rc == -ETIMEDOUT) {
			log_rl_dbg("op=etcd url=%s rc=%d msg=\"%s\"",
			    e->ep.url[i], rc, cxlp_errormsg());
			continue;
		}
		if (rc != 0) {
			return rc;
		}
		e->body[e->blen] = '\0';
		if ((rc = etcd_parse(call, e->body, e->blen, ans)) != 0) {
			snprintf(why, sizeof(why), "%s", cxlp_errormsg());
			return cxlp_fail(rc, "etcd %s: HTTP %ld: %s",
			    e->ep.url[i], status, why);
		}
		if (ans->code == 14) { /* UNAVAILABLE: another may serve */
			rc = grpc_err(ans, e->ep.url[i]);
			continue;
		}
		e->cur = i;
		if (ans->code != 0) {
			return grpc_err(ans, e->ep.url[i]);
		}
		if (status != 200) {
			return cxlp_fail(-EPROTO, "etcd %s: HTTP %ld without "
			    "an error body", e->ep.url[i], status);
		}
		return 0;
	}
	if (rc == -ETIMEDOUT || rc == -EAGAIN || e->ep.n == 1) {
		return rc;
	}
	snprintf(why, sizeof(why), "%s", cxlp_errormsg());
	return cxlp_fail(-ECONNREFUSED, "etcd: no endpoint of %u reachable "
	    "(last: %s)", e->ep.n, why);
}

static int
call(struct etcd *e, enum etcd_call c, const char *req, struct etcd_ans *a)
{
	int rc;

	pthread_mutex_lock(&e->lock);
	rc = call_locked(e, c, req, a);
	pthread_mutex_unlock(&e->lock);
	return rc;
}

/* A request: the JSON, with key and value base64-encoded. */
struct req {
	char key[(ETCD_KEY_MAX + 2) / 3 * 4 + 1];
	char val[(ETCD_VALUE_MAX + 2) / 3 * 4 + 1];
	char json[ETCD_KEY_MAX * 2 + ETCD_VALUE_MAX * 2 + 512];
};

static int
req_encode(struct req *r, const char *key, const void *val, size_t vlen)
{
	size_t klen = key != NULL ? strlen(key) : 0;

	if (key != NULL && (klen == 0 || klen > ETCD_KEY_MAX)) {
		return cxlp_fail(-EINVAL, "etcd: key of %zu bytes", klen);
	}
	if (vlen > ETCD_VALUE_MAX) {
		return cxlp_fail(-EMSGSIZE, "etcd: value of %zu bytes", vlen);
	}
	etcd_b64_encode(key, klen, r->key, sizeof(r->key));
	etcd_b64_encode(val, vlen, r->val, sizeof(r->val));
	return 0;
}

/* etcd_lease_grant -- see etcd.h. */
int
etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id,
    int64_t *granted_s)
{
	struct etcd_ans a;
	char json[64];
	int rc;

	snprintf(json, sizeof(json), "{\"TTL\":\"%" PRId64 "\"}", ttl_s);
	if ((rc = call(e, ETCD_GRANT, json, &a)) != 0) {
		return rc;
	}
	if (a.id == 0 || a.ttl <= 0) {
		return cxlp_fail(-EPROTO, "etcd: lease grant without ID or "
		    "TTL");
	}
	*id = a.id;
	*granted_s = a.ttl;
	return 0;
}

/* etcd_lease_keepalive -- see etcd.h. */
int
etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s)
{
	struct etcd_ans a;
	char json[64];
	int rc;

	*ttl_s = 0;
	snprintf(json, sizeof(json), "{\"ID\":\"%" PRId64 "\"}", id);
	if ((rc = call(e, ETCD_KEEPALIVE, json, &a)) != 0) {
		return rc;
	}
	if (a.ttl == 0) {
		return cxlp_fail(-ENOENT, "etcd: lease %" PRIx64 " is gone",
		    (uint64_t)id);
	}
	if (a.id != id) {
		return cxlp_fail(-EPROTO, "etcd: keepalive of lease %" PRIx64
		    " answered for %" PRIx64, (uint64_t)id, (uint64_t)a.id);
	}
	*ttl_s = a.ttl;
	return 0;
}

/* etcd_lease_revoke -- see etcd.h. */
int
etcd_lease_revoke(struct etcd *e, int64_t id)
{
	struct etcd_ans a;
	char json[64];
	int rc;

	snprintf(json, sizeof(json), "{\"ID\":\"%" PRId64 "\"}", id);
	rc = call(e, ETCD_REVOKE, json, &a);
	return rc == -ENOENT ? 0 : rc;
}

/* etcd_put -- see etcd.h. */
int
etcd_put(struct etcd *e, const char *key, const void *value, size_t vlen,
    int64_t lease, int64_t *rev)
{
	struct etcd_ans a;
	struct req *r = malloc(sizeof(*r));
	int rc;

	if (r == NULL) {
		return cxlp_fail(-ENOMEM, "etcd: no memory for a put");
	}
	if ((rc = req_encode(r, key, value, vlen)) == 0) {
		snprintf(r->json, sizeof(r->json), "{\"key\":\"%s\","
		    "\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}", r->key,
		    r->val, lease);
		rc = call(e, ETCD_PUT, r->json, &a);
	}
	free(r);
	if (rc == 0 && rev != NULL) {
		*rev = a.revision;
	}
	return rc;
}

/* etcd_get -- see etcd.h. */
int
etcd_get(struct etcd *e, const char *key, struct etcd_kv *kv)
{
	struct etcd_ans *a = malloc(sizeof(*a));
	struct req *r = malloc(sizeof(*r));
	int rc;

	rc = a == NULL || r == NULL ? cxlp_fail(-ENOMEM, "etcd: no memory")
	    : req_encode(r, key, NULL, 0);
	if (rc == 0) {
		snprintf(r->json, sizeof(r->json), "{\"key\":\"%s\"}",
		    r->key);
		rc = call(e, ETCD_RANGE, r->json, a);
	}
	if (rc == 0 && !a->has_kv) {
		rc = -ENOENT; /* absent: no message, a normal outcome */
	}
	if (rc == 0) {
		*kv = a->kv;
	}
	free(a);
	free(r);
	return rc;
}

/* the end of prefix's range: prefix with its last byte raised (etcd's
 * "keys >= key and < range_end"); a prefix of 0xff bytes has none */
static int
prefix_end(const char *prefix, char *end, size_t cap)
{
	size_t n = strlen(prefix);

	if (n == 0 || n >= cap) {
		return cxlp_fail(-EINVAL, "etcd: prefix of %zu bytes", n);
	}
	memcpy(end, prefix, n + 1);
	while (n > 0 && (unsigned char)end[n - 1] == 0xff) {
		end[--n] = '\0';
	}
	if (n == 0) {
		return cxlp_fail(-EINVAL, "etcd: prefix of 0xff bytes");
	}
	end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
	return 0;
}

/* etcd_list -- see etcd.h. */
int
etcd_list(struct etcd *e, const char *prefix, struct etcd_item *items,
    unsigned max, unsigned *n, int64_t *count)
{
	struct etcd_ans *a = malloc(sizeof(*a));
	struct req *r = malloc(sizeof(*r));
	char end[ETCD_KEY_MAX + 1];
	int rc;

	*n = 0;
	*count = 0;
	rc = a == NULL || r == NULL ? cxlp_fail(-ENOMEM, "etcd: no memory")
	    : prefix_end(prefix, end, sizeof(end));
	if (rc == 0) {
		rc = req_encode(r, prefix, end, strlen(end));
	}
	if (rc == 0) {
		snprintf(r->json, sizeof(r->json), "{\"key\":\"%s\","
		    "\"range_end\":\"%s\"}", r->key, r->val);
		rc = call(e, ETCD_LIST, r->json, a);
	}
	if (rc == 0) {
		*n = a->nitems < max ? a->nitems : max;
		memcpy(items, a->items, *n * sizeof(*items));
		*count = a->count;
	}
	free(a);
	free(r);
	return rc;
}

/* etcd_del -- see etcd.h. */
int
etcd_del(struct etcd *e, const char *key, bool *deleted)
{
	struct etcd_ans a;
	struct req *r = malloc(sizeof(*r));
	int rc;

	rc = r == NULL ? cxlp_fail(-ENOMEM, "etcd: no memory") :
	    req_encode(r, key, NULL, 0);
	if (rc == 0) {
		snprintf(r->json, sizeof(r->json), "{\"key\":\"%s\"}",
		    r->key);
		rc = call(e, ETCD_DELETE, r->json, &a);
	}
	free(r);
	if (rc == 0 && deleted != NULL) {
		*deleted = a.count > 0;
	}
	return rc;
}

/* etcd_create -- see etcd.h. The compare is on CREATE (the key's
 * create_revision) = 0, which only an absent key has. */
int
etcd_create(struct etcd *e, const char *key, const void *value,
    size_t vlen, int64_t lease, bool *created, struct etcd_kv *kv)
{
	struct etcd_ans *a = malloc(sizeof(*a));
	struct req *r = malloc(sizeof(*r));
	int rc;

	*created = false;
	rc = a == NULL || r == NULL ? cxlp_fail(-ENOMEM, "etcd: no memory")
	    : req_encode(r, key, value, vlen);
	if (rc == 0) {
		snprintf(r->json, sizeof(r->json), "{\"compare\":[{"
		    "\"target\":\"CREATE\",\"result\":\"EQUAL\","
		    "\"key\":\"%s\",\"create_revision\":\"0\"}],"
		    "\"success\":[{\"request_put\":{\"key\":\"%s\","
		    "\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}}],"
		    "\"failure\":[{\"request_range\":{\"key\":\"%s\"}}]}",
		    r->key, r->key, r->val, lease, r->key);
		rc = call(e, ETCD_TXN, r->json, a);
	}
	if (rc == 0 && a->succeeded) {
		memset(kv, 0, sizeof(*kv));
		kv->create_rev = kv->mod_rev = a->revision;
		kv->version = 1;
		kv->lease = lease;
		kv->vlen = vlen;
		memcpy(kv->value, value, vlen);
		kv->value[vlen] = '\0';
		*created = true;
	} else if (rc == 0 && a->has_kv) {
		*kv = a->kv;
	} else if (rc == 0) {
		/* compare failed, yet the range found nothing: the key went
		 * between the two, which one txn cannot see; or a liar */
		rc = cxlp_fail(-EAGAIN, "etcd: create of %s failed with no "
		    "holder", key);
	}
	free(a);
	free(r);
	return rc;
}
