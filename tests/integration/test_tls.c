/*
 * test_tls.c -- tls+tcp:// between handlers and the metaserver
 * (handler/net/tls.c, handler/net/tlsprobe.c, metaserver/tls.c, the access rules
 * of metaserver/config.c).
 *
 *   - a handler with the right CA stores and reads over TLS, and the
 *     shared secret is still checked there;
 *   - an unknown CA, an expired certificate, a wrong server name, a
 *     plaintext client against a TLS endpoint and a TLS client against
 *     plain tcp each fail the connect with CXLP_E_CONN and a message of
 *     their own, and the server logs the failed handshakes;
 *   - mutual TLS (--tls-verify-peer) refuses a handler without a
 *     certificate, or with one of another CA, and admits one with its
 *     CA's;
 *   - plaintext tcp:// on an address other hosts reach needs
 *     --allow-plaintext; the TLS flags and handler options are checked.
 *
 * Certificates are made per test by tls-certs.sh with Debian's openssl;
 * without openssl the tests that need them are skipped.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "itest.h"

#define SECRET "tls test secret"

TestSuite(tls, .timeout = 60);

static char dir[96];       /* this test's certificates */
static char secret[128];   /* its secret file */

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

/* dir/name, in a static buffer of four that rotate. */
static const char *
cert(const char *name)
{
	static char buf[4][160];
	static unsigned next;
	char *p = buf[next++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

/* Make the certificates (tls-certs.sh) and the secret file; skip the
 * test when openssl is not installed. */
static void
certs_make(void)
{
	const char *src = getenv("CXLP_SRCDIR");
	char cmd[512];
	FILE *f;

	if (system("command -v openssl >/dev/null 2>&1") != 0) {
		cr_skip_test("openssl is not installed (apt-get install "
		    "openssl): no certificates to test TLS with");
	}
	cr_assert_not_null(src, "CXLP_SRCDIR not set");
	snprintf(dir, sizeof(dir), "/tmp/cxlp-tls-%d", getpid());
	snprintf(cmd, sizeof(cmd), "sh %s/tests/integration/tls-certs.sh %s",
	    src, dir);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
	snprintf(secret, sizeof(secret), "%s/secret", dir);
	f = fopen(secret, "w");
	cr_assert_not_null(f);
	fputs(SECRET "\n", f);
	fclose(f);
	chmod(secret, 0600);
}

static void
certs_remove(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)system(cmd);
}

/* Start srv with an extra tls+tcp:// (tls) or tcp:// listener on port,
 * the given certificate pair (NULL: server) and more flags (NULL-
 * terminated, at most 6). */
static void
start_on(unsigned port, bool tls, const char *pair, const char *more[])
{
	static char listen[64], crt[160], key[160];
	const char *args[16] = { "--listen", listen };
	unsigned n = 2;

	snprintf(listen, sizeof(listen), "%s://127.0.0.1:%u",
	    tls ? "tls+tcp" : "tcp", port);
	snprintf(crt, sizeof(crt), "%s/%s.pem", dir, pair ? pair : "server");
	snprintf(key, sizeof(key), "%s/%s.key", dir, pair ? pair : "server");
	if (tls) {
		args[n++] = "--tls-cert";
		args[n++] = crt;
		args[n++] = "--tls-key";
		args[n++] = key;
	}
	for (unsigned i = 0; more != NULL && more[i] != NULL; i++) {
		args[n++] = more[i];
	}
	cr_assert_eq(test_server_start(&srv, 64 * MiB, args), 0,
	    "the metaserver did not start on %s", listen);
}

/* What a handler dials with. */
struct dial {
	const char *ca, *name, *cert, *key, *secret;
};

/* Connect to url with d; assert the connect returned want. */
static struct cxlp_handler *
dial(const char *url, const struct dial *d, int want)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, url), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, 4096), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, 4 * MiB), 0);
	cr_assert_rc(cxlp_config_set_timeout_ms(cfg, 2000), 0);
	cr_assert_rc(cxlp_config_set_secret(cfg, d->secret), 0);
	cr_assert_rc(cxlp_config_set_tls_ca(cfg, d->ca), 0);
	cr_assert_rc(cxlp_config_set_tls_server_name(cfg, d->name), 0);
	cr_assert_rc(cxlp_config_set_tls_cert(cfg, d->cert), 0);
	cr_assert_rc(cxlp_config_set_tls_key(cfg, d->key), 0);
	cr_assert_rc(cxlp_connect(&h, cfg), want, "connect to %s", url);
	cxlp_config_delete(&cfg);
	return h;
}

