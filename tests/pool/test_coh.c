/*
 * test_coh.c -- pool/coh.c and pool/poolcoh.c: the coherence mode a pool
 * records, what a format and an open do with it, and the refusals. Each
 * simulated host is a child process with CXLP_SIM_HOST set before it
 * opens the pool (coh_open reads it then).
 *   - every mode is recorded, flagged incompat unless host, and read
 *     back by coh_probe from the device;
 *   - a sim pool's server on host A publishes through write-back: a
 *     reader on host B whose cache holds the pool as it was before sees
 *     the new keys, because an open drops the metadata area first;
 *   - a host pool refuses a writer of another host (CXLP_E_HOST) and lets
 *     a reader in;
 *   - a superblock naming a mode this build does not know is refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coh.h"
#include "cxlpool.h"
#include "layout.h"
#include "pool_int.h"
#include "pool_test.h"
#include "sim.h"

static char path[256];

static void
setup(void)
{
	unsetenv("CXLP_SIM_HOST");
	test_pool_path(path, sizeof(path), "/dev/shm");
}

static void
teardown(void)
{
	char lock[300];

	unsetenv("CXLP_SIM_HOST");
	(void)sim_forget_hosts(path);
	snprintf(lock, sizeof(lock), "%s.simlock", path);
	unlink(lock);
	unlink(path);
}

TestSuite(coh, .init = setup, .fini = teardown);

static struct pool *
make(enum pool_coh m)
{
	struct pool_params pp = { .size = TEST_POOL_SIZE, .coherence = m };
	struct pool *p;

	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0, "%s",
	    cxlp_errormsg());
	return p;
}

/* run fn as another simulated host; its exit status */
static int
as_host(const char *host, int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setenv("CXLP_SIM_HOST", host, 1);
		_exit(fn());
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died: status 0x%x", st);
	return WEXITSTATUS(st);
}

Test(coh, every_mode_is_recorded_and_probed_from_the_device)
{
	static const enum pool_coh modes[] = { POOL_COH_HOST, POOL_COH_HW,
	    POOL_COH_SW, POOL_COH_SIM };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct pool_params pp = { .size = TEST_POOL_SIZE,
		    .coherence = modes[i] };
		struct pool *p;
		enum pool_coh got;
		uint64_t host;

		cr_assert_eq(pool_open(&p, path, POOL_CREATE | POOL_REFORMAT,
		    &pp), 0, "%s: %s", pool_coh_name(modes[i]),
		    cxlp_errormsg());
		cr_assert_eq(pool_coherence(p), modes[i]);
		cr_assert_eq((p->sb->incompat & POOL_INCOMPAT_COHERENCE) != 0,
		    modes[i] != POOL_COH_HOST, "%s: incompat 0x%llx",
		    pool_coh_name(modes[i]),
		    (unsigned long long)p->sb->incompat);
		pool_close(&p);
		cr_assert_eq(coh_probe_host(path, &got, &host), 0);
		cr_assert_eq(got, modes[i], "probed %s for %s",
		    pool_coh_name(got), pool_coh_name(modes[i]));
		cr_assert_eq(host != 0, modes[i] == POOL_COH_HOST);
		cr_assert_eq(pool_open(&p, path, 0, NULL), 0, "%s",
		    cxlp_errormsg());
		cr_assert_eq(pool_coherence(p), modes[i]);
		pool_close(&p);
	}
}

Test(coh, auto_is_host_on_a_plain_file)
{
	struct pool *p = make(POOL_COH_AUTO);

	cr_assert_eq(pool_coherence(p), POOL_COH_HOST);
	pool_close(&p);
}

Test(coh, names_parse_back)
{
	enum pool_coh m;

	for (int i = POOL_COH_HOST; i <= POOL_COH_SIM; i++) {
		cr_assert_eq(pool_coh_parse(pool_coh_name(i), &m), 0);
		cr_assert_eq(m, i);
	}
	cr_assert_eq(pool_coh_parse("auto", &m), 0);
	cr_assert_eq(m, POOL_COH_AUTO);
	cr_assert_eq(pool_coh_parse("coherent", &m), -EINVAL);
	cr_assert(strstr(cxlp_errormsg(), "host, hw, sw, sim") != NULL,
	    "%s", cxlp_errormsg());
}

static int keys_seen;

static int
count_keys(void)
{
	struct pool_stats st;
	struct pool *p;

	if (pool_open(&p, path, POOL_RDONLY, NULL) != 0) {
		return 100;
	}
	pool_stats(p, &st);
	pool_close(&p);
	return (int)st.keys;
}

Test(coh, a_sim_servers_keys_reach_a_reader_whose_cache_is_older)
{
	struct pool_session s = { .pid = 1, .instance = 1 };
	struct pool_region r;
	struct pool_kv kv;
	struct pool *p;
	char key[32];
	bool ins;

	setenv("CXLP_SIM_HOST", "A", 1);
	p = make(POOL_COH_SIM);
	/* host B's cache is made now, while the pool is empty */
	cr_assert_eq(as_host("B", count_keys), 0);
	cr_assert_eq(pool_session_add(p, &s), 0);
	cr_assert_eq(pool_region_alloc(p, s.id, 2u << 20, 4096, &r), 0);
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(pool_kv_insert(p, s.id, key, strlen(key), r.id,
		    r.off + (uint64_t)i * 4096, 100, &kv, &ins), 0);
	}
	/* the server stays up (nothing flushed at close); B reads now */
	keys_seen = as_host("B", count_keys);
	cr_assert_eq(keys_seen, 20, "host B saw %d keys of 20", keys_seen);
	pool_close(&p);
}

static int
open_writable(void)
{
	struct pool *p;
	int rc = pool_open(&p, path, 0, NULL);

	if (rc == CXLP_E_HOST && strstr(cxlp_errormsg(), "--coherence sw") &&
	    strstr(cxlp_errormsg(), "simulated host B")) {
		return 0;
	}
	pool_close(&p);
	return rc == 0 ? 1 : 2;
}

static int
open_rdonly(void)
{
	struct pool *p;

	if (pool_open(&p, path, POOL_RDONLY, NULL) != 0) {
		return 1;
	}
	pool_close(&p);
	return 0;
}

Test(coh, a_host_pool_refuses_a_writer_of_another_host)
{
	struct pool *p = make(POOL_COH_HOST);

	pool_close(&p);
	cr_assert_eq(as_host("B", open_writable), 0, "host B's writer was "
	    "not refused with CXLP_E_HOST and advice");
	cr_assert_eq(as_host("B", open_rdonly), 0, "a reader is let in");
	cr_assert_eq(as_host("0", open_rdonly), 0);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0, "%s", cxlp_errormsg());
	pool_close(&p);
}

Test(coh, a_mode_this_build_does_not_know_is_refused)
{
	struct pool *p = make(POOL_COH_SW);

	p->sb->coherence = 9;
	layout_seal(p->sb);
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, POOL_RDONLY, NULL), CXLP_E_VERSION);
	cr_assert(strstr(cxlp_errormsg(), "coherence mode 9") != NULL, "%s",
	    cxlp_errormsg());
}
