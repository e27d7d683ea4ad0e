/*
 * server.h -- test support: run a real cxlpool-metaserver process on a
 * temporary pool and ipc socket, for integration tests.
 *
 * Never call Criterion asserts from here: these functions return errors and
 * the test asserts. Safe to use in forked children (no Criterion state).
 */
#ifndef CXLP_TEST_SERVER_H
#define CXLP_TEST_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct test_server {
	pid_t pid;
	char pool[128];  /* pool file path */
	char url[160];   /* ipc:// URL it listens on */
	char log[128];   /* its stderr goes here */
	/* its simulated host (pool/sim.h: CXLP_SIM_HOST), for every start
	 * and restart; "": this process's. A test may change it between a
	 * kill and a restart (a server restarted on another host). */
	char sim_host[32];
};

/* test_server_start -- format a pool of size bytes under /dev/shm and start
 * the metaserver (path from $CXLP_METASERVER) on a fresh ipc socket, with
 * extra_args (NULL-terminated, may be NULL) appended. Waits until it prints
 * its ready line. Returns 0, or -1 with a reason on stderr. */
int test_server_start(struct test_server *s, uint64_t size,
    const char *const extra_args[]);

/* test_server_start_host -- test_server_start of a server on simulated
 * host host (s->sim_host; NULL or "": this process's). The simulator's
 * files beside a sim pool (<pool>.simhost-*, <pool>.simlock) go with the
 * pool at test_server_stop. */
int test_server_start_host(struct test_server *s, uint64_t size,
    const char *const extra_args[], const char *host);

/* test_server_restart -- start the metaserver again on the same pool and
 * socket (after a stop or kill). */
int test_server_restart(struct test_server *s, const char *const extra_args[]);

/* test_server_launch -- test_server_restart without the wait: a
 * metaserver that prints its ready line only later (a standby, --elect),
 * or never, is watched through its log (test_server_wait_log). s->log
 * may be changed first, so that two servers on one pool and socket
 * (a leader and its standby) keep a log each. */
int test_server_launch(struct test_server *s, const char *const extra_args[]);

/* test_server_wait_log -- until s's log has needle: 0, or -1 if ms
 * pass first or s exits (then reaped, s->pid = 0), a reason on stderr.
 * s is not killed. */
int test_server_wait_log(struct test_server *s, const char *needle,
    unsigned ms);

/* test_server_kill -- send sig and reap the process. */
void test_server_kill(struct test_server *s, int sig);

/* test_server_stop -- SIGTERM, reap, remove pool (and the simulator's
 * files beside it), socket and log. Returns
 * the exit status (0 for a clean stop). */
int test_server_stop(struct test_server *s);
/* test_server_stop_within -- the same, but a server still running ms
 * milliseconds after the SIGTERM is killed with SIGKILL and -1 returned. */
int test_server_stop_within(struct test_server *s, unsigned ms);

/* test_server_log_has -- the server's stderr contains needle. */
bool test_server_log_has(const struct test_server *s, const char *needle);

#endif /* CXLP_TEST_SERVER_H */
