/*
 * sim.c -- the multi-host coherence simulator (sim.h has the model).
 *
 * DESIGN NOTES
 *
 * 1. Files. Beside the pool file P (the device): P.simhost-H, host H's
 *    cache (what H's processes map instead of P, at P's offsets), and
 *    P.simhost-H.twin, what H last loaded of each line; P.simlock, whose
 *    byte ranges lock the lines of a write-back or drop (below). All are
 *    mapped whole and shared (MAP_SHARED), so every process of a host
 *    sees one cache.
 * 2. Making a cache [cache_make]: under an exclusive flock of
 *    P.simhost-H.lock, a host whose cache is missing or of another size
 *    gets both files built under temporary names, the cache as a copy of
 *    P that keeps its holes and the twin as a copy of the cache (never
 *    two copies of P: other hosts write P meanwhile, and a line that
 *    differs between them would pass for dirty), then renamed into
 *    place, the twin first: the cache's
 *    name appears last, so a cache that exists is whole, and its twin is
 *    the one built with it.
 * 3. A line moves whole. A write-back or drop of [off, off + len) takes
 *    an OFD write lock on that range of P.simlock (released by the kernel
 *    if the process dies), so two hosts never interleave their copies of
 *    one line, and two processes of one host never tear its twin. Stores
 *    into the cache by the host's other threads are not held off (they
 *    are not on hardware either); an 8-byte aligned store is copied whole.
 *    A write-back copies one snapshot of the line [line_writeback]; a
 *    store the host makes to a line while one of its processes drops it
 *    may be lost to the reload (hardware keeps it): the protocol never
 *    has a host write a line it is dropping, and the model does not
 *    check that.
 * 4. Dirty means "differs from the twin" [line_writeback]: a line stored back
 *    to the value it was loaded with is clean, as the hardware cannot tell
 *    either unless it was written; the lost-write case this can hide (A
 *    writes x then restores it while B writes the line) loses nothing of
 *    A's.
 * 5. The record [record_line]: with CXLP_SIM_RECORD=<file> in a process's
 *    environment (a test tool only: nothing else reads it), that process
 *    appends one text line to <file> for every line it writes back to the
 *    device, by write-back or by drop: "<host> <pid> <offset>\n", the
 *    offset in hex, one write(2) of O_APPEND each, so several processes
 *    may share a file. It is what a host wrote to the device, not what it
 *    stored in its cache: a test proves that a process wrote nothing to
 *    the pool from some moment on (a deposed metaserver after its
 *    resume: tests/multihost/test_fencing.c) by the file's size at that
 *    moment and at the end. A record that cannot be opened fails
 *    sim_open.
 */
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cline.h"
#include "err.h"
#include "sim.h"

struct sim {
	uint64_t size;     /* bytes of the device */
	uint8_t *dev;      /* the device, shared by every host */
	uint8_t *cache;    /* this host's cache */
	uint8_t *twin;     /* what this host last loaded of each line */
	int lock_fd;       /* P.simlock: note 3 */
	int record_fd;     /* CXLP_SIM_RECORD (note 5); -1: none */
	char host[SIM_HOST_MAX];
	char cache_path[PATH_MAX];
};

/* sim_host -- see sim.h */
const char *
sim_host(void)
{
	const char *h = getenv("CXLP_SIM_HOST");

	return h != NULL && h[0] != '\0' ? h : "0";
}

static bool
host_ok(const char *h)
{
	size_t n = strlen(h);

	if (n == 0 || n >= SIM_HOST_MAX) {
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '_' || c == '-')) {
			return false;
		}
	}
	return true;
}

static int
path_of(char *out, const char *dev, const char *host, const char *suffix)
{
	int n = snprintf(out, PATH_MAX, "%s.simhost-%s%s", dev, host, suffix);

	if (n < 0 || n >= PATH_MAX) {
		return cxlp_fail(-ENAMETOOLONG, "%s: path too long", dev);
	}
	return 0;
}

/* copy [off, off + len) of fd in to fd out (same offsets), through b of
 * COPY_BUF bytes */