/* The connect's message has every one of the NULL-terminated words. */
static void
assert_msg(const char *what, const char *const words[])
{
	const char *m = cxlp_errormsg();

	for (unsigned i = 0; words[i] != NULL; i++) {
		cr_assert(strstr(m, words[i]) != NULL, "%s: the message does "
		    "not say '%s': %s", what, words[i], m);
	}
}

/* The server logs needle within 3 s (its watch looks every 500 ms). */
static void
assert_logged(const char *needle)
{
	for (int i = 0; i < 60 && !test_server_log_has(&srv, needle); i++) {
		usleep(50000);
	}
	cr_assert(test_server_log_has(&srv, needle), "the server did not "
	    "log '%s' (see %s)", needle, srv.log);
}

static void
url_of(char *url, size_t n, const char *scheme, unsigned port)
{
	snprintf(url, n, "%s://127.0.0.1:%u", scheme, port);
}

Test(tls, a_handler_with_the_right_ca_stores_and_reads)
{
	const char *more[] = { "--secret-file", secret, NULL };
	unsigned port = free_port();
	struct cxlp_handler *h, *local;
	char url[64];

	certs_make();
	start_on(port, true, NULL, more);
	url_of(url, sizeof(url), "tls+tcp", port);
	h = dial(url, &(struct dial){ .ca = cert("ca.pem"),
	    .name = "localhost", .secret = SECRET }, 0);
	itest_put(h, "tls", 7, 1, 3000);
	cr_assert_eq(itest_get_check(h, "tls", 1), 7);
	local = itest_connect(); /* the same pool, over ipc */
	cr_assert_eq(itest_get_check(local, "tls", 1), 7);

	/* the secret is still checked over TLS */
	dial(url, &(struct dial){ .ca = cert("ca.pem"), .name = "localhost" },
	    CXLP_E_PERM);
	assert_msg("no secret", (const char *[]){ "secret required", NULL });
	dial(url, &(struct dial){ .ca = cert("ca.pem"), .name = "localhost",
	    .secret = "not it" }, CXLP_E_PERM);
	assert_msg("wrong secret", (const char *[]){ "wrong secret", NULL });
	cr_assert_eq(kv_stats(local).sessions, 2, "a refused TLS handler "
	    "opened a session");
	cxlp_close(&h);
	cxlp_close(&local);
	itest_stop();
	certs_remove();
}

Test(tls, an_unknown_ca_is_named)
{
	const char *more[] = { "--secret-file", secret, NULL };
	unsigned port = free_port();
	char url[64];

	certs_make();
	start_on(port, true, NULL, more);
	url_of(url, sizeof(url), "tls+tcp", port);
	dial(url, &(struct dial){ .ca = cert("other-ca.pem"),
	    .name = "localhost", .secret = SECRET }, CXLP_E_CONN);
	assert_msg("another CA", (const char *[]){ "unknown CA",
	    "other-ca.pem", "CN=localhost", NULL });
	assert_logged("op=tls listen=tls+tcp://127.0.0.1");
	itest_stop();

	/* a server whose certificate another CA signed */
	start_on(port, true, "other", more);
	dial(url, &(struct dial){ .ca = cert("ca.pem"), .name = "localhost",
	    .secret = SECRET }, CXLP_E_CONN);
	assert_msg("server of another CA", (const char *[]){ "unknown CA",
	    NULL });
	itest_stop();
	certs_remove();
}

Test(tls, an_expired_certificate_is_named)
{
	const char *more[] = { "--secret-file", secret, NULL };
	unsigned port = free_port();
	char url[64];

	certs_make();
	start_on(port, true, "expired", more);
	url_of(url, sizeof(url), "tls+tcp", port);
	dial(url, &(struct dial){ .ca = cert("ca.pem"), .name = "localhost",
	    .secret = SECRET }, CXLP_E_CONN);
	assert_msg("expired", (const char *[]){ "expired certificate",
	    "expired 20", "UTC", NULL });
	itest_stop();
	certs_remove();
}

