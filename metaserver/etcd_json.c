/*
 * etcd_json.c -- the pure half of the etcd client: endpoint lists,
 * base64, and the parser of the JSON gateway's answers.
 *
 * Everything here works on bytes and does no I/O, so that hostile
 * answers (truncated, wrongly typed, nested without end, huge) are
 * tested in microseconds (tests/metaserver/test_etcd_json.c). The
 * gateway writes proto3 JSON: int64 fields are strings ("revision":"5"),
 * bytes are base64 strings, and fields of default value are left out
 * (no "succeeded" for a failed txn, no "TTL" for a lease that is gone):
 * an absent field is 0, a present one of the wrong type is -EPROTO.
 * Field names are snake_case in answers ("create_revision"); cJSON's
 * case-sensitive lookup is used so that "id" is not taken for "ID".
 * Errors come as {"error": "...", "message": "...", "code": N} for unary
 * calls, and as {"error": {"grpc_code": N, "message": "..."}} inside a
 * stream (keepalive), both with a gRPC status code.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "etcd.h"

/* ---- endpoints ---------------------------------------------------------- */

/* One HOST:PORT (len bytes at s) into url as http://HOST:PORT. */
static int
endpoint_parse(const char *s, size_t len, char *url)
{
	const char *colon, *host = s;
	size_t hlen;
	unsigned long port;
	char digits[8];

	if (len > 0 && s[0] == '[') {
		const char *rb = memchr(s, ']', len);

		colon = rb != NULL && (size_t)(rb + 1 - s) < len &&
		    rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memrchr(s, ':', len);
		if (colon != NULL && memchr(s, ':', (size_t)(colon - s))) {
			colon = NULL; /* IPv6 without brackets */
		}
	}
	if (colon == NULL) {
		return cxlp_fail(-EINVAL, "'%.*s': not HOST:PORT", (int)len, s);
	}
	hlen = (size_t)(colon - host);
	if (hlen == 0 || hlen > ETCD_HOST_MAX) {
		return cxlp_fail(-EINVAL, "'%.*s': empty or too long a host",
		    (int)len, s);
	}
	for (size_t i = 0; i < hlen; i++) {
		if (!isalnum((unsigned char)host[i]) &&
		    strchr(".-_[]:", host[i]) == NULL) {
			return cxlp_fail(-EINVAL, "'%.*s': bad character in the "
			    "host", (int)len, s);
		}
	}
	len -= hlen + 1;
	if (len == 0 || len >= sizeof(digits)) {
		return cxlp_fail(-EINVAL, "'%.*s': bad port", (int)(hlen + 1 +
		    len), s);
	}
	memcpy(digits, colon + 1, len);
	digits[len] = '\0';
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)digits[i])) {
			return cxlp_fail(-EINVAL, "port '%s': not a number",
			    digits);
		}
	}
	port = strtoul(digits, NULL, 10);
	if (port == 0 || port > 65535) {
		return cxlp_fail(-EINVAL, "port %s: not 1..65535", digits);
	}
	snprintf(url, ETCD_URL_MAX, "http://%.*s:%lu", (int)hlen, host, port);
	return 0;
}

/* etcd_endpoints_parse -- see etcd.h. */
int
etcd_endpoints_parse(const char *spec, struct etcd_endpoints *out)
{
	const char *p, *comma;
	int rc;

	memset(out, 0, sizeof(*out));
	if (strncmp(spec, "etcd://", 7) != 0) {
		return cxlp_fail(-EINVAL, "'%s': not etcd://HOST:PORT[,...]",
		    spec);
	}
	p = spec + 7;
	for (;;) {
		size_t len;

		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (out->n == ETCD_ENDPOINTS_MAX) {
			memset(out, 0, sizeof(*out));
			return cxlp_fail(-EINVAL, "more than %d endpoints",
			    ETCD_ENDPOINTS_MAX);
		}
		if ((rc = endpoint_parse(p, len, out->url[out->n])) != 0) {
			memset(out, 0, sizeof(*out));
			return rc;
		}
		out->n++;
		if (comma == NULL) {
			return 0;
		}
		p = comma + 1;
	}
}

/* ---- base64 ------------------------------------------------------------- */

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* etcd_b64_encode -- see etcd.h. */
int
etcd_b64_encode(const void *src, size_t len, char *dst, size_t dstlen)
{
	const uint8_t *s = src;
	size_t o = 0;

	if ((len + 2) / 3 * 4 + 1 > dstlen) {
		return -EMSGSIZE;
	}
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;

		v |= i + 1 < len ? (uint32_t)s[i + 1] << 8 : 0;
		v |= i + 2 < len ? s[i + 2] : 0;
		dst[o++] = b64[v >> 18];
		dst[o++] = b64[(v >> 12) & 63];
		dst[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		dst[o++] = i + 2 < len ? b64[v & 63] : '=';
	}
	dst[o] = '\0';
	return (int)o;
}