#define COPY_BUF (1u << 20)
static int
copy_extent(int in, int out, off_t off, off_t len, char *b)
{
	while (len > 0) {
		size_t want = (uint64_t)len < COPY_BUF ? (size_t)len : COPY_BUF;
		ssize_t r = pread(in, b, want, off);
		if (r <= 0) {
			return r < 0 ? -errno : -EIO;
		}
		if (pwrite(out, b, (size_t)r, off) != r) {
			return -errno;
		}
		off += r;
		len -= r;
	}
	return 0;
}

/* copy every data extent of in (size bytes) to out, keeping holes */
static int
copy_sparse(int in, int out, off_t size)
{
	char *b = malloc(COPY_BUF);
	off_t pos = 0;
	int rc = 0;

	if (b == NULL) {
		return -ENOMEM;
	}
	if (ftruncate(out, size) != 0) {
		rc = -errno;
	}
	while (rc == 0 && pos < size) {
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0) {
			rc = errno == ENXIO ? 0 : -errno;
			break;
		}
		off_t hole = lseek(in, data, SEEK_HOLE);
		hole = hole < 0 ? size : hole;
		rc = copy_extent(in, out, data, hole - data, b);
		pos = hole;
	}
	free(b);
	return rc;
}

/* a copy of src (size bytes) under a temporary name beside final, in
 * tmp[PATH_MAX]; its descriptor in *fd (caller closes, renames or
 * unlinks) */
static int
copy_to_tmp(int src, off_t size, const char *final, char *tmp, int *fd)
{
	int rc;

	if (snprintf(tmp, PATH_MAX, "%s.tmp%ld", final, (long)getpid()) >=
	    PATH_MAX) {
		return cxlp_fail(-ENAMETOOLONG, "%s: path too long", final);
	}
	*fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (*fd < 0) {
		return cxlp_fail(-errno, "%s: %s", tmp, strerror(errno));
	}
	if ((rc = copy_sparse(src, *fd, size)) != 0) {
		close(*fd);
		unlink(tmp);
		return cxlp_fail(rc, "%s: cannot make the host's copy: %s",
		    final, strerror(-rc));
	}
	return 0;
}

/* tmp (a copy made by copy_to_tmp) takes the name final */
static int
rename_into_place(const char *tmp, const char *final)
{
	if (rename(tmp, final) != 0) {
		int rc = -errno;

		unlink(tmp);
		return cxlp_fail(rc, "%s: cannot make the host's copy: %s",
		    final, strerror(-rc));
	}
	return 0;
}

/* The cache as one copy of the device, the twin as a copy of that copy
 * (two copies of the device would differ in the lines other hosts wrote
 * back between them, which the new host would take for its own dirty
 * lines and write back over newer ones), renamed into place the twin
 * first (note 2). */
static int
caches_copy(int dev_fd, off_t size, const char *cache, const char *twin)
{
	char ctmp[PATH_MAX], ttmp[PATH_MAX];
	int cfd, tfd, rc;

	if ((rc = copy_to_tmp(dev_fd, size, cache, ctmp, &cfd)) != 0) {
		return rc;
	}
	rc = copy_to_tmp(cfd, size, twin, ttmp, &tfd);
	close(cfd);
	if (rc == 0) {
		close(tfd);
		rc = rename_into_place(ttmp, twin);
	}
	if (rc == 0) {
		return rename_into_place(ctmp, cache);
	}
	unlink(ctmp);
	return rc;
}

static bool
has_size(const char *path, off_t size)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_size == size;
}

/* the host's cache and twin exist as copies of the device (note 2) */
static int
cache_make(int dev_fd, off_t size, const char *cache, const char *twin,
    const char *lock)
{
	int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	int rc = 0;

	if (lfd < 0) {
		return cxlp_fail(-errno, "%s: %s", lock, strerror(errno));
	}
	if (flock(lfd, LOCK_EX) != 0) {
		rc = cxlp_fail(-errno, "%s: flock: %s", lock, strerror(errno));
	} else if (!has_size(cache, size) || !has_size(twin, size)) {
		rc = caches_copy(dev_fd, size, cache, twin);
	}
	close(lfd); /* drops the flock */
	return rc;
}

