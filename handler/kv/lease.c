/*
 * lease.c -- leases from the handler's side: hold keys out of eviction
 * (and delete) for a while, without having to release them (the server's
 * metaserver/lease.c keeps them). A leased retrieve or store uses the handler's
 * lease_ms (cxlp_config_set_lease_ms), named in its HELLO; cxlp_lease
 * takes any time per call, renews, or with 0 releases.
 */
#include <errno.h>
#include <stdlib.h>

#include "err.h"
#include "kv.h"

/* cxlp_batch_lease -- see cxlpool.h */
int
cxlp_batch_lease(struct cxlp_handler *h, size_t n, const void *const keys[],
    const size_t key_lens[], unsigned lease_ms, int status[])
{
	struct proto_result *res;
	struct creply rep;
	struct pbuf body;
	uint32_t got = 0;
	int rc;

	if (status == NULL) {
		return cxlp_fail(-EINVAL, "lease: status is NULL");
	}
	if ((rc = h_check_open(h)) != 0 ||
	    (rc = h_check_keys(n, keys, key_lens)) != 0) {
		return rc;
	}
	if ((res = calloc(n, sizeof(*res))) == NULL) {
		return cxlp_fail(-ENOMEM, "lease: out of memory");
	}
	pbuf_init(&body);
	proto_put_lease_req(&body, lease_ms, n, keys, key_lens);
	rc = body.err != 0 ? cxlp_fail(body.err, "lease: out of memory") :
	    h_call(h, PROTO_OP_LEASE, &body, &rep);
	pbuf_fini(&body);
	if (rc == 0) {
		rc = h_get_results(&rep, res, n, true, &got);
		client_reply_fini(&rep);
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		status[i] = res[i].status;
	}
	free(res);
	return rc;
}

/* cxlp_lease -- see cxlpool.h */
int
cxlp_lease(struct cxlp_handler *h, const void *key, size_t key_len,
    unsigned lease_ms)
{
	const void *keys[1] = { key };
	int st = 0;
	int rc = cxlp_batch_lease(h, 1, keys, &key_len, lease_ms, &st);

	if (rc == 0 && st != 0) {
		rc = cxlp_fail(st, "lease: %s", cxlp_strerror(st));
	}
	return rc;
}
