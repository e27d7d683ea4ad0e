/*
 * main.c -- pool-inspect: read a cxlpool pool file or device without a
 * server, list DAX devices, or ask a running metaserver for its stats
 * and sessions.
 * An ndctl-style command table: `pool-inspect <command> ...`, each
 * command in its own cmd_<name>.c; adding one is a row below. Pools are
 * always opened read-only (POOL_RDONLY): nothing is repaired or written,
 * so inspecting a pool a metaserver is serving is safe, if racy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxlpool.h"
#include "err.h"
#include "inspect.h"
#include "pool.h"

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *usage; /* arguments after the name */
	const char *help;  /* one line */
};

static const struct cmd cmds[] = {
	{ "summary", cmd_summary, "POOL [--elect URL [--elect-key K]] [--json]",
	    "sizes, media, use, free extents, sessions, access bytes, term, "
	    "leader, last takeover (standbys: from etcd, with --elect)" },
	{ "regions", cmd_regions, "POOL [--json]",
	    "each region: owner, state, size, page size, pages used" },
	{ "keys", cmd_keys, "POOL [--prefix P] [--json]",
	    "each key (sorted): region, page, offset, length" },
	{ "sessions", cmd_sessions, "POOL [--json]",
	    "the sessions the pool records: id, pid, host, regions" },
	{ "check", cmd_check, "POOL [--json]",
	    "verify every invariant; exit 1 naming each problem" },
	{ "devices", cmd_devices, "[PATH] [--json]",
	    "DAX devices and fsdax namespaces found (or the one at PATH)" },
	{ "stats", cmd_stats, "--server URL [--timeout-ms MS] [--elect URL "
	    "--elect-key K] [--json]",
	    "a running metaserver's stats and sessions (live, own excluded); "
	    "leader and standbys from etcd with --elect" },
	{ "top", cmd_top, "--server URL [--interval-ms MS] [--count N]",
	    "a live view of a metaserver, refreshed each second: ops/s, hit "
	    "ratio, free bytes, evictions/s, sessions (q quits)" },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void
usage(FILE *f)
{
	fprintf(f, "usage: pool-inspect <command> [args]\n"
	    "       pool-inspect --help\n\ncommands:\n");
	for (size_t i = 0; i < NCMDS; i++) {
		fprintf(f, "  %-9s %s\n  %-9s   %s\n", cmds[i].name,
		    cmds[i].usage, "", cmds[i].help);
	}
	fprintf(f, "\nPools are opened read-only; no metaserver is needed "
	    "except for stats and top.\nExit status: 0 ok, 1 failure or damage, "
	    "2 usage.\n");
}

/* an option with a value: "--name V" or "--name=V"; 1 taken, 0 not
 * this option, -1 value missing */
static int
opt_value(int argc, char **argv, int *i, const char *name, const char **v)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0) {
		return 0;
	}
	if (argv[*i][n] == '=') {
		*v = argv[*i] + n + 1;
		return 1;
	}
	if (argv[*i][n] != '\0' || *i + 1 >= argc) {
		return argv[*i][n] == '\0' ? -1 : 0;
	}
	*v = argv[++*i];
	return 1;
}

/* one argument; 0 ok, -1 not accepted */
static int
one_arg(int argc, char **argv, int *i, unsigned accept,
    struct inspect_opts *o)
{
	const char *t = NULL;
	char *end;
	int r;

	if (strcmp(argv[*i], "--json") == 0) {
		o->json = true;
		return 0;
	}
	if ((accept & OPT_PREFIX) &&
	    (r = opt_value(argc, argv, i, "--prefix", &o->prefix)) != 0) {
		return r > 0 ? 0 : -1;
	}
	if ((accept & OPT_SERVER) &&
	    (r = opt_value(argc, argv, i, "--server", &o->server)) != 0) {
		return r > 0 ? 0 : -1;
	}
	if ((accept & OPT_SERVER) &&
	    (r = opt_value(argc, argv, i, "--timeout-ms", &t)) != 0) {
		unsigned long ms = r > 0 ? strtoul(t, &end, 10) : 0;

		o->timeout_ms = (unsigned)ms;
		return r > 0 && *end == '\0' && ms > 0 && ms < 3600000 ?
		    0 : -1;
	}
	if ((accept & OPT_TOP) &&
	    (r = opt_value(argc, argv, i, "--interval-ms", &t)) != 0) {
		unsigned long ms = r > 0 ? strtoul(t, &end, 10) : 0;

		o->interval_ms = (unsigned)ms;
		return r > 0 && *end == '\0' && ms >= 100 && ms <= 60000 ?
		    0 : -1;
	}
	if ((accept & OPT_TOP) &&
	    (r = opt_value(argc, argv, i, "--count", &t)) != 0) {
		unsigned long n = r > 0 ? strtoul(t, &end, 10) : 0;

		o->count = (unsigned)n;
		return r > 0 && *end == '\0' && n <= 1000000 ? 0 : -1;
	}
	if ((accept & OPT_ELECT) &&
	    (r = opt_value(argc, argv, i, "--elect-key", &o->elect_key)) != 0) {
		return r > 0 && o->elect_key[0] == '/' ? 0 : -1;
	}
	if ((accept & OPT_ELECT) &&
	    (r = opt_value(argc, argv, i, "--elect", &o->elect)) != 0) {
		return r > 0 ? 0 : -1;
	}
	if ((accept & (OPT_POOL | OPT_PATH)) && argv[*i][0] != '-' &&
	    o->path == NULL) {
		o->path = argv[*i];
		return 0;
	}
	return -1;
}

/* inspect_args -- see inspect.h */
int
inspect_args(int argc, char **argv, unsigned accept, const char *use,
    struct inspect_opts *o)
{
	bool ok = true;

	memset(o, 0, sizeof(*o));
	o->timeout_ms = 5000;
	o->interval_ms = 1000;
	for (int i = 1; i < argc && ok; i++) {
		ok = one_arg(argc, argv, &i, accept, o) == 0;
	}
	if ((accept & OPT_POOL) && o->path == NULL) {
		ok = false;
	}
	if ((accept & OPT_SERVER) && o->server == NULL) {
		ok = false;
	}
	if (!ok) {
		fprintf(stderr, "usage: pool-inspect %s %s\n", argv[0], use);
		return EXIT_USAGE;
	}
	return 0;
}

/* inspect_open -- see inspect.h */
int
inspect_open(const char *path, struct pool **p)
{
	int rc = pool_open(p, path, POOL_RDONLY, NULL);

	if (rc != 0) {
		fprintf(stderr, "pool-inspect: %s (%s)\n", cxlp_errormsg(),
		    cxlp_strerror(rc));
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	for (size_t i = 0; i < NCMDS; i++) {
		if (strcmp(argv[1], cmds[i].name) == 0) {
			return cmds[i].fn(argc - 1, argv + 1);
		}
	}
	fprintf(stderr, "pool-inspect: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
