/*
 * config_access.c -- which --listen endpoints the metaserver accepts, and
 * what each needs (part of ms_config_parse, config.c): ipc:// needs
 * nothing (its socket file is the owner's only); an endpoint other hosts
 * may reach needs the shared secret, or on tls+tcp:// client
 * certificates; plaintext off loopback only with --allow-plaintext; a
 * tls+tcp:// listener a certificate and key; wss:// is refused. Schemes
 * arrive in lower case (set_listen).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ms_int.h"

/* ms_url_is_tls -- see ms_int.h */
bool
ms_url_is_tls(const char *url)
{
	return strncmp(url, "tls+tcp://", 10) == 0 ||
	    strncmp(url, "tls+tcp4://", 11) == 0 ||
	    strncmp(url, "tls+tcp6://", 11) == 0;
}

/* ms_url_is_plain_remote -- see ms_int.h */
bool
ms_url_is_plain_remote(const char *url)
{
	static const char *const plain[] = { "tcp://", "tcp4://", "tcp6://",
		"ws://", "ws4://", "ws6://" };
	static const char *const loop[] = { "127.", "localhost:",
		"localhost/", "[::1]:" };
	const char *host = NULL;

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		if (strncmp(url, plain[i], strlen(plain[i])) == 0) {
			host = url + strlen(plain[i]);
		}
	}
	if (host == NULL) {
		return false;
	}
	for (size_t i = 0; i < sizeof(loop) / sizeof(loop[0]); i++) {
		if (strncasecmp(host, loop[i], strlen(loop[i])) == 0) {
			return false;
		}
	}
	return true;
}

/* A listener on url must have a shared secret: everything but ipc://,
 * inproc:// and a TLS endpoint whose peers show certificates. */
static bool
ms_url_needs_secret(const struct ms_config *cfg, const char *url)
{
	static const char *const exempt[] = { "ipc://", "inproc://" };

	for (size_t i = 0; i < sizeof(exempt) / sizeof(exempt[0]); i++) {
		if (strncmp(url, exempt[i], strlen(exempt[i])) == 0) {
			return false;
		}
	}
	return !(ms_url_is_tls(url) && cfg->tls_verify_peer);
}

/* The TLS flags fit the listeners: a tls+tcp:// one has a certificate
 * and key, --tls-verify-peer has a CA, and TLS flags have a TLS
 * listener. 0, or 2 after a message. */
static int
check_tls(const struct ms_config *cfg)
{
	bool any = false;

	for (unsigned i = 0; i < cfg->nurls; i++) {
		any = any || ms_url_is_tls(cfg->urls[i]);
	}
	if (any && (cfg->tls_cert == NULL || cfg->tls_key == NULL)) {
		fprintf(stderr, "cxlpool-metaserver: a tls+tcp:// --listen "
		    "needs --tls-cert PATH and --tls-key PATH\n");
		return 2;
	}
	if (cfg->tls_verify_peer && cfg->tls_ca == NULL) {
		fprintf(stderr, "cxlpool-metaserver: --tls-verify-peer needs "
		    "--tls-ca PATH, the CA that signs the handlers' "
		    "certificates\n");
		return 2;
	}
	if (!any && (cfg->tls_cert != NULL || cfg->tls_key != NULL ||
	    cfg->tls_ca != NULL || cfg->tls_verify_peer)) {
		fprintf(stderr, "cxlpool-metaserver: TLS flags given but no "
		    "tls+tcp:// --listen\n");
		return 2;
	}
	return 0;
}

/* ms_config_check_access -- see ms_int.h */
int
ms_config_check_access(const struct ms_config *cfg)
{
	for (unsigned i = 0; i < cfg->nurls; i++) {
		const char *url = cfg->urls[i];

		if (strncmp(url, "wss", 3) == 0) {
			fprintf(stderr, "cxlpool-metaserver: --listen %s: "
			    "wss:// (wss4://, wss6://) is not supported (its "
			    "TLS would have no certificate, and handlers speak "
			    "TLS on tls+tcp:// only): use tls+tcp:// with "
			    "--tls-cert and --tls-key\n", url);
			return 2;
		}
		if (!cfg->allow_plaintext && ms_url_is_plain_remote(url)) {
			fprintf(stderr, "cxlpool-metaserver: --listen %s is "
			    "plaintext on an address other hosts can reach: "
			    "anyone on the path reads the secret and every "
			    "key. Use tls+tcp:// (--tls-cert, --tls-key), or "
			    "pass --allow-plaintext to accept it\n", url);
			return 2;
		}
		if (cfg->secret_file == NULL &&
		    ms_url_needs_secret(cfg, url)) {
			fprintf(stderr, "cxlpool-metaserver: --listen %s needs "
			    "--secret-file PATH: handlers on a %s endpoint "
			    "must present a shared secret "
			    "(cxlp_config_set_secret)%s\n", url,
			    ms_url_is_tls(url) ? "tls+tcp://" : "tcp://",
			    ms_url_is_tls(url) ? ", or a client certificate "
			    "(--tls-verify-peer --tls-ca)" :
			    ", or use tls+tcp://");
			return 2;
		}
	}
	return check_tls(cfg);
}
