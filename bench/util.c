/*
 * util.c -- what every benchmark section shares: a monotonic clock and
 * percentiles, the metaserver's CPU time read from /proc, child processes
 * on pipes, and the table of targets (the JSON writer is common/jsonw.c).
 *
 * CPU time comes from two /proc sources: the sum of every thread's
 * schedstat run time (nanoseconds) and utime + stime from
 * /proc/<pid>/stat (clock ticks, 10 ms each here). Per-key figures need
 * the nanosecond source; the tick figure is kept in the JSON as a cross
 * check. Children are always fork + exec'ed (tests/support/proc.c's
 * test_spawn), never just forked: nng (in the handler library) cannot
 * live in a process forked after its threads started.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cxlpool.h"
#include "proc.h"

/* now_ns -- CLOCK_MONOTONIC in ns. */
uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* pctl -- the p-th percentile of v[0..n) (nearest rank); sorts v. */
double
pctl(double *v, size_t n, double p)
{
	size_t i;

	if (n == 0) {
		return 0;
	}
	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)ceil(p / 100.0 * (double)n);
	return v[i == 0 ? 0 : i - 1];
}

/* v as exactly digits decimal digits at p (zero padded) */
static void
put_dec(char *p, unsigned v, int digits)
{
	for (int i = digits - 1; i >= 0; i--, v /= 10) {
		p[i] = (char)('0' + v % 10);
	}
}

/* bench_key -- a BENCH_KEY_LEN-byte key shaped like a connector's
 * model@rank@chunkhash, unique per (worker, tag, i): "m7b@wWW@tTTT@" and
 * 16 hex digits, zero padded. Formatted by hand: snprintf cost more
 * client CPU per key than the library's own batch_store work. */
void
bench_key(char *buf, unsigned worker, unsigned tag, uint64_t i)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t h = i * 0x9e3779b97f4a7c15ull;

	memcpy(buf, "m7b@w00@t000@", 13);
	put_dec(buf + 5, worker % 100, 2);
	put_dec(buf + 9, tag % 1000, 3);
	for (int k = 15; k >= 0; k--, h >>= 4) {
		buf[13 + k] = hex[h & 15];
	}
	memset(buf + 29, 0, BENCH_KEY_BUF - 29);
}

/* ---- /proc ------------------------------------------------------------ */

static uint64_t
sched_ns(pid_t pid)
{
	char path[64];
	struct dirent *d;
	uint64_t sum = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (dir == NULL) {
		return 0;
	}
	while ((d = readdir(dir)) != NULL) {
		char p2[384];
		unsigned long long ns;
		FILE *f;

		if (d->d_name[0] == '.') {
			continue;
		}
		snprintf(p2, sizeof(p2), "%s/%s/schedstat", path, d->d_name);
		f = fopen(p2, "r");
		if (f != NULL) {
			if (fscanf(f, "%llu", &ns) == 1) {
				sum += ns;
			}
			fclose(f);
		}
	}
	closedir(dir);
	return sum;
}

static int
stat_ticks(pid_t pid, uint64_t *ticks)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL) {
		return -1;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold spaces */
	/* after ')': state(3) ... utime(14) stime(15) */
	if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u "
	    "%*u %*u %*u %llu %llu", &ut, &st) != 2) {
		return -1;
	}
	*ticks = ut + st;
	return 0;
}

/* cpu_read -- sample pid's CPU time; 0 or -1. */
int
cpu_read(pid_t pid, struct cpu_sample *s)
{
	memset(s, 0, sizeof(*s));
	if (pid <= 0 || stat_ticks(pid, &s->ticks) != 0) {
		return -1;
	}
	s->sched_ns = sched_ns(pid);
	return 0;
}

/* cpu_ticks_us -- utime + stime delta in microseconds. */
double
cpu_ticks_us(const struct cpu_sample *a, const struct cpu_sample *b)
{
	long hz = sysconf(_SC_CLK_TCK);

	return (double)(b->ticks - a->ticks) * 1e6 / (double)(hz > 0 ? hz :
	    100);
}

/* cpu_us -- CPU microseconds between samples (schedstat, else ticks). */
double
cpu_us(const struct cpu_sample *a, const struct cpu_sample *b)
{
	if (b->sched_ns > a->sched_ns) {
		return (double)(b->sched_ns - a->sched_ns) / 1e3;
	}
	return cpu_ticks_us(a, b);
}

/* ---- children ----------------------------------------------------------- */

