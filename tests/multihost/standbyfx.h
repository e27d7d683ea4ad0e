/*
 * standbyfx.h -- fixture of the standby tests (issue 28; test_standby.c,
 * test_follow.c): a leader and a standby metaserver on simulated hosts
 * of one sim pool (mhtest.h's srv), elected through electfx.h's etcd and
 * started and watched with its helpers (sbfx_*), which test_fencing.c
 * shares.
 */
#ifndef CXLP_STANDBYFX_H
#define CXLP_STANDBYFX_H

#include "electfx.h"

extern struct test_server other; /* the server srv is not */

/* standby_fini -- the suites' fini: other (stopped or not) killed, srv
 * stopped (itest_stop), etcd stopped. */
void standby_fini(void);
/* leader_and_standby -- etcd started, a pool of pool_size bytes formatted
 * by a plain start (so that the election's key is the default,
 * /cxlpool/<pool uuid>), then served by A (host A) as leader with *b
 * (host B) as its standby, both with --elect-ttl 2s. srv is A from then
 * on, other B. */
void leader_and_standby(struct test_server *b, uint64_t pool_size);

#endif /* CXLP_STANDBYFX_H */
