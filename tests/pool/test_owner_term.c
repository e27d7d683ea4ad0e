/*
 * test_owner_term.c -- pool/owner.c note 3: the election term in the pool
 * (sb.term) and in the owner record, on a pool of coherence sim, each
 * test on simulated host "B" against a record of host "far-host".
 * A server of term E takes a record of an older term over at once (no
 * stale wait, no claim window: both set to ten minutes here, so the old
 * path would run into the test's timeout); a record of term 0, of E or
 * of a newer term is watched as before; a server of a term below the
 * pool's is refused and writes nothing, unless told the election
 * restarted; the owner's heartbeat stops once its term is over.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cxlpool.h"
#include "owner.h"
#include "owner_simfix.h"
#include "pool_int.h"
#include "pool_test.h"
#include "sim.h"

#define LONG_MS 600000u /* a wait no test may sit through */

static void
setup(void)
{
	osim_setup();
	setenv("CXLP_SIM_HOST", "B", 1);
}

TestSuite(owner_term, .init = setup, .fini = osim_teardown, .timeout = 20);

/* a record of a server of term `term` on another host, beating no more */
static void
old_record(uint64_t term)
{
	struct pool_owner o = { .pid = 4242, .host = "far-host",
		.boot_id = "00000000-far-boot", .listen = "tcp://10.0.0.9:7000",
		.term = term };
	struct pool *q = NULL;

	cr_assert_eq(pool_open(&q, osim_path, 0, NULL), 0, "%s",
	    cxlp_errormsg());
	o.beat_ns = (uint64_t)time(NULL) * 1000000000ull;
	pool_owner_write(q, &o);
	pool_close(&q);
}

