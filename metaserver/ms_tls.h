/*
 * ms_tls.h -- the metaserver's TLS (tls.c), for server.c: the listener
 * config of tls+tcp:// endpoints and the log of failed handshakes. It
 * includes nng, so only server.c and tls.c include it.
 */
#ifndef CXLP_MS_TLS_H
#define CXLP_MS_TLS_H

#include <stdbool.h>
#include <stdint.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "ms_int.h"

/* One listener whose handshake failures are logged. */
struct ms_tls_watched {
	uint32_t id;      /* nng_listener_id */
	const char *url;  /* cfg's */
	bool tls;
	uint64_t auth, proto, disc; /* nng's counters as last seen */
};

struct ms_tls_watch {
	struct ms_tls_watched l[MS_URLS_MAX];
	unsigned n;
	bool verify_peer;  /* --tls-verify-peer: name a missing cert */
	uint64_t last_ms;  /* cxlp_now_ms() of the last look */
};

/* ms_tls_config_new -- the server TLS config of cfg: its --tls-cert and
 * --tls-key, --tls-ca and --tls-verify-peer. Returns 0 and *out (caller
 * frees: nng_tls_config_free) or an error with cxlp_errormsg() naming
 * the flag and file. */
int ms_tls_config_new(nng_tls_config **out, const struct ms_config *cfg);
/* ms_tls_watch_add -- log the handshake failures of listener l on url
 * (TLS or not). */
void ms_tls_watch_add(struct ms_tls_watch *w, nng_listener l,
    const char *url);
/* ms_tls_watch_poll -- at most once a second: log, per listener, the
 * handshakes that failed since the last look and their likely causes
 * (nng counts them; it does not say which). */
void ms_tls_watch_poll(struct ms_tls_watch *w, uint64_t now_ms);

#endif /* CXLP_MS_TLS_H */
