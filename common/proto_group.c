/*
 * proto_group.c -- the bodies of request groups (layouts: proto.h): the
 * GROUP request that opens, commits, aborts or cancels one, and the group
 * id that opens the bodies of GROUP_REGISTER and GROUP_LOOKUP (whose rest
 * is a REGISTER or key batch, proto_batch.c).
 */
#include "err.h"
#include "proto.h"
#include "proto_int.h"

/* proto_put_group_id -- append u16 len + id (len <= PROTO_GROUP_ID_MAX) */
void
proto_put_group_id(struct pbuf *b, const void *id, size_t len)
{
	pbuf_put_u16(b, (uint16_t)len);
	pbuf_put_bytes(b, id, len);
}

/* proto_get_group_id -- decode it: 1..PROTO_GROUP_ID_MAX bytes, pointing
 * into the frame. */
int
proto_get_group_id(struct preader *r, const uint8_t **id, uint16_t *len)
{
	const char *s = NULL;
	int rc = pr_get_string(r, &s, len, PROTO_GROUP_ID_MAX, "group.id");

	if (rc != 0) {
		return rc;
	}
	if (*len == 0) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO, "group.id: empty"));
	}
	*id = (const uint8_t *)s;
	return 0;
}

/* proto_put_group -- append a GROUP request body. */
void
proto_put_group(struct pbuf *b, const struct proto_group *g)
{
	pbuf_put_u32(b, g->cmd);
	proto_put_group_id(b, g->id, g->id_len);
	pbuf_put_u32(b, g->total);
	pbuf_put_u32(b, g->flags);
}

/* proto_get_group -- decode one: a known command, an id, a total within
 * PROTO_GROUP_TOTAL_MAX and flags only OPEN may carry. */
int
proto_get_group(struct preader *r, struct proto_group *g)
{
	int rc;

	if (!pr_get_u32(r, &g->cmd, "group.cmd")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (g->cmd < PROTO_GROUP_OPEN || g->cmd > PROTO_GROUP_CANCEL) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO, "group.cmd: %u "
		    "unknown", g->cmd));
	}
	if ((rc = proto_get_group_id(r, &g->id, &g->id_len)) != 0) {
		return rc;
	}
	if (!pr_get_u32(r, &g->total, "group.total") ||
	    !pr_get_u32(r, &g->flags, "group.flags")) {
		return pr_reject(r, CXLP_E_PROTO);
	}
	if (g->total > PROTO_GROUP_TOTAL_MAX) {
		return pr_reject(r, cxlp_fail(CXLP_E_PROTO, "group.total: %u "
		    "above %u", g->total, PROTO_GROUP_TOTAL_MAX));
	}
	rc = pr_check_flags(r, g->flags, g->cmd == PROTO_GROUP_OPEN ?
	    PROTO_GF_PIN : 0, "group.flags");
	return rc != 0 ? rc : pr_body_end(r, "group");
}
