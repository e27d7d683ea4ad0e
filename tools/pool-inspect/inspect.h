/*
 * inspect.h -- pool-inspect's commands and the helpers they share. Each
 * command is cmd_<name>(argc, argv) with argv[0] == "<name>", returning
 * the process exit status (0 ok, 1 failure or damage, 2 usage). main.c
 * parses options and opens pools; fmt.c formats sizes and keys for a
 * terminal; access.c reads the eviction policy's bytes from the media;
 * --json goes through common/jsonw.h (always valid: strings
 * escaped, bytes that are not UTF-8 written as \u00XX).
 */
#ifndef CXLP_INSPECT_H
#define CXLP_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jsonw.h"

struct pool;

#define EXIT_USAGE 2

/* what a command accepts besides --json (inspect_args' accept mask) */
#define OPT_POOL 0x1u   /* one positional POOL, required */
#define OPT_PATH 0x2u   /* one positional PATH, optional */
#define OPT_PREFIX 0x4u /* --prefix P */
#define OPT_SERVER 0x8u /* --server URL (required), --timeout-ms MS */
#define OPT_TOP 0x10u   /* --interval-ms MS, --count N */
#define OPT_ELECT 0x20u /* --elect etcd://H:P[,...], --elect-key K */

struct inspect_opts {
	const char *path;    /* POOL or PATH; NULL if none */
	const char *prefix;  /* --prefix; NULL if none */
	const char *server;  /* --server URL */
	unsigned timeout_ms; /* --timeout-ms, default 5000 */
	bool json;           /* --json */
	unsigned interval_ms; /* --interval-ms, default 1000 */
	unsigned count;       /* --count: refreshes, 0 = until quit */
	const char *elect;    /* --elect: etcd's endpoints; NULL if none */
	const char *elect_key; /* --elect-key; NULL: /cxlpool/<uuid> */
};

/* inspect_args -- parse argv[1..] by accept; prints usage and returns
 * EXIT_USAGE on anything else, 0 when o is filled. */
int inspect_args(int argc, char **argv, unsigned accept, const char *usage,
    struct inspect_opts *o);
/* inspect_open -- open path read-only (no server needed, nothing
 * written); on failure prints why to stderr and returns 1. */
int inspect_open(const char *path, struct pool **p);

/* ---- fmt.c -------------------------------------------------------------- */

#define FMT_SIZE_LEN 24
/* fmt_size -- bytes for people: "100 B", "4.0 KiB", "64.0 MiB"; returns
 * buf. */
const char *fmt_size(char buf[FMT_SIZE_LEN], uint64_t bytes);
/* fmt_key -- key bytes as terminal text into buf[0..n): printable ASCII
 * as is, backslash and the rest as \xNN; cut to width columns with "..."
 * when longer. Returns buf. */
const char *fmt_key(char *buf, size_t n, const void *key, size_t klen,
    size_t width);

/* ---- access.c ----------------------------------------------------------- */

/* The eviction policy's state on the media. */
struct inspect_access {
	uint32_t major, minor; /* the pool's layout version */
	bool area;             /* it has an access area (layout 2.2) */
	uint64_t slots;        /* bytes in it: one per index slot */
	uint64_t referenced;   /* of them set: keys read since the CLOCK
	                        * hand last passed; per host: slots whose
	                        * counter is not 0 in some host's slice */
	bool per_host;         /* one slice of counters per host (sw, sim) */
	uint32_t hosts;        /* hosts the host table gives a slice */
	uint64_t off, len;     /* where the area lies, bytes */
};

/* inspect_access -- read the superblock and access area of the pool at
 * path (align: pool_align of its open pool) into *a, read-only. 0, or a
 * negative error with cxlp_errormsg() saying why. */
int inspect_access(const char *path, uint64_t align,
    struct inspect_access *a);

/* ---- election.c (the printing), elect_etcd.c or elect_none.c -------- */

#define INSPECT_SB_MAX 16
/* The election as etcd has it (inspect_elect_read). */
struct inspect_elect {
	const char *spec;      /* --elect, or NULL: not asked */
	char key[1100];        /* the election key read */
	int rc;                /* 0, or why nothing was read (why[]) */
	char why[256];
	bool leader;           /* the key is held */
	uint64_t epoch;        /* the term: its create revision */
	char value[4097];      /* the leader's record (listen, host, pid) */
	int64_t count;         /* standbys registered */
	unsigned n;            /* of them here */
	char name[INSPECT_SB_MAX][96];
	char info[INSPECT_SB_MAX][384];
};
/* inspect_elect_read -- the leader and standbys of key at etcd spec
 * into *e (e->rc and why say what failed; a build without the election
 * says so). */
void inspect_elect_read(const char *spec, const char *key,
    struct inspect_elect *e);
/* inspect_elect_text, _json -- e as summary and stats print it; without
 * --elect, a line that says how to ask etcd. */
void inspect_elect_text(const struct inspect_elect *e);
void inspect_elect_json(struct jw *w, const struct inspect_elect *e);
/* inspect_owner_text, _json -- p's owner record: the leader, its
 * endpoints, its heartbeat's age and term. */
void inspect_owner_text(const struct pool *p);
void inspect_owner_json(struct jw *w, const struct pool *p);
/* inspect_takeover_text, _json -- p's last takeover (or none). */
void inspect_takeover_text(const struct pool *p);
void inspect_takeover_json(struct jw *w, const struct pool *p);

int cmd_summary(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_regions(int argc, char **argv);
int cmd_keys(int argc, char **argv);
int cmd_sessions(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* ---- cmd_stats.c, for cmd_top.c: a session with a live metaserver ---- */

#define STAT_NAME_LEN 40
/* stat_name -- the name of STATS value i ("keys", "requests_lookup",
 * "stat_N" for one this build does not know) in buf or static. */
const char *stat_name(uint32_t i, char buf[STAT_NAME_LEN]);
struct live_conn;
/* live_open -- a session with o->server (HELLO). 0 and *out, or an
 * error with cxlp_errormsg() set. */
int live_open(const struct inspect_opts *o, struct live_conn **out);
/* live_stats -- one STATS: v[0..*n) (PROTO_STATS_MAX room). */
int live_stats(struct live_conn *c, uint64_t *v, uint32_t *n);
/* live_close -- BYE and close; NULL-safe. */
void live_close(struct live_conn *c);

#endif /* CXLP_INSPECT_H */
