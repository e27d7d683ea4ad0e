/*
 * test_hostmode.c -- a pool of coherence host serves the one host that
 * formatted it (issue 27 section 1, DESIGN contract 11): a handler on
 * another simulated host gets CXLP_E_HOST from cxlp_connect, with a
 * message that names the mode and how to format the pool to share it;
 * a metaserver on another simulated host refuses to start on it and
 * says so, and leaves the pool to its host. Both for the default format
 * of a plain file and for --coherence host.
 */
#include "mhtest.h"

TestSuite(hostmode, .fini = itest_stop, .timeout = 60);

#define POOL (32 * MiB)

static struct mh_conn
connect_from(const char *host)
{
	struct test_child c;
	struct mh_conn r;
	const char *argv[] = { "mh-worker", "connect", srv.url, "-", NULL };
	char path[4096];

	cr_assert_eq(test_worker_path(path, sizeof(path), "mh-worker"), 0);
	cr_assert_eq(test_child_spawn_host(&c, path, argv, host), 0);
	cr_assert(test_child_read(&c, &r, sizeof(r)), "connect on %s gave "
	    "no answer (exit %d)", host, itest_wait(&c));
	mh_wait_ok(&c, "connect");
	r.msg[sizeof(r.msg) - 1] = '\0';
	return r;
}

static void
handler_of_another_host_refused(const char *const args[])
{
	struct mh_conn r;

	cr_assert_eq(test_server_start_host(&srv, POOL, args, "A"), 0,
	    "metaserver did not start (log %s)", srv.log);
	r = connect_from("A");
	cr_assert_eq(r.rc, 0, "the host's own handler: %s (%s)",
	    cxlp_strerror(r.rc), r.msg);
	r = connect_from("B");
	cr_assert_eq(r.rc, CXLP_E_HOST, "a handler on host B: %d %s (%s)",
	    r.rc, cxlp_strerror(r.rc), r.msg);
	cr_assert(strstr(r.msg, "coherence host") != NULL &&
	    strstr(r.msg, "simulated host B") != NULL &&
	    strstr(r.msg, "--coherence sw --reformat") != NULL,
	    "the message: %s", r.msg);
	r = connect_from("A");
	cr_assert_eq(r.rc, 0, "the host's own handler after: %s (%s)",
	    cxlp_strerror(r.rc), r.msg);
}

Test(hostmode, a_handler_of_another_host_is_refused_by_a_default_pool)
{
	handler_of_another_host_refused(NULL);
}

Test(hostmode, a_handler_of_another_host_is_refused_by_a_host_pool)
{
	const char *const args[] = { "--coherence", "host", NULL };

	handler_of_another_host_refused(args);
}

static void
server_of_another_host_refused(const char *const args[])
{
	struct cxlp_handler *h;

	setenv("CXLP_SIM_HOST", "A", 1); /* this process's handler */
	cr_assert_eq(test_server_start_host(&srv, POOL, args, "A"), 0,
	    "metaserver did not start (log %s)", srv.log);
	h = itest_connect();
	itest_put(h, "hm", 3, 1, 1000);
	cxlp_close(&h);
	test_server_kill(&srv, SIGTERM);
	snprintf(srv.sim_host, sizeof(srv.sim_host), "B");
	cr_assert_neq(test_server_restart(&srv, args), 0, "a metaserver on "
	    "host B started on host A's pool");
	cr_assert(test_server_log_has(&srv, "formatted with coherence host "
	    "on another host than this one (simulated host B)"),
	    "no reason in %s", srv.log);
	cr_assert(test_server_log_has(&srv, "--coherence sw --reformat"),
	    "no way out in %s", srv.log);
	snprintf(srv.sim_host, sizeof(srv.sim_host), "A");
	cr_assert_eq(test_server_restart(&srv, args), 0, "host A's own "
	    "metaserver did not start again (log %s)", srv.log);
	h = itest_connect();
	cr_assert_eq(itest_get_check(h, "hm", 1), 3, "the key is not A's");
	cxlp_close(&h);
}

Test(hostmode, a_metaserver_of_another_host_does_not_start_on_a_default_pool)
{
	server_of_another_host_refused(NULL);
}

Test(hostmode, a_metaserver_of_another_host_does_not_start_on_a_host_pool)
{
	const char *const args[] = { "--coherence", "host", NULL };

	server_of_another_host_refused(args);
}
