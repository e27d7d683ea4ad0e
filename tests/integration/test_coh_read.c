/*
 * test_coh_read.c -- readers on another host read what was published, on
 * a pool formatted for the simulator (coherence sim; DESIGN.md contract
 * 11, issue 27 section 2 "Readers"): the metaserver on simulated host A,
 * a writer handler process on host B, a reader handler process on host C,
 * each seeing the pool through its own cache (pool/sim.h). C's cache is
 * taken when it connects, before B stores anything, so every read C makes
 * of the index or of a value finds stale lines unless it drops them: a
 * direct lookup without its slot drop does not see the key (or sees its
 * old slot), a retrieve without its value drop hands out the bytes C's
 * cache held, and a validate without its drop takes an old version for
 * good, or, without the drop of the superblock's head, one taken before
 * the pool was reformatted in place.
 */
#include <dirent.h>
#include <stdlib.h>

#include "itest.h"
#include "worker.h"

static struct test_child wr, rd, other;

/* one command to c; its reply */
static struct coh_reply
cmd(struct test_child *c, char op)
{
	struct coh_reply r;

	cr_assert_eq(write(c->go_fd, &op, 1), 1);
	cr_assert(test_child_read(c, &r, sizeof(r)), "no reply to '%c'", op);
	return r;
}

/* the worker as host, connected; unlike itest_go, go_fd stays open for
 * the commands */
static void
start(struct test_child *c, const char *role, const char *host)
{
	char ready = 0;

	itest_spawn(c, role, host);
	cr_assert_eq(write(c->go_fd, "g", 1), 1); /* the pipe stays open */
	cr_assert(test_child_read(c, &ready, 1) && ready == 'c',
	    "%s on host %s did not connect", role, host);
}

/* every host's cache of the pool (sim.c note 1) goes with it */
static void
forget_hosts(void)
{
	const char *name = strrchr(srv.pool, '/') + 1;
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	char path[400];

	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, name, strlen(name)) == 0 &&
		    e->d_name[strlen(name)] == '.') {
			snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
			unlink(path);
		}
	}
	closedir(d);
}

static void
coh_start(void)
{
	static const char *const args[] = { "--coherence", "sim", NULL };

	setenv("CXLP_SIM_HOST", "A", 1); /* the metaserver's host */
	cr_assert_eq(test_server_start(&srv, 64 * MiB, args), 0,
	    "metaserver did not start");
	start(&rd, "coh-reader", "C"); /* C's cache: the pool before B's */
	start(&wr, "coh-writer", "B");
}

static void
coh_stop(void)
{
	char q = 'q';

	if (wr.pid > 0) {
		(void)!write(wr.go_fd, &q, 1);
		cr_expect_eq(itest_wait(&wr), 0, "writer");
	}
	if (rd.pid > 0) {
		(void)!write(rd.go_fd, &q, 1);
		cr_expect_eq(itest_wait(&rd), 0, "reader");
	}
	if (other.pid > 0) {
		(void)!write(other.go_fd, &q, 1);
		cr_expect_eq(itest_wait(&other), 0, "second reader");
	}
	itest_stop();
	forget_hosts();
}

TestSuite(coh_read, .init = coh_start, .fini = coh_stop, .timeout = 120);

Test(coh_read, a_reader_on_another_host_reads_each_value_stored_since)
{
	struct coh_reply r;

	cr_assert_eq(cmd(&wr, 'p').rc, 0, "B's first store");
	r = cmd(&rd, 'g');
	cr_assert_eq(r.rc, 0, "C does not find the key B stored after C's "
	    "cache was taken (%d: the index slot read without its drop)",
	    r.rc);
	cr_assert_eq(r.writer, 1, "C read bytes of writer %u for writer 1's "
	    "value (0: not a whole value; the value's lines not dropped)",
	    r.writer);
	cr_assert_eq(r.vrc, 0, "the version just taken does not validate");

	/* B deletes the key and stores it again in the same page */
	r = cmd(&wr, 's');
	cr_assert_eq(r.rc, 0, "B's store in the same page: %d", r.rc);
	cr_assert_eq(cmd(&rd, 'v').vrc, CXLP_E_CHANGED, "C validates a "
	    "version of a value replaced since (the slot word re-read from "
	    "C's stale cache)");
	r = cmd(&rd, 'g');
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(r.writer, 2, "C read writer %u's bytes from the reused "
	    "page, want writer 2's (the value's lines not dropped)",
	    r.writer);
	cr_assert_eq(r.vrc, 0, "the version of the second read does not "
	    "validate (%d: the lookup read a stale slot)", r.vrc);

	/* and again in another page: the old slot names the old page */
	cr_assert_eq(cmd(&wr, 'o').rc, 0, "B's store in another page");
	r = cmd(&rd, 'g');
	cr_assert_eq(r.rc, 0);
	cr_assert_eq(r.writer, 3, "C read writer %u's bytes, want writer 3's "
	    "in the new page (a stale slot names the old one)", r.writer);
	cr_assert_eq(r.vrc, 0);
}

Test(coh_read, prepare_read_drops_a_range_read_again_later)
{
	struct coh_reply r;

	cr_assert_eq(cmd(&wr, 'p').rc, 0);
	r = cmd(&rd, 'g');
	cr_assert_eq(r.writer, 1);
	/* B replaces the value in the same page; C's pointer is the page */
	cr_assert_eq(cmd(&wr, 's').rc, 0);
	cr_assert_eq(cmd(&rd, 'v').vrc, CXLP_E_CHANGED);
	r = cmd(&rd, 'P');
	cr_assert_eq(r.prc, 0, "prepare_read of a retrieved value: %d",
	    r.prc);
	cr_assert_eq(r.writer, 2, "the range read after prepare_read holds "
	    "writer %u's bytes, want writer 2's (its lines not dropped)",
	    r.writer);
}

/* A version taken before the pool was reformatted in place does not
 * validate after it, even where the new pool's slot holds the same word
 * (slots restart from seq 0, and B stores the key again as it did into
 * the fresh pool, in the same page of the same region, D having taken
 * the region C had: handler/kv/version.c note 4). C's handler keeps the
 * cache it attached with (the format removed the hosts' cache files,
 * not its mapping of its own), so its copy of the superblock's head is
 * the old pool's: only its drop shows C the new uuid. The server is
 * killed and restarted with --reformat, and C is asked nothing in
 * between, so its validate reads the index directly. */
Test(coh_read, a_version_from_before_a_reformat_does_not_validate)
{
	static const char *const again[] = { "--coherence", "sim",
		"--reformat", NULL };
	char q = 'q';

	cr_assert_eq(cmd(&wr, 'p').rc, 0, "B's first store");
	cr_assert_eq(cmd(&rd, 'g').rc, 0, "C's first read");
	cr_assert_eq(cmd(&rd, 'v').vrc, 0, "the version just taken");
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(write(wr.go_fd, &q, 1), 1);
	(void)itest_wait(&wr); /* its session went with the server */
	wr.pid = 0;
	cr_assert_eq(test_server_restart(&srv, again), 0,
	    "the metaserver did not start again with --reformat");
	start(&other, "coh-reader", "D"); /* the region C had: B's again */
	start(&wr, "coh-writer", "B");
	cr_assert_eq(cmd(&wr, 'p').rc, 0, "B's store into the new pool");
	cr_assert_eq(cmd(&rd, 'v').vrc, CXLP_E_CHANGED, "C validates a "
	    "version of the pool before its format (its uuid read from C's "
	    "stale cache)");
}
