/*
 * tls.c -- a handler's tls+tcp:// connections: the config setters, the
 * nng TLS config built from them once per client, and the message a
 * failed dial gets. With client.c and csock.c the only handler files that
 * include nng (client_int.h).
 *
 * The config holds file paths; client_open reads the files once (an
 * unreadable or malformed one fails the connect and names the file) into
 * one nng_tls_config that every socket of the client dials with, so a
 * redial reads nothing. The server name defaults to the URL's host, as
 * nng's own default does.
 *
 * Messages: nng reduces every handshake failure to NNG_ECRYPTO or
 * NNG_EPEERAUTH (and a peer of the other kind to a hang-up), so a failed
 * dial runs tlsprobe.c, which asks mbedTLS directly, and the message
 * names the likely cause: an unknown CA, an expired (or not yet valid)
 * certificate, a name mismatch, a server that wants a client certificate
 * or refused ours, a plain tcp:// server dialed with TLS, or (a tcp://
 * dial of a TLS server) a plaintext client. The cause comes first, so
 * that it survives the message buffer's 256 bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"
#include "err.h"
#include "net.h"
#include "pemfile.h"

/* tls_url -- see net.h */
bool
tls_url(const char *url)
{
	return strncmp(url, "tls+tcp://", 10) == 0 ||
	    strncmp(url, "tls+tcp4://", 11) == 0 ||
	    strncmp(url, "tls+tcp6://", 11) == 0;
}

/* tls_check -- see net.h */
int
tls_check(const char *url, const struct cfg_tls *tls)
{
	bool any = tls->ca[0] != '\0' || tls->cert[0] != '\0' ||
	    tls->key[0] != '\0' || tls->server_name[0] != '\0';

	if (!tls_url(url)) {
		return any ? cxlp_fail(-EINVAL, "config: TLS options are set "
		    "but %s is not a tls+tcp:// URL", url) : 0;
	}
	if (tls->ca[0] == '\0') {
		return cxlp_fail(-EINVAL, "config: %s needs the CA that signs "
		    "the server's certificate (cxlp_config_set_tls_ca)", url);
	}
	if ((tls->cert[0] == '\0') != (tls->key[0] == '\0')) {
		return cxlp_fail(-EINVAL, "config: a TLS client certificate "
		    "needs its key, and a key its certificate "
		    "(cxlp_config_set_tls_cert, cxlp_config_set_tls_key)");
	}
	return 0;
}

/* Copy v (NULL or "" clears) into dst of n bytes; -EINVAL if too long. */
static int
set_str(char *dst, size_t n, const char *v, const char *what)
{
	size_t len = v == NULL ? 0 : strnlen(v, n);

	if (len >= n) {
		return cxlp_fail(-EINVAL, "config_set_tls_%s: longer than %zu "
		    "bytes", what, n - 1);
	}
	memcpy(dst, v == NULL ? "" : v, len);
	dst[len] = '\0';
	return 0;
}

/* cxlp_config_set_tls_ca -- see cxlpool.h */
int
cxlp_config_set_tls_ca(struct cxlp_config *cfg, const char *path)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_tls_ca: NULL config");
	}
	return set_str(cfg->tls.ca, sizeof(cfg->tls.ca), path, "ca");
}

/* cxlp_config_set_tls_cert -- see cxlpool.h */
int
cxlp_config_set_tls_cert(struct cxlp_config *cfg, const char *path)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_tls_cert: NULL config");
	}
	return set_str(cfg->tls.cert, sizeof(cfg->tls.cert), path, "cert");
}

/* cxlp_config_set_tls_key -- see cxlpool.h */
int
cxlp_config_set_tls_key(struct cxlp_config *cfg, const char *path)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_tls_key: NULL config");
	}
	return set_str(cfg->tls.key, sizeof(cfg->tls.key), path, "key");
}

/* cxlp_config_set_tls_server_name -- see cxlpool.h */
int
cxlp_config_set_tls_server_name(struct cxlp_config *cfg, const char *name)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_tls_server_name: NULL "
		    "config");
	}
	return set_str(cfg->tls.server_name, sizeof(cfg->tls.server_name),
	    name, "server_name");
}

