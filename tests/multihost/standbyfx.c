/*
 * standbyfx.c -- the standby tests' fixture (standbyfx.h): an etcd, a
 * leader and a standby metaserver on simulated hosts of one sim pool.
 * Shared by test_standby.c and test_follow.c; the metaservers are
 * electfx.c's (sbfx_spawn).
 */
#include <string.h>
#include <unistd.h>

#include "standbyfx.h"

struct test_server other;

/* standby_fini -- see standbyfx.h */
void
standby_fini(void)
{
	sbfx_stop(&other);
	itest_stop();
	etcdfx_stop(&sbfx_etcd);
}

/* leader_and_standby -- see standbyfx.h */
void
leader_and_standby(struct test_server *b, uint64_t pool_size)
{
	struct test_server a;

	etcdfx_skip_unless_present();
	etcdfx_start(&sbfx_etcd, 1);
	mh_start(pool_size, NULL);
	test_server_kill(&srv, SIGTERM);
	memset(&a, 0, sizeof(a));
	sbfx_spawn(&a, "A", "a", "2s", NULL, 0);
	sbfx_wait_log(&a, "cxlpool-metaserver: ready");
	sbfx_spawn(b, "B", "b", "2s", NULL, 0);
	sbfx_wait_log(b, "role=standby leader=");
	cr_assert(test_server_log_has(b, a.url), "B's log does not name the "
	    "leader's endpoint %s (log %s)", a.url, b->log);
	/* srv is A from here on (mh_spawn connects to srv.url) */
	unlink(srv.log);
	unlink(srv.url + strlen("ipc://"));
	srv = a;
	other = *b; /* so that a failed assertion stops B too */
}