Test(tls, a_wrong_server_name_is_named)
{
	const char *more[] = { "--secret-file", secret, NULL };
	unsigned port = free_port();
	char url[64];

	certs_make();
	start_on(port, true, NULL, more);
	url_of(url, sizeof(url), "tls+tcp", port);
	dial(url, &(struct dial){ .ca = cert("ca.pem"),
	    .name = "db.example.org", .secret = SECRET }, CXLP_E_CONN);
	assert_msg("wrong name", (const char *[]){ "name mismatch",
	    "'db.example.org'", NULL });
	/* without a name, the URL's host is checked: mbedTLS 2 does not
	 * match the certificate's IP address */
	dial(url, &(struct dial){ .ca = cert("ca.pem"), .secret = SECRET },
	    CXLP_E_CONN);
	assert_msg("the URL's host", (const char *[]){ "name mismatch",
	    "'127.0.0.1', the URL's host", NULL });
	itest_stop();
	certs_remove();
}

Test(tls, a_plaintext_client_against_a_tls_endpoint_is_named)
{
	const char *more[] = { "--secret-file", secret, NULL };
	unsigned port = free_port();
	char url[64];

	certs_make();
	start_on(port, true, NULL, more);
	url_of(url, sizeof(url), "tcp", port);
	dial(url, &(struct dial){ .secret = SECRET }, CXLP_E_CONN);
	assert_msg("plaintext", (const char *[]){ "plaintext client against "
	    "a TLS endpoint", "tls+tcp://", NULL });
	assert_logged("TLS handshake failed: a plaintext (tcp://) client");
	itest_stop();
	certs_remove();
}

Test(tls, a_tls_client_against_plain_tcp_is_named)
{
	const char *more[] = { "--secret-file", secret, NULL };
	unsigned port = free_port();
	char url[64];

	certs_make();
	start_on(port, false, NULL, more);
	url_of(url, sizeof(url), "tls+tcp", port);
	dial(url, &(struct dial){ .ca = cert("ca.pem"), .name = "localhost",
	    .secret = SECRET }, CXLP_E_CONN);
	assert_msg("TLS on tcp", (const char *[]){ "TLS client against plain "
	    "tcp", "answered in the clear", NULL });
	assert_logged("a TLS client (tls+tcp://) on this plain endpoint");
	itest_stop();
	certs_remove();
}

Test(tls, mutual_tls_refuses_a_client_without_a_certificate)
{
	const char *more[] = { "--tls-ca", NULL, "--tls-verify-peer", NULL };
	unsigned port = free_port();
	struct cxlp_handler *h;
	char url[64];

	certs_make();
	more[1] = cert("ca.pem");
	start_on(port, true, NULL, more); /* no secret: certificates */
	url_of(url, sizeof(url), "tls+tcp", port);
	dial(url, &(struct dial){ .ca = cert("ca.pem"), .name = "localhost" },
	    CXLP_E_CONN);
	assert_msg("no client certificate", (const char *[]){ "requires a "
	    "client certificate", "cxlp_config_set_tls_cert", NULL });
	assert_logged("or a client without a certificate signed by "
	    "--tls-ca");
	dial(url, &(struct dial){ .ca = cert("ca.pem"), .name = "localhost",
	    .cert = cert("other.pem"), .key = cert("other.key") },
	    CXLP_E_CONN);
	assert_msg("another CA's client certificate", (const char *[]){
	    "refused this handler's certificate", "other.pem", NULL });
	h = dial(url, &(struct dial){ .ca = cert("ca.pem"),
	    .name = "localhost", .cert = cert("client.pem"),
	    .key = cert("client.key") }, 0);
	itest_put(h, "mtls", 3, 1, 100);
	cr_assert_eq(itest_get_check(h, "mtls", 1), 3);
	cxlp_close(&h);
	itest_stop();
	certs_remove();
}

/* Run the metaserver with args until it exits or has said it is ready
 * (then it is stopped); its output goes to out. Returns its exit status
 * (0 for a server that became ready). */
