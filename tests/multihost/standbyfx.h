/*
 * standbyfx.h -- fixture of the standby tests (issue 28; test_standby.c,
 * test_follow.c): one etcd the test starts (tests/metaserver/
 * etcd_fixture.c; skipped without an etcd binary), and metaservers run
 * with --elect on simulated hosts of one sim pool (mhtest.h's srv).
 */
#ifndef CXLP_STANDBYFX_H
#define CXLP_STANDBYFX_H

#include "etcd_fixture.h"
#include "mhtest.h"

extern struct etcdfx fx;         /* the test's etcd */
extern struct test_server other; /* the server srv is not */

/* standby_fini -- the suites' fini: other (stopped or not) killed, srv
 * stopped (itest_stop), etcd stopped. */
void standby_fini(void);
/* now_ms -- CLOCK_MONOTONIC, ms. */
uint64_t now_ms(void);
/* spawn_elect -- start s on simulated host host, on srv's pool, with
 * --elect to fx (TTL 2 s), listening on a socket named for tag; no wait
 * for ready. */
void spawn_elect(struct test_server *s, const char *host, const char *tag);
/* wait_log -- until s's log has needle (asserts that s lives
 * meanwhile, and gives up after a minute). */
void wait_log(struct test_server *s, const char *needle);
/* leader_and_standby -- etcd started, a pool of pool_size bytes formatted
 * by a plain start (so that the election's key is the default,
 * /cxlpool/<pool uuid>), then served by A (host A) as leader with *b
 * (host B) as its standby. srv is A from then on, other B. */
void leader_and_standby(struct test_server *b, uint64_t pool_size);
/* log_elect_lines -- the election lines of the log at path, to stderr:
 * the takeover's parts. */
void log_elect_lines(const char *path);

#endif /* CXLP_STANDBYFX_H */