static int
b64_val(char c)
{
	const char *p = c != '\0' ? strchr(b64, c) : NULL;

	return p == NULL ? -1 : (int)(p - b64);
}

/* etcd_b64_decode -- see etcd.h. */
int
etcd_b64_decode(const char *src, size_t len, void *dst, size_t cap)
{
	uint8_t *d = dst;
	size_t o = 0;

	if (len % 4 != 0) {
		return -EPROTO;
	}
	for (size_t i = 0; i < len; i += 4) {
		int v[4], pad = 0;
		bool last = i + 4 == len;

		for (int j = 0; j < 4; j++) {
			if (last && j >= 2 && src[i + j] == '=' &&
			    (j == 3 || src[i + 3] == '=')) {
				v[j] = 0;
				pad++;
				continue;
			}
			if ((v[j] = b64_val(src[i + j])) < 0) {
				return -EPROTO;
			}
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
		    (uint32_t)v[2] << 6 | (uint32_t)v[3];
		if (o + 3 - (size_t)pad > cap) {
			return -EMSGSIZE;
		}
		d[o++] = (uint8_t)(w >> 16);
		if (pad < 2) {
			d[o++] = (uint8_t)(w >> 8);
		}
		if (pad < 1) {
			d[o++] = (uint8_t)w;
		}
	}
	return (int)o;
}

/* ---- the answers -------------------------------------------------------- */

/* An int64 field of o (a proto3 JSON string of digits, or a number with
 * an integral value): 0 if absent. */
static int
get_i64(const cJSON *o, const char *name, int64_t *out)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);
	char *end;

	*out = 0;
	if (f == NULL || cJSON_IsNull(f)) {
		return 0;
	}
	if (cJSON_IsNumber(f)) {
		double d = f->valuedouble;

		if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) ||
		    d != (double)(int64_t)d) {
			return cxlp_fail(-EPROTO, "etcd: field %s: %g is no "
			    "integer", name, d);
		}
		*out = (int64_t)d;
		return 0;
	}
	if (!cJSON_IsString(f) || f->valuestring[0] == '\0' ||
	    strlen(f->valuestring) > 20) {
		return cxlp_fail(-EPROTO, "etcd: field %s: not an integer "
		    "string", name);
	}
	errno = 0;
	*out = strtoll(f->valuestring, &end, 10);
	if (errno != 0 || *end != '\0' || !(isdigit((unsigned char)
	    f->valuestring[0]) || f->valuestring[0] == '-')) {
		return cxlp_fail(-EPROTO, "etcd: field %s: '%s' is no int64",
		    name, f->valuestring);
	}
	return 0;
}

/* A boolean field (absent: false). */
static int
get_bool(const cJSON *o, const char *name, bool *out)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);

	*out = false;
	if (f == NULL || cJSON_IsNull(f)) {
		return 0;
	}
	if (!cJSON_IsBool(f)) {
		return cxlp_fail(-EPROTO, "etcd: field %s: not a boolean",
		    name);
	}
	*out = cJSON_IsTrue(f);
	return 0;
}

/* An object field: NULL if absent, -EPROTO if present and not one. */
static int
get_obj(const cJSON *o, const char *name, const cJSON **out)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);

	*out = NULL;
	if (f == NULL || cJSON_IsNull(f)) {
		return 0;
	}
	if (!cJSON_IsObject(f)) {
		return cxlp_fail(-EPROTO, "etcd: field %s: not an object",
		    name);
	}
	*out = f;
	return 0;
}

/* The first element of an array field (NULL if absent or empty). */
static int
get_first(const cJSON *o, const char *name, const cJSON **out)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);

	*out = NULL;
	if (f == NULL || cJSON_IsNull(f)) {
		return 0;
	}
	if (!cJSON_IsArray(f)) {
		return cxlp_fail(-EPROTO, "etcd: field %s: not an array",
		    name);
	}
	if (f->child != NULL && !cJSON_IsObject(f->child)) {
		return cxlp_fail(-EPROTO, "etcd: %s[0]: not an object", name);
	}
	*out = f->child;
	return 0;
}

/* A base64 bytes field into dst (cap bytes): its length in *n. */
static int
get_bytes(const cJSON *o, const char *name, char *dst, size_t cap,
    size_t *n)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);
	int len;

	*n = 0;
	if (f == NULL || cJSON_IsNull(f)) {
		return 0;
	}
	if (!cJSON_IsString(f)) {
		return cxlp_fail(-EPROTO, "etcd: field %s: not a string",
		    name);
	}
	len = etcd_b64_decode(f->valuestring, strlen(f->valuestring), dst,
	    cap);
	if (len < 0) {
		return cxlp_fail(len, "etcd: field %s: %s", name,
		    len == -EMSGSIZE ? "value too long" : "bad base64");
	}
	*n = (size_t)len;
	return 0;
}

