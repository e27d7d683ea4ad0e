/*
 * proto_reclaim.c -- the bodies of a full pool (layouts: proto.h): a
 * RECLAIM, by which a handler short of pages asks for room and gets a new
 * region or the pages of its own regions whose keys the server evicted,
 * and the asks of a HEARTBEAT reply, by which the server asks a handler
 * for regions back, and the LEASE request, by which a reader holds keys
 * out of eviction for a while. Apart from proto_msg.c: these are
 * eviction's, and the RECLAIM reply is the one body whose shape depends
 * on a field of it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "proto.h"
#include "proto_int.h"

#define PAGE_ENTRY_LEN 12 /* u32 region, u32 gen, u32 page */
#define ASK_ENTRY_LEN 8   /* u32 region, u32 gen */

/* proto_put_asks -- append a HEARTBEAT reply's asks (n <=
 * PROTO_ASKS_MAX). */
void
proto_put_asks(struct pbuf *b, uint32_t n, const struct proto_region_ref *v)
{
	pbuf_put_u32(b, n);
	pbuf_put_rec(b, ASK_ENTRY_LEN);
	for (uint32_t i = 0; i < n; i++) {
		pbuf_put_u32(b, v[i].region);
		pbuf_put_u32(b, v[i].gen);
	}
}

/* proto_get_asks -- decode them into v[0..*n). */
int
proto_get_asks(struct preader *r, struct proto_region_ref *v, uint32_t *n)
{
	size_t rec = ASK_ENTRY_LEN;

	*n = 0;
	if (!pr_get_u32(r, n, "asks.n") || *n > PROTO_ASKS_MAX) {
		*n = 0;
		cxlp_fail(CXLP_E_PROTO, "asks: count");
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (pr_get_rec(r, ASK_ENTRY_LEN, &rec, "asks.rec") != 0) {
		*n = 0;
		return r->err;
	}
	for (uint32_t i = 0; i < *n; i++) {
		struct preader sub;

		(void)pr_rec_begin(r, rec, &sub, "asks");
		(void)(pr_get_u32(&sub, &v[i].region, "asks.region") &&
		    pr_get_u32(&sub, &v[i].gen, "asks.gen"));
		if (pr_rec_end(r, &sub) != 0) {
			*n = 0;
			return r->err;
		}
	}
	return pr_body_end(r, "asks");
}

/* proto_put_reclaim_req -- append a RECLAIM request body. */
void
proto_put_reclaim_req(struct pbuf *b, uint64_t len, uint64_t page_size,
    uint32_t want, uint32_t wait_ms)
{
	pbuf_put_u64(b, len);
	pbuf_put_u64(b, page_size);
	pbuf_put_u32(b, want);
	pbuf_put_u32(b, wait_ms);
}

/* proto_get_reclaim_req -- decode a RECLAIM request body; want must be
 * 1..PROTO_RECLAIM_MAX. */
int
proto_get_reclaim_req(struct preader *r, uint64_t *len, uint64_t *page_size,
    uint32_t *want, uint32_t *wait_ms)
{
	*len = *page_size = 0;
	*want = *wait_ms = 0;
	if (!pr_get_u64(r, len, "reclaim.len") ||
	    !pr_get_u64(r, page_size, "reclaim.page_size") ||
	    !pr_get_u32(r, want, "reclaim.want") ||
	    !pr_get_u32(r, wait_ms, "reclaim.wait_ms")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (*want == 0 || *want > PROTO_RECLAIM_MAX) {
		cxlp_fail(CXLP_E_PROTO, "reclaim.want %u not in 1..%u", *want,
		    PROTO_RECLAIM_MAX);
		return pr_reject(r, CXLP_E_PROTO);
	}
	return pr_body_end(r, "reclaim");
}

/* proto_put_reclaimed -- append a RECLAIM reply body: the region loc
 * (kind PROTO_RECLAIM_REGION) or the n pages (PROTO_RECLAIM_PAGES). */
void
proto_put_reclaimed(struct pbuf *b, const struct proto_reclaimed *m)
{
	pbuf_put_u32(b, m->kind);
	if (m->kind == PROTO_RECLAIM_REGION) {
		proto_put_loc(b, &m->loc);
		return;
	}
	pbuf_put_u32(b, m->n);
	pbuf_put_rec(b, PAGE_ENTRY_LEN);
	for (uint32_t i = 0; i < m->n; i++) {
		pbuf_put_u32(b, m->pages[i].region);
		pbuf_put_u32(b, m->pages[i].gen);
		pbuf_put_u32(b, m->pages[i].page);
	}
}

/* proto_get_reclaimed -- decode a RECLAIM reply body into *m; pages is
 * a malloc'd array (caller frees; NULL when n is 0). */
int
proto_get_reclaimed(struct preader *r, struct proto_reclaimed *m)
{
	size_t rec = PAGE_ENTRY_LEN;

	memset(m, 0, sizeof(*m));
	if (!pr_get_u32(r, &m->kind, "reclaimed.kind")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (m->kind == PROTO_RECLAIM_REGION) {
		if (proto_get_loc(r, &m->loc) != 0) {
			return pr_reject(r, CXLP_E_PROTO);
		}
		return pr_body_end(r, "reclaimed");
	}
	if (m->kind != PROTO_RECLAIM_PAGES ||
	    !pr_get_u32(r, &m->n, "reclaimed.n") || m->n == 0 ||
	    m->n > PROTO_RECLAIM_MAX ||
	    pr_get_rec(r, PAGE_ENTRY_LEN, &rec, "reclaimed.rec") != 0 ||
	    m->n > r->left / rec) {
		m->n = 0;
		cxlp_fail(CXLP_E_PROTO, "reclaimed: kind %u or count",
		    m->kind);
		return pr_reject(r, CXLP_E_PROTO);
	}
	if ((m->pages = calloc(m->n, sizeof(*m->pages))) == NULL) {
		m->n = 0;
		return cxlp_fail(-ENOMEM, "reclaimed: no memory");
	}
	for (uint32_t i = 0; i < m->n; i++) {
		struct preader sub;

		(void)pr_rec_begin(r, rec, &sub, "reclaimed");
		(void)(pr_get_u32(&sub, &m->pages[i].region,
		    "reclaimed.region") &&
		    pr_get_u32(&sub, &m->pages[i].gen, "reclaimed.gen") &&
		    pr_get_u32(&sub, &m->pages[i].page, "reclaimed.page"));
		(void)pr_rec_end(r, &sub);
	}
	if (pr_body_end(r, "reclaimed") != 0) {
		free(m->pages);
		memset(m, 0, sizeof(*m));
		return CXLP_E_PROTO;
	}
	return 0;
}

/* proto_put_lease_req -- append a LEASE request body. */
void
proto_put_lease_req(struct pbuf *b, uint32_t lease_ms, size_t n,
    const void *const keys[], const size_t key_lens[])
{
	pbuf_put_u32(b, lease_ms);
	proto_put_keys(b, 0, n, keys, key_lens);
}

/* proto_get_lease_req -- decode a LEASE request body (*keys as
 * proto_get_keys: malloc'd, caller frees). */
int
proto_get_lease_req(struct preader *r, uint32_t *lease_ms, uint32_t *flags,
    struct proto_key **keys, uint32_t *n)
{
	*keys = NULL;
	*n = 0;
	if (!pr_get_u32(r, lease_ms, "lease.lease_ms")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	return proto_get_keys(r, flags, keys, n);
}
