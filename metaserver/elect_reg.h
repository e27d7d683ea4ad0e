/*
 * elect_reg.h -- the standbys' registry under the election key (elect.c
 * uses it; elect_reg.c): a standby keeps its record under
 * <key>/standby/<name> on a lease of its own, so that it goes when the
 * standby does; the leader lists that prefix for its /metrics and for
 * pool-inspect. Only for the election's thread (not thread-safe, but
 * for reg_standbys, which takes the registry's lock).
 */
#ifndef CXLP_ELECT_REG_H
#define CXLP_ELECT_REG_H

#include <stdint.h>

#include "elect.h"

struct etcd;
struct elect_reg;

/* reg_new -- a registry of name (NULL: this server does not register,
 * the leader still lists) with value, over etcd (not owned). Returns 0
 * and *out, or -ENOMEM / -EINVAL (a name too long or with a '/'). */
int reg_new(struct elect_reg **out, struct etcd *etcd, const char *key,
    const char *name, const char *value, uint64_t ttl_ms);
/* reg_free -- withdraw (revoke the standby lease), free; NULL-safe. */
void reg_free(struct elect_reg **r);
/* reg_standby_step -- a standby's turn: register, or renew the lease. */
void reg_standby_step(struct elect_reg *r);
/* reg_withdraw -- the standby's record goes (it was elected). */
void reg_withdraw(struct elect_reg *r);
/* reg_list -- the leader's turn: list the standbys. */
void reg_list(struct elect_reg *r);
/* reg_standbys -- the last listing: at most max into out; the count
 * there was in *count (-1: none yet) and when in *listed_ms. */
unsigned reg_standbys(struct elect_reg *r, struct elect_standby *out,
    unsigned max, int64_t *count, uint64_t *listed_ms);
/* reg_forget -- the listing is void (the term ended). */
void reg_forget(struct elect_reg *r);

#endif /* CXLP_ELECT_REG_H */