/* child_spawn -- fork + exec argv with its stdin/stdout on pipes. */
int
child_spawn(struct child *c, const char *const argv[])
{
	struct test_spawn sp = { .path = argv[0], .argv = argv,
		.err_fd = -1 };
	int in[2], out[2];

	memset(c, 0, sizeof(*c));
	if (pipe2(in, O_CLOEXEC) != 0) {
		return -1;
	}
	if (pipe2(out, O_CLOEXEC) != 0) {
		goto err_in;
	}
	sp.in_fd = in[0];
	sp.out_fd = out[1];
	c->pid = test_spawn(&sp);
	if (c->pid < 0) {
		goto err_out;
	}
	close(in[0]);
	close(out[1]);
	c->to = fdopen(in[1], "w");
	c->from = fdopen(out[0], "r");
	return c->to != NULL && c->from != NULL ? 0 : -1;

err_out:
	close(out[0]);
	close(out[1]);
err_in:
	close(in[0]);
	close(in[1]);
	return -1;
}

/* child_line -- one line from the child's stdout, newline stripped. */
int
child_line(struct child *c, char *buf, size_t n)
{
	size_t len;

	if (fgets(buf, (int)n, c->from) == NULL) {
		return -1;
	}
	len = strlen(buf);
	if (len > 0 && buf[len - 1] == '\n') {
		buf[len - 1] = '\0';
	}
	return 0;
}

/* child_wait -- close its stdin (it exits on EOF) and reap it. */
int
child_wait(struct child *c)
{
	int status;

	if (c->to != NULL) {
		fclose(c->to);
		c->to = NULL;
	}
	if (c->from != NULL) {
		fclose(c->from);
		c->from = NULL;
	}
	if (c->pid <= 0 || waitpid(c->pid, &status, 0) != c->pid) {
		return -1;
	}
	c->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 +
	    WTERMSIG(status);
}

/* helper_run -- see bench.h */
int
helper_run(const struct bench *b, const char *name, const char *pool,
    const char *const args[], void (*on_line)(const char *line, void *arg),
    void *arg)
{
	char path[1024], line[256];
	const char *argv[8] = { path, pool };
	char *dup = strdup(b->self);
	struct child c;
	int status, n = 2;

	snprintf(path, sizeof(path), "%s/%s",
	    dup != NULL ? dirname(dup) : ".", name);
	free(dup);
	for (int i = 0; args[i] != NULL && n < 7; i++) {
		argv[n++] = args[i];
	}
	if (child_spawn(&c, argv) != 0) {
		return -1;
	}
	while (child_line(&c, line, sizeof(line)) == 0) {
		on_line(line, arg);
	}
	status = child_wait(&c);
	unlink(pool);
	if (status != 0) {
		fprintf(stderr, "%s exited with status %d\n", name, status);
	}
	return status == 0 ? 0 : -1;
}

/* ---- targets and sections ----------------------------------------------- */

/* target_add -- record one target check for the summary table. */
void
target_add(struct bench *b, const char *what, double value, double limit,
    const char *unit, bool upper, const char *note)
{
	struct target *t;

	if (b->ntargets == BENCH_TARGETS_MAX) {
		return;
	}
	t = &b->targets[b->ntargets++];
	snprintf(t->what, sizeof(t->what), "%s", what);
	t->value = value;
	t->limit = limit;
	t->unit = unit;
	t->upper = upper;
	snprintf(t->note, sizeof(t->note), "%s", note != NULL ? note : "");
}

/* section_on -- the run includes section name (--only). */
bool
section_on(const struct bench *b, const char *name)
{
	return b->only == NULL || strcmp(b->only, name) == 0;
}

/* bench_connect -- connect a handler (caller closes it). */
int
bench_connect(const char *url, size_t page, size_t region, bool direct,
    struct cxlp_handler **h)
{
	int rc = bench_try_connect(url, page, region, direct, h);

	if (rc != 0) {
		fprintf(stderr, "cxlpool-bench: connect %s: %s (%s)\n", url,
		    cxlp_strerror(rc), cxlp_errormsg());
	}
	return rc;
}

/* bench_try_connect -- see bench.h */
int
bench_try_connect(const char *url, size_t page, size_t region, bool direct,
    struct cxlp_handler **h)
{
	struct cxlp_config *cfg;
	int rc = cxlp_config_new(&cfg);

	*h = NULL;
	if (rc != 0) {
		return rc;
	}
	if ((rc = cxlp_config_set_server(cfg, url)) == 0 &&
	    (rc = cxlp_config_set_page_size(cfg, page)) == 0 &&
	    (rc = cxlp_config_set_region_size(cfg, region)) == 0 &&
	    (rc = cxlp_config_set_direct_reads(cfg, direct)) == 0) {
		rc = cxlp_connect(h, cfg);
	}
	cxlp_config_delete(&cfg);
	return rc;
}
