/*
 * config.c -- the metaserver's command line.
 *
 * One table of long options drives getopt_long, the usage text and the
 * handlers, so a flag is added in one place. Every value is checked here:
 * a bad flag prints the usage and makes main exit 2 before anything is
 * opened. Access rules live here too: a tcp:// listener with no host binds
 * loopback, and one that other hosts can reach needs --secret-file; a
 * plaintext one off loopback also needs --allow-plaintext, and a
 * tls+tcp:// one needs --tls-cert and --tls-key, and --secret-file or
 * --tls-verify-peer (client certificates) to know its handlers.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elect.h"
#include "err.h"
#include "log.h"
#include "ms_int.h"
#include "secretfile.h"

struct flag {
	const char *name;
	int has_arg;
	const char *arg;  /* shown in the usage */
	const char *help;
	int (*set)(struct ms_config *cfg, const char *v);
};

/* Parse an unsigned decimal with an optional K/M/G/T suffix (powers of
 * 1024). Returns 0 or -EINVAL. */
static int
parse_size(const char *v, uint64_t *out)
{
	static const char suffixes[] = "KMGT";
	const char *s;
	char *end;
	uint64_t x;
	unsigned shift = 0;

	if (v[0] < '0' || v[0] > '9') {
		return -EINVAL;
	}
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno != 0) {
		return -EINVAL;
	}
	if (*end != '\0') {
		s = strchr(suffixes, *end >= 'a' ? *end - 32 : *end);
		if (s == NULL || *s == '\0' || end[1] != '\0') {
			return -EINVAL;
		}
		shift = 10u * (unsigned)(s - suffixes + 1);
	}
	if (shift > 0 && x > (UINT64_MAX >> shift)) {
		return -EINVAL;
	}
	*out = x << shift;
	return 0;
}

static int
set_pool(struct ms_config *cfg, const char *v)
{
	if (v[0] == '\0' || strlen(v) > PROTO_PATH_MAX) {
		return -EINVAL;
	}
	cfg->pool_path = v;
	return 0;
}

static int
set_size(struct ms_config *cfg, const char *v)
{
	int rc = parse_size(v, &cfg->size);

	return rc != 0 || cfg->size == 0 ? -EINVAL : 0;
}

/* A tcp-like URL with no host ("tcp://:5555") binds loopback, never every
 * interface: a listener is reachable from other hosts only when its
 * address says so. Anything else is used as given. */
static int
set_listen(struct ms_config *cfg, const char *v)
{
	const char *sep = strstr(v, "://");
	char *buf;
	int n;

	if (cfg->nurls == MS_URLS_MAX || sep == NULL || sep == v ||
	    strlen(v) >= MS_URL_MAX) {
		return -EINVAL;
	}
	buf = cfg->url_buf[cfg->nurls];
	if (sep[3] == ':' && (strncmp(v, "tcp", 3) == 0 ||
	    strncmp(v, "tls+tcp", 7) == 0 || strncmp(v, "ws", 2) == 0)) {
		bool v6 = strncmp(v, "tcp6", 4) == 0;

		n = snprintf(buf, MS_URL_MAX, "%.*s://%s%s", (int)(sep - v), v,
		    v6 ? "[::1]" : "127.0.0.1", sep + 3);
	} else {
		n = snprintf(buf, MS_URL_MAX, "%s", v);
	}
	if (n < 0 || n >= MS_URL_MAX) {
		return -EINVAL;
	}
	/* nng takes the scheme in any case: every check here reads it in
	 * lower case (TCP:// must not pass for something else than tcp://) */
	for (char *c = buf; c < buf + (sep - v); c++) {
		*c = (char)tolower((unsigned char)*c);
	}
	cfg->urls[cfg->nurls++] = buf;
	return 0;
}

static int
set_secret_file(struct ms_config *cfg, const char *v)
{
	if (v[0] == '\0') {
		return -EINVAL;
	}
	cfg->secret_file = v;
	return 0;
}

/* --tls-cert, --tls-key, --tls-ca: a PEM file's path (read at start). */
static int
set_tls_cert(struct ms_config *cfg, const char *v)
{
	cfg->tls_cert = v;
	return v[0] == '\0' ? -EINVAL : 0;
}

static int
set_tls_key(struct ms_config *cfg, const char *v)
{
	cfg->tls_key = v;
	return v[0] == '\0' ? -EINVAL : 0;
}

