/*
 * mhtest.h -- fixture of the multi-host tests (suite multihost): a
 * metaserver on simulated host A of a fresh sim pool (itest.h's srv,
 * stopped by itest_stop, which also removes the simulator's files), and
 * mh-worker processes (mh.h) each on a host of the test's choosing.
 */
#ifndef CXLP_MHTEST_H
#define CXLP_MHTEST_H

#include "itest.h"
#include "mh.h"

/*
 * MH_ONE_HOST=<name> in the test's environment puts the metaserver and
 * every worker on that one host: the suite must then pass on any build
 * (one host is coherent with itself), which tells a failure of the
 * multi-host protocol from one of the tests.
 */
/* mh_host -- host, or MH_ONE_HOST's. */
const char *mh_host(const char *host);

/* mh_start -- srv on host A: a size-byte pool formatted --coherence sim,
 * no background eviction, plus extra (NULL-terminated, may be NULL). */
void mh_start(uint64_t size, const char *const extra[]);
/* mh_restart_on -- srv, killed or stopped, started again on host. */
void mh_restart_on(const char *host);

/* mh_spawn -- start `mh-worker ROLE srv.url ARG` on simulated host
 * host and wait for its MH_READY (it is connected). */
void mh_spawn(struct test_child *c, const char *host, const char *role,
    const char *arg);
/* mh_say -- write byte b to c's stdin (the go byte, a done byte ...). */
void mh_say(struct test_child *c, char b);
/* mh_hear -- read one byte of c's and assert it is b. */
void mh_hear(struct test_child *c, char b);
/* mh_specs -- a reader's go byte, then its n specs. */
void mh_specs(struct test_child *c, const struct mh_spec *s, uint32_t n);
/* mh_result -- read a reader's struct mh_result. */
struct mh_result mh_result(struct test_child *c);
/* mh_expect_clean -- r saw every must key intact and nothing wrong, and
 * at least seen keys (what names the reader in the messages): true, or
 * false after cr_expect failures that say what was wrong. */
bool mh_expect_clean(const struct mh_result *r, const char *what,
    uint32_t seen);
/* mh_readers_last_pass -- give readers r[0..n) (on hosts[i], in modes[i])
 * the specs spec[0..ns) for a last pass, and assert that each read every
 * one of the must acknowledged keys intact and exited cleanly. */
void mh_readers_last_pass(struct test_child r[], unsigned n,
    const char *const hosts[], const char *const modes[],
    const struct mh_spec spec[], uint32_t ns, uint32_t must);

/* A writer's acknowledged keys: acked[i] for key i < MH_ACKED_MAX. */
#define MH_ACKED_MAX 20000
struct mh_acks {
	uint8_t acked[MH_ACKED_MAX];
	uint32_t count, top; /* keys acknowledged; 1 + the highest */
	bool ended;          /* MH_END read */
};
/* mh_read_acks -- read c's acknowledged keys into a until at least want
 * of them (0: until MH_END or EOF). Returns false at EOF before that. */
bool mh_read_acks(struct test_child *c, struct mh_acks *a, uint32_t want);
/* mh_ack_specs -- specs for a's keys of prefix, writer: a run of must
 * keys per run of acknowledged ones, and the keys not acknowledged below
 * top + 2 batches as may-be (absent or intact). Returns how many it
 * wrote (at most max). */
uint32_t mh_ack_specs(const struct mh_acks *a, const char *prefix,
    uint32_t writer, struct mh_spec *out, uint32_t max);

/* mh_wait_ok -- reap c, assert it exited 0. */
void mh_wait_ok(struct test_child *c, const char *what);

#endif /* CXLP_MHTEST_H */
