/*
 * test_access.c -- who may talk to a metaserver, and what it refuses to
 * start on (DESIGN contract 7, the access and pool-file rows of the
 * hostile-input table).
 *
 *   - the ipc socket is created 0600;
 *   - tcp://:PORT binds loopback; a tcp listener needs --secret-file, and a
 *     handler on it must present that secret (cxlp_config_set_secret), else
 *     its HELLO is refused with CXLP_E_PERM and no session is created;
 *   - a pool file that is not a pool, or is truncated, makes the
 *     metaserver exit 1 with a clear message, and leaves the file alone.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "itest.h"
#include "proto.h"

#define SECRET "correct horse battery staple"

TestSuite(access, .timeout = 90);

/* A TCP port that was free a moment ago. */
static unsigned
free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void
write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* Run the metaserver with args (NULL-terminated) until it exits (it is
 * expected to refuse to start); its output goes to out. Returns its exit
 * status, or 128 + signal; a server that keeps running is killed and
 * fails the test. */
static int
run_ms(const char *const args[], char *out, size_t n)
{
	const char *argv[24] = { getenv("CXLP_METASERVER") };
	struct test_spawn sp = { .argv = argv, .in_fd = -1 };
	char log[64];
	int rc = -1, status, fd, i;
	pid_t pid;

	cr_assert_not_null(argv[0], "CXLP_METASERVER not set");
	for (i = 0; args[i] != NULL && i < 22; i++) {
		argv[i + 1] = args[i];
	}
	snprintf(log, sizeof(log), "/tmp/cxlp-access-%d.log", getpid());
	sp.path = argv[0];
	sp.out_fd = sp.err_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	pid = test_spawn(&sp);
	if (sp.out_fd >= 0) {
		close(sp.out_fd);
	}
	cr_assert_geq(pid, 0);
	for (i = 0; i < 1000 && rc < 0; i++) { /* 10 s */
		if (waitpid(pid, &status, WNOHANG) == pid) {
			rc = WIFEXITED(status) ? WEXITSTATUS(status) :
			    128 + WTERMSIG(status);
		} else {
			usleep(10000);
		}
	}
	if (rc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	fd = open(log, O_RDONLY);
	memset(out, 0, n);
	if (fd >= 0) {
		(void)read(fd, out, n - 1);
		close(fd);
	}
	unlink(log);
	cr_assert_geq(rc, 0, "the metaserver kept running: %s", out);
	return rc;
}

static struct cxlp_handler *
connect_with(const char *url, const char *secret, int want)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, url), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, 4 * MiB), 0);
	cr_assert_rc(cxlp_config_set_timeout_ms(cfg, 2000), 0);
	if (secret != NULL) {
		cr_assert_rc(cxlp_config_set_secret(cfg, secret), 0);
	}
	cr_assert_rc(cxlp_connect(&h, cfg), want, "connect to %s with "
	    "secret '%s'", url, secret != NULL ? secret : "(none)");
	cxlp_config_delete(&cfg);
	return h;
}

Test(access, ipc_socket_is_private_to_its_owner)
{
	struct stat st;

	itest_start();
	cr_assert_eq(stat(srv.url + strlen("ipc://"), &st), 0);
	cr_assert(S_ISSOCK(st.st_mode));
	cr_assert_eq(st.st_mode & 0777, 0600, "ipc socket mode %o",
	    st.st_mode & 0777);
	itest_stop();
}

Test(access, tcp_listener_without_a_secret_file_is_refused)
{
	char url[64], pool[64], out[4096];
	const char *args[] = { "--pool", pool, "--size", "64M", "--listen",
		url, NULL };

	snprintf(url, sizeof(url), "tcp://:%u", free_port());
	snprintf(pool, sizeof(pool), "/dev/shm/cxlp-access-%d.pool",
	    getpid());
	cr_assert_eq(run_ms(args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "--secret-file") != NULL, "unclear: %s", out);
	cr_assert_neq(access(pool, F_OK), 0, "a pool was created anyway");
}

Test(access, unreadable_or_empty_secret_file_is_refused)
{
	char url[64], pool[64], secret[64], out[4096];
	const char *args[] = { "--pool", pool, "--size", "64M", "--listen",
		url, "--secret-file", secret, NULL };

	snprintf(url, sizeof(url), "tcp://:%u", free_port());
	snprintf(pool, sizeof(pool), "/dev/shm/cxlp-access-%d.pool",
	    getpid());
	snprintf(secret, sizeof(secret), "/tmp/cxlp-access-%d.none",
	    getpid());
	cr_assert_eq(run_ms(args, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "secret file") != NULL, "unclear: %s", out);
	write_file(secret, "\n", 1, 0600);
	cr_assert_eq(run_ms(args, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "1..256 bytes") != NULL, "unclear: %s", out);
	unlink(secret);
	cr_assert_neq(access(pool, F_OK), 0, "a pool was created anyway");
}