static int
set_tls_ca(struct ms_config *cfg, const char *v)
{
	cfg->tls_ca = v;
	return v[0] == '\0' ? -EINVAL : 0;
}

static int
set_tls_verify_peer(struct ms_config *cfg, const char *v)
{
	cfg->tls_verify_peer = true;
	return 0;
}

static int
set_allow_plaintext(struct ms_config *cfg, const char *v)
{
	cfg->allow_plaintext = true;
	return 0;
}

static int
set_workers(struct ms_config *cfg, const char *v)
{
	uint64_t n;

	if (parse_size(v, &n) != 0 || n == 0 || n > MS_WORKERS_MAX) {
		return -EINVAL;
	}
	cfg->workers = (unsigned)n;
	return 0;
}

static int
set_grace(struct ms_config *cfg, const char *v)
{
	char *end;

	if (v[0] < '0' || v[0] > '9') {
		return -EINVAL;
	}
	errno = 0;
	cfg->grace_ms = strtoull(v, &end, 10);
	return errno != 0 || *end != '\0' ? -EINVAL : 0;
}

/* A decimal in lo..hi (no sign, no suffix) into *out: 0 or -EINVAL. */
static int
parse_range(const char *v, unsigned long lo, unsigned long hi,
    unsigned long *out)
{
	char *end;

	if (v[0] < '0' || v[0] > '9') {
		return -EINVAL;
	}
	errno = 0;
	*out = strtoul(v, &end, 10);
	return errno != 0 || *end != '\0' || *out < lo || *out > hi ?
	    -EINVAL : 0;
}

/* One of two words into *first (true: the first): 0 or -EINVAL. */
static int
parse_choice(const char *v, const char *a, const char *b, bool *first)
{
	if (strcmp(v, a) != 0 && strcmp(v, b) != 0) {
		return -EINVAL;
	}
	*first = strcmp(v, a) == 0;
	return 0;
}

/* --max-sessions-per-process N: 1..MS_SESS_PER_PROC_MAX (silence.c). */
static int
set_sess_per_proc(struct ms_config *cfg, const char *v)
{
	unsigned long n;
	int rc = parse_range(v, 1, MS_SESS_PER_PROC_MAX, &n);

	cfg->sess_per_proc = rc == 0 ? (unsigned)n : cfg->sess_per_proc;
	return rc;
}

static int
set_slots(struct ms_config *cfg, const char *v)
{
	return parse_size(v, &cfg->index_slots);
}

static int
set_coherence(struct ms_config *cfg, const char *v)
{
	enum pool_coh m;

	if (pool_coh_parse(v, &m) != 0) {
		return -EINVAL;
	}
	cfg->coherence = (int)m;
	cfg->coherence_set = true;
	return 0;
}

static int
set_reformat(struct ms_config *cfg, const char *v)
{
	cfg->reformat = true;
	return 0;
}

static int
set_elect_term_reset(struct ms_config *cfg, const char *v)
{
	(void)v;
	cfg->elect_term_reset = true;
	return 0;
}

static int
set_repair(struct ms_config *cfg, const char *v)
{
	cfg->repair = true;
	return 0;
}

