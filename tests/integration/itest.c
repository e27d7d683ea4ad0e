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

/* worker_path -- $CXLP_ITEST_WORKER (scripts/test.sh points it at a
 * ThreadSanitizer build), else itest-worker beside the test executable. */
static void
worker_path(char *out, size_t n)
{
	const char *env = getenv("CXLP_ITEST_WORKER");
	ssize_t k;
	char *slash;

	if (env != NULL && env[0] != '\0') {
		snprintf(out, n, "%s", env);
		return;
	}
	k = readlink("/proc/self/exe", out, n - 1);
	cr_assert_gt(k, 0);
	out[k] = '\0';
	slash = strrchr(out, '/');
	cr_assert_not_null(slash);
	snprintf(slash + 1, n - (size_t)(slash + 1 - out), "itest-worker");
}

void
itest_spawn(struct itest_child *c, const char *role, const char *arg)
{
	char path[4096];
	int go[2], out[2];

	worker_path(path, sizeof(path));
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(out), 0);
	c->pid = fork();
	cr_assert_geq(c->pid, 0);
	if (c->pid == 0) {
		dup2(go[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		close(go[0]);
		close(go[1]);
		close(out[0]);
		close(out[1]);
		execl(path, "itest-worker", role, srv.url, arg, (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	close(out[1]);
	c->go_fd = go[1];
	c->out_fd = out[0];
}

void
itest_go(struct itest_child *c)
{
	cr_assert_eq(write(c->go_fd, "g", 1), 1);
	close(c->go_fd);
	c->go_fd = -1;
}

bool
itest_read(struct itest_child *c, void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n > 0) {
		ssize_t k = read(c->out_fd, p, n);

		if (k <= 0) {
			return false;
		}
		p += k;
		n -= (size_t)k;
	}
	return true;
}

int
itest_wait(struct itest_child *c)
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
