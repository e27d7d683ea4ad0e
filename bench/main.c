/*
 * main.c -- cxlpool-bench: start (or connect to) a metaserver, run the
 * benchmark sections, print a table per section and the targets, and
 * write everything as one JSON document.
 *
 * Without --server it starts the build's cxlpool-metaserver itself on a
 * temporary pool in /dev/shm sized for the run (--metaserver PATH, else
 * $CXLP_METASERVER, else ../metaserver/cxlpool-metaserver next to this
 * executable) and removes the pool, socket and log afterwards (ms.c); the
 * evict section starts one more of its own on a pool small enough to
 * fill, with --server too. The same
 * executable is also the benchmark's helper processes: `--echo-server`
 * and `--batch-worker` are modes it execs itself in, so every process
 * that uses nng is a fresh one. The coherence section (coh.c) runs only
 * when asked (--coherence LIST, or --only coherence), so a run without
 * either prints what it printed before the section existed; so does
 * the takeover section (takeover.c, --only takeover), which starts an
 * etcd and two --elect servers of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "proc.h"

#define MS_ARGS_MAX 8

struct opts {
	const char *server, *metaserver, *json, *client_cpus;
	const char *ms_args[MS_ARGS_MAX];
	int nms_args;
	long server_pid;
};

static const struct section {
	const char *name;
	int (*run)(struct bench *b);
} sections[] = {
	{ "echo", echo_section },
	{ "dispatch", dispatch_section },
	{ "latency", latency_section },
	{ "batch", batch_section },
	{ "datapath", datapath_section },
	{ "index", index_section },
	{ "evict", evict_section },
	{ "coherence", coherence_section }, /* only when asked: run_sections */
	{ "takeover", takeover_section },   /* likewise (needs etcd) */
};

#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

static void
usage(FILE *f)
{
	fprintf(f, "usage: cxlpool-bench [options]\n"
	    "  --server URL        use a running metaserver at URL\n"
	    "  --server-pid PID    its pid, for server CPU figures\n"
	    "  --metaserver PATH   metaserver to start (default: "
	    "$CXLP_METASERVER,\n"
	    "                      else ../metaserver/cxlpool-metaserver)\n"
	    "  --ms-arg ARG        extra argument for the started metaserver"
	    "\n"
	    "  --quick             tiny counts (smoke test)\n"
	    "  --json FILE         write the results as JSON ('-': stdout,\n"
	    "                      tables then go to stderr)\n"
	    "  --only SECTION      echo|dispatch|latency|batch|datapath|"
	    "index|evict|\n"
	    "                      coherence|takeover (the last two only "
	    "when\n"
	    "                      named; takeover starts its own etcd and "
	    "servers)\n"
	    "  --procs N           batch: only N handler processes (1,2,4,8)"
	    "\n"
	    "  --batch N           batch: only batch size N (1,16,64,256,1024)"
	    "\n"
	    "  --server-cpus LIST  run the servers the bench starts (metaserver,"
	    "\n"
	    "                      echo server) on these CPUs, e.g. 1 or 2-3\n"
	    "  --client-cpus LIST  run the bench and its handler processes on"
	    "\n"
	    "                      these CPUs\n"
	    "  --coherence LIST    also run the coherence section on pools of "
	    "these\n"
	    "                      modes (host,hw,sw,sim; --only coherence "
	    "alone:\n"
	    "                      host,sw,sim), ratios against host\n"
	    "  --rounds N          coherence: rounds of alternated modes "
	    "(default 5)\n");
}

/* A CPU list flag is absent or valid here (the reason on stderr). */
static bool
cpus_valid(const char *list)
{
	cpu_set_t set;
	char why[160];

	if (list != NULL && cpus_parse(list, &set, why, sizeof(why)) != 0) {
		fprintf(stderr, "cxlpool-bench: %s\n", why);
		return false;
	}
	return true;
}

