/*
 * cmd_top.c -- `pool-inspect top --server URL`: a live view of a running
 * metaserver, refreshed every --interval-ms (1 s): requests per second by
 * operation, the hit ratio of the lookups it answered, free bytes,
 * evictions per second, sessions. One session for the whole run, one
 * STATS per refresh (cmd_stats.c's live_* calls); rates are the change
 * between two refreshes over the time between them. On a terminal it
 * redraws the screen and quits on q (or after --count refreshes);
 * otherwise it prints one block per refresh.
 */
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cxlpool.h"
#include "inspect.h"
#include "proto.h"

struct sample {
	uint64_t v[PROTO_STATS_MAX];
	uint32_t n;
	uint64_t ms;
};

static uint64_t
val(const struct sample *s, uint32_t i)
{
	return i < s->n ? s->v[i] : 0;
}

/* per second, from a to b */
static double
rate(const struct sample *a, const struct sample *b, uint32_t i)
{
	double dt = (double)(b->ms - a->ms) / 1e3;
	uint64_t x = val(a, i), y = val(b, i);

	return dt <= 0 || y < x ? 0.0 : (double)(y - x) / dt;
}

static uint64_t
evicted(const struct sample *s)
{
	return val(s, PROTO_STAT_EVICT_PRESSURE) +
	    val(s, PROTO_STAT_EVICT_WATERMARK) + val(s, PROTO_STAT_EVICT_ORPHAN);
}

static void
draw(const struct inspect_opts *o, const struct sample *a,
    const struct sample *b, unsigned refresh, bool tty)
{
	char f[FMT_SIZE_LEN], l[FMT_SIZE_LEN], p[FMT_SIZE_LEN];
	uint64_t found = val(b, PROTO_STAT_LOOKUP_FOUND) -
	    val(a, PROTO_STAT_LOOKUP_FOUND);
	uint64_t missing = val(b, PROTO_STAT_LOOKUP_MISSING) -
	    val(a, PROTO_STAT_LOOKUP_MISSING);
	double dt = (double)(b->ms - a->ms) / 1e3;
	unsigned shown = 0;

	printf("%scxlpool top  %s  refresh %u, every %.1f s%s\n",
	    tty ? "\033[H\033[2J" : "", o->server, refresh,
	    o->interval_ms / 1e3, tty ? "  (q quits)" : "");
	printf("pool %s  free %s  largest free %s\n",
	    fmt_size(p, val(b, PROTO_STAT_POOL_BYTES)),
	    fmt_size(f, val(b, PROTO_STAT_FREE_BYTES)),
	    fmt_size(l, val(b, PROTO_STAT_LARGEST_FREE)));
	printf("keys %" PRIu64 "  sessions %" PRIu64 "  pins %" PRIu64
	    "  leases %" PRIu64 "\n", val(b, PROTO_STAT_KEYS),
	    val(b, PROTO_STAT_SESSIONS) > 0 ? val(b, PROTO_STAT_SESSIONS) - 1 :
	    0, val(b, PROTO_STAT_PINS), val(b, PROTO_STAT_LEASES));
	if (b->n < PROTO_STAT_COUNT) {
		printf("(this metaserver predates the request counters: no "
		    "ops/s, no hit ratio)\n");
	}
	printf("evictions/s %.1f  (%" PRIu64 " in all)\n", dt <= 0 ? 0.0 :
	    (double)(evicted(b) - evicted(a)) / dt, evicted(b));
	if (found + missing > 0) {
		printf("hit ratio %.1f%%  (%" PRIu64 " of %" PRIu64 " keys the "
		    "server looked up)\n", 100.0 * (double)found /
		    (double)(found + missing), found, found + missing);
	} else {
		printf("hit ratio -  (no lookup reached the server)\n");
	}
	printf("ops/s");
	for (unsigned op = 1; op <= PROTO_OP_MAX; op++) {
		char name[STAT_NAME_LEN];
		double r = rate(a, b, PROTO_STAT_REQUESTS + op - 1);

		if (r > 0 || op == PROTO_OP_REGISTER || op == PROTO_OP_LOOKUP) {
			printf("%s %s %.1f", shown++ % 6 == 5 ? "\n     " : " ",
			    stat_name(PROTO_STAT_REQUESTS + op - 1, name) + 9,
			    r);
		}
	}
	printf("\n");
	if (!tty) {
		printf("\n");
	}
	fflush(stdout);
}

/* SIGTERM, SIGHUP (and SIGINT when stdin is no terminal) end the run
 * through the loop, which puts the terminal back first */
static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

/* wait ms, or until q (or ^C) on a terminal: true to go on */
static bool
pause_for_q(unsigned ms, bool tty)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	uint64_t until = cxlp_now_ms() + ms;

	if (!tty) {
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
		return !stop;
	}
	for (uint64_t now = cxlp_now_ms(); now < until;
	    now = cxlp_now_ms()) {
		char c;

		if (stop) {
			return false;
		}
		if (poll(&pfd, 1, (int)(until - now)) > 0 &&
		    read(STDIN_FILENO, &c, 1) == 1 &&
		    (c == 'q' || c == 'Q' || c == 3 /* ^C */)) {
			return false;
		}
	}
	return true;
}

/* cmd_top -- see inspect.h */
int
cmd_top(int argc, char **argv)
{
	struct termios old, raw;
	struct inspect_opts o;
	struct sample a, b;
	struct live_conn *c;
	bool tty, raw_set = false;
	int rc;

	if ((rc = inspect_args(argc, argv, OPT_SERVER | OPT_TOP,
	    "--server URL [--interval-ms MS] [--count N]", &o)) != 0) {
		return rc;
	}
	if ((rc = live_open(&o, &c)) != 0) {
		fprintf(stderr, "pool-inspect: %s: %s (%s)\n", o.server,
		    cxlp_errormsg(), cxlp_strerror(rc));
		return 1;
	}
	tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	catch_signals();
	if (tty && tcgetattr(STDIN_FILENO, &old) == 0) {
		raw = old;
		/* no ISIG: ^C arrives as a key and quits like q, so the
		 * terminal is always put back */
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG);
		raw_set = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}
	memset(&a, 0, sizeof(a));
	rc = live_stats(c, a.v, &a.n);
	a.ms = cxlp_now_ms();
	for (unsigned i = 1; rc == 0 && (o.count == 0 || i <= o.count);
	    i++) {
		if (!pause_for_q(o.interval_ms, tty)) {
			break;
		}
		memset(&b, 0, sizeof(b));
		if ((rc = live_stats(c, b.v, &b.n)) != 0) {
			break;
		}
		b.ms = cxlp_now_ms();
		draw(&o, &a, &b, i, tty);
		a = b;
	}
	if (raw_set) {
		tcsetattr(STDIN_FILENO, TCSANOW, &old);
	}
	if (rc != 0) {
		fprintf(stderr, "pool-inspect: %s: %s (%s)\n", o.server,
		    cxlp_errormsg(), cxlp_strerror(rc));
	}
	live_close(c);
	return rc == 0 ? 0 : 1;
}