/* the pool's term and its record's, as a read-only open reads them */
static void
terms(uint64_t *pool, uint64_t *rec)
{
	struct pool_owner o;
	struct pool *ro = NULL;

	cr_assert_eq(pool_open(&ro, osim_path, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	*pool = pool_term(ro);
	*rec = pool_owner_get(ro, &o) == 0 ? o.term : UINT64_MAX;
	pool_close(&ro);
}

/* beat: LONG_MS with LONG_MS (the claim window is two beats), else
 * 100 ms */
static int
open_term(struct pool **p, uint64_t term, unsigned stale_ms, bool reset)
{
	struct pool_own own = { .listen = "ipc:///tmp/owner-term-b",
		.beat_ms = stale_ms == LONG_MS ? LONG_MS : 100,
		.stale_ms = stale_ms, .term = term,
		.term_reset = reset };

	return pool_open_owned(p, osim_path, 0, NULL, &own, NULL);
}

/* note 7: a beat of ten minutes makes the sw claim window twenty; the
 * stale wait is ten: only the term lets the open return */
Test(owner_term, a_record_of_an_older_term_is_taken_over_at_once)
{
	struct pool *p = NULL;
	uint64_t pt, rt;

	old_record(3);
	cr_assert_eq(open_term(&p, 5, LONG_MS, false), 0, "%s",
	    cxlp_errormsg());
	cr_assert(osim_log_has("its term 3 is over (this server was elected "
	    "for "
	    "term 5)"), "%s", osim_log);
	cr_assert(!osim_log_has("waiting up to"), "it watched the record: %s",
	    osim_log);
	terms(&pt, &rt);
	cr_assert_eq(pt, 5, "the pool's term is %llu", (unsigned long long)pt);
	cr_assert_eq(rt, 5, "the record's term is %llu",
	    (unsigned long long)rt);
	pool_close(&p);
}

/* note 7: term 0 (no --elect), the same term and a newer one are not
 * over: the record is watched as before (a short stale wait and claim
 * window here) */
Test(owner_term, a_record_of_term_0_the_same_or_a_newer_term_is_watched)
{
	static const uint64_t rec[] = { 0, 5, 8 };

	for (size_t i = 0; i < sizeof(rec) / sizeof(rec[0]); i++) {
		struct pool *p = NULL;

		osim_log[0] = '\0';
		old_record(rec[i]);
		cr_assert_eq(open_term(&p, 5, 200, false), 0, "%s",
		    cxlp_errormsg());
		cr_assert(osim_log_has("waiting up to 0.2 s for its heartbeat"),
		    "a record of term %llu was not watched: %s",
		    (unsigned long long)rec[i], osim_log);
		cr_assert(!osim_log_has("is over"), "%s", osim_log);
		pool_close(&p);
	}
}

/* note 7: a pool served in term 9 refuses a server of term 4, which
 * writes nothing; told the election restarted, it serves under term 4 */
Test(owner_term, a_server_of_a_term_below_the_pools_is_refused)
{
	struct pool *p = NULL;
	uint64_t pt, rt;
	int rc;

	cr_assert_eq(open_term(&p, 9, 200, false), 0, "%s", cxlp_errormsg());
	pool_close(&p);
	old_record(2);
	rc = open_term(&p, 4, LONG_MS, false);
	cr_assert_eq(rc, -ESTALE, "%d %s", rc, cxlp_errormsg());
	cr_assert_null(p);
	cr_assert(strstr(cxlp_errormsg(), "served in term 9") != NULL &&
	    strstr(cxlp_errormsg(), "elected for term 4") != NULL &&
	    strstr(cxlp_errormsg(), "--elect-term-reset") != NULL, "%s",
	    cxlp_errormsg());
	terms(&pt, &rt);
	cr_assert_eq(pt, 9, "%llu", (unsigned long long)pt);
	cr_assert_eq(rt, 2, "the refused server wrote the record: term %llu",
	    (unsigned long long)rt);

	cr_assert_eq(open_term(&p, 4, LONG_MS, true), 0, "%s",
	    cxlp_errormsg());
	terms(&pt, &rt);
	cr_assert_eq(pt, 4, "%llu", (unsigned long long)pt);
	cr_assert_eq(rt, 4, "%llu", (unsigned long long)rt);
	pool_close(&p);
}

static atomic_int asked;

static bool
term_over(void *arg)
{
	(void)arg;
	atomic_fetch_add(&asked, 1);
	return false;
}

/* note 7: an owner whose term is over beats no more */
Test(owner_term, an_owner_whose_term_is_over_stops_its_heartbeat)
{
	struct pool_own own = { .beat_ms = 20, .term = 5,
		.may_write = term_over };
	struct timespec nap = { 0, 10 * 1000000L };
	struct pool_owner o;
	struct pool *p = NULL, *ro = NULL;

	cr_assert_eq(pool_open_owned(&p, osim_path, 0, NULL, &own, NULL), 0,
	    "%s",
	    cxlp_errormsg());
	while (!osim_log_has("term is over: its heartbeat stops")) {
		nanosleep(&nap, NULL);
	}
	cr_assert_eq(atomic_load(&asked), 1);
	cr_assert_eq(pool_open(&ro, osim_path, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_owner_get(ro, &o), 0);
	cr_assert_eq(o.beat, 0, "it beat %llu times", (unsigned long long)o.beat);
	pool_close(&ro);
	pool_close(&p);
}

/* host B maps the pool (term 0, no takeover), then a server on host A
 * serves it in term 9, records its takeover and leaves; B's mapping */
static struct pool *
mapped_before_a_term_9(void)
{
	struct pool *p = NULL;
	int status;
	pid_t pid;

	cr_assert_eq(pool_open(&p, osim_path, 0, NULL), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_term(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) { /* no Criterion here */
		const struct pool_takeover t = { .at_ns = 1234567,
			.ms = 45, .from_term = 0, .term = 9 };
		struct pool *a = NULL;
		int rc;

		setenv("CXLP_SIM_HOST", "A", 1);
		if ((rc = open_term(&a, 9, 200, false)) == 0) {
			pool_takeover_set(a, &t);
		}
		pool_close(&a);
		_exit(rc == 0 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "host A's server of term 9 did not serve");
	return p;
}

/* owner.c note 3 across hosts: the pool's term is another host's write, so a
 * server checks a fresh copy of it. A server of term 4 entering through
 * B's mapping, made before A's server of term 9, is refused, as if it
 * had opened the pool after A (B's cache still holds term 0: read
 * without its drop, it would serve under a term A's outranks). */
Test(owner_term, a_term_another_host_wrote_since_the_map_is_seen)
{
	struct pool_own own = { .listen = "ipc:///tmp/owner-term-b",
		.beat_ms = 100, .stale_ms = 200, .term = 4 };
	struct pool *p = mapped_before_a_term_9();
	int rc = owner_enter(p, &own);

	cr_assert_eq(rc, -ESTALE, "a server of term 4 was let in after one "
	    "of term 9 on another host (%d: the pool's term read from this "
	    "host's stale cache) %s", rc, cxlp_errormsg());
	cr_assert(strstr(cxlp_errormsg(), "served in term 9") != NULL, "%s",
	    cxlp_errormsg());
	pool_close(&p);
}

/* pool_term and pool_takeover_get read the device (owner.h), not this
 * host's copy: what a deposed server's metrics report, whose mapping
 * predates its successor's term and takeover. One test each: a drop of
 * one would load the other's words (they share lines). */
Test(owner_term, pool_term_reads_a_term_another_host_wrote)
{
	struct pool *p = mapped_before_a_term_9();

	cr_assert_eq(pool_term(p), 9, "B reads term %llu (its stale cache)",
	    (unsigned long long)pool_term(p));
	pool_close(&p);
}

Test(owner_term, pool_takeover_get_reads_a_takeover_another_host_wrote)
{
	struct pool *p = mapped_before_a_term_9();
	struct pool_takeover t;

	pool_takeover_get(p, &t);
	cr_assert(t.at_ns == 1234567 && t.ms == 45 && t.term == 9,
	    "B reads a takeover at %llu of %llu ms to term %llu (its stale "
	    "cache)", (unsigned long long)t.at_ns, (unsigned long long)t.ms,
	    (unsigned long long)t.term);
	pool_close(&p);
}