/* One mvccpb.KeyValue. */
static int
parse_kv(const cJSON *o, struct etcd_kv *kv)
{
	int rc;

	memset(kv, 0, sizeof(*kv));
	if ((rc = get_i64(o, "create_revision", &kv->create_rev)) != 0 ||
	    (rc = get_i64(o, "mod_revision", &kv->mod_rev)) != 0 ||
	    (rc = get_i64(o, "version", &kv->version)) != 0 ||
	    (rc = get_i64(o, "lease", &kv->lease)) != 0 ||
	    (rc = get_bytes(o, "value", kv->value, ETCD_VALUE_MAX,
	    &kv->vlen)) != 0) {
		return rc;
	}
	kv->value[kv->vlen] = '\0';
	if (kv->create_rev <= 0 || kv->mod_rev < kv->create_rev) {
		return cxlp_fail(-EPROTO, "etcd: key with create_revision "
		    "%" PRId64 ", mod_revision %" PRId64, kv->create_rev,
		    kv->mod_rev);
	}
	return 0;
}

/* A RangeResponse (or a txn's response_range). */
static int
parse_range(const cJSON *o, struct etcd_ans *ans)
{
	const cJSON *kv;
	int rc;

	if ((rc = get_i64(o, "count", &ans->count)) != 0 ||
	    (rc = get_first(o, "kvs", &kv)) != 0) {
		return rc;
	}
	if (kv != NULL) {
		if ((rc = parse_kv(kv, &ans->kv)) != 0) {
			return rc;
		}
		ans->has_kv = true;
	}
	if (ans->count < (ans->has_kv ? 1 : 0)) {
		return cxlp_fail(-EPROTO, "etcd: range of count %" PRId64
		    " with%s keys", ans->count, ans->has_kv ? "" : "out");
	}
	return 0;
}

/* f (a base64 field), decoded and cut to cap - 1 bytes, into dst */
static int
get_cut(const cJSON *o, const char *name, char *dst, size_t cap)
{
	char *tmp = malloc(ETCD_VALUE_MAX + 1);
	size_t n;
	int rc;

	if (tmp == NULL) {
		return cxlp_fail(-ENOMEM, "etcd: no memory");
	}
	rc = get_bytes(o, name, tmp, ETCD_VALUE_MAX, &n);
	if (rc == 0) {
		n = n < cap - 1 ? n : cap - 1;
		memcpy(dst, tmp, n);
		dst[n] = '\0';
	}
	free(tmp);
	return rc;
}

/* A RangeResponse over a prefix: every key of kvs (the first
 * ETCD_LIST_MAX kept) with its value and lease. */
static int
parse_list(const cJSON *o, struct etcd_ans *ans)
{
	const cJSON *kvs = cJSON_GetObjectItemCaseSensitive(o, "kvs");
	const cJSON *kv;
	int rc;

	if ((rc = parse_range(o, ans)) != 0 || kvs == NULL) {
		return rc;
	}
	cJSON_ArrayForEach(kv, kvs) {
		struct etcd_item *it = &ans->items[ans->nitems];

		if (ans->nitems == ETCD_LIST_MAX) {
			break;
		}
		if (!cJSON_IsObject(kv)) {
			return cxlp_fail(-EPROTO, "etcd: kvs holds a non-object");
		}
		if ((rc = get_cut(kv, "key", it->key, sizeof(it->key))) != 0 ||
		    (rc = get_cut(kv, "value", it->value,
		    sizeof(it->value))) != 0 ||
		    (rc = get_i64(kv, "lease", &it->lease)) != 0) {
			return rc;
		}
		ans->nitems++;
	}
	return 0;
}

/* A TxnResponse: responses[0] is the put of success or the range of
 * failure. */
static int
parse_txn(const cJSON *o, struct etcd_ans *ans)
{
	const cJSON *r0, *sub;
	int rc;

	if ((rc = get_bool(o, "succeeded", &ans->succeeded)) != 0 ||
	    (rc = get_first(o, "responses", &r0)) != 0) {
		return rc;
	}
	if (r0 == NULL) {
		return cxlp_fail(-EPROTO, "etcd: txn answer without "
		    "responses");
	}
	if (ans->succeeded) {
		return get_obj(r0, "response_put", &sub) != 0 ? -EPROTO :
		    sub == NULL ? cxlp_fail(-EPROTO, "etcd: txn succeeded "
		    "without response_put") : 0;
	}
	if ((rc = get_obj(r0, "response_range", &sub)) != 0) {
		return rc;
	}
	if (sub == NULL) {
		return cxlp_fail(-EPROTO, "etcd: failed txn without "
		    "response_range");
	}
	return parse_range(sub, ans);
}