Test(access, tcp_handlers_need_the_shared_secret)
{
	char tcp[64], dial[64], secret[64], ready[256];
	const char *extra[] = { "--listen", tcp, "--secret-file", secret,
		NULL };
	struct cxlp_handler *local, *good;
	unsigned port = free_port();
	struct cxlp_stats st;

	snprintf(tcp, sizeof(tcp), "tcp://:%u", port);
	snprintf(dial, sizeof(dial), "tcp://127.0.0.1:%u", port);
	snprintf(secret, sizeof(secret), "/tmp/cxlp-secret-%d", getpid());
	write_file(secret, SECRET "\n", strlen(SECRET) + 1, 0600);
	cr_assert_eq(test_server_start(&srv, 64 * MiB, extra), 0);
	snprintf(ready, sizeof(ready), "listen=%s,%s", srv.url, dial);
	cr_assert(test_server_log_has(&srv, ready),
	    "a bare port did not bind loopback (want '%s')", ready);

	local = connect_with(srv.url, NULL, 0); /* ipc needs no secret */
	connect_with(dial, NULL, CXLP_E_PERM);
	cr_assert(strstr(cxlp_errormsg(), "secret required") != NULL,
	    "no secret: %s", cxlp_errormsg());
	connect_with(dial, "correct horse battery stapl", CXLP_E_PERM);
	cr_assert(strstr(cxlp_errormsg(), "wrong secret") != NULL,
	    "wrong secret: %s", cxlp_errormsg());
	connect_with(dial, SECRET "e", CXLP_E_PERM);
	cr_assert(strstr(cxlp_errormsg(), "wrong secret") != NULL,
	    "a longer secret: %s", cxlp_errormsg());
	good = connect_with(dial, SECRET, 0);
	itest_put(good, "tcp", 2, 1, 1000);
	cr_assert_eq(itest_get_check(local, "tcp", 1), 2);
	st = kv_stats(local);
	cr_assert_eq(st.sessions, 2, "a refused HELLO created a session");
	cr_assert_eq(st.regions, 2, "a refused HELLO took a region");
	cr_assert(test_server_log_has(&srv, "shared secret"),
	    "the refusal was not logged");
	cxlp_close(&good);
	cxlp_close(&local);
	unlink(secret);
	itest_stop();
}

/* ---- pool files the metaserver must not open --------------------------- */

static void
assert_refused_pool(const char *pool, const char *why)
{
	char url[64], out[4096];
	const char *args[] = { "--pool", pool, "--listen", url, NULL };

	snprintf(url, sizeof(url), "ipc:///tmp/cxlp-access-%d.sock",
	    getpid());
	cr_assert_eq(run_ms(args, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "cannot open pool") != NULL &&
	    strstr(out, pool) != NULL, "unclear message: %s", out);
	cr_assert(strstr(out, why) != NULL, "message does not say '%s': %s",
	    why, out);
	unlink(url + strlen("ipc://"));
}

