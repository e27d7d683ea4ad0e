/*
 * electfx.h -- the election tests' fixture (test_fencing.c, and through
 * standbyfx.h test_standby.c and test_follow.c): metaservers started
 * with --elect on simulated hosts of srv's sim pool, against an etcd the
 * test starts (tests/metaserver/etcd_fixture.c), and the probes that
 * tell whether one serves, what pool-inspect and /metrics say.
 */
#ifndef CXLP_ELECTFX_H
#define CXLP_ELECTFX_H

#include <stdbool.h>
#include <stdint.h>

#include "etcd_fixture.h"
#include "mhtest.h"

#define SBFX_EXIT_LOST 3        /* metaserver/ms_int.h MS_EXIT_LOST */
#define SBFX_SERVE_WAIT_MS 60000u /* a takeover, on a slow machine */

extern struct etcdfx sbfx_etcd;

/* sbfx_now_ms -- CLOCK_MONOTONIC, ms. */
uint64_t sbfx_now_ms(void);
/* sbfx_spawn -- start s on simulated host host with --elect to
 * sbfx_etcd, --elect-ttl ttl (e.g. "2s"), on srv's pool, its socket and
 * log named by tag; with record (may be NULL) as its CXLP_SIM_RECORD
 * (pool/sim.c note 5), and --metrics on loopback metrics_port (0:
 * none). Does not wait for it. */
void sbfx_spawn(struct test_server *s, const char *host, const char *tag,
    const char *ttl, const char *record, int metrics_port);
/* sbfx_spawn_flag -- sbfx_spawn with one more argument, flag (NULL:
 * none), e.g. "--elect-term-reset". */
void sbfx_spawn_flag(struct test_server *s, const char *host,
    const char *tag, const char *ttl, const char *record, int metrics_port,
    const char *flag);
/* sbfx_free_port -- a loopback TCP port free now. */
int sbfx_free_port(void);
/* sbfx_metrics -- GET /metrics of the server on loopback port into
 * out[cap] (headers and body); asserts it connects. */
void sbfx_metrics(int port, char *out, size_t cap);
/* sbfx_wait_log -- until s's log has needle; asserts s lives meanwhile
 * and that it comes within SBFX_SERVE_WAIT_MS. */
void sbfx_wait_log(struct test_server *s, const char *needle);
/* sbfx_log_count -- how many lines of s's log have needle. */
unsigned sbfx_log_count(const struct test_server *s, const char *needle);
/* sbfx_serves -- whether a handler connects to url (HELLO answered)
 * within timeout_ms. */
bool sbfx_serves(const char *url, unsigned timeout_ms);
/* sbfx_first_call -- poll url until a connect succeeds; the ms since t0
 * (asserts it comes within SBFX_SERVE_WAIT_MS). */
uint64_t sbfx_first_call(const char *url, uint64_t t0);
/* sbfx_expect_exit -- reap s within ms; asserts it exited with status;
 * s->pid = 0 then. */
void sbfx_expect_exit(struct test_server *s, int status, unsigned ms);
/* sbfx_summary -- pool-inspect summary --json of srv's pool (with
 * --elect to sbfx_etcd if elect) into out[cap]; asserts it ran. */
void sbfx_summary(char *out, size_t cap, bool elect);
/* sbfx_json_u64 -- the number of "name" that follows the text after
 * (NULL: the first) in json; asserts there is one. */
uint64_t sbfx_json_u64(const char *json, const char *after,
    const char *name);
/* sbfx_pool_term -- the pool's term, as pool-inspect summary --json
 * reads it. */
uint64_t sbfx_pool_term(void);
/* sbfx_log_elect_lines -- the election lines of the log at path, to the
 * test's stderr. */
void sbfx_log_elect_lines(const char *path);
/* sbfx_stop -- s killed (SIGCONT first: it may be stopped), its socket
 * and log removed (the log kept with CXLP_TEST_KEEP_LOGS). NULL-safe on
 * a server never started. */
void sbfx_stop(struct test_server *s);

#endif /* CXLP_ELECTFX_H */
