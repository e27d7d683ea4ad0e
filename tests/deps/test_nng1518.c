/*
 * test_nng1518.c -- nng bug #1518 and our fix (deps/nng/): a peer that
 * hangs up during the SP header exchange must not stop a listener; it
 * accepts the next connection.
 *
 * Built twice: against the nng cxlpool links (NNG_IS_OURS=1: the build of
 * scripts/build-nng.sh, or a system nng >= 1.6) and, where it differs,
 * against the system's libnng (NNG_IS_OURS=0). Each binary asserts what
 * its nng must do: ours never shows the bug; the system's 1.5 shows it,
 * which is why cxlpool does not link it (and this test says so if a
 * fixed system nng arrives). Raw sockets play the misbehaving peer.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

/* Whether the nng under test has the bug: only a system nng before 1.6. */
static bool
bug_expected(void)
{
	return !NNG_IS_OURS && NNG_MAJOR_VERSION == 1 && NNG_MINOR_VERSION < 6;
}

static void
sock_path(char *buf, size_t n, const char *tag)
{
	snprintf(buf, n, "/tmp/cxlp-nng1518-%s-%d.sock", tag, (int)getpid());
	unlink(buf);
}

static int
raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static atomic_int pipes_added;

static void
count_pipe(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	atomic_fetch_add(&pipes_added, 1);
}

static void
nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A rep0 listener on path; raw peers that each send `head` bytes of an
 * SP header and hang up at once, up to `probes` of them (each hang-up
 * races the listener's own header write: a write into a connection its
 * peer has closed fails with EPIPE, which 1.5.2 reports as NNG_ECLOSED);
 * then a real dialer. Whether the listener accepted the dialer in 3 s. */
static bool
listener_accepts_after_hangups(const char *tag, size_t head, int probes)
{
	static const char sp_hdr[8] = { 0, 'S', 'P', 0, 0, 0x31, 0, 0 };
	char path[96], url[112];
	nng_socket rep, req;
	bool accepted = false;

	sock_path(path, sizeof(path), tag);
	snprintf(url, sizeof(url), "ipc://%s", path);
	atomic_store(&pipes_added, 0);
	cr_assert_eq(nng_rep0_open(&rep), 0);
	cr_assert_eq(nng_pipe_notify(rep, NNG_PIPE_EV_ADD_POST, count_pipe,
	    NULL), 0);
	cr_assert_eq(nng_listen(rep, url, NULL, 0), 0);
	for (int i = 0; i < probes; i++) {
		int fd = raw_connect(path);

		cr_assert_geq(fd, 0, "connect %s: %s", path, strerror(errno));
		if (head > 0) {
			cr_assert_eq(write(fd, sp_hdr, head), (ssize_t)head);
		}
		close(fd);
		nap_ms(5);
	}
	nap_ms(200); /* past a failed accept's 100 ms cool-down */
	cr_assert_eq(nng_req0_open(&req), 0);
	cr_assert_eq(nng_dial(req, url, NULL, NNG_FLAG_NONBLOCK), 0);
	for (int i = 0; i < 300 && !accepted; i++) {
		accepted = atomic_load(&pipes_added) > 0;
		nap_ms(10);
	}
	nng_close(req);
	nng_close(rep);
	unlink(path);
	return accepted;
}

Test(nng1518, a_listener_accepts_after_peers_hang_up_before_their_header)
{
	cr_expect_eq(listener_accepts_after_hangups("raw", 0, 50),
	    !bug_expected(), "nng %s (%s): 50 connect+close on a listener, "
	    "then a dial", nng_version(), NNG_IS_OURS ? "ours" : "system");
}

Test(nng1518, a_listener_accepts_after_peers_hang_up_mid_header)
{
	cr_expect_eq(listener_accepts_after_hangups("half", 4, 50),
	    !bug_expected(), "nng %s (%s): 50 times half an SP header then "
	    "close, then a dial", nng_version(),
	    NNG_IS_OURS ? "ours" : "system");
}