Test(access, file_that_is_not_a_pool_is_refused_and_left_alone)
{
	static char junk[1 << 20];
	char pool[64], back[64];
	int fd;

	snprintf(pool, sizeof(pool), "/dev/shm/cxlp-notpool-%d", getpid());
	for (size_t i = 0; i < sizeof(junk); i++) {
		junk[i] = "not a pool\n"[i % 11];
	}
	write_file(pool, junk, sizeof(junk), 0600);
	assert_refused_pool(pool, "not a cxlpool pool");
	fd = open(pool, O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(read(fd, back, sizeof(back)), (ssize_t)sizeof(back));
	close(fd);
	cr_assert_arr_eq(back, junk, sizeof(back), "the file was changed");
	unlink(pool);
}

Test(access, truncated_pool_is_refused)
{
	char pool[sizeof(srv.pool)];

	cr_assert_eq(test_server_start(&srv, 64 * MiB, NULL), 0);
	test_server_kill(&srv, SIGTERM);
	memcpy(pool, srv.pool, sizeof(pool));
	cr_assert_eq(truncate(pool, 16 * MiB), 0);
	assert_refused_pool(pool, "truncated");
	unlink(pool);
	unlink(srv.url + strlen("ipc://"));
	unlink(srv.log);
}

Test(access, secret_longer_than_the_protocol_bound_is_refused)
{
	static char big[PROTO_SECRET_MAX + 2];
	struct cxlp_config *cfg = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	memset(big, 's', PROTO_SECRET_MAX);
	cr_assert_rc(cxlp_config_set_secret(cfg, big), 0);
	big[PROTO_SECRET_MAX] = 's';
	cr_assert_rc(cxlp_config_set_secret(cfg, big), -EINVAL);
	cr_assert_rc(cxlp_config_set_secret(cfg, NULL), 0, "NULL clears it");
	cr_assert_rc(cxlp_config_set_secret(NULL, "x"), -EINVAL);
	cxlp_config_delete(&cfg);
}

/* issue 29: CXLP_SECRET_FILE gives the handler its secret when the
 * config sets none (handler/core/config.c note 2), for integrations that
 * build the config from their own settings: right, wrong, missing,
 * unreadable (a directory: the tests run as root, whom modes do not
 * stop), empty; a secret on the config wins; unset, nothing is sent */
Test(access, the_secret_file_in_the_environment_is_sent_when_none_is_set)
{
	char tcp[64], dial[64], secret[64], wrong[64], empty[64];
	const char *extra[] = { "--listen", tcp, "--secret-file", secret,
		NULL };
	struct cxlp_handler *good, *local;
	unsigned port = free_port();

	snprintf(tcp, sizeof(tcp), "tcp://:%u", port);
	snprintf(dial, sizeof(dial), "tcp://127.0.0.1:%u", port);
	snprintf(secret, sizeof(secret), "/tmp/cxlp-secret-%d", getpid());
	snprintf(wrong, sizeof(wrong), "/tmp/cxlp-secret-%d.wrong", getpid());
	snprintf(empty, sizeof(empty), "/tmp/cxlp-secret-%d.empty", getpid());
	write_file(secret, SECRET "\n", strlen(SECRET) + 1, 0600);
	write_file(wrong, "not it\n", 7, 0600);
	write_file(empty, "\n", 1, 0600);
	cr_assert_eq(test_server_start(&srv, 64 * MiB, extra), 0);

	unsetenv("CXLP_SECRET_FILE");
	connect_with(dial, NULL, CXLP_E_PERM);
	cr_assert(strstr(cxlp_errormsg(), "secret required") != NULL,
	    "unset: %s", cxlp_errormsg());

	setenv("CXLP_SECRET_FILE", secret, 1);
	good = connect_with(dial, NULL, 0);
	local = connect_with(srv.url, NULL, 0);
	itest_put(good, "env", 3, 1, 1000);
	cr_assert_eq(itest_get_check(local, "env", 1), 3);

	setenv("CXLP_SECRET_FILE", wrong, 1);
	connect_with(dial, NULL, CXLP_E_PERM);
	cr_assert(strstr(cxlp_errormsg(), "wrong secret") != NULL,
	    "wrong: %s", cxlp_errormsg());
	cxlp_close(&good);
	good = connect_with(dial, SECRET, 0); /* the config's wins */
	cxlp_close(&good);

	setenv("CXLP_SECRET_FILE", "/nonexistent/cxlp-secret", 1);
	connect_with(dial, NULL, -ENOENT);
	cr_assert(strstr(cxlp_errormsg(),
	    "CXLP_SECRET_FILE=/nonexistent/cxlp-secret") != NULL,
	    "missing: %s", cxlp_errormsg());
	connect_with(srv.url, NULL, -ENOENT); /* ipc too: never silently */
	good = connect_with(dial, SECRET, 0); /* not read: the config's */
	cxlp_close(&good);

	setenv("CXLP_SECRET_FILE", "/tmp", 1);
	connect_with(dial, NULL, -EIO);
	cr_assert(strstr(cxlp_errormsg(), "CXLP_SECRET_FILE=/tmp") != NULL,
	    "unreadable: %s", cxlp_errormsg());

	setenv("CXLP_SECRET_FILE", empty, 1);
	connect_with(dial, NULL, -EINVAL);
	cr_assert(strstr(cxlp_errormsg(), "1..256 bytes") != NULL,
	    "empty: %s", cxlp_errormsg());

	unsetenv("CXLP_SECRET_FILE");
	cxlp_close(&local);
	unlink(secret);
	unlink(wrong);
	unlink(empty);
	itest_stop();
}
