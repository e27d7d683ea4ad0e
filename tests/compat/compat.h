/*
 * compat.h -- the compat suite's fixture: the previous release's
 * programs (tests/compat/build-previous.sh), metaservers of either
 * release on one pool, and compat-client handlers of either release
 * driven line by line (client.c).
 *
 * Never call Criterion asserts from here but in compat_need_previous:
 * these functions return errors (reason on stderr) and the test
 * asserts.
 */
#ifndef CXLP_TEST_COMPAT_H
#define CXLP_TEST_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc.h"
#include "server.h"

enum compat_rel { COMPAT_OLD, COMPAT_NEW };

/* compat_need_previous -- the test needs the previous release: skip it
 * (cr_skip_test, naming what is missing) when tests/compat/build-previous.sh
 * has not built it, or fail it when CXLP_COMPAT_REQUIRE=1 says it must
 * be there (scripts/test.sh). Returns only when it is there. */
void compat_need_previous(void);

/* compat_path -- the program of release rel: "cxlpool-metaserver",
 * "pool-inspect" or "compat-client". Never NULL after
 * compat_need_previous (a static buffer per name and release). */
const char *compat_path(enum compat_rel rel, const char *name);

/* compat_server_start -- test_server_start of rel's metaserver on a new
 * pool of size bytes (extra: NULL-terminated args or NULL).
 * compat_server_restart -- the same pool and socket, rel's metaserver.
 * Both return 0 or -1 (server.h). */
int compat_server_start(struct test_server *s, enum compat_rel rel,
    uint64_t size, const char *const extra[]);
int compat_server_restart(struct test_server *s, enum compat_rel rel,
    const char *const extra[]);
/* compat_server_launch -- test_server_launch of rel's metaserver on s's
 * pool and socket: not waited for (a standby). 0 or -1. */
int compat_server_launch(struct test_server *s, enum compat_rel rel,
    const char *const extra[]);
/* compat_server_run -- rel's metaserver on s's pool until it exits by
 * itself (a refusal, a crash point): its exit status, 128 + signal if a
 * signal ended it, -1 if it could not start or was still running after
 * 30 s (then killed). Its stderr goes to s->log. */
int compat_server_run(struct test_server *s, enum compat_rel rel);

/* A handler of one release: compat-client on a pair of pipes. */
struct compat_client {
	struct test_child c;
	enum compat_rel rel;
	char buf[512];
	size_t have;
};

/* compat_client_start -- start rel's compat-client on url and wait for
 * its "ready". Returns 0, or -1 (the client was reaped). */
int compat_client_start(struct compat_client *cl, enum compat_rel rel,
    const char *url);
/* compat_client_cmd -- send one command line (printf-style, no newline)
 * and read its one-line reply into out[n] (newline stripped), waiting
 * up to 60 s. Returns 0, or -1 (no reply; out holds "(none)"). */
int compat_client_cmd(struct compat_client *cl, char *out, size_t n,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* compat_expect -- compat_client_cmd, and assert (Criterion) that the
 * reply is want, the failure naming the client's release and the
 * command. */
void compat_expect(struct compat_client *cl, const char *want,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* compat_client_stop -- "quit", then reap it: its exit code (0 clean). */
int compat_client_stop(struct compat_client *cl);

/* compat_inspect -- rel's pool-inspect with args (NULL-terminated, after
 * the program name), its output to out_path: its exit status, -1 if it
 * could not run. */
int compat_inspect(enum compat_rel rel, const char *const args[],
    const char *out_path);

/* compat_sb_minor -- the minor of the pool's superblock as the bytes
 * say (read straight from the file), or -1. */
int compat_sb_minor(const char *pool);

#endif /* CXLP_TEST_COMPAT_H */