static int
parse(int argc, char **argv, struct opts *o, struct bench *b)
{
	static const struct option lo[] = {
		{ "server", 1, NULL, 's' }, { "server-pid", 1, NULL, 'p' },
		{ "metaserver", 1, NULL, 'm' }, { "ms-arg", 1, NULL, 'a' },
		{ "quick", 0, NULL, 'q' }, { "json", 1, NULL, 'j' },
		{ "only", 1, NULL, 'o' }, { "help", 0, NULL, 'h' },
		{ "procs", 1, NULL, 'P' }, { "batch", 1, NULL, 'B' },
		{ "server-cpus", 1, NULL, 'S' }, { "client-cpus", 1, NULL, 'C' },
		{ "coherence", 1, NULL, 'H' }, { "rounds", 1, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->server = optarg; break;
		case 'p': o->server_pid = strtol(optarg, NULL, 10); break;
		case 'm': o->metaserver = optarg; break;
		case 'a':
			if (o->nms_args == MS_ARGS_MAX) {
				return 2;
			}
			o->ms_args[o->nms_args++] = optarg;
			break;
		case 'q': b->quick = true; break;
		case 'j': o->json = optarg; break;
		case 'o': b->only = optarg; break;
		case 'P': b->procs_only = (unsigned)atoi(optarg); break;
		case 'B': b->batch_only = (unsigned)atoi(optarg); break;
		case 'S': b->server_cpus = optarg; break;
		case 'C': o->client_cpus = optarg; break;
		case 'H':
			if (coh_modes_parse(b, optarg) != 0) {
				return 2;
			}
			break;
		case 'R':
			b->coh_rounds = (unsigned)atoi(optarg);
			if (b->coh_rounds < 1 || b->coh_rounds >
			    COH_ROUNDS_MAX) {
				fprintf(stderr, "cxlpool-bench: --rounds: 1 to "
				    "%d\n", COH_ROUNDS_MAX);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
	}
	if (!cpus_valid(b->server_cpus) || !cpus_valid(o->client_cpus)) {
		return 2;
	}
	for (size_t i = 0; b->only != NULL && i < NSECTIONS; i++) {
		if (strcmp(sections[i].name, b->only) == 0) {
			return optind == argc ? 0 : 2;
		}
	}
	return b->only == NULL && optind == argc ? 0 : 2;
}

/* ---- the metaserver we start (ms.c) ----------------------------------- */

static void
ms_binary(const struct bench *b, const struct opts *o, char *out, size_t n)
{
	const char *env = getenv("CXLP_METASERVER");
	char *dup;

	if (o->metaserver != NULL || env != NULL) {
		snprintf(out, n, "%s", o->metaserver ? o->metaserver : env);
		return;
	}
	dup = strdup(b->self);
	snprintf(out, n, "%s/../metaserver/cxlpool-metaserver",
	    dup != NULL ? dirname(dup) : ".");
	free(dup);
}

static int
ms_start(struct bench *b, const struct opts *o, struct bench_ms *m)
{
	const char *args[MS_ARGS_MAX + 1];

	for (int i = 0; i < o->nms_args; i++) {
		args[i] = o->ms_args[i];
	}
	args[o->nms_args] = NULL;
	if (bench_ms_start(b, "", b->quick ? "512M" : "2G", args, m) != 0) {
		return -1;
	}
	b->url = m->url;
	b->ms_pid = m->pid;
	return 0;
}

/* ---- output -------------------------------------------------------------- */

static void
print_targets(struct bench *b)
{
	printf("\n## targets (issue 5)\n%-50s %12s %12s %6s\n", "target",
	    "measured", "limit", "");
	jw_arr(&b->json, "targets");
	for (int i = 0; i < b->ntargets; i++) {
		const struct target *t = &b->targets[i];
		bool ok = t->upper ? t->value <= t->limit :
		    t->value >= t->limit;

		printf("%-50s %12.3g %s%11.3g %6s %s\n", t->what, t->value,
		    t->upper ? "<=" : ">=", t->limit, ok ? "met" : "MISSED",
		    t->note);
		jw_obj(&b->json, NULL);
		jw_str(&b->json, "target", t->what);
		jw_num(&b->json, "measured", t->value);
		jw_num(&b->json, "limit", t->limit);
		jw_str(&b->json, "unit", t->unit);
		jw_str(&b->json, "bound", t->upper ? "max" : "min");
		jw_bool(&b->json, "met", ok);
		jw_str(&b->json, "note", t->note);
		jw_close(&b->json);
	}
	jw_close(&b->json);
}

static int
write_json(struct bench *b, const char *path, int json_fd)
{
	FILE *f = json_fd >= 0 ? fdopen(json_fd, "w") : fopen(path, "w");
	int rc;

	if (f == NULL || fflush(b->json_f) != 0 || ferror(b->json_f)) {
		fprintf(stderr, "cxlpool-bench: cannot write JSON to %s\n",
		    path);
		if (f != NULL) {
			fclose(f);
		}
		return -1;
	}
	fwrite(b->json_buf, 1, b->json_len, f); /* jw_end ended the line */
	rc = fclose(f);
	return rc == 0 ? 0 : -1;
}

static void
set_cmdline(struct bench *b, int argc, char **argv)
{
	size_t len = 0;

	for (int i = 0; i < argc && len < sizeof(b->cmdline) - 1; i++) {
		len += (size_t)snprintf(b->cmdline + len,
		    sizeof(b->cmdline) - len, "%s%s", i ? " " : "", argv[i]);
	}
}

/* The CPUs this run and the metaserver were allowed, as /proc says. */
static void
placement_report(struct bench *b)
{
	char cli[128] = "?", srv[128] = "?";

	(void)cpus_of(getpid(), cli, sizeof(cli));
	if (b->ms_pid > 0) {
		(void)cpus_of(b->ms_pid, srv, sizeof(srv));
	}
	printf("# CPUs: bench and handlers %s, metaserver %s\n", cli, srv);
	jw_obj(&b->json, "placement");
	jw_str(&b->json, "client_cpus", cli);
	jw_str(&b->json, "server_cpus", srv);
	jw_close(&b->json);
}

/* Run the selected sections; returns how many failed. */
static int
run_sections(struct bench *b)
{
	int failed = 0;

	for (size_t i = 0; i < NSECTIONS; i++) {
		bool coh = strcmp(sections[i].name, "coherence") == 0;
		bool tk = strcmp(sections[i].name, "takeover") == 0;
		bool on = tk ? b->only != NULL && strcmp(b->only, "takeover") ==
		    0 : coh ? b->ncoh > 0 || (b->only != NULL &&
		    strcmp(b->only, "coherence") == 0) :
		    section_on(b, sections[i].name) ||
		    (strcmp(sections[i].name, "echo") == 0 &&
		    section_on(b, "latency"));

		if (on && sections[i].run(b) != 0) {
			fprintf(stderr, "cxlpool-bench: section %s failed\n",
			    sections[i].name);
			failed++;
		}
		fflush(stdout);
	}
	return failed;
}

static int
bench_main(int argc, char **argv, struct bench *b)
{
	struct opts o = { 0 };
	struct bench_ms m = { 0 };
	int rc = parse(argc, argv, &o, b), json_fd = -1, failed;

	if (rc != 0) {
		return rc == 1 ? 0 : 2;
	}
	set_cmdline(b, argc, argv);
	ms_binary(b, &o, b->ms_bin, sizeof(b->ms_bin));
	if (o.client_cpus != NULL && cpus_apply(o.client_cpus) != 0) {
		return 2;
	}
	if (o.json != NULL && strcmp(o.json, "-") == 0) {
		json_fd = dup(STDOUT_FILENO); /* JSON alone on stdout */
		dup2(STDERR_FILENO, STDOUT_FILENO);
	}
	printf("# %s\n", b->cmdline);
	jw_begin(&b->json, b->json_f, JW_COMPACT);
	jw_str(&b->json, "command", b->cmdline);
	jw_bool(&b->json, "quick", b->quick);
	jw_i64(&b->json, "time", (int64_t)time(NULL));
	if (o.server != NULL) {
		b->url = o.server;
		b->ms_pid = (pid_t)o.server_pid;
	} else if (ms_start(b, &o, &m) != 0) {
		bench_ms_stop(&m);
		return 1;
	}
	jw_str(&b->json, "server", b->url);
	placement_report(b);
	failed = run_sections(b);
	print_targets(b);
	jw_i64(&b->json, "failed_sections", failed);
	jw_end(&b->json);
	if (o.server == NULL && bench_ms_stop(&m) != 0) {
		failed++;
	}
	if (o.json != NULL && write_json(b, o.json, json_fd) != 0) {
		failed++;
	}
	return failed == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	static char self[1024];
	struct bench b = { .self = self };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int rc;

	if (n <= 0) {
		snprintf(self, sizeof(self), "%s", argv[0]);
	}
	signal(SIGPIPE, SIG_IGN);
	if ((argc == 3 || argc == 4) &&
	    strcmp(argv[1], "--echo-server") == 0) {
		if (argc == 4 && cpus_apply(argv[3]) != 0) {
			return 2;
		}
		return echo_server_main(argv[2]);
	}
	if (argc == 4 && strcmp(argv[1], "--batch-worker") == 0) {
		return batch_worker_main(argv[2],
		    (unsigned)strtoul(argv[3], NULL, 10));
	}
	/* the document is built in memory and written at the end, since
	 * --json - takes stdout only once the tables are done */
	b.json_f = open_memstream(&b.json_buf, &b.json_len);
	if (b.json_f == NULL) {
		perror("cxlpool-bench: open_memstream");
		return 1;
	}
	rc = bench_main(argc, argv, &b);
	fclose(b.json_f);
	free(b.json_buf);
	return rc;
}
