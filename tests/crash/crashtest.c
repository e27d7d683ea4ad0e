/*
 * crashtest.c -- see crashtest.h. The copy walks SEEK_DATA/SEEK_HOLE, so
 * the holes of a sparse pool are neither read nor written.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "crashtest.h"

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
