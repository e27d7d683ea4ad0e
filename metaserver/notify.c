/*
 * notify.c -- tell a service manager that the metaserver is ready: the
 * sd_notify protocol (one "READY=1" datagram to the unix socket named by
 * $NOTIFY_SOCKET, an abstract one when it starts with '@'), written out
 * here rather than linking libsystemd for it, and the --ready-file that
 * other supervisors can wait for. Both happen after the pool is open and
 * every endpoint listens (server.c calls ms_notify_ready then).
 *
 * With --elect that is when the server is elected: a standby is not
 * ready, it is starting (standby.c). Meanwhile it tells the manager
 * what it waits for (STATUS=) and, each second, that it is alive and
 * still starting (EXTEND_TIMEOUT_USEC=, systemd >= 236: the start
 * timeout runs from the last one), so that a standby may wait for ever
 * while a hung one still times out (dist/systemd).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "ms_int.h"

/* READY=1 to $NOTIFY_SOCKET, if set; 0, or -errno (logged). */
static int
notify_socket(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	int fd, rc = 0;

	if (path == NULL || path[0] == '\0') {
		return 0;
	}
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path)) {
		return cxlp_fail(-EINVAL, "NOTIFY_SOCKET %s: not a socket path",
		    path);
	}
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@') {
		sa.sun_path[0] = '\0'; /* abstract namespace */
	}
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
		return cxlp_fail(-errno, "NOTIFY_SOCKET: socket: %s",
		    strerror(errno));
	}
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0) {
		rc = cxlp_fail(-errno, "NOTIFY_SOCKET %s: %s", path,
		    strerror(errno));
	}
	close(fd);
	return rc;
}

/* the ready file: written whole under a fresh temporary name (mkstemp:
 * never a file someone else put there), then renamed, so that a reader
 * sees it complete or not at all */
static int
ready_file(const char *path, const char *text)
{
	char tmp[4096];
	int fd;
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >=
	    (int)sizeof(tmp)) {
		return cxlp_fail(-ENAMETOOLONG, "--ready-file: path too long");
	}
	if ((fd = mkstemp(tmp)) < 0 || (f = fdopen(fd, "w")) == NULL) {
		int e = errno;

		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return cxlp_fail(-e, "--ready-file %s: cannot create a file "
		    "next to it: %s", path, strerror(e));
	}
	(void)fchmod(fd, 0644);
	if (fputs(text, f) < 0 || fclose(f) != 0) {
		unlink(tmp);
		return cxlp_fail(-EIO, "--ready-file %s: write failed", path);
	}
	if (rename(tmp, path) != 0) {
		int e = errno;

		unlink(tmp);
		return cxlp_fail(-e, "--ready-file %s: %s", path, strerror(e));
	}
	return 0;
}

/* ms_notify_ready -- see ms_int.h */
int
ms_notify_ready(const struct ms_config *cfg)
{
	char text[64];
	int rc = 0;

	/* the file first: whoever hears READY=1 finds it there */
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	if (cfg->ready_file != NULL && ready_file(cfg->ready_file, text) != 0) {
		log_err("op=notify msg=\"%s\"", cxlp_errormsg());
		rc = -1;
	}
	snprintf(text, sizeof(text), "READY=1\nMAINPID=%d\n", (int)getpid());
	if (notify_socket(text) != 0) {
		log_err("op=notify msg=\"%s\"", cxlp_errormsg());
		rc = -1;
	}
	return rc;
}

/* ms_notify_waiting -- see ms_int.h */
void
ms_notify_waiting(const char *status, unsigned extend_ms)
{
	char text[512];

	snprintf(text, sizeof(text), "STATUS=%s\nEXTEND_TIMEOUT_USEC=%llu\n",
	    status, (unsigned long long)extend_ms * 1000u);
	(void)notify_socket(text); /* a bad socket: ms_notify_ready says */
}

/* ms_notify_starting -- see ms_int.h */
void
ms_notify_starting(const struct ms_config *cfg)
{
	if (cfg->ready_file != NULL && unlink(cfg->ready_file) != 0 &&
	    errno != ENOENT) {
		log_err("op=notify msg=\"--ready-file %s: %s\"",
		    cfg->ready_file, strerror(errno));
	}
}

/* ms_notify_stopping -- see ms_int.h */
void
ms_notify_stopping(const struct ms_config *cfg)
{
	(void)notify_socket("STOPPING=1\n");
	if (cfg->ready_file != NULL) {
		(void)unlink(cfg->ready_file);
	}
}