static int
set_log_level(struct ms_config *cfg, const char *v)
{
	static const char *const names[] = {
		[CXLP_LOG_OFF] = "off",
		[CXLP_LOG_ERR] = "err",
		[CXLP_LOG_INFO] = "info",
		[CXLP_LOG_DEBUG] = "debug",
	};

	for (int i = 0; i <= CXLP_LOG_DEBUG; i++) {
		if (strcmp(v, names[i]) == 0) {
			cfg->log_level = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int
set_evict(struct ms_config *cfg, const char *v)
{
	return parse_choice(v, "on", "off", &cfg->evict);
}

/* --evict-free PCT: 0..50 percent of the data area */
static int
set_evict_free(struct ms_config *cfg, const char *v)
{
	unsigned long n;
	int rc = parse_range(v, 0, 50, &n);

	cfg->evict_free_pct = rc == 0 ? (unsigned)n : cfg->evict_free_pct;
	return rc;
}

static int
set_drain_orphans(struct ms_config *cfg, const char *v)
{
	cfg->drain_orphans = true;
	return 0;
}

static int
set_evict_order(struct ms_config *cfg, const char *v)
{
	return parse_choice(v, "clock", "sweep", &cfg->evict_clock);
}

/* --lease-max-ms MS: 1..3600000 */
static int
set_lease_max(struct ms_config *cfg, const char *v)
{
	unsigned long n;
	int rc = parse_range(v, 1, 3600000, &n);

	cfg->lease_max_ms = rc == 0 ? (uint32_t)n : cfg->lease_max_ms;
	return rc;
}

/* --metrics URL: http://host:port (checked when it is opened);
 * http://:PORT binds 127.0.0.1, as --listen tcp://:PORT does: the
 * endpoint has no authentication */
static int
set_metrics(struct ms_config *cfg, const char *v)
{
	int n;

	if (strncmp(v, "http://", 7) != 0) {
		return cxlp_fail(-EINVAL, "--metrics %s: an http://host:port "
		    "URL", v);
	}
	n = v[7] == ':' ? snprintf(cfg->metrics_buf, sizeof(cfg->metrics_buf),
	    "http://127.0.0.1%s", v + 7) : snprintf(cfg->metrics_buf,
	    sizeof(cfg->metrics_buf), "%s", v);
	if (n < 0 || n >= (int)sizeof(cfg->metrics_buf)) {
		return cxlp_fail(-EINVAL, "--metrics: URL too long");
	}
	cfg->metrics_url = cfg->metrics_buf;
	return 0;
}

/* --ready-file PATH: its directory must exist and be writable now, so
 * that a supervisor waiting for the file is not left waiting for ever */
static int
set_ready_file(struct ms_config *cfg, const char *v)
{
	char dir[4096];
	const char *slash = strrchr(v, '/');
	size_t n = slash == NULL ? 1 : slash == v ? 1 : (size_t)(slash - v);

	if (*v == '\0' || (slash != NULL && slash[1] == '\0')) {
		return cxlp_fail(-EINVAL, "--ready-file '%s': not a file name",
		    v);
	}
	if (n >= sizeof(dir)) {
		return cxlp_fail(-ENAMETOOLONG, "--ready-file: path too long");
	}
	memcpy(dir, slash == NULL ? "." : v, n);
	dir[n] = '\0';
	if (access(dir, W_OK | X_OK) != 0) {
		return cxlp_fail(-errno, "--ready-file %s: its directory %s: "
		    "%s", v, dir, strerror(errno));
	}
	cfg->ready_file = v;
	return 0;
}

/* --elect etcd://HOST:PORT[,...] (elect.c parses it again at start) */
static int
set_elect(struct ms_config *cfg, const char *v)
{
	int rc = elect_check_spec(v);
	char why[256];

	if (rc != 0 && rc != -ENOTSUP) {
		snprintf(why, sizeof(why), "%s", cxlp_errormsg());
		return cxlp_fail(rc, "--elect %s", why);
	}
	if (rc != 0) {
		return cxlp_fail_keep(rc);
	}
	cfg->elect = v;
	return 0;
}

/* --elect-key /PATH: etcd takes any bytes; we take printable ones */
static int
set_elect_key(struct ms_config *cfg, const char *v)
{
	size_t n = strlen(v);

	if (v[0] != '/' || n < 2 || n > 512) {
		return cxlp_fail(-EINVAL, "--elect-key '%s': a path that "
		    "starts with / (2..512 bytes)", v);
	}
	for (size_t i = 0; i < n; i++) {
		if (!isgraph((unsigned char)v[i])) {
			return cxlp_fail(-EINVAL, "--elect-key: byte %zu is "
			    "not printable or is a space", i);
		}
	}
	cfg->elect_key = v;
	return 0;
}

/* --elect-ttl 2s | 1500ms | 3 (seconds): ELECT_TTL_MS_MIN..MAX, whole
 * seconds (etcd's TTLs are) */
static int
set_elect_ttl(struct ms_config *cfg, const char *v)
{
	char *end;
	unsigned long long x;

	if (!isdigit((unsigned char)v[0])) {
		return -EINVAL;
	}
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno != 0 || x > ELECT_TTL_MS_MAX) {
		return -EINVAL;
	}
	if (*end == '\0' || strcmp(end, "s") == 0) {
		x *= 1000;
	} else if (strcmp(end, "ms") != 0) {
		return -EINVAL;
	}
	if (x < ELECT_TTL_MS_MIN || x > ELECT_TTL_MS_MAX || x % 1000 != 0) {
		return cxlp_fail(-EINVAL, "--elect-ttl %s: whole seconds, "
		    "%us..%us", v, ELECT_TTL_MS_MIN / 1000,
		    ELECT_TTL_MS_MAX / 1000);
	}
	cfg->elect_ttl_ms = (uint32_t)x;
	return 0;
}

static const struct flag flags[] = {
	{ "pool", 1, "PATH", "pool file or device (default "
	    POOL_PATH_DEFAULT ")", set_pool },
	{ "size", 1, "SIZE", "pool size when creating, K/M/G/T suffixes "
	    "(default 1G)", set_size },
	{ "listen", 1, "URL", "endpoint, repeatable (default "
	    MS_DEFAULT_URL "); tcp://:PORT binds 127.0.0.1", set_listen },
	{ "secret-file", 1, "PATH", "shared secret that non-ipc handlers "
	    "must send (required for tcp://)", set_secret_file },
	{ "tls-cert", 1, "PATH", "this server's certificate (PEM) for "
	    "tls+tcp:// endpoints", set_tls_cert },
	{ "tls-key", 1, "PATH", "the certificate's private key (PEM, not "
	    "encrypted)", set_tls_key },
	{ "tls-ca", 1, "PATH", "CAs (PEM) that sign the handlers' "
	    "certificates (with --tls-verify-peer)", set_tls_ca },
	{ "tls-verify-peer", 0, NULL, "mutual TLS: refuse handlers without "
	    "a certificate signed by --tls-ca", set_tls_verify_peer },
	{ "allow-plaintext", 0, NULL, "allow tcp:// (or ws://) on an address "
	    "other hosts reach: keys and secret cross in the clear",
	    set_allow_plaintext },
	{ "workers", 1, "N", "concurrent request workers, 1..32 "
	    "(default 4)", set_workers },
	{ "grace-ms", 1, "MS", "reattach window of a disconnected "
	    "session of another host (default 10000)", set_grace },
	{ "max-sessions-per-process", 1, "N", "sessions one handler "
	    "process may hold, 1..65535 (default 64)", set_sess_per_proc },
	{ "index-slots", 1, "N", "KV index capacity when creating "
	    "(default: from size)", set_slots },
	{ "reformat", 0, NULL, "format the pool even if it is valid "
	    "(drops all keys)", set_reformat },
	{ "coherence", 1, "host|hw|sw|sim|auto", "what a format assumes of "
	    "the hosts that attach: one host; several, coherent by the "
	    "device; several, by software write-back and drop; sw through "
	    "the simulator (test tool, plain files). Default auto: sw on a "
	    "devdax device, host on files", set_coherence },
	{ "repair", 0, NULL, "drop damaged records, and the keys in them, "
	    "instead of refusing the pool", set_repair },
	{ "evict", 1, "on|off", "evict keys when the pool is full "
	    "(default on; off: stores get CXLP_E_NOSPACE)", set_evict },
	{ "evict-free", 1, "PCT", "keep this much of the data area free by "
	    "evicting orphaned keys, 0..50 (default 5)", set_evict_free },
	{ "evict-order", 1, "clock|sweep", "victims: least recently read "
	    "first (clock, default) or in index order, ignoring reads "
	    "(sweep)", set_evict_order },
	{ "drain-orphans", 0, NULL, "at start, evict every key of handlers "
	    "that closed or died (also with --evict off)", set_drain_orphans },
	{ "lease-max-ms", 1, "MS", "the longest lease a reader may hold, "
	    "1..3600000 (default 60000)", set_lease_max },
	{ "metrics", 1, "URL", "serve /metrics (Prometheus) and /health "
	    "over HTTP, e.g. http://:9464 (binds 127.0.0.1; default: off)",
	    set_metrics },
	{ "ready-file", 1, "PATH", "once serving, write the pid to PATH "
	    "(its directory must exist; an old one is removed once the pool "
	    "is open, this one at exit); READY=1 goes to $NOTIFY_SOCKET "
	    "(systemd Type=notify) whenever that is set", set_ready_file },
	{ "elect", 1, "etcd://H:P[,..]", "standby: campaign "
	    "for the pool through these etcd members; the leader serves, "
	    "the others wait (default: no election)", set_elect },
	{ "elect-key", 1, "KEY", "the election key (default "
	    ELECT_KEY_PREFIX "<pool uuid>)", set_elect_key },
	{ "elect-ttl", 1, "TIME", "the leader's lease, whole seconds, e.g. "
	    "2s (default 2s, 1s..300s)", set_elect_ttl },
	{ "elect-term-reset", 0, NULL, "etcd was rebuilt from nothing: "
	    "serve the pool under a term below the one it was served under",
	    set_elect_term_reset },
	{ "log-level", 1, "LEVEL", "err|info|debug|off (default info)",
	    set_log_level },
	{ "help", 0, NULL, "show this help", NULL },
	{ "version", 0, NULL, "show the version", NULL },
};

#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

static void
usage(FILE *f)
{
	fprintf(f, "usage: cxlpool-metaserver [options]\n"
	    "Serve one cxlpool pool to handlers.\n\n");
	for (size_t i = 0; i < NFLAGS; i++) {
		char lhs[40];

		snprintf(lhs, sizeof(lhs), "--%s%s%s", flags[i].name,
		    flags[i].arg != NULL ? " " : "",
		    flags[i].arg != NULL ? flags[i].arg : "");
		fprintf(f, "  %-22s %s\n", lhs, flags[i].help);
	}
}

/* Handle option number i with value v: 0 ok, 1 exit 0, 2 exit 2. */
static int
apply_flag(struct ms_config *cfg, size_t i, const char *v)
{
	if (strcmp(flags[i].name, "help") == 0) {
		usage(stdout);
		return 1;
	}
	if (strcmp(flags[i].name, "version") == 0) {
		printf("cxlpool-metaserver %s\n", MS_VERSION);
		return 1;
	}
	cxlp_errmsg_clear();
	if (flags[i].set(cfg, v) != 0) {
		/* a setter that says why (cxlp_fail) is heard; the usage
		 * text is for a value that is simply not one */
		if (cxlp_errormsg()[0] != '\0') {
			fprintf(stderr, "cxlpool-metaserver: %s\n",
			    cxlp_errormsg());
			return 2;
		}
		fprintf(stderr, "cxlpool-metaserver: bad value for --%s: "
		    "'%s'\n", flags[i].name, v);
		usage(stderr);
		return 2;
	}
	return 0;
}

/* ms_config_parse -- parse argv into cfg (defaults first). Returns 0 to
 * run, 1 when --help or --version was printed (exit 0), 2 after a usage
 * message on stderr (exit 2). cfg points into argv. */
int
ms_config_parse(struct ms_config *cfg, int argc, char **argv)
{
	struct option longopts[NFLAGS + 1];
	int idx, c, rc = 0;

	ms_config_defaults(cfg);
	memset(longopts, 0, sizeof(longopts));
	for (size_t i = 0; i < NFLAGS; i++) {
		longopts[i].name = flags[i].name;
		longopts[i].has_arg = flags[i].has_arg;
		longopts[i].val = 0;
	}
	optind = 1;
	opterr = 0;
	while (rc == 0 && (c = getopt_long(argc, argv, "", longopts,
	    &idx)) != -1) {
		if (c != 0) {
			fprintf(stderr, "cxlpool-metaserver: bad option "
			    "'%s'\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
		rc = apply_flag(cfg, (size_t)idx, optarg);
	}
	if (rc == 0 && optind < argc) {
		fprintf(stderr, "cxlpool-metaserver: unexpected argument "
		    "'%s'\n", argv[optind]);
		usage(stderr);
		rc = 2;
	}
	if (rc == 0 && cfg->elect == NULL && (cfg->elect_key != NULL ||
	    cfg->elect_ttl_ms != 0 || cfg->elect_term_reset)) {
		fprintf(stderr, "cxlpool-metaserver: --elect-key, --elect-ttl "
		    "and --elect-term-reset need --elect\n");
		rc = 2;
	}
	if (rc == 0 && cfg->elect_ttl_ms == 0) {
		cfg->elect_ttl_ms = ELECT_TTL_MS_DEFAULT;
	}
	if (rc == 0 && cfg->nurls == 0) {
		cfg->urls[cfg->nurls++] = MS_DEFAULT_URL;
	}
	if (rc == 0) {
		rc = ms_config_check_access(cfg);
	}
	return rc;
}

/* ms_secret_load -- read the shared secret file; see ms_int.h. */
int
ms_secret_load(const char *path, uint8_t *buf, uint16_t *len)
{
	char why[128];
	bool loose;
	int rc;

	*len = 0;
	rc = cxlp_secret_read(path, buf, len, &loose, why, sizeof(why));
	if (loose) {
		log_err("op=secret path=%s msg=\"readable by group or others; "
		    "chmod 600 it\"", path);
	}
	return rc == 0 ? 0 : cxlp_fail(rc, "secret file %s: %s", path, why);
}
