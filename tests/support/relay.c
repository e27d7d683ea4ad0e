/*
 * relay.c -- a forking unix-socket byte relay for tests (relay.h).
 *
 * Only system calls after the fork: the test process that forks it has
 * nng's threads, whose locks (malloc's, stdio's) a forked child must not
 * touch. The listening process ignores SIGCHLD, so its per-connection
 * children never linger as zombies, and dies with the test process.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "relay.h"

static int
unix_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(a->sun_path, path, strlen(path));
	return 0;
}

/* copy what one side has to the other: 0 at its end or an error */
static int
pass(int from, int to)
{
	char buf[16384];
	ssize_t n = read(from, buf, sizeof(buf));

	for (ssize_t off = 0; n > 0 && off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));

		if (w <= 0) {
			return 0;
		}
		off += w;
	}
	return n > 0;
}

static void
serve(int c, const char *server_path)
{
	struct sockaddr_un a;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct pollfd p[2] = { { c, POLLIN, 0 }, { s, POLLIN, 0 } };

	if (s < 0 || unix_addr(&a, server_path) != 0 ||
	    connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
		_exit(1);
	}
	p[1].fd = s;
	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR) {
			_exit(1);
		}
		if ((p[0].revents && !pass(c, s)) ||
		    (p[1].revents && !pass(s, c))) {
			_exit(0);
		}
	}
}

static void
listen_loop(int l, const char *server_path)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		int c = accept(l, NULL, NULL);

		if (c < 0) {
			continue;
		}
		if (fork() == 0) {
			close(l);
			serve(c, server_path);
		}
		close(c);
	}
}

/* relay_spawn -- see relay.h */
pid_t
relay_spawn(const char *listen_path, const char *server_path)
{
	struct sockaddr_un a;
	pid_t pid;
	int l;

	if (unix_addr(&a, listen_path) != 0 ||
	    (l = socket(AF_UNIX, SOCK_STREAM, 0)) < 0) {
		return -1;
	}
	unlink(listen_path);
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(l, 16) != 0) {
		close(l);
		return -1;
	}
	if ((pid = fork()) == 0) {
		listen_loop(l, server_path);
	}
	close(l);
	return pid;
}

/* relay_kill -- see relay.h */
void
relay_kill(pid_t pid, const char *listen_path)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	unlink(listen_path);
}
