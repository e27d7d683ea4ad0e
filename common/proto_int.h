/*
 * proto_int.h -- helpers shared by the codec's halves (proto.c, and the
 * bodies: proto_msg.c, proto_batch.c, proto_reclaim.c): field readers
 * that name the field that failed.
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

#endif /* CXLP_PROTO_INT_H */
