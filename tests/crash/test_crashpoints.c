/*
 * test_crashpoints.c -- the metaserver dies at every metadata persist
 * point of a fixed workload, and recovery keeps exactly what was
 * acknowledged (issue 3; pool/crashpt.h, DESIGN contract 8).
 *
 * The workload is a script of raw protocol requests from two sessions
 * (tests/support/rawclient.h): HELLO, region requests and returns,
 * registers (plain, pinned, batch, duplicate), pins (PIN with a key named
 * twice, LOOKUP+PIN), unpins, deletes (plain, refused while pinned, of an
 * ended session's keys, the last one of an orphan region), BYE, and
 * eviction on a pool with no free extent (issue 17): a REGION_ALLOC that
 * empties the ended session's orphan region, and a RECLAIM whose evicted
 * keys' pages are registered again. A first run counts its persist points (K).
 * Then, for each k in 1..K in crash mode kill (every store before the
 * point visible) and every other k in mode tear (the last publish lost
 * and the last range's tail garbled; all k with CXLP_CRASHPOINTS_FULL=1),
 * the server is started with CXLP_CRASH_AT=k on a copy of
 * the same empty pool and dies there. A watcher thread restarts it
 * without the hook, and the client sends the request in flight again
 * with the same id, as a handler does after a lost reply; the restarted
 * server's answer counts as that request's outcome: it is a replay, which
 * must not apply twice (and an unpin's, even of the last pin, must not be
 * refused). The script stops after that request. The server
 * is stopped and the pool checked:
 *   - pool-inspect check exits 0;
 *   - its keys are exactly the model's (each at the acknowledged place);
 *   - its pin records are exactly the model's pins, per session and key;
 *   - each live session owns exactly the regions the model gave it, and
 *     an ended one owns none and holds no pins.
 * That no key points at a page another key or a later region grant took
 * is pool_check's (through pool-inspect check: every index entry in a live
 * region of its generation, one key per page, no regions overlapping),
 * and the model's: each key at its acknowledged place, and a RECLAIM's
 * pages registered again (CXLP_E_BUSY if a key still held one).
 * Only what the request in flight touched may differ, and only if its
 * replay got no answer about it. The script and its model are in
 * crashpoints_workload.c (crashpoints.h); this file has the watcher, the
 * runs and the verification.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crashpoints.h"
#include "crashtest.h"
#include "pool.h"
#include "proc.h"

#ifdef __SANITIZE_ADDRESS__
#define SAMPLE 2 /* sanitizer builds run 3x slower: every other point */
#else
#define SAMPLE 1
#endif

/* no background eviction (--evict-free 0): the reaper would empty the
 * workload's orphan region at a moment of its own, not in the request
 * the model expects it in */
static const char *const srv_args[] = { "--grace-ms", "600000",
	"--evict-free", "0", NULL };

/* ---- the watcher: restarts a server that died -------------------------- */

struct test_server cp_srv;
static char pristine[160], count_file[160], inspect_out[160];
static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static bool wdone;
atomic_bool cp_crashed;
atomic_bool cp_restarted;
static int crash_status;
bool cp_restart_ok;

static void *
watch(void *arg)
{
	pid_t pid = *(pid_t *)arg;
	int st = 0;

	waitpid(pid, &st, 0);
	pthread_mutex_lock(&wlock);
	if (!wdone) {
		crash_status = st;
		atomic_store(&cp_crashed, true);
		cp_srv.pid = 0;
		cp_restart_ok = test_server_restart(&cp_srv, srv_args) == 0;
		atomic_store(&cp_restarted, true);
	}
	pthread_mutex_unlock(&wlock);
	return NULL;
}

/* Close the two clients, with a server up (cp_clients_close). */
static void
close_clients(void)
{
	cr_assert_eq(ct_copy(pristine, cp_srv.pool), 0);
	cr_assert_eq(test_server_restart(&cp_srv, srv_args), 0);
	cp_clients_close();
	test_server_kill(&cp_srv, SIGTERM);
}

/* ---- one run: start, work, crash (maybe), restart, stop ---------------- */

