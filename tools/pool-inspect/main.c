/*
 * main.c -- pool-inspect: read a cxlpool pool file or device without a
 * server. An ndctl-style command table: `pool-inspect <command> ...`,
 * each command in its own cmd_<name>.c; adding one is a row below.
 */
#include <stdio.h>
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
	{ "summary", cmd_summary, "POOL [--json]",
	    "sizes, regions, keys, bytes used and sessions" },
	{ "check", cmd_check, "POOL [--json]",
	    "verify every invariant; exit 1 if any is broken" },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void
usage(FILE *f)
{
	fprintf(f, "usage: pool-inspect <command> [args]\n"
	    "       pool-inspect --help\n\ncommands:\n");
	for (size_t i = 0; i < NCMDS; i++) {
		fprintf(f, "  %-8s %-14s %s\n", cmds[i].name, cmds[i].usage,
		    cmds[i].help);
	}
	fprintf(f, "\nPools are opened read-only; no metaserver is needed.\n");
}

/* inspect_args -- see inspect.h */
int
inspect_args(int argc, char **argv, const char *use, struct inspect_opts *o)
{
	o->path = NULL;
	o->json = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			o->json = true;
		} else if (argv[i][0] != '-' && o->path == NULL) {
			o->path = argv[i];
		} else {
			o->path = NULL;
			break;
		}
	}
	if (o->path == NULL) {
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

/* inspect_json_str -- see inspect.h */
void
inspect_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			fprintf(f, "\\%c", c);
		} else if (c < 0x20) {
			fprintf(f, "\\u%04x", c);
		} else {
			fputc(c, f);
		}
	}
	fputc('"', f);
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