/* Read the PEM file path into a NUL-terminated heap string (*out, caller
 * frees). what names it in the message. */
static int
pem_read(const char *path, const char *what, char **out)
{
	const char *why = NULL;
	int rc = cxlp_pem_read(path, out, &why);

	return rc == 0 ? 0 : cxlp_fail(rc, "TLS %s %s: %s", what, path, why);
}

/* Give cfg tls's CA and, if set, its certificate and key. */
static int
config_files(nng_tls_config *cfg, const struct cfg_tls *tls)
{
	char *ca = NULL, *cert = NULL, *key = NULL;
	int rv, rc;

	if ((rc = pem_read(tls->ca, "CA file", &ca)) != 0) {
		return rc;
	}
	if ((rv = nng_tls_config_ca_chain(cfg, ca, NULL)) != 0) {
		rc = cxlp_fail(-EINVAL, "TLS CA file %s: no usable "
		    "certificate in it (%s)", tls->ca, nng_strerror(rv));
	} else if (tls->cert[0] != '\0' &&
	    (rc = pem_read(tls->cert, "certificate", &cert)) == 0 &&
	    (rc = pem_read(tls->key, "key", &key)) == 0 &&
	    (rv = nng_tls_config_own_cert(cfg, cert, key, NULL)) != 0) {
		rc = cxlp_fail(-EINVAL, "TLS certificate %s with key %s: "
		    "cannot use them (%s)", tls->cert, tls->key,
		    nng_strerror(rv));
	}
	free(ca);
	free(cert);
	if (key != NULL) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	return rc;
}

/* ctls_config_new -- see client_int.h */
int
ctls_config_new(nng_tls_config **out, const char *url,
    const struct cfg_tls *tls)
{
	char host[CFG_TLS_NAME_MAX];
	const char *h = strstr(url, "://") + 3, *end;
	nng_tls_config *cfg;
	int rv, rc;

	*out = NULL;
	if ((rv = nng_tls_config_alloc(&cfg, NNG_TLS_MODE_CLIENT)) != 0) {
		return cxlp_fail(nng_to_cxlp(rv), "TLS: %s", nng_strerror(rv));
	}
	if ((rc = config_files(cfg, tls)) != 0) {
		nng_tls_config_free(cfg);
		return rc;
	}
	/* the URL's host ("[v6]" without brackets) unless a name is set */
	end = *h == '[' ? strchr(++h, ']') : strrchr(h, ':');
	snprintf(host, sizeof(host), "%.*s", end != NULL ?
	    (int)(end - h) : (int)strlen(h), h);
	rv = nng_tls_config_auth_mode(cfg, NNG_TLS_AUTH_MODE_REQUIRED);
	if (rv == 0) {
		rv = nng_tls_config_server_name(cfg, tls->server_name[0] !=
		    '\0' ? tls->server_name : host);
	}
	if (rv != 0) {
		nng_tls_config_free(cfg);
		return cxlp_fail(nng_to_cxlp(rv), "TLS: %s", nng_strerror(rv));
	}
	*out = cfg;
	return 0;
}

/* ctls_dialer_set -- see client_int.h */
int
ctls_dialer_set(nng_dialer d, nng_tls_config *cfg)
{
	int rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, cfg);

	return rv == 0 ? 0 : cxlp_fail(nng_to_cxlp(rv), "TLS: cannot "
	    "configure the dialer: %s", nng_strerror(rv));
}

