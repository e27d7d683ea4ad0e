/*
 * proto_int.h -- helpers shared by the codec's halves (proto.c, and the
 * bodies: proto_msg.c, proto_batch.c, proto_reclaim.c): field readers
 * that name the field that failed, and the version rules every body
 * follows (proto.h, "Versions"): where a body ends, and how an array of
 * records says their size.
 */
#ifndef CXLP_PROTO_INT_H
#define CXLP_PROTO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

int pr_reject(struct preader *r, int code);
bool pr_get_u16(struct preader *r, uint16_t *v, const char *field);
bool pr_get_u32(struct preader *r, uint32_t *v, const char *field);
bool pr_get_u64(struct preader *r, uint64_t *v, const char *field);
int pr_body_end(struct preader *r, const char *what);
int pr_check_flags(struct preader *r, uint32_t flags, uint32_t known,
    const char *field);
int pr_check_batch(struct preader *r, uint32_t n, size_t entry_min,
    const char *field);
int pr_get_string(struct preader *r, const char **s, uint16_t *len, size_t max,
    const char *field);
int pr_get_key(struct preader *r, struct proto_key *k, uint32_t i);

/* pbuf_v3, preader_v3 -- the frame is of version 3 or later: bodies
 * are extensible (proto.h, "Versions"). */
bool pbuf_v3(const struct pbuf *b);
bool preader_v3(const struct preader *r);
/* pbuf_put_rec -- version 3: the u16 record size of an array (after its
 * count); nothing in version 2. */
void pbuf_put_rec(struct pbuf *b, size_t rec);
/* pr_get_rec -- the record size of an array: version 3 reads it (>=
 * known, else CXLP_E_PROTO), version 2 has none (known). */
int pr_get_rec(struct preader *r, size_t known, size_t *rec,
    const char *field);
/* pr_rec_begin -- *sub: a reader over the next rec bytes of r (which
 * moves past them), of r's version; CXLP_E_PROTO when fewer are left.
 * pr_rec_end -- the record's fields are read: its unknown end is skipped,
 * and sub's error, if any, becomes r's. */
int pr_rec_begin(struct preader *r, size_t rec, struct preader *sub,
    const char *field);
int pr_rec_end(struct preader *r, struct preader *sub);
/* pbuf_put_len16, pbuf_fix_len16 -- a u16 length of what follows, written
 * as 0 at *at and set once it is known (version 3 SESSIONS entries). */
void pbuf_put_len16(struct pbuf *b, size_t *at);
void pbuf_fix_len16(struct pbuf *b, size_t at);

#endif /* CXLP_PROTO_INT_H */