static void
run_once(struct run *r, uint64_t k, const char *mode)
{
	char at[32];
	pthread_t th;
	pid_t pid;

	cr_assert_eq(ct_copy(pristine, cp_srv.pool), 0);
	snprintf(at, sizeof(at), "%llu", (unsigned long long)k);
	if (k > 0) {
		setenv("CXLP_CRASH_AT", at, 1);
		setenv("CXLP_CRASH_MODE", mode, 1);
	} else {
		setenv("CXLP_CRASH_COUNT", count_file, 1);
	}
	cr_assert_eq(test_server_restart(&cp_srv, srv_args), 0);
	unsetenv("CXLP_CRASH_AT");
	unsetenv("CXLP_CRASH_MODE");
	unsetenv("CXLP_CRASH_COUNT");
	wdone = false;
	atomic_store(&cp_crashed, false);
	atomic_store(&cp_restarted, false);
	cp_restart_ok = false;
	pid = cp_srv.pid;
	cr_assert_eq(pthread_create(&th, NULL, watch, &pid), 0);
	cp_workload(r);
	pthread_mutex_lock(&wlock);
	wdone = true;
	pid = cp_srv.pid;
	pthread_mutex_unlock(&wlock);
	cr_assert_gt(pid, 0, "k=%llu: the server is gone; see %s",
	    (unsigned long long)k, cp_srv.log);
	kill(pid, SIGTERM);
	if (atomic_load(&cp_crashed)) {
		pthread_join(th, NULL);
		waitpid(pid, NULL, 0);
	} else {
		pthread_join(th, NULL); /* it reaped the stopped server */
	}
	cp_srv.pid = 0;
}

/* ---- verification ------------------------------------------------------- */

static int
key_index(const void *key, size_t klen)
{
	for (int i = 0; i < NKEYS; i++) {
		if (strlen(cp_names[i]) == klen &&
		    memcmp(cp_names[i], key, klen) == 0) {
			return i;
		}
	}
	return -1;
}

/* keys: exactly the model's; fills slot_key (slot -> key, small pools) */
static void
verify_keys(struct pool *p, const struct run *r, const char *at,
    int *slot_key, uint64_t nslots)
{
	bool seen[NKEYS] = { false };
	const void *key;
	struct pool_kv kv;
	uint64_t cursor = 0;
	size_t klen;

	while (pool_kv_next(p, &cursor, &kv, &key, &klen) == 1) {
		int i = key_index(key, klen);

		cr_assert_geq(i, 0, "%s: a key the workload never stored", at);
		cr_assert_lt(kv.slot, nslots);
		slot_key[kv.slot] = i;
		seen[i] = true;
		if (r->m.unsure[i] || !r->m.present[i]) {
			continue;
		}
		cr_assert(kv.region == r->m.region[i] && kv.off == r->m.off[i],
		    "%s: key %s at region %u off %llu, acknowledged at %u "
		    "%llu", at, cp_names[i], kv.region,
		    (unsigned long long)kv.off, r->m.region[i],
		    (unsigned long long)r->m.off[i]);
	}
	for (int i = 0; i < NKEYS; i++) {
		cr_assert(r->m.unsure[i] || seen[i] == r->m.present[i],
		    "%s: key %s is %s, acknowledged %s", at, cp_names[i],
		    seen[i] ? "present" : "absent",
		    r->m.present[i] ? "stored" : "absent/deleted");
	}
}

static int
sess_index(const struct run *r, uint64_t id)
{
	for (int s = 0; s < 2; s++) {
		if (r->m.sess[s] == id && id != 0) {
			return s;
		}
	}
	return -1;
}

static void
verify_pins(struct pool *p, const struct run *r, const char *at,
    const int *slot_key)
{
	uint32_t got[2][NKEYS] = { { 0 } };
	struct pool_pin pin;
	uint64_t cursor = 0;

	while (pool_pin_next(p, &cursor, &pin) == 1) {
		int s = sess_index(r, pin.session), k = slot_key[pin.slot];

		cr_assert(s >= 0 && k >= 0, "%s: pin of session %llu on slot "
		    "%llu, which the workload never made", at,
		    (unsigned long long)pin.session,
		    (unsigned long long)pin.slot);
		got[s][k] = pin.count;
	}
	for (int s = 0; s < 2; s++) {
		for (int k = 0; k < NKEYS; k++) {
			cr_assert(r->m.unsure[k] || got[s][k] ==
			    r->m.pins[s][k], "%s: session %c holds %u pins "
			    "on %s, acknowledged %u", at, 'A' + s, got[s][k],
			    cp_names[k], r->m.pins[s][k]);
		}
	}
}

static bool
model_owns(const struct run *r, int s, uint32_t id)
{
	for (unsigned i = 0; i < r->m.nown[s]; i++) {
		if (r->m.own[s][i] == id) {
			return true;
		}
	}
	return false;
}

