/*
 * itest.h -- fixture shared by the integration tests: each test runs in its
 * own process (Criterion) with its own metaserver on a fresh pool.
 */
#ifndef CXLP_ITEST_H
#define CXLP_ITEST_H

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cxlpool.h"
#include "kvtest.h"
#include "proc.h"
#include "proxy.h"
#include "server.h"

#define MiB (1024ull * 1024)

extern struct test_server srv;

void itest_start(void);
void itest_stop(void);

/* cr_assert_rc(expr, want[, why]) -- expr returned the cxlp code want. */
#define cr_assert_rc(expr, ...) cr_assert_rc_(expr, __VA_ARGS__, "")
#define cr_assert_rc_(expr, want, ...)                                     \
	do {                                                               \
		int rc_ = (expr);                                          \
		cr_assert_eq(rc_, (want), "%s = %d (%s: %s), want %d (%s)", \
		    #expr, rc_, cxlp_strerror(rc_), cxlp_errormsg(),       \
		    (int)(want), cxlp_strerror(want));                     \
	} while (0)

/*
 * A fault-injection proxy (tests/support/proxy.h) between handlers and srv,
 * for the fault and retry suites: itest_proxy_start starts srv and a proxy
 * on px_url with the suite's hook; itest_connect_via_proxy connects a
 * handler through it with a short timeout and the given retries.
 */
struct proxy;
extern struct proxy *px;
extern char px_url[160];

void itest_proxy_start(enum proxy_action (*hook)(void *, uint16_t,
    uint64_t, uint8_t *, size_t *, unsigned *));
void itest_proxy_stop(void);
struct cxlp_handler *itest_connect_via_proxy(unsigned timeout_ms,
    unsigned retries);

/* itest_assert_pool_checks -- pool-inspect check passes on srv's live
 * pool (its output goes to stderr when it does not). */
void itest_assert_pool_checks(void);

/* itest_connect -- a handler on srv with 4 KiB pages in 4 MiB regions. */
struct cxlp_handler *itest_connect(void);

/* itest_put -- alloc a page, fill it for (writer, key), store it under
 * kv_key(prefix, key); asserts it stored. Returns the page. */
cxlp_page_t itest_put(struct cxlp_handler *h, const char *prefix,
    uint32_t writer, uint32_t key, size_t len);

/* itest_get_check -- retrieve kv_key(prefix, key), check its pattern and
 * return the writer. */
uint32_t itest_get_check(struct cxlp_handler *h, const char *prefix,
    uint32_t key);

/*
 * Children are itest-worker processes (worker.c), exec'd fresh (a forked
 * child may connect a handler too: test_fork.c, handler/core/fork.c). A child
 * blocks until itest_go, plays
 * its role, and writes results that the parent reads with test_child_read
 * (proc.h).
 */
/* itest_spawn -- start itest-worker ROLE srv.url arg. */
void itest_spawn(struct test_child *c, const char *role, const char *arg);
void itest_go(struct test_child *c);
/* itest_wait -- reap; exit code, or 128 + signal. */
int itest_wait(struct test_child *c);

#endif
