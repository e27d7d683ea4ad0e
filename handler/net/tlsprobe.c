/*
 * tlsprobe.c -- find out why a TLS handshake with a metaserver failed:
 * the handler's only mbedTLS user, and no nng.
 *
 * nng reports a failed handshake coarsely: an unknown CA, an expired
 * certificate, a name mismatch, a server that wants a client certificate
 * and a server that does not speak TLS at all all come back from
 * nng_dial as NNG_ECRYPTO or NNG_EPEERAUTH (mbedTLS' verify flags stay
 * inside nng's engine). So, once a dial has failed, tls.c runs this
 * probe: one more TCP connection to the same host and port, on which
 * mbedTLS itself runs the handshake with the handler's CA, certificate,
 * key and server name but with verification OPTIONAL, so that it goes on
 * past a bad certificate and reports the flags (MBEDTLS_X509_BADCERT_*).
 * The probe trusts nothing it learns: it sends no SP header and no
 * request, and closes as soon as the handshake ends or fails. What the
 * server sent first tells a plain SP endpoint (it sends "\0SP\0" at
 * once) from a TLS one (it waits for the ClientHello).
 *
 * The probe runs only after a failure and is bounded by a deadline (the
 * caller's timeout), so a connect never waits on it for long. A server
 * sees it as one more peer that hung up during the handshake, which nng
 * (with deps/nng's fix for nng#1518) takes in its stride.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/net_sockets.h> /* MBEDTLS_ERR_NET_* only */
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "clock.h"
#include "net.h"

struct pio {
	int fd;
	uint64_t until_ms;  /* cxlp_now_ms() deadline */
	uint8_t first[4];   /* the first bytes the server sent */
	unsigned nfirst;
};

/* Wait until fd is ready for events or the deadline passes (a signal
 * that interrupts the wait does not end it). */
static bool
pio_wait(const struct pio *io, short events)
{
	struct pollfd p = { .fd = io->fd, .events = events };

	for (;;) {
		uint64_t now = cxlp_now_ms();
		int r;

		if (now >= io->until_ms) {
			return false;
		}
		r = poll(&p, 1, (int)(io->until_ms - now));
		if (r >= 0 || errno != EINTR) {
			return r == 1;
		}
	}
}

static int
pio_send(void *arg, const unsigned char *buf, size_t len)
{
	struct pio *io = arg;
	ssize_t n;

	if (!pio_wait(io, POLLOUT)) {
		return MBEDTLS_ERR_SSL_TIMEOUT;
	}
	n = send(io->fd, buf, len, MSG_NOSIGNAL);
	return n < 0 ? MBEDTLS_ERR_NET_SEND_FAILED : (int)n;
}

static int
pio_recv(void *arg, unsigned char *buf, size_t len)
{
	struct pio *io = arg;
	ssize_t n;

	if (!pio_wait(io, POLLIN)) {
		return MBEDTLS_ERR_SSL_TIMEOUT;
	}
	n = recv(io->fd, buf, len, 0);
	if (n <= 0) {
		return n == 0 ? MBEDTLS_ERR_SSL_CONN_EOF :
		    MBEDTLS_ERR_NET_RECV_FAILED;
	}
	for (ssize_t i = 0; i < n && io->nfirst < sizeof(io->first); i++) {
		io->first[io->nfirst++] = buf[i];
	}
	return (int)n;
}

/* Split url ("scheme://host:port", host maybe "[v6]") into host and
 * port. Returns 0 or -EINVAL. */
static int
url_host_port(const char *url, char *host, size_t hn, char *port, size_t pn)
{
	const char *h = strstr(url, "://"), *colon, *end;

	if (h == NULL) {
		return -EINVAL;
	}
	h += 3;
	if (*h == '[') {
		end = strchr(++h, ']');
		colon = end != NULL && end[1] == ':' ? end + 1 : NULL;
	} else {
		colon = strrchr(h, ':');
		end = colon;
	}
	if (colon == NULL || end == NULL || (size_t)(end - h) >= hn ||
	    strlen(colon + 1) >= pn || colon[1] == '\0') {
		return -EINVAL;
	}
	snprintf(host, hn, "%.*s", (int)(end - h), h);
	snprintf(port, pn, "%s", colon + 1);
	if (host[0] == '\0' || strcmp(host, "*") == 0) {
		snprintf(host, hn, "127.0.0.1");
	}
	return 0;
}

/* A TCP connection to url's host and port made before until_ms, or -1. */
static int
probe_connect(const char *url, uint64_t until_ms)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *a;
	char host[256], port[16];
	int fd = -1;

	if (url_host_port(url, host, sizeof(host), port, sizeof(port)) != 0 ||
	    getaddrinfo(host, port, &hints, &ai) != 0) {
		return -1;
	}
	for (a = ai; a != NULL && fd < 0; a = a->ai_next) {
		struct pio io = { .until_ms = until_ms };
		int err = 0;
		socklen_t el = sizeof(err);

		io.fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, a->ai_protocol);
		if (io.fd < 0) {
			continue;
		}
		if ((connect(io.fd, a->ai_addr, a->ai_addrlen) == 0 ||
		    (errno == EINPROGRESS && pio_wait(&io, POLLOUT) &&
		    getsockopt(io.fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 &&
		    err == 0))) {
			fd = io.fd;
		} else {
			close(io.fd);
		}
	}
	freeaddrinfo(ai);
	return fd;
}

struct probe_tls {
	mbedtls_entropy_context ent;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_ssl_config conf;
	mbedtls_ssl_context ssl;
	mbedtls_x509_crt ca, crt;
	mbedtls_pk_context key;
};

