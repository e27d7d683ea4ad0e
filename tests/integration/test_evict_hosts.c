/*
 * test_evict_hosts.c -- eviction across simulated hosts (issue 27
 * section 4, pool/evict.c note 8): a metaserver on host A serves a sim
 * pool, a writer on host B churns ten times the pool through it, and
 * readers on hosts C and D read the hot keys directly between batches,
 * C the even ones, D the odd ones, so that many of their slots share
 * cache lines of the access area (a small index: 256 lines for 195 hot
 * keys). Each host's hits count only in its own slice, written back by
 * it; the server drops and compares. Every hot key must survive; none is
 * read on host B or through the server, so only the readers' counts keep
 * them.
 *
 * The readers attach after the hot keys are stored (their simulated
 * caches are then copies of a device that holds them) and the writer
 * looks keys up through the server (no direct reads): this test is about
 * the access counts, not about readers dropping stale index lines.
 */
#include <dirent.h>
#include <stdlib.h>

#include "evfill.h"

#define SLOTS "16384"

/* the server stops, and the simulated hosts' caches of its pool (files
 * beside it: P.simhost-H, its .twin and .lock, P.simlock) go too */
static void
stop_and_forget(void)
{
	char pool[sizeof(srv.pool)], full[sizeof(srv.pool) + 300];
	const char *slash;
	struct dirent *e;
	DIR *dir;

	snprintf(pool, sizeof(pool), "%s", srv.pool);
	itest_stop();
	if ((slash = strrchr(pool, '/')) == NULL || pool[0] == '\0') {
		return;
	}
	snprintf(full, sizeof(full), "%.*s", (int)(slash - pool), pool);
	if ((dir = opendir(full)) == NULL) {
		return;
	}
	while ((e = readdir(dir)) != NULL) {
		if (strncmp(e->d_name, slash + 1, strlen(slash + 1)) == 0 &&
		    strncmp(e->d_name + strlen(slash + 1), ".sim", 4) == 0) {
			snprintf(full, sizeof(full), "%.*s/%s",
			    (int)(slash - pool), pool, e->d_name);
			unlink(full);
		}
	}
	closedir(dir);
}

TestSuite(evict_hosts, .fini = stop_and_forget, .timeout = 180);

/* a reader on simulated host `host` of the hot keys of one parity */
static void
reader_start(struct test_child *c, const char *host, uint32_t hot,
    unsigned parity)
{
	char arg[64];

	snprintf(arg, sizeof(arg), "hot:%u:%u", hot, parity);
	setenv("CXLP_SIM_HOST", host, 1);
	itest_spawn(c, "read-rounds", arg);
	setenv("CXLP_SIM_HOST", "B", 1);
	cr_assert_eq(write(c->go_fd, "g", 1), 1);
}

/* one round of c's reads; how many it found intact */
static uint32_t
reader_round(struct test_child *c, bool again)
{
	uint32_t found = 0;

	if (again) {
		cr_assert_eq(write(c->go_fd, "r", 1), 1);
	}
	cr_assert(test_child_read(c, &found, sizeof(found)), "a reader died");
	return found;
}

static void
reader_stop(struct test_child *c)
{
	close(c->go_fd);
	c->go_fd = -1;
	cr_assert_eq(itest_wait(c), 0, "a reader failed");
	close(c->out_fd);
}

/* hot keys [0, hot) the server still has */
static uint32_t
surviving(struct cxlp_handler *h, uint32_t hot)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < hot; k++) {
		char key[32];
		size_t kl = kv_key(key, sizeof(key), "hot", k);
		int ex = cxlp_exists(h, key, kl);

		cr_assert_geq(ex, 0, "exists: %s", cxlp_strerror(ex));
		n += ex == 1;
	}
	return n;
}

Test(evict_hosts, keys_read_on_two_other_hosts_survive_a_churn)
{
	const char *extra[] = { "--coherence", "sim", "--index-slots", SLOTS,
		NULL };
	struct cxlp_config *cfg;
	struct cxlp_handler *h;
	struct test_child c, d;
	struct cxlp_stats st;
	uint64_t cap;
	uint32_t hot, kept;

	setenv("CXLP_SIM_HOST", "A", 1);
	ev_start("clock", extra);
	setenv("CXLP_SIM_HOST", "B", 1);
	cfg = ev_config();
	cr_assert_rc(cxlp_config_set_direct_reads(cfg, false), 0);
	h = ev_connect_with(cfg);
	cap = ev_capacity(h);
	hot = (uint32_t)(cap / 20);
	for (uint32_t k = 0; k < hot; k += BATCH) {
		ev_store(h, "hot", k, hot - k < BATCH ? hot - k : BATCH, 0);
	}
	reader_start(&c, "C", hot, 0);
	reader_start(&d, "D", hot, 1);
	cr_assert_eq(reader_round(&c, false), (hot + 1) / 2);
	cr_assert_eq(reader_round(&d, false), hot / 2);
	for (uint32_t k = 0; k < 10 * cap; k += BATCH) {
		ev_store(h, "cold", k, BATCH, 0);
		(void)reader_round(&c, true);
		(void)reader_round(&d, true);
	}
	st = kv_stats(h);
	kept = surviving(h, hot);
	reader_stop(&c);
	reader_stop(&d);
	cr_assert_gt(st.evicted_pressure, 8 * cap, "evicted %llu",
	    (unsigned long long)st.evicted_pressure);
	cr_log_info("hot keys surviving: %u of %u", kept, hot);
	cr_assert_eq(kept, hot, "hot keys read on hosts C and D were "
	    "evicted: %u of %u left", kept, hot);
	cxlp_close(&h);
}
