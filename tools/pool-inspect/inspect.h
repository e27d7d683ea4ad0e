/*
 * inspect.h -- pool-inspect's commands and the helpers they share. Each
 * command is cmd_<name>(argc, argv) with argv[0] == "<name>", returning
 * the process exit status (0 ok, 1 failure or damage, 2 usage).
 */
#ifndef CXLP_INSPECT_H
#define CXLP_INSPECT_H

#include <stdbool.h>
#include <stdio.h>

struct pool;

#define EXIT_USAGE 2

/* the options every pool command takes: one POOL path, --json */
struct inspect_opts {
	const char *path;
	bool json;
};

/* inspect_args -- parse "POOL [--json]"; prints usage and returns
 * EXIT_USAGE on anything else, 0 when o is filled. */
int inspect_args(int argc, char **argv, const char *usage,
    struct inspect_opts *o);
/* inspect_open -- open path read-only (no server needed, nothing
 * written); on failure prints why to stderr and returns 1. */
int inspect_open(const char *path, struct pool **p);
/* inspect_json_str -- print s as a JSON string to f. */
void inspect_json_str(FILE *f, const char *s);

int cmd_summary(int argc, char **argv);
int cmd_check(int argc, char **argv);

#endif /* CXLP_INSPECT_H */