static int
map_file(const char *path, uint64_t size, uint8_t **out)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	void *a;

	*out = NULL;
	if (fd < 0) {
		return cxlp_fail(-errno, "%s: %s", path, strerror(errno));
	}
	a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (a == MAP_FAILED) {
		return cxlp_fail(-errno, "%s: mmap: %s", path, strerror(errno));
	}
	*out = a;
	return 0;
}

static int
open_files(struct sim *s, const char *dev_path, const char *host)
{
	char twin[PATH_MAX], lock[PATH_MAX], simlock[PATH_MAX];
	struct stat st;
	int rc, dev_fd;

	if ((rc = path_of(s->cache_path, dev_path, host, "")) != 0 ||
	    (rc = path_of(twin, dev_path, host, ".twin")) != 0 ||
	    (rc = path_of(lock, dev_path, host, ".lock")) != 0) {
		return rc;
	}
	if (snprintf(simlock, sizeof(simlock), "%s.simlock", dev_path) >=
	    (int)sizeof(simlock)) {
		return cxlp_fail(-ENAMETOOLONG, "%s: path too long", dev_path);
	}
	if (stat(dev_path, &st) != 0) {
		return cxlp_fail(-errno, "%s: %s", dev_path, strerror(errno));
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0) {
		return cxlp_fail(-EINVAL, "%s: the simulator runs on a "
		    "plain, non-empty file only", dev_path);
	}
	dev_fd = open(dev_path, O_RDWR | O_CLOEXEC);
	if (dev_fd < 0) {
		return cxlp_fail(-errno, "%s: %s", dev_path, strerror(errno));
	}
	s->size = (uint64_t)st.st_size;
	rc = cache_make(dev_fd, st.st_size, s->cache_path, twin, lock);
	close(dev_fd);
	if (rc != 0) {
		return rc;
	}
	s->lock_fd = open(simlock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->lock_fd < 0) {
		return cxlp_fail(-errno, "%s: %s", simlock, strerror(errno));
	}
	if ((rc = map_file(dev_path, s->size, &s->dev)) != 0 ||
	    (rc = map_file(s->cache_path, s->size, &s->cache)) != 0 ||
	    (rc = map_file(twin, s->size, &s->twin)) != 0) {
		return rc;
	}
	return 0;
}

/* the record of note 5, if asked for */
static int
record_open(struct sim *s)
{
	const char *path = getenv("CXLP_SIM_RECORD");

	s->record_fd = -1;
	if (path == NULL || path[0] == '\0') {
		return 0;
	}
	s->record_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600);
	if (s->record_fd < 0) {
		return cxlp_fail(-errno, "CXLP_SIM_RECORD %s: %s", path,
		    strerror(errno));
	}
	return 0;
}

/* sim_open -- see sim.h */
int
sim_open(struct sim **out, const char *dev_path, const char *host)
{
	struct sim *s;
	int rc;

	*out = NULL;
	host = host != NULL ? host : sim_host();
	if (!host_ok(host)) {
		return cxlp_fail(-EINVAL, "simulated host name '%s': "
		    "1 to %d of [A-Za-z0-9_-]", host, SIM_HOST_MAX - 1);
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		return cxlp_fail(-ENOMEM, "out of memory");
	}
	s->lock_fd = -1;
	snprintf(s->host, sizeof(s->host), "%s", host);
	if ((rc = record_open(s)) != 0 ||
	    (rc = open_files(s, dev_path, host)) != 0) {
		sim_close(&s);
		return rc;
	}
	*out = s;
	return 0;
}

/* sim_close -- see sim.h */
void
sim_close(struct sim **sp)
{
	struct sim *s = *sp;

	if (s == NULL) {
		return;
	}
	if (s->dev != NULL) {
		munmap(s->dev, s->size);
	}
	if (s->cache != NULL) {
		munmap(s->cache, s->size);
	}
	if (s->twin != NULL) {
		munmap(s->twin, s->size);
	}
	if (s->lock_fd >= 0) {
		close(s->lock_fd);
	}
	if (s->record_fd >= 0) {
		close(s->record_fd);
	}
	free(s);
	*sp = NULL;
}

/* sim_cache_path -- see sim.h */
const char *
sim_cache_path(const struct sim *s)
{
	return s->cache_path;
}

/* sim_size -- see sim.h */
uint64_t
sim_size(const struct sim *s)
{
	return s->size;
}

