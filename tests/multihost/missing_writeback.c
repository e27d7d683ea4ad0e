/*
 * missing_writeback.c -- the simulator catches a missing write-back
 * (issue 27 section 4): a test that must fail (meson should_fail).
 *
 * A writer on host B stores key rw-0 (its bytes written back before the
 * REGISTER, as every store does), then writes another pattern over the
 * value in its own page: a store of its CPU that nothing writes back,
 * which is what a payload never written back before its REGISTER looks
 * like to everyone else. A reader on host C then reads rw-0 and asserts
 * it sees the writer's last bytes. It cannot, on a faithful simulator:
 * the rewrite sits in host B's cache. So the program exits 1 when the
 * reader saw the bytes the store wrote back, intact, and not the rewrite
 * -- the failure meson expects. It exits 0, which meson reports as an
 * unexpected pass, when the rewrite leaked to host C (the simulator let
 * a store through without a write-back) and also when anything else
 * went wrong (no server, no key, torn bytes), so that only the one
 * expected failure counts as expected.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kvtest.h"
#include "mh.h"
#include "proc.h"
#include "server.h"

static struct test_server srv;
static char worker[4096];

/* start mh-worker ROLE on host and read its MH_READY */
static int
spawn(struct test_child *c, const char *host, const char *role,
    const char *arg)
{
	const char *argv[] = { "mh-worker", role, srv.url, arg, NULL };
	char b = 0;

	if (test_child_spawn_host(c, worker, argv, host) != 0 ||
	    !test_child_read(c, &b, 1) || b != MH_READY) {
		fprintf(stderr, "missing_writeback: %s on %s did not start\n",
		    role, host);
		return -1;
	}
	return 0;
}

/* a reader on host C that reads rw-0 once, wanting writer's bytes */
static int
read_on_c(uint32_t writer, struct mh_result *r)
{
	struct mh_spec s = { .prefix = "rw", .writer = writer, .n = 1,
		.must = 1 };
	struct test_child c;
	uint32_t one = 1;
	int ok;

	if (spawn(&c, "C", "reader", "do") != 0) {
		return -1;
	}
	ok = write(c.go_fd, "g", 1) == 1 &&
	    write(c.go_fd, &one, sizeof(one)) == sizeof(one) &&
	    write(c.go_fd, &s, sizeof(s)) == sizeof(s) &&
	    test_child_read(&c, r, sizeof(*r));
	close(c.go_fd);
	close(c.out_fd);
	return kv_wait_child(c.pid) == 0 && ok ? 0 : -1;
}

static int
run(void)
{
	const char *const args[] = { "--coherence", "sim", NULL };
	struct test_child w;
	struct mh_result mine, stored;
	char b = 0;
	int rc;

	if (test_server_start_host(&srv, 32u << 20, args, "A") != 0 ||
	    spawn(&w, "B", "rewrite", "rw-0") != 0) {
		return -1;
	}
	if (write(w.go_fd, "g", 1) != 1 || !test_child_read(&w, &b, 1) ||
	    b != MH_READY) {
		fprintf(stderr, "missing_writeback: the writer failed\n");
		return -1;
	}
	rc = read_on_c(2, &mine) != 0 || read_on_c(1, &stored) != 0 ? -1 : 0;
	kill(w.pid, SIGKILL);
	close(w.go_fd);
	close(w.out_fd);
	kv_wait_child(w.pid);
	if (rc != 0) {
		fprintf(stderr, "missing_writeback: a reader failed\n");
		return -1;
	}
	if (mine.seen == 1 && mine.wrong == 0) {
		fprintf(stderr, "missing_writeback: UNEXPECTED: host C read "
		    "the bytes host B never wrote back\n");
		return 0;
	}
	if (stored.seen != 1 || stored.wrong != 0 || stored.error != 0) {
		fprintf(stderr, "missing_writeback: host C read neither "
		    "pattern of rw-0 (seen %u, wrong %u, error %d)\n",
		    stored.seen, stored.wrong, stored.error);
		return -1;
	}
	fprintf(stderr, "missing_writeback: FAIL, as it must: host C reads "
	    "the bytes host B wrote back at the store, not the ones it "
	    "wrote after without a write-back\n");
	return 1;
}

int
main(void)
{
	int rc;

	if (test_worker_path(worker, sizeof(worker), "mh-worker") != 0) {
		return 0;
	}
	rc = run();
	if (srv.pid > 0 && test_server_stop(&srv) != 0) {
		fprintf(stderr, "missing_writeback: the metaserver did not "
		    "stop cleanly (log %s)\n", srv.log);
		rc = -1;
	}
	return rc == 1 ? 1 : 0;
}
