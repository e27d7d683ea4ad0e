/*
 * test_nngfork.c -- nng and fork() (deps/nng/fork-child-starts-afresh.patch):
 * upstream nng (1.5.2, and master still) aborts a child of fork() at its
 * first nng call once the parent used nng ("nng is not fork-reentrant
 * safe"); the nng cxlpool links lets the child start nng afresh, and
 * closes the child's copies of the parent's sockets at the fork.
 *
 * Built twice, as test_nng1518.c is: against the nng cxlpool links
 * (NNG_IS_OURS=1) and, where it differs, against the system's. What each
 * binary must see follows from its nng.h: NNG_CXLP_FORK_AFRESH (our
 * patch) or not (the abort). Children report through their exit status
 * only (no Criterion call in a forked child).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

#ifdef NNG_CXLP_FORK_AFRESH
static const bool afresh = true;
#else
static const bool afresh = false;
#endif

/* An echo server on a rep0 socket, in a thread of the test process. */
struct echo {
	nng_socket rep;
	char url[112];
	pthread_t thr;
	atomic_int pipes; /* connections accepted */
};

static void *
echo_main(void *arg)
{
	struct echo *e = arg;
	nng_msg *m;

	while (nng_recvmsg(e->rep, &m, 0) == 0) {
		if (nng_sendmsg(e->rep, m, 0) != 0) {
			nng_msg_free(m);
		}
	}
	return NULL;
}

static void
count_pipe(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct echo *e = arg;

	(void)p;
	(void)ev;
	atomic_fetch_add(&e->pipes, 1);
}

static void
echo_start(struct echo *e)
{
	snprintf(e->url, sizeof(e->url), "ipc:///tmp/cxlp-nngfork-%d.sock",
	    (int)getpid());
	atomic_store(&e->pipes, 0);
	cr_assert_eq(nng_rep0_open(&e->rep), 0);
	cr_assert_eq(nng_pipe_notify(e->rep, NNG_PIPE_EV_ADD_POST, count_pipe,
	    e), 0);
	cr_assert_eq(nng_listen(e->rep, e->url, NULL, 0), 0);
	cr_assert_eq(pthread_create(&e->thr, NULL, echo_main, e), 0);
}

static void
echo_stop(struct echo *e)
{
	nng_close(e->rep);
	pthread_join(e->thr, NULL);
}

/* One request "text" to url on a new req0 socket: 0 if echoed, else
 * the step that failed (1..4). No Criterion call: the children use it. */
static int
round_trip(const char *url, const char *text)
{
	nng_socket req;
	char *back = NULL;
	size_t len = 0;
	int rc = 0;

	if (nng_req0_open(&req) != 0) {
		return 1;
	}
	(void)nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 30000);
	if (nng_dial(req, url, NULL, 0) != 0) {
		rc = 2;
	} else if (nng_send(req, (void *)text, strlen(text) + 1, 0) != 0) {
		rc = 3;
	} else if (nng_recv(req, &back, &len, NNG_FLAG_ALLOC) != 0 ||
	    len != strlen(text) + 1 || strcmp(back, text) != 0) {
		rc = 4;
	}
	nng_free(back, len);
	nng_close(req);
	return rc;
}

static pid_t
fork_child(void)
{
	pid_t pid = fork();

	cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
	if (pid == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	}
	return pid;
}

/* reap pid: its exit code, or 128 + signal */
static int
wait_child(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid) {
		return -1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TestSuite(nngfork, .timeout = 60);

Test(nngfork, ours_is_the_patched_one)
{
	if (NNG_IS_OURS && NNG_MAJOR_VERSION == 1 && NNG_MINOR_VERSION < 6) {
		cr_assert(afresh, "nng %s built by scripts/build-nng.sh lacks "
		    "deps/nng/fork-child-starts-afresh.patch", nng_version());
	}
}

Test(nngfork, a_child_uses_nng_after_its_parent_did)
{
	struct echo e;
	int code;
	pid_t pid;

	echo_start(&e);
	cr_assert_eq(round_trip(e.url, "parent"), 0);
	if ((pid = fork_child()) == 0) {
		_exit(round_trip(e.url, "child"));
	}
	code = wait_child(pid);
	if (afresh) {
		cr_assert_eq(code, 0, "nng %s (%s): the child's round trip "
		    "failed at step %d", nng_version(),
		    NNG_IS_OURS ? "ours" : "system", code);
	} else {
		/* upstream: "panic: nng is not fork-reentrant safe" */
		cr_assert_eq(code, 128 + SIGABRT, "nng %s without the patch: "
		    "the child exited with %d, not by SIGABRT; if upstream "
		    "fixed this, deps/nng/README.md must say so",
		    nng_version(), code);
	}
	cr_assert_eq(round_trip(e.url, "parent again"), 0,
	    "the parent's nng stopped working after the fork");
	echo_stop(&e);
}

/* The sockets open in this process: fd and inode (sockets' inodes are
 * unique, which eventfd's and epoll's anonymous ones are not). */
struct fdset {
	int n;
	int fd[64];
	ino_t ino[64];
};

static void
sockets_open(struct fdset *s)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	struct stat st;

	s->n = 0;
	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL && s->n < 64) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] != '.' && fd != dirfd(d) &&
		    fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) {
			s->fd[s->n] = fd;
			s->ino[s->n++] = st.st_ino;
		}
	}
	closedir(d);
}

static bool
fdset_has(const struct fdset *s, int fd, ino_t ino)
{
	for (int i = 0; i < s->n; i++) {
		if (s->fd[i] == fd && s->ino[i] == ino) {
			return true;
		}
	}
	return false;
}

Test(nngfork, a_child_closes_its_copies_of_the_parents_sockets)
{
	struct fdset before, nng_made;
	struct echo e;
	nng_socket req;
	pid_t pid;
	int code;

	if (!afresh) {
		cr_skip_test("nng %s aborts in the child (test above)",
		    nng_version());
	}
	sockets_open(&before); /* Criterion's own */
	echo_start(&e);
	cr_assert_eq(nng_req0_open(&req), 0);
	cr_assert_eq(nng_dial(req, e.url, NULL, 0), 0);
	while (atomic_load(&e.pipes) < 1) { /* the accepted side too */
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	sockets_open(&nng_made);
	if ((pid = fork_child()) == 0) {
		struct stat st;
		nng_socket mine;

		/* before any nng call: the fork's hook closed them */
		for (int i = 0; i < nng_made.n; i++) {
			int fd = nng_made.fd[i];

			if (!fdset_has(&before, fd, nng_made.ino[i]) &&
			    fstat(fd, &st) == 0 && st.st_ino == nng_made.ino[i]) {
				_exit(10 + i); /* a copy left open */
			}
		}
		if (nng_req0_open(&mine) != 0) { /* nng afresh */
			_exit(2);
		}
		nng_close(mine);
		_exit(0);
	}
	code = wait_child(pid);
	cr_assert_geq(nng_made.n, before.n + 3, "listener and both ends of "
	    "the connection");
	cr_assert_eq(code, 0, "the child kept a copy of the parent's socket "
	    "(exit %d: 10 + its index) or failed", code);
	nng_close(req);
	echo_stop(&e);
}
