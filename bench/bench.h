/*
 * bench.h -- cxlpool-bench's shared pieces: the run context, timing and
 * statistics, /proc CPU accounting, child processes, the JSON document
 * (written with common/jsonw.h), the metaserver processes (ms.c) and the
 * target summary. Each section (echo.c, dispatch.c, latency.c, batch.c,
 * datapath.c, index.c, evict.c, coh.c) is one function over a struct bench.
 */
#ifndef CXLP_BENCH_H
#define CXLP_BENCH_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "jsonw.h"

#define BENCH_KEY_LEN 32   /* every benchmark key is this long, bytes */
#define BENCH_KEY_BUF 40
#define BENCH_MAX_ARGS 24

/* One target of the issue: measured value against a limit. */
struct target {
	char what[96];
	double value, limit;
	const char *unit;
	bool upper; /* true: value must be <= limit; false: >= limit */
	char note[96];
};

#define BENCH_TARGETS_MAX 32
#define COH_MODES_MAX 4   /* --coherence: host, hw, sw, sim */
#define COH_ROUNDS_MAX 32 /* --rounds */

struct bench {
	const char *self;        /* our executable (for fork+exec) */
	char ms_bin[1024];       /* the metaserver a section may start */
	const char *url;         /* metaserver endpoint */
	pid_t ms_pid;            /* its pid, 0 unknown (no CPU figures) */
	bool quick;
	const char *only;        /* section name or NULL for all */
	unsigned procs_only;     /* batch: only this process count (0 all) */
	unsigned batch_only;     /* batch: only this batch size (0 all) */
	const char *server_cpus; /* CPU list of the server side, or NULL */
	char cmdline[1024];
	struct jw json;          /* the JSON document (compact), on json_f */
	FILE *json_f;            /* open_memstream over json_buf */
	char *json_buf;
	size_t json_len;
	struct target targets[BENCH_TARGETS_MAX];
	int ntargets;
	double echo_p50_us;      /* set by the echo section, 0 if not run */
	double echo256_srv_us;   /* its server CPU per REGISTER-256-sized
	                          * round trip, us; 0 if not run */
	double dispatch_reg_us;  /* ms_dispatch's time per registered key
	                          * at batch 256, us; 0 if not run */
	int failures;            /* sections that could not run */
	const char *coh_modes[COH_MODES_MAX]; /* --coherence, in order */
	int ncoh;                /* 0: the coherence section is off unless
	                          * --only coherence (host,sw,sim then) */
	unsigned coh_rounds;     /* --rounds, 0: the section's default */
};

/* ---- time and statistics (util.c) ------------------------------------- */

uint64_t now_ns(void);
/* pctl -- the p-th percentile (0..100) of v[0..n) (sorts v). */
double pctl(double *v, size_t n, double p);
void bench_key(char *buf, unsigned worker, unsigned tag, uint64_t i);

/* ---- /proc CPU accounting (util.c) ------------------------------------ */

struct cpu_sample {
	uint64_t sched_ns; /* sum of /proc/<pid>/task/<t>/schedstat run ns */
	uint64_t ticks;    /* utime + stime from /proc/<pid>/stat */
};

/* cpu_read -- sample pid's CPU; 0 or -1 (pid 0 or gone). */
int cpu_read(pid_t pid, struct cpu_sample *s);
/* cpu_us -- CPU microseconds between two samples: schedstat when it
 * moved, else ticks. */
double cpu_us(const struct cpu_sample *a, const struct cpu_sample *b);
double cpu_ticks_us(const struct cpu_sample *a, const struct cpu_sample *b);

/* ---- placement (placement.c) ------------------------------------------ */

/* cpus_parse -- a CPU list ("1", "0-3", "0,2,4-7") into set, every CPU
 * of it allowed to this process; 0, or -1 with the reason in why. */
int cpus_parse(const char *list, cpu_set_t *set, char *why, size_t n);
/* cpus_apply -- confine this process (its threads to come, its children)
 * to list (checked with cpus_parse before: the caller may already be
 * confined elsewhere); 0, or -1 with a message on stderr. */
int cpus_apply(const char *list);
/* cpus_of -- pid's allowed CPU list as /proc reports it; 0 or -1. */
int cpus_of(pid_t pid, char *buf, size_t n);

/* ---- child processes (util.c) ----------------------------------------- */

struct child {
	pid_t pid;
	FILE *to;   /* its stdin */
	FILE *from; /* its stdout */
};

/* child_spawn -- fork + exec argv (NULL-terminated) with pipes on its
 * stdin and stdout. 0 or -1. */
int child_spawn(struct child *c, const char *const argv[]);
/* child_wait -- close its stdin, reap it; its exit status or -1. */
int child_wait(struct child *c);
/* child_line -- read one line (without the newline) into buf; 0 or -1. */
int child_line(struct child *c, char *buf, size_t n);
/* helper_run -- run the helper program name, which sits next to our own
 * executable, with args (NULL-terminated, at most 6) on the pool file
 * pool (its first argument), handing each line it prints to on_line; then
 * remove pool (the helper removes it itself; this covers a crash). 0 if
 * it ran and exited 0, else -1. */
int helper_run(const struct bench *b, const char *name, const char *pool,
    const char *const args[], void (*on_line)(const char *line, void *arg),
    void *arg);

/* bench_connect -- a handler on url with this page and region size, and
 * direct reads on or off; 0 or a negative cxlp error (message on
 * stderr). */
struct cxlp_handler;
int bench_connect(const char *url, size_t page, size_t region, bool direct,
    struct cxlp_handler **h);
/* bench_try_connect -- bench_connect that prints nothing (a poll). */
int bench_try_connect(const char *url, size_t page, size_t region,
    bool direct, struct cxlp_handler **h);

/* ---- metaserver processes (ms.c) ------------------------------------- */

struct bench_ms {
	pid_t pid; /* 0: none */
	char pool[96], url[128], log[96];
};

/* bench_ms_start -- start b->ms_bin on a fresh pool of size ("512M")
 * with args (NULL-terminated, may be NULL) after its own, named apart
 * from others by tag ("" for the shared one), and wait for it to be
 * ready. 0, or -1 with a message on stderr (bench_ms_stop it anyway). */
int bench_ms_start(const struct bench *b, const char *tag, const char *size,
    const char *const args[], struct bench_ms *m);
/* bench_ms_stop -- SIGTERM and reap it; remove its pool and socket, and
 * its log after a clean exit. 0 if it exited 0. */
int bench_ms_stop(struct bench_ms *m);

/* ---- results ---------------------------------------------------------- */

void target_add(struct bench *b, const char *what, double value,
    double limit, const char *unit, bool upper, const char *note);
bool section_on(const struct bench *b, const char *name);

/* ---- sections --------------------------------------------------------- */

int echo_section(struct bench *b);
int dispatch_section(struct bench *b);
int latency_section(struct bench *b);
int batch_section(struct bench *b);
int datapath_section(struct bench *b);
int index_section(struct bench *b);
int evict_section(struct bench *b);
int coherence_section(struct bench *b);
/* takeover_section -- only with --only takeover (etcd needed). */
int takeover_section(struct bench *b);
/* coh_modes_parse -- --coherence's comma list into b->coh_modes; 0, or
 * -1 with the reason on stderr. */
int coh_modes_parse(struct bench *b, const char *list);

/* Modes run in exec'ed children (argv after the mode flag). */
int echo_server_main(const char *url);
int batch_worker_main(const char *url, unsigned id);

#endif /* CXLP_BENCH_H */