/* An error answer: {"error": "...", "code": N, "message": "..."} or, in
 * a stream, {"error": {"grpc_code": N, "message": "..."}}. */
static int
parse_error(const cJSON *o, struct etcd_ans *ans)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "error");
	const cJSON *msg;
	int64_t code;
	int rc;

	if (cJSON_IsObject(err)) {
		o = err;
		rc = get_i64(o, "grpc_code", &code);
	} else {
		rc = get_i64(o, "code", &code);
	}
	if (rc != 0) {
		return rc;
	}
	if (code <= 0 || code > 16) {
		return cxlp_fail(-EPROTO, "etcd: error answer with code %"
		    PRId64, code);
	}
	ans->code = (int)code;
	msg = cJSON_GetObjectItemCaseSensitive(o, "message");
	snprintf(ans->msg, sizeof(ans->msg), "%s", cJSON_IsString(msg) ?
	    msg->valuestring : "(no message)");
	return 0;
}

/* The answer of call, whose top object is o. */
static int
parse_call(enum etcd_call call, const cJSON *o, struct etcd_ans *ans)
{
	const cJSON *hdr;
	int rc;

	if (cJSON_GetObjectItemCaseSensitive(o, "error") != NULL) {
		return parse_error(o, ans);
	}
	if (call == ETCD_KEEPALIVE) {
		/* a stream: {"result": {...}} */
		if ((rc = get_obj(o, "result", &o)) != 0) {
			return rc;
		}
		if (o == NULL) {
			return cxlp_fail(-EPROTO, "etcd: keepalive answer "
			    "without result");
		}
	}
	if ((rc = get_obj(o, "header", &hdr)) != 0) {
		return rc;
	}
	if (hdr == NULL) {
		return cxlp_fail(-EPROTO, "etcd: answer without header");
	}
	if ((rc = get_i64(hdr, "revision", &ans->revision)) != 0) {
		return rc;
	}
	switch (call) {
	case ETCD_GRANT:
	case ETCD_KEEPALIVE:
		if ((rc = get_i64(o, "ID", &ans->id)) != 0 ||
		    (rc = get_i64(o, "TTL", &ans->ttl)) != 0) {
			return rc;
		}
		return ans->ttl < 0 ? cxlp_fail(-EPROTO, "etcd: negative "
		    "TTL") : 0;
	case ETCD_RANGE:
		return parse_range(o, ans);
	case ETCD_LIST:
		return parse_list(o, ans);
	case ETCD_DELETE:
		return get_i64(o, "deleted", &ans->count);
	case ETCD_TXN:
		return parse_txn(o, ans);
	case ETCD_REVOKE:
	case ETCD_PUT:
		return 0;
	}
	return cxlp_fail(-EINVAL, "etcd: unknown call %d", (int)call);
}

/* etcd_parse -- see etcd.h. */
int
etcd_parse(enum etcd_call call, const char *body, size_t len,
    struct etcd_ans *ans)
{
	cJSON *root;
	char *copy;
	int rc;

	memset(ans, 0, sizeof(*ans));
	if (len > ETCD_BODY_MAX) {
		return cxlp_fail(-EMSGSIZE, "etcd: answer of %zu bytes", len);
	}
	if (memchr(body, '\0', len) != NULL) {
		return cxlp_fail(-EPROTO, "etcd: answer holds a NUL byte");
	}
	/* cJSON_ParseWithLength takes trailing garbage after a value, and
	 * ParseWithLengthOpts(require_null_terminated) fails whenever the
	 * value ends the buffer: so a copy with its NUL counted */
	if ((copy = malloc(len + 1)) == NULL) {
		return cxlp_fail(-ENOMEM, "etcd: no memory for an answer");
	}
	memcpy(copy, body, len);
	copy[len] = '\0';
	root = cJSON_ParseWithLengthOpts(copy, len + 1, NULL, 1);
	free(copy);
	if (root == NULL) {
		return cxlp_fail(-EPROTO, "etcd: answer is not JSON (%zu "
		    "bytes)", len);
	}
	rc = cJSON_IsObject(root) ? parse_call(call, root, ans) :
	    cxlp_fail(-EPROTO, "etcd: answer is not a JSON object");
	cJSON_Delete(root);
	if (rc != 0) {
		memset(ans, 0, sizeof(*ans));
	}
	return rc;
}
