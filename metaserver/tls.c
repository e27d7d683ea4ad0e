/*
 * tls.c -- the metaserver's tls+tcp:// endpoints: the one server TLS
 * config every TLS listener shares, and the log of handshakes that
 * failed. With server.c the only metaserver files that include nng
 * (ms_tls.h).
 *
 * The config is built once at start from --tls-cert, --tls-key, --tls-ca
 * and --tls-verify-peer; a file that cannot be read or used stops the
 * start (exit 1) with a message naming the flag and the file.
 *
 * Failed handshakes: nng handles them inside its listener and tells the
 * application nothing but counters (the listener's "auth" statistic
 * counts NNG_ECRYPTO and NNG_EPEERAUTH, "proto" a peer whose first bytes
 * were not an SP header, "disconnect" a hang-up). The reaper polls them (ms_tls_watch_poll, at
 * most every WATCH_MS) and writes one line per listener whose counters
 * grew, naming the causes that produce each: on a TLS listener, a
 * plaintext client, a client that does not trust this server's
 * certificate, or (with --tls-verify-peer) one without an acceptable
 * certificate; on a plain one, a TLS client. Which of them it was, nng
 * does not say; the handler's own message does (handler/net/tls.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "log.h"
#include "ms_tls.h"
#include "pemfile.h"

#define WATCH_MS 500u      /* between two looks at the counters */

/* Read the PEM file of --flag path into a heap string (*out). */
static int
pem_read(const char *flag, const char *path, char **out)
{
	const char *why = NULL;
	int rc = cxlp_pem_read(path, out, &why);

	return rc == 0 ? 0 : cxlp_fail(rc, "--%s %s: %s", flag, path, why);
}

/* Give c cfg's certificate and key. */
static int
own_cert(nng_tls_config *c, const struct ms_config *cfg)
{
	char *cert = NULL, *key = NULL;
	int rv, rc;

	if ((rc = pem_read("tls-cert", cfg->tls_cert, &cert)) == 0 &&
	    (rc = pem_read("tls-key", cfg->tls_key, &key)) == 0 &&
	    (rv = nng_tls_config_own_cert(c, cert, key, NULL)) != 0) {
		rc = cxlp_fail(-EINVAL, "--tls-cert %s, --tls-key %s: cannot "
		    "use them (%s: not a certificate and its unencrypted "
		    "key?)", cfg->tls_cert, cfg->tls_key, nng_strerror(rv));
	}
	free(cert);
	if (key != NULL) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	return rc;
}

/* ms_tls_config_new -- see ms_tls.h */
int
ms_tls_config_new(nng_tls_config **out, const struct ms_config *cfg)
{
	nng_tls_config *c;
	char *ca = NULL;
	int rv, rc;

	*out = NULL;
	if ((rv = nng_tls_config_alloc(&c, NNG_TLS_MODE_SERVER)) != 0) {
		return cxlp_fail(-ENOMEM, "TLS: %s", nng_strerror(rv));
	}
	if ((rc = own_cert(c, cfg)) != 0) {
		goto err_free;
	}
	if (cfg->tls_ca != NULL) {
		if ((rc = pem_read("tls-ca", cfg->tls_ca, &ca)) != 0) {
			goto err_free;
		}
		rv = nng_tls_config_ca_chain(c, ca, NULL);
		free(ca);
		if (rv != 0) {
			rc = cxlp_fail(-EINVAL, "--tls-ca %s: no usable "
			    "certificate in it (%s)", cfg->tls_ca,
			    nng_strerror(rv));
			goto err_free;
		}
	}
	rv = nng_tls_config_auth_mode(c, cfg->tls_verify_peer ?
	    NNG_TLS_AUTH_MODE_REQUIRED : NNG_TLS_AUTH_MODE_NONE);
	if (rv != 0) {
		rc = cxlp_fail(-EINVAL, "TLS: %s", nng_strerror(rv));
		goto err_free;
	}
	*out = c;
	return 0;

err_free:
	nng_tls_config_free(c);
	return rc;
}

/* ms_tls_watch_add -- see ms_tls.h */
void
ms_tls_watch_add(struct ms_tls_watch *w, nng_listener l, const char *url)
{
	if (w->n < MS_URLS_MAX && nng_listener_id(l) > 0) {
		w->l[w->n++] = (struct ms_tls_watched){
			.id = (uint32_t)nng_listener_id(l), .url = url,
			.tls = ms_url_is_tls(url) };
	}
}

static uint64_t
stat_of(nng_stat *st, const char *name)
{
	nng_stat *s = nng_stat_find(st, name);

	return s != NULL ? nng_stat_value(s) : 0;
}

/* Log what failed on l since the last look, from its counters now. A
 * hang-up mid-handshake on a TLS listener is an info line: a client that
 * rejects this server's certificate (nng's does) just closes, and so do
 * probes and health checks. */
static void
watch_log(struct ms_tls_watch *w, struct ms_tls_watched *l, uint64_t auth,
    uint64_t proto, uint64_t disc)
{
	if (l->tls && auth > l->auth) {
		log_err("op=tls listen=%s failed=%llu msg=\"TLS handshake "
		    "failed: a plaintext (tcp://) client, a client that does "
		    "not trust this server's certificate (unknown CA, "
		    "expired, name mismatch)%s\"", l->url,
		    (unsigned long long)(auth - l->auth), w->verify_peer ?
		    ", or a client without a certificate signed by --tls-ca "
		    "(mutual TLS)" : "");
	}
	if (l->tls && disc > l->disc) {
		log_info("op=tls listen=%s failed=%llu msg=\"a peer hung up "
		    "during the handshake: a client that does not trust this "
		    "server's certificate (unknown CA, expired, name "
		    "mismatch), or a probe\"", l->url,
		    (unsigned long long)(disc - l->disc));
	}
	if (l->tls && proto > l->proto) {
		log_err("op=tls listen=%s failed=%llu msg=\"a peer completed "
		    "TLS but sent no SP header: not an nng client\"", l->url,
		    (unsigned long long)(proto - l->proto));
	}
	if (!l->tls && proto > l->proto) {
		log_err("op=handshake listen=%s failed=%llu msg=\"a peer sent "
		    "no SP header: a TLS client (tls+tcp://) on this plain "
		    "endpoint, or not an nng peer\"", l->url,
		    (unsigned long long)(proto - l->proto));
	}
	l->auth = auth;
	l->proto = proto;
	l->disc = disc;
}

/* ms_tls_watch_poll -- see ms_tls.h */
void
ms_tls_watch_poll(struct ms_tls_watch *w, uint64_t now_ms)
{
	nng_stat *all, *st;

	if (w->n == 0 || now_ms - w->last_ms < WATCH_MS ||
	    nng_stats_get(&all) != 0) {
		return;
	}
	w->last_ms = now_ms;
	for (st = nng_stat_child(all); st != NULL; st = nng_stat_next(st)) {
		uint64_t id;

		if (strcmp(nng_stat_name(st), "listener") != 0) {
			continue;
		}
		id = stat_of(st, "id");
		for (unsigned i = 0; i < w->n; i++) {
			if (w->l[i].id == id) {
				watch_log(w, &w->l[i], stat_of(st, "auth"),
				    stat_of(st, "proto"),
				    stat_of(st, "disconnect"));
			}
		}
	}
	nng_stats_free(all);
}
