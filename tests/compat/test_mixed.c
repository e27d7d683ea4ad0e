/*
 * test_mixed.c -- handlers of the previous release and of this one on
 * one metaserver: old handlers on the new metaserver (values stored and
 * read back byte for byte, pins owned and counted, deletes refused as
 * they should be), old and new handlers at once on one pool, and new
 * handlers on the old metaserver, which negotiate protocol 2 with it
 * (common/proto.h, "Negotiation").
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "compat.h"
#include "cxlpool.h"

#define POOL_BYTES (64ull << 20)

static struct test_server srv;

static void
teardown(void)
{
	if (srv.pool[0] != '\0') {
		test_server_stop(&srv);
	}
}

TestSuite(mixed, .fini = teardown, .timeout = 60);

static const char *
rc_line(char *buf, size_t n, const char *tag, unsigned i, int rc)
{
	snprintf(buf, n, "%s %u %d", tag, i, rc);
	return buf;
}

static void
start(struct compat_client *cl, enum compat_rel rel)
{
	cr_assert_eq(compat_client_start(cl, rel, srv.url), 0,
	    "%s handler connects (server log %s)",
	    rel == COMPAT_OLD ? "old" : "new", srv.log);
}

Test(mixed, old_handlers_on_the_new_metaserver)
{
	struct compat_client a, b;
	char w[64];

	compat_need_previous();
	cr_assert_eq(compat_server_start(&srv, COMPAT_NEW, POOL_BYTES, NULL),
	    0);
	start(&a, COMPAT_OLD);
	start(&b, COMPAT_OLD);
	compat_expect(&a, "ok 200", "store a 0 200");
	compat_expect(&a, "ok 20", "store ap 0 20 pin");
	compat_expect(&b, "ok 200", "check a 0 200");
	compat_expect(&b, "ok 20", "check ap 0 20");
	/* pins are the session's: b holds none, a's refuse its own delete */
	compat_expect(&b, rc_line(w, sizeof(w), "err", 0, CXLP_E_NOTPINNED),
	    "unpin ap 0 1");
	compat_expect(&a, rc_line(w, sizeof(w), "rc", 0, CXLP_E_PINNED),
	    "del ap 0 1");
	compat_expect(&b, rc_line(w, sizeof(w), "rc", 0, CXLP_E_PERM),
	    "del a 0 1");
	compat_expect(&a, "ok", "unpin ap 0 20");
	compat_expect(&a, "ok", "del ap 0 20");
	compat_expect(&b, rc_line(w, sizeof(w), "bad", 0, CXLP_E_NOTFOUND),
	    "check ap 0 1");
	compat_expect(&b, "keys 200 pins 0 sessions 2", "stats");
	cr_assert_eq(compat_client_stop(&a), 0);
	cr_assert_eq(compat_client_stop(&b), 0);
}

Test(mixed, old_and_new_handlers_at_once_on_one_pool)
{
	struct compat_client o, n;
	char w[64];

	compat_need_previous();
	cr_assert_eq(compat_server_start(&srv, COMPAT_NEW, POOL_BYTES, NULL),
	    0);
	start(&o, COMPAT_OLD);
	start(&n, COMPAT_NEW);
	compat_expect(&o, "ok 150", "store o 0 150");
	compat_expect(&n, "ok 150", "store n 0 150");
	compat_expect(&o, "ok 150", "check n 0 150");
	compat_expect(&n, "ok 150", "check o 0 150");
	/* the same keys from both: first writer wins, both acknowledged,
	 * and either reads the winner's bytes */
	compat_expect(&o, "ok 50", "store s 0 50");
	compat_expect(&n, "ok 50", "store s 0 50");
	compat_expect(&n, "ok 50", "check s 0 50");
	/* an old session's pin holds a new handler's key, and the reverse */
	compat_expect(&o, "ok", "pin n 0 1");
	compat_expect(&n, rc_line(w, sizeof(w), "rc", 0, CXLP_E_PINNED),
	    "del n 0 1");
	compat_expect(&n, "ok", "pin o 0 1");
	compat_expect(&o, rc_line(w, sizeof(w), "rc", 0, CXLP_E_PINNED),
	    "del o 0 1");
	compat_expect(&o, "ok", "unpin n 0 1");
	compat_expect(&n, "ok", "del n 0 1");
	compat_expect(&n, "ok", "unpin o 0 1");
	compat_expect(&o, "ok", "del o 0 1");
	compat_expect(&o, "keys 348 pins 0 sessions 2", "stats");
	cr_assert_eq(compat_client_stop(&o), 0);
	cr_assert_eq(compat_client_stop(&n), 0);
}

/* New handlers on the old metaserver: the new handler's HELLO at 3 is
 * refused in a version-2 reply, and it speaks 2 from then on (issue
 * 30); the old handler beside it reads its keys and the reverse. */
Test(mixed, new_handlers_on_the_old_metaserver)
{
	struct compat_client o, n;

	compat_need_previous();
	cr_assert_eq(compat_server_start(&srv, COMPAT_OLD, POOL_BYTES, NULL),
	    0);
	start(&n, COMPAT_NEW);
	start(&o, COMPAT_OLD);
	compat_expect(&n, "ok 150", "store n 0 150");
	compat_expect(&n, "ok 10", "store np 0 10 pin");
	compat_expect(&o, "ok 150", "check n 0 150");
	compat_expect(&o, "ok 150", "store o 0 150");
	compat_expect(&n, "ok 150", "check o 0 150");
	compat_expect(&n, "ok", "unpin np 0 10");
	compat_expect(&n, "ok", "del np 0 10");
	compat_expect(&n, "keys 300 pins 0 sessions 2", "stats");
	cr_assert_eq(compat_client_stop(&o), 0);
	cr_assert_eq(compat_client_stop(&n), 0);
}