/* The message for a server certificate that failed with flags. */
static int
bad_cert(const char *url, const struct cfg_tls *tls, const struct tlsprobe *p)
{
	if (p->untrusted) {
		return cxlp_fail(CXLP_E_CONN, "TLS: unknown CA: the server's "
		    "certificate (%s) is not signed by a CA in %s "
		    "(cxlp_config_set_tls_ca)", p->subject, tls->ca);
	}
	if (p->expired) {
		return cxlp_fail(CXLP_E_CONN, "TLS: expired certificate: the "
		    "server's certificate (%s) expired %s UTC", p->subject,
		    p->not_after);
	}
	if (p->future) {
		return cxlp_fail(CXLP_E_CONN, "TLS: certificate not yet valid: "
		    "the server's certificate (%s) (check the clocks)",
		    p->subject);
	}
	if (p->mismatch) {
		return cxlp_fail(CXLP_E_CONN, "TLS: name mismatch: the server's "
		    "certificate (%s) is not for '%s'%s "
		    "(cxlp_config_set_tls_server_name)", p->subject,
		    p->server_name, tls->server_name[0] == '\0' ?
		    ", the URL's host" : "");
	}
	return cxlp_fail(CXLP_E_CONN, "TLS: the server's certificate (%s) "
	    "failed verification (mbedTLS flags 0x%x) at %s", p->subject,
	    p->flags, url);
}

/* The message for a tls+tcp:// dial that failed with rv, from a probe. */
static int
tls_dial_error(const char *url, const struct cfg_tls *tls, int rv,
    const struct tlsprobe *p)
{
	if (p->plain_sp) {
		return cxlp_fail(CXLP_E_CONN, "TLS client against plain tcp: %s "
		    "answered in the clear, it is a tcp:// endpoint (dial "
		    "tcp://, or give the metaserver a tls+tcp:// --listen)",
		    url);
	}
	if (p->got_cert && p->flags != 0) {
		return bad_cert(url, tls, p);
	}
	if (p->cert_asked && !p->handshake_ok && tls->cert[0] == '\0') {
		return cxlp_fail(CXLP_E_CONN, "TLS: the server requires a "
		    "client certificate (mutual TLS, its --tls-verify-peer): "
		    "set cxlp_config_set_tls_cert and _key (%s)", url);
	}
	if (p->cert_asked && !p->handshake_ok) {
		return cxlp_fail(CXLP_E_CONN, "TLS: the server refused this "
		    "handler's certificate %s (not signed by the CA of its "
		    "--tls-ca, or expired)", tls->cert);
	}
	if (p->reached && !p->tls) {
		return cxlp_fail(CXLP_E_CONN, "TLS: %s does not answer TLS: "
		    "not a tls+tcp:// endpoint? (%s)", url, nng_strerror(rv));
	}
	return cxlp_fail(CXLP_E_CONN, "TLS handshake with %s failed: %s", url,
	    nng_strerror(rv));
}

/* Errors a dial gets once its TCP connection was made: what the other
 * side's handshake (TLS or SP) did to it. */
static bool
handshake_error(int rv)
{
	return rv == NNG_ECRYPTO || rv == NNG_EPEERAUTH || rv == NNG_EPROTO ||
	    rv == NNG_ECLOSED || rv == NNG_ECONNRESET ||
	    rv == NNG_ECONNABORTED || rv == NNG_ECONNSHUT;
}

/* ctls_dial_error -- see client_int.h */
int
ctls_dial_error(const char *url, const struct cfg_tls *tls,
    unsigned timeout_ms, int rv)
{
	static const struct cfg_tls none; /* a probe with no options */
	struct tlsprobe p;

	if (rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP) {
		return cxlp_fail(-EINVAL, "client: cannot reach %s: %s", url,
		    nng_strerror(rv));
	}
	if (!handshake_error(rv)) {
		return cxlp_fail(CXLP_E_CONN, "client: cannot reach %s: %s",
		    url, nng_strerror(rv));
	}
	timeout_ms = timeout_ms < 2000 ? timeout_ms : 2000;
	if (tls_url(url)) {
		tlsprobe_run(url, tls, timeout_ms, &p);
		return tls_dial_error(url, tls, rv, &p);
	}
	if (strncmp(url, "tcp", 3) == 0) {
		tlsprobe_run(url, &none, timeout_ms, &p);
		if (p.tls) {
			return cxlp_fail(CXLP_E_CONN, "plaintext client against "
			    "a TLS endpoint: %s speaks TLS; dial it as "
			    "tls+tcp:// with cxlp_config_set_tls_ca", url);
		}
	}
	return cxlp_fail(CXLP_E_CONN, "client: cannot reach %s: %s (the "
	    "server hung up during the handshake)", url, nng_strerror(rv));
}
