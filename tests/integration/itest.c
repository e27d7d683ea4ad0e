/*
 * itest.c -- fixture for integration tests (see itest.h).
 */
#include <stdlib.h>

#include "itest.h"

struct test_server srv;
struct proxy *px;
char px_url[160];

void
itest_start(void)
{
	cr_assert_eq(test_server_start(&srv, 256 * MiB, NULL), 0,
	    "metaserver did not start");
}

void
itest_stop(void)
{
	int st = test_server_stop(&srv);

	cr_expect_eq(st, 0, "metaserver did not stop cleanly (status %d), "
	    "see %s", st, srv.log);
}

struct cxlp_handler *
itest_connect(void)
{
	struct cxlp_handler *h = kv_connect(srv.url, 4096, 4 * MiB, true);

	cr_assert_not_null(h, "connect to %s failed", srv.url);
	return h;
}

cxlp_page_t
itest_put(struct cxlp_handler *h, const char *prefix, uint32_t writer,
    uint32_t key, size_t len)
{
	char k[64];
	size_t kl = kv_key(k, sizeof(k), prefix, key);
	cxlp_page_t pg;
	void *buf;
	bool ok = false;

	cr_assert_rc(cxlp_alloc(h, &pg, &buf), 0);
	kv_fill(buf, len, writer, key);
	cr_assert_rc(cxlp_store(h, k, kl, pg, len, 0, &ok), 0);
	cr_assert(ok, "store of %s reported false", k);
	return pg;
}

uint32_t
itest_get_check(struct cxlp_handler *h, const char *prefix, uint32_t key)
{
	char k[64];
	size_t kl = kv_key(k, sizeof(k), prefix, key);
	const void *data = NULL;
	size_t len = 0;
	uint32_t writer = 0;

	cr_assert_rc(cxlp_retrieve(h, k, kl, 0, &data, &len), 0);
	cr_assert(kv_check(data, len, key, &writer), "bytes of %s are wrong",
	    k);
	return writer;
}

void
itest_spawn(struct test_child *c, const char *role, const char *arg)
{
	const char *argv[] = {"itest-worker", role, srv.url, arg, NULL};
	char path[4096];

	cr_assert_eq(test_worker_path(path, sizeof(path), "itest-worker"), 0);
	cr_assert_eq(test_child_spawn(c, path, argv), 0, "cannot start %s",
	    path);
}

void
itest_go(struct test_child *c)
{
	cr_assert_eq(write(c->go_fd, "g", 1), 1);
	close(c->go_fd);
	c->go_fd = -1;
}

int
itest_wait(struct test_child *c)
{
	if (c->go_fd >= 0) {
		close(c->go_fd);
	}
	close(c->out_fd);
	return kv_wait_child(c->pid);
}

void
itest_proxy_start(enum proxy_action (*hook)(void *, uint16_t, uint64_t,
    uint8_t *, size_t *, unsigned *))
{
	itest_start();
	snprintf(px_url, sizeof(px_url), "ipc:///tmp/cxlp-proxy-%d.sock",
	    getpid());
	cr_assert_eq(proxy_start(&px, px_url, srv.url, hook, NULL), 0);
}

void
itest_proxy_stop(void)
{
	proxy_stop(&px);
	unlink(px_url + strlen("ipc://"));
	itest_stop();
}

struct cxlp_handler *
itest_connect_via_proxy(unsigned timeout_ms, unsigned retries)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, px_url), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, 4096), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, 4 * MiB), 0);
	cr_assert_rc(cxlp_config_set_timeout_ms(cfg, timeout_ms), 0);
	cr_assert_rc(cxlp_config_set_retries(cfg, retries), 0);
	cr_assert_rc(cxlp_connect(&h, cfg), 0);
	cxlp_config_delete(&cfg);
	return h;
}

/* itest_assert_pool_checks -- see itest.h. pool-inspect reads the live
 * pool without the server's lock, so a change in flight (a handler's
 * keeper refilling in the background: handler/region/reclaim.c note 7) can be
 * read half made; such a reading is taken again, a few times: damage
 * that is really there stays. */
void
itest_assert_pool_checks(void)
{
	char log[128];
	int rc;

	snprintf(log, sizeof(log), "/tmp/cxlp-itest-%d.check", getpid());
	for (int tries = 0; tries < 4; tries++) {
		if ((rc = test_inspect_check(srv.pool, log)) == 0) {
			break;
		}
		usleep(200 * 1000);
	}
	if (rc != 0) {
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "cat %s >&2", log);
		(void)system(cmd);
	}
	unlink(log);
	cr_assert_eq(rc, 0, "pool-inspect check failed (exit %d)", rc);
}