static void
probe_tls_fini(struct probe_tls *t)
{
	mbedtls_ssl_free(&t->ssl);
	mbedtls_ssl_config_free(&t->conf);
	mbedtls_x509_crt_free(&t->ca);
	mbedtls_x509_crt_free(&t->crt);
	mbedtls_pk_free(&t->key);
	mbedtls_ctr_drbg_free(&t->drbg);
	mbedtls_entropy_free(&t->ent);
}

/* Set up a client that verifies optionally against tls's CA and shows
 * tls's certificate; the server name it checks goes into name
 * (CFG_TLS_NAME_MAX bytes). Returns 0 or an mbedTLS error. */
static int
probe_tls_init(struct probe_tls *t, const char *url,
    const struct cfg_tls *tls, struct pio *io, char *name)
{
	static const unsigned char pers[] = "cxlpool-tlsprobe";
	char host[256], port[16];
	int rc;

	mbedtls_entropy_init(&t->ent);
	mbedtls_ctr_drbg_init(&t->drbg);
	mbedtls_ssl_config_init(&t->conf);
	mbedtls_ssl_init(&t->ssl);
	mbedtls_x509_crt_init(&t->ca);
	mbedtls_x509_crt_init(&t->crt);
	mbedtls_pk_init(&t->key);
	if ((rc = mbedtls_ctr_drbg_seed(&t->drbg, mbedtls_entropy_func,
	    &t->ent, pers, sizeof(pers))) != 0 ||
	    (rc = mbedtls_ssl_config_defaults(&t->conf, MBEDTLS_SSL_IS_CLIENT,
	    MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT)) != 0) {
		return rc;
	}
	mbedtls_ssl_conf_rng(&t->conf, mbedtls_ctr_drbg_random, &t->drbg);
	mbedtls_ssl_conf_authmode(&t->conf, MBEDTLS_SSL_VERIFY_OPTIONAL);
	if (tls->ca[0] != '\0' &&
	    mbedtls_x509_crt_parse_file(&t->ca, tls->ca) == 0) {
		mbedtls_ssl_conf_ca_chain(&t->conf, &t->ca, NULL);
	}
	if (tls->cert[0] != '\0' && tls->key[0] != '\0' &&
	    mbedtls_x509_crt_parse_file(&t->crt, tls->cert) == 0 &&
	    mbedtls_pk_parse_keyfile(&t->key, tls->key, NULL) == 0) {
		mbedtls_ssl_conf_own_cert(&t->conf, &t->crt, &t->key);
	}
	if ((rc = mbedtls_ssl_setup(&t->ssl, &t->conf)) != 0) {
		return rc;
	}
	if (tls->server_name[0] != '\0') {
		snprintf(name, CFG_TLS_NAME_MAX, "%s", tls->server_name);
	} else if (url_host_port(url, host, sizeof(host), port,
	    sizeof(port)) == 0) {
		snprintf(name, CFG_TLS_NAME_MAX, "%s", host);
	}
	if (name[0] != '\0') {
		rc = mbedtls_ssl_set_hostname(&t->ssl, name);
	}
	mbedtls_ssl_set_bio(&t->ssl, io, pio_send, pio_recv, NULL);
	return rc;
}

/* Copy what the handshake showed of the server into out. */
static void
probe_report(struct probe_tls *t, struct tlsprobe *out)
{
	const mbedtls_ssl_session *s = t->ssl.session_negotiate != NULL ?
	    t->ssl.session_negotiate : t->ssl.session;
	const mbedtls_x509_crt *pc = s != NULL ? s->peer_cert : NULL;

	out->tls = t->ssl.state >= MBEDTLS_SSL_SERVER_CERTIFICATE;
	out->cert_asked = t->ssl.client_auth != 0;
	if (pc == NULL) {
		return;
	}
	out->got_cert = true;
	out->flags = s->verify_result;
	out->untrusted = (out->flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED) != 0;
	out->expired = (out->flags & MBEDTLS_X509_BADCERT_EXPIRED) != 0;
	out->future = (out->flags & MBEDTLS_X509_BADCERT_FUTURE) != 0;
	out->mismatch = (out->flags & MBEDTLS_X509_BADCERT_CN_MISMATCH) != 0;
	mbedtls_x509_dn_gets(out->subject, sizeof(out->subject),
	    &pc->subject);
	snprintf(out->not_after, sizeof(out->not_after),
	    "%04d-%02d-%02d %02d:%02d:%02d", pc->valid_to.year % 10000,
	    pc->valid_to.mon % 100, pc->valid_to.day % 100,
	    pc->valid_to.hour % 100, pc->valid_to.min % 100,
	    pc->valid_to.sec % 100);
}

/* tlsprobe_run -- see net.h */
void
tlsprobe_run(const char *url, const struct cfg_tls *tls,
    unsigned timeout_ms, struct tlsprobe *out)
{
	struct pio io = { .until_ms = cxlp_now_ms() + timeout_ms };
	struct probe_tls t;

	memset(out, 0, sizeof(*out));
	if ((io.fd = probe_connect(url, io.until_ms)) < 0) {
		return;
	}
	out->reached = true;
	out->rc = probe_tls_init(&t, url, tls, &io, out->server_name);
	if (out->rc == 0) {
		out->rc = mbedtls_ssl_handshake(&t.ssl);
		out->handshake_ok = out->rc == 0;
		probe_report(&t, out);
	}
	out->plain_sp = io.nfirst == 4 && memcmp(io.first, "\0SP\0", 4) == 0;
	if (out->plain_sp) {
		out->tls = false;
	}
	probe_tls_fini(&t);
	close(io.fd);
}