static void
verify_regions(struct pool *p, const struct run *r, const char *at)
{
	unsigned owned[2] = { 0, 0 };

	for (uint32_t id = 0; id < pool_region_max(p); id++) {
		struct pool_region g;
		int s;

		if (pool_region_get(p, id, &g) != 0 ||
		    g.state != POOL_REGION_OWNED) {
			continue;
		}
		s = sess_index(r, g.owner);
		if (s < 0 || r->m.runsure[s]) {
			continue; /* a HELLO replayed: its first session */
		}
		cr_assert(model_owns(r, s, id), "%s: session %c owns region "
		    "%u, never acknowledged (or returned)", at, 'A' + s, id);
		owned[s]++;
	}
	for (int s = 0; s < 2; s++) {
		cr_assert(r->m.runsure[s] || owned[s] == r->m.nown[s],
		    "%s: session %c owns %u regions, acknowledged %u", at,
		    'A' + s, owned[s], r->m.nown[s]);
	}
}

static void
verify(const struct run *r, uint64_t k, const char *mode)
{
	char at[64];
	struct pool *p = NULL;
	struct pool_stats st;
	int *slot_key;

	snprintf(at, sizeof(at), "crash at %llu (%s)", (unsigned long long)k,
	    mode);
	cr_assert_eq(r->failed, 0, "%s: an op failed without a crash, or an "
	    "unpin's retry was refused (stderr says which)", at);
	cr_assert(k == 0 || atomic_load(&cp_crashed), "%s: no crash", at);
	cr_assert(k == 0 || cp_restart_ok, "%s: restart failed; see %s", at,
	    cp_srv.log);
	cr_assert_eq(test_inspect_check(cp_srv.pool, inspect_out), 0,
	    "%s: pool-inspect check failed; see %s", at, inspect_out);
	cr_assert_eq(pool_open(&p, cp_srv.pool, POOL_RDONLY, NULL), 0, "%s",
	    cxlp_errormsg());
	pool_stats(p, &st);
	slot_key = malloc(st.index_slots * sizeof(*slot_key));
	cr_assert_not_null(slot_key);
	memset(slot_key, 0xff, st.index_slots * sizeof(*slot_key));
	verify_keys(p, r, at, slot_key, st.index_slots);
	verify_pins(p, r, at, slot_key);
	verify_regions(p, r, at);
	free(slot_key);
	pool_close(&p);
}

/* ---- the test ---------------------------------------------------------- */

static uint64_t
read_count(void)
{
	unsigned long long n = 0;
	FILE *f = fopen(count_file, "r");

	cr_assert_not_null(f, "no persist count in %s", count_file);
	cr_assert_eq(fscanf(f, "%llu", &n), 1);
	fclose(f);
	return n;
}

static void
setup(void)
{
	cr_assert_eq(test_server_start(&cp_srv, 16 * MiB, srv_args), 0);
	test_server_kill(&cp_srv, SIGTERM);
	snprintf(pristine, sizeof(pristine), "%s.pristine", cp_srv.pool);
	snprintf(count_file, sizeof(count_file), "%s.count", cp_srv.log);
	snprintf(inspect_out, sizeof(inspect_out), "%s.check", cp_srv.log);
	cr_assert_eq(ct_copy(cp_srv.pool, pristine), 0);
}

static void
teardown(void)
{
	unlink(pristine);
	unlink(count_file);
	unlink(inspect_out);
	test_server_stop(&cp_srv);
}

TestSuite(crashpoints, .init = setup, .fini = teardown, .timeout = 240);

Test(crashpoints, every_persist_point_recovers_exactly_the_acknowledged_state)
{
	static struct run r;
	const char *const modes[] = { "kill", "tear" };
	uint64_t total;

	run_once(&r, 0, "count");
	verify(&r, 0, "no crash");
	total = read_count();
	cr_assert_gt(total, 50, "only %llu persist points: is the pool "
	    "built with test_hooks?", (unsigned long long)total);
	cr_log_info("crash points: K = %llu (kill: all, tear: odd k)",
	    (unsigned long long)total);
	/* kill mode at every k; tear mode at every other k (every op has
	 * several points) unless CXLP_CRASHPOINTS_FULL is set */
	for (int m = 0; m < 2; m++) {
		uint64_t step = getenv("CXLP_CRASHPOINTS_FULL") != NULL ? 1 :
		    (uint64_t)SAMPLE * (m == 1 ? 2 : 1);

		for (uint64_t k = 1; k <= total; k += step) {
			run_once(&r, k, modes[m]);
			verify(&r, k, modes[m]);
		}
	}
	close_clients();
}