/* lock (F_WRLCK) or unlock (F_UNLCK) the lines [off, end) (note 3) */
static void
lines_lock(const struct sim *s, uint64_t off, uint64_t end, short type)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = (off_t)off,
		.l_len = (off_t)(end - off),
	};

	while (fcntl(s->lock_fd, F_OFD_SETLKW, &fl) != 0) {
		cxlp_assert(errno == EINTR);
	}
}

/* note 5: line o went to the device */
static void
record_line(const struct sim *s, uint64_t o)
{
	char buf[SIM_HOST_MAX + 48];
	int n;

	if (s->record_fd < 0) {
		return;
	}
	n = snprintf(buf, sizeof(buf), "%s %ld %llx\n", s->host,
	    (long)getpid(), (unsigned long long)o);
	if (write(s->record_fd, buf, (size_t)n) != n) {
		cxlp_assert(!"CXLP_SIM_RECORD: a short write");
	}
}

/* the line as one snapshot, so that a store by another process of the
 * host between the copies leaves the line dirty (cache != twin) rather
 * than taken for written back */
static void
line_writeback(struct sim *s, uint64_t o)
{
	uint8_t snap[CLINE_SIZE];

	memcpy(snap, s->cache + o, CLINE_SIZE);
	if (memcmp(snap, s->twin + o, CLINE_SIZE) != 0) {
		memcpy(s->dev + o, snap, CLINE_SIZE);
		memcpy(s->twin + o, snap, CLINE_SIZE);
		record_line(s, o);
	}
}

/* the lines [*lo, *hi) that [off, off + len) touches, within the device */
static bool
line_range(const struct sim *s, uint64_t off, uint64_t len, uint64_t *lo,
    uint64_t *hi)
{
	cxlp_assert(off <= s->size && len <= s->size - off);
	*lo = off & ~(uint64_t)(CLINE_SIZE - 1);
	*hi = (off + len + CLINE_SIZE - 1) & ~(uint64_t)(CLINE_SIZE - 1);
	return len > 0;
}

/* write back the dirty lines of [off, off + len), then, with reload,
 * load every one of them from the device again, under the lines' lock
 * (note 3) */
static void
lines_sync(struct sim *s, uint64_t off, uint64_t len, bool reload)
{
	uint64_t lo, hi;

	if (!line_range(s, off, len, &lo, &hi)) {
		return;
	}
	lines_lock(s, lo, hi, F_WRLCK);
	for (uint64_t o = lo; o < hi; o += CLINE_SIZE) {
		line_writeback(s, o);
		if (reload) {
			memcpy(s->cache + o, s->dev + o, CLINE_SIZE);
			memcpy(s->twin + o, s->dev + o, CLINE_SIZE);
		}
	}
	lines_lock(s, lo, hi, F_UNLCK);
}

/* sim_writeback -- see sim.h */
void
sim_writeback(struct sim *s, uint64_t off, uint64_t len)
{
	lines_sync(s, off, len, false);
}

/* sim_drop -- see sim.h */
void
sim_drop(struct sim *s, uint64_t off, uint64_t len)
{
	lines_sync(s, off, len, true);
}

/* sim_forget_hosts -- see sim.h */
int
sim_forget_hosts(const char *dev_path)
{
	char dir[PATH_MAX], prefix[PATH_MAX], full[PATH_MAX];
	const char *slash = strrchr(dev_path, '/');
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(dir, sizeof(dir), "%.*s", slash == NULL ? 1 :
	    (int)(slash - dev_path) + (slash == dev_path),
	    slash == NULL ? "." : dev_path);
	snprintf(prefix, sizeof(prefix), "%s.simhost-",
	    slash == NULL ? dev_path : slash + 1);
	if ((d = opendir(dir)) == NULL) {
		return -errno;
	}
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 ||
		    snprintf(full, sizeof(full), "%s/%s", dir, e->d_name) >=
		    (int)sizeof(full)) {
			continue;
		}
		const char *rest = e->d_name + strlen(prefix);
		if (unlink(full) == 0 && strchr(rest, '.') == NULL) {
			n++; /* the cache itself, not its .twin or .lock */
		}
	}
	closedir(d);
	return n;
}