static int
run_ms(const char *const args[], char *out, size_t n)
{
	const char *argv[24] = { getenv("CXLP_METASERVER") };
	struct test_spawn sp = { .argv = argv, .in_fd = -1 };
	char log[64];
	int rc = -1, status, fd = -1, i;
	pid_t pid;

	cr_assert_not_null(argv[0], "CXLP_METASERVER not set");
	for (i = 0; args[i] != NULL && i < 22; i++) {
		argv[i + 1] = args[i];
	}
	snprintf(log, sizeof(log), "/tmp/cxlp-tls-%d.log", getpid());
	sp.path = argv[0];
	sp.out_fd = sp.err_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	pid = test_spawn(&sp);
	close(sp.out_fd);
	cr_assert_geq(pid, 0);
	memset(out, 0, n);
	for (i = 0; i < 1000 && rc < 0; i++) { /* 10 s */
		if (waitpid(pid, &status, WNOHANG) == pid) {
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
		} else if ((fd = open(log, O_RDONLY)) >= 0 &&
		    read(fd, out, n - 1) > 0 && strstr(out, " ready ")) {
			kill(pid, SIGTERM);
			waitpid(pid, NULL, 0);
			rc = 0;
		} else {
			usleep(10000);
		}
		if (fd >= 0) {
			close(fd);
			fd = -1;
		}
	}
	if (rc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	fd = open(log, O_RDONLY);
	if (fd >= 0) {
		(void)read(fd, out, n - 1);
		close(fd);
	}
	unlink(log);
	cr_assert_geq(rc, 0, "the metaserver neither exited nor became "
	    "ready: %s", out);
	return rc;
}

Test(tls, plain_tcp_off_loopback_needs_allow_plaintext)
{
	char any[64], lo[64], pool[64], sec[64], out[4096];
	const char *refused[] = { "--pool", pool, "--size", "64M",
		"--listen", any, "--secret-file", sec, NULL };
	const char *allowed[] = { "--pool", pool, "--size", "64M",
		"--listen", any, "--secret-file", sec, "--allow-plaintext",
		NULL };
	const char *loop[] = { "--pool", pool, "--size", "64M",
		"--listen", lo, "--secret-file", sec, NULL };
	FILE *f;

	snprintf(any, sizeof(any), "tcp://0.0.0.0:%u", free_port());
	snprintf(lo, sizeof(lo), "tcp://127.0.0.1:%u", free_port());
	snprintf(pool, sizeof(pool), "/dev/shm/cxlp-tls-%d.pool", getpid());
	snprintf(sec, sizeof(sec), "/tmp/cxlp-tls-%d.secret", getpid());
	f = fopen(sec, "w");
	cr_assert_not_null(f);
	fputs(SECRET "\n", f);
	fclose(f);
	chmod(sec, 0600);
	cr_assert_eq(run_ms(refused, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "--allow-plaintext") != NULL &&
	    strstr(out, any) != NULL, "unclear: %s", out);
	cr_assert_neq(access(pool, F_OK), 0, "a pool was created anyway");
	cr_assert_eq(run_ms(allowed, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, any) != NULL, "not listening: %s", out);
	cr_assert_eq(run_ms(loop, out, sizeof(out)), 0, "loopback tcp:// "
	    "was refused: %s", out);
	unlink(pool);
	unlink(sec);
}

Test(tls, tls_flags_and_options_are_checked)
{
	char tls[64], pool[64], out[4096];
	const char *no_cert[] = { "--pool", pool, "--listen", tls,
		"--tls-verify-peer", "--tls-ca", "/x", NULL };
	const char *no_ca[] = { "--pool", pool, "--listen", tls, "--tls-cert",
		"/x", "--tls-key", "/y", "--tls-verify-peer", NULL };
	const char *no_auth[] = { "--pool", pool, "--listen", tls,
		"--tls-cert", "/x", "--tls-key", "/y", NULL };
	const char *missing[] = { "--pool", pool, "--listen", tls,
		"--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/y",
		"--tls-ca", "/z", "--tls-verify-peer", NULL };
	const char *wss[] = { "--pool", pool, "--listen",
		"WSS4://127.0.0.1:1/x", NULL };
	const char *upper[] = { "--pool", pool, "--listen",
		"TCP://0.0.0.0:1", NULL };

	snprintf(tls, sizeof(tls), "tls+tcp://127.0.0.1:%u", free_port());
	snprintf(pool, sizeof(pool), "/dev/shm/cxlp-tls-%d.pool", getpid());
	cr_assert_eq(run_ms(no_cert, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "needs --tls-cert PATH and --tls-key") != NULL,
	    "%s", out);
	cr_assert_eq(run_ms(no_ca, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "--tls-verify-peer needs --tls-ca") != NULL,
	    "%s", out);
	cr_assert_eq(run_ms(no_auth, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "--secret-file") != NULL &&
	    strstr(out, "--tls-verify-peer") != NULL, "%s", out);
	cr_assert_eq(run_ms(missing, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "--tls-cert /nonexistent/cert.pem") != NULL,
	    "%s", out);
	cr_assert_eq(run_ms(wss, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "wss:// (wss4://, wss6://) is not supported") !=
	    NULL, "%s", out);
	cr_assert_eq(run_ms(upper, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "tcp://0.0.0.0:1 is plaintext") != NULL, "%s",
	    out);
	unlink(pool);

	/* the handler's side: checked at connect, before any dial */
	dial("tls+tcp://127.0.0.1:1", &(struct dial){ 0 }, -EINVAL);
	assert_msg("no CA", (const char *[]){ "cxlp_config_set_tls_ca",
	    NULL });
	dial("tls+tcp://127.0.0.1:1", &(struct dial){ .ca = "/x",
	    .cert = "/y" }, -EINVAL);
	assert_msg("no key", (const char *[]){ "needs its key", NULL });
	dial("tcp://127.0.0.1:1", &(struct dial){ .ca = "/x" }, -EINVAL);
	assert_msg("TLS on tcp://", (const char *[]){ "not a tls+tcp:// URL",
	    NULL });
	dial("tls+tcp://127.0.0.1:1", &(struct dial){
	    .ca = "/nonexistent/ca.pem" }, -ENOENT);
	assert_msg("no CA file", (const char *[]){ "/nonexistent/ca.pem",
	    NULL });
}

/* Write a file of n bytes of c at path (n 0: empty). */
static void
write_file(const char *path, size_t n, char c)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	for (size_t i = 0; i < n; i++) {
		fputc(c, f);
	}
	cr_assert_eq(fclose(f), 0);
}

