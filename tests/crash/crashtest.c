/*
 * crashtest.c -- see crashtest.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crashtest.h"

int
ct_inspect_check(const char *path, const char *out_path)
{
	const char *bin = getenv("CXLP_POOL_INSPECT");
	int status;
	pid_t pid;

	if (bin == NULL) {
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		return -1;
	}
	if (pid == 0) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		execl(bin, "pool-inspect", "check", path, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		return -1;
	}
	return WEXITSTATUS(status);
}

/* copy [off, end) of in to out */
static int
copy_range(int in, int out, off_t off, off_t end)
{
	char buf[1 << 16];

	while (off < end) {
		size_t want = (size_t)(end - off) < sizeof(buf) ?
		    (size_t)(end - off) : sizeof(buf);
		ssize_t n = pread(in, buf, want, off);

		if (n <= 0 || pwrite(out, buf, (size_t)n, off) != n) {
			return -EIO;
		}
		off += n;
	}
	return 0;
}

/* sparse-aware: only the data segments of src are copied */
int
ct_copy(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY), out;
	off_t size, off = 0, end;
	int rc = 0;

	if (in < 0) {
		return -errno;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	size = lseek(in, 0, SEEK_END);
	if (out < 0 || size < 0 || ftruncate(out, size) != 0) {
		rc = -EIO;
	}
	while (rc == 0 && (off = lseek(in, off, SEEK_DATA)) >= 0) {
		end = lseek(in, off, SEEK_HOLE);
		rc = end < 0 ? -EIO : copy_range(in, out, off, end);
		off = end;
	}
	close(in);
	if (out >= 0) {
		close(out);
	}
	return rc;
}

void
ct_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

bool
ct_file_has(const char *path, const char *needle)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL) {
		return false;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}