/* A PEM file that is a directory, empty, over 1 MiB or without a BEGIN
 * line is refused with a message that says which, on both sides. */
Test(tls, pem_files_that_are_not_pem_are_named)
{
	char empty[64], big[64], text[64], tls[64], pool[64], out[4096];
	const char *ms_big[] = { "--pool", pool, "--listen", tls,
		"--tls-cert", big, "--tls-key", big, "--tls-ca", big,
		"--tls-verify-peer", NULL };
	const struct {
		const char *path, *says;
		int rc;
	} cases[] = {
		{ "/tmp", "a directory", -EISDIR },
		{ empty, "empty", -EINVAL },
		{ big, "larger than 1 MiB", -EINVAL },
		{ text, "no -----BEGIN line", -EINVAL },
	};

	snprintf(empty, sizeof(empty), "/tmp/cxlp-pem-%d.empty", getpid());
	snprintf(big, sizeof(big), "/tmp/cxlp-pem-%d.big", getpid());
	snprintf(text, sizeof(text), "/tmp/cxlp-pem-%d.txt", getpid());
	write_file(empty, 0, 0);
	write_file(big, (1u << 20) + 1, '-');
	write_file(text, 5, 'x');
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dial("tls+tcp://127.0.0.1:1", &(struct dial){
		    .ca = cases[i].path }, cases[i].rc);
		assert_msg(cases[i].says, (const char *[]){ "CA file",
		    cases[i].path, cases[i].says, NULL });
	}
	snprintf(tls, sizeof(tls), "tls+tcp://127.0.0.1:%u", free_port());
	snprintf(pool, sizeof(pool), "/dev/shm/cxlp-pem-%d.pool", getpid());
	cr_assert_eq(run_ms(ms_big, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "larger than 1 MiB") != NULL, "%s", out);
	unlink(pool);
	unlink(empty);
	unlink(big);
	unlink(text);
}
