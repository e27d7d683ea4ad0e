/*
 * map.c -- mappings of a pool file or device range through libpmem2; the
 * only file in cxlpool that includes libpmem2.h.
 *
 * Why this shape: the granularity choice and the persist primitive must
 * be the same for the metaserver (whole pool) and every handler (one
 * region at a time), so they are decided here once. We ask libpmem2 for
 * PMEM2_GRANULARITY_PAGE as the coarsest acceptable granularity; it then
 * picks the finest the media offers (cache line or byte on real DAX, page
 * with msync on tmpfs and disk files), and pmem2_get_persist_fn gives the
 * matching persist; pmap_granularity() reports which one it picked.
 * One exception: on tmpfs that persist is msync, a system call that has
 * nothing to write back (tmpfs has no backing store, and the page cache it
 * lives in outlives any process that dies), so a tmpfs mapping persists
 * with a memory fence alone. Stores to a shared mapping are visible to
 * every process mapping the same pages; the fence orders them before the
 * publishing store that follows. That is a release fence: earlier stores
 * before later ones, which is all a publish needs (a reader's acquire
 * load pairs with it; no writer waits on what a reader stores). On x86
 * it is a compiler barrier; a full (seq_cst) fence drained the store
 * buffer at every persist, 10% of ms_dispatch's time per registered key.
 * msync was over half the metaserver's CPU per registered key
 * (bench/README.md).
 * Offsets and lengths are checked against pmem2_source_alignment (the
 * system page on files, the device alignment on devdax, e.g. 2 MiB or
 * 1 GiB), which pmap_alignment() reports so that a pool on a device can
 * align its regions at least that coarsely. pmem2 error codes (<= -100000)
 * are folded into -EINVAL or -errno, with pmem2's message kept in
 * cxlp_errormsg().
 * Huge pages [pmap_advise_huge]: a random lookup in a big index touches
 * two random 4 KiB pages (slot, key record), and their TLB misses and
 * page walks cost as much as the cache misses. devdax aligned to 2 MiB
 * maps with PMD pages by itself. A tmpfs file gets 2 MiB pages only if
 * its mount's huge= option (not shmem_enabled, which governs the
 * kernel's internal shm mount: memfd, SysV, shared anonymous; only its
 * deny and force apply to every tmpfs) lets it, and for huge=advise only
 * in a range given MADV_HUGEPAGE, whose virtual start is 2 MiB-aligned
 * with its file offset. libpmem2 aligns mappings of >= 2 MiB to 2 MiB,
 * so a pool mapped from offset 0 qualifies; we check rather than trust.
 */
#include <errno.h>
#include <fcntl.h>
#include <libpmem2.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "coh.h"
#include "map.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define HUGE_PAGE (2ull << 20) /* PMD page on x86-64 and arm64 (4 KiB) */

struct pmap {
	struct pmem2_map *map;
	void *addr;
	uint64_t len;       /* bytes mapped */
	uint64_t file_size; /* bytes in the whole file or device */
	uint64_t align;     /* bytes: offset/length granule of mappings */
	enum pmap_gran gran; /* store granularity pmem2 gave the mapping */
	bool writable;
	bool devdax;
	bool is_volatile;
	bool fence_only;    /* tmpfs: persist is a fence (see above) */
	pmem2_persist_fn persist;
	uint64_t off;       /* file offset of addr */
	dev_t dev;          /* st_dev of the file: finds its tmpfs mount */
	uint64_t id_dev, id_ino; /* pmap_file_id */
	struct coh *coh;    /* sw or sim attachment (coh.h), else NULL */
	enum pmap_huge huge; /* last pmap_advise_huge choice */
	char huge_setting[64]; /* what decided it */
};

/* a pmem2 return code as a cxlpool one */
static int
pm_err(int rc, const char *path, const char *what)
{
	const char *msg = pmem2_errormsg();

	if (rc <= -100000 || rc >= 0) {
		rc = -EINVAL;
	}
	return cxlp_fail(rc, "%s: %s: %s", path, what, msg ? msg : "?");
}

static int
map_config(struct pmem2_config **cfg, const char *path, uint64_t off,
    uint64_t len, bool writable)
{
	int rc;

	if ((rc = pmem2_config_new(cfg)) != 0) {
		return pm_err(rc, path, "pmem2_config_new");
	}
	if ((rc = pmem2_config_set_required_store_granularity(*cfg,
	    PMEM2_GRANULARITY_PAGE)) != 0 ||
	    (rc = pmem2_config_set_offset(*cfg, off)) != 0 ||
	    (rc = pmem2_config_set_length(*cfg, len)) != 0 ||
	    (rc = pmem2_config_set_protection(*cfg, writable ?
	    PMEM2_PROT_READ | PMEM2_PROT_WRITE : PMEM2_PROT_READ)) != 0) {
		rc = pm_err(rc, path, "pmem2 config");
		pmem2_config_delete(cfg);
		return rc;
	}
	return 0;
}

/* check off/len against the file's alignment and size; resolve len 0 */
static int
map_range(const char *path, uint64_t fsize, uint64_t align, uint64_t off,
    uint64_t *len)
{
	if (off % align != 0 || *len % align != 0) {
		return cxlp_fail(-EINVAL, "%s: offset %llu or length %llu is "
		    "not a multiple of its alignment %llu", path,
		    (unsigned long long)off, (unsigned long long)*len,
		    (unsigned long long)align);
	}
	if (*len == 0) {
		*len = off < fsize ? fsize - off : 0;
	}
	if (*len == 0 || off > fsize || *len > fsize - off) {
		return cxlp_fail(-EINVAL, "%s: range %llu+%llu is outside its "
		    "%llu bytes", path, (unsigned long long)off,
		    (unsigned long long)*len, (unsigned long long)fsize);
	}
	if (*len % align != 0) {
		return cxlp_fail(-EINVAL, "%s: size %llu is not a multiple of "
		    "its alignment %llu", path, (unsigned long long)fsize,
		    (unsigned long long)align);
	}
	return 0;
}

/* the source's size and mapping alignment */
static int
source_geometry(struct pmap *m, const char *path, struct pmem2_source *src)
{
	size_t fsize, align;
	int rc;

	if ((rc = pmem2_source_size(src, &fsize)) != 0) {
		return pm_err(rc, path, "pmem2_source_size");
	}
	if ((rc = pmem2_source_alignment(src, &align)) != 0) {
		return pm_err(rc, path, "pmem2_source_alignment");
	}
	if (align == 0 || (align & (align - 1)) != 0) {
		return cxlp_fail(-EINVAL, "%s: alignment %zu is not a power "
		    "of two", path, align);
	}
	m->file_size = fsize;
	m->align = align;
	return 0;
}

static enum pmap_gran
gran_of(enum pmem2_granularity g)
{
	switch (g) {
	case PMEM2_GRANULARITY_BYTE:
		return PMAP_GRAN_BYTE;
	case PMEM2_GRANULARITY_CACHE_LINE:
		return PMAP_GRAN_CACHE_LINE;
	default:
		return PMAP_GRAN_PAGE;
	}
}

static int
map_source(struct pmap *m, const char *path, int fd, uint64_t off,
    uint64_t len)
{
	struct pmem2_source *src = NULL;
	struct pmem2_config *cfg = NULL;
	int rc;

	if ((rc = pmem2_source_from_fd(&src, fd)) != 0) {
		return pm_err(rc, path, "pmem2_source_from_fd");
	}
	if ((rc = source_geometry(m, path, src)) != 0 ||
	    (rc = map_range(path, m->file_size, m->align, off, &len)) != 0 ||
	    (rc = map_config(&cfg, path, off, len, m->writable)) != 0) {
		goto out_src;
	}
	if ((rc = pmem2_map_new(&m->map, cfg, src)) != 0) {
		rc = pm_err(rc, path, "pmem2_map_new");
		goto out_cfg;
	}
	m->addr = pmem2_map_get_address(m->map);
	m->len = pmem2_map_get_size(m->map);
	m->persist = pmem2_get_persist_fn(m->map);
	m->gran = gran_of(pmem2_map_get_store_granularity(m->map));
out_cfg:
	pmem2_config_delete(&cfg);
out_src:
	pmem2_source_delete(&src);
	return rc;
}

/* the identity of the file the pool is (pmap_file_id): path's, which
 * in sim is not the cache the mapping is made from */
static int
map_identity(struct pmap *m, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		return cxlp_fail(-errno, "%s: %s", path, strerror(errno));
	}
	pmap_stat_id(&st, &m->id_dev, &m->id_ino);
	return 0;
}

/* pmap_open_coh -- see map.h */
int
pmap_open_coh(struct pmap **out, const char *path, uint64_t off,
    uint64_t len, bool writable, struct coh *coh)
{
	const char *file = coh_map_path(coh, path);
	struct pmap *m;
	struct statfs sfs;
	struct stat st;
	int fd, rc;

	*out = NULL;
	if ((m = calloc(1, sizeof(*m))) == NULL) {
		return cxlp_fail(-ENOMEM, "%s: no memory", path);
	}
	m->writable = writable;
	m->coh = coh_mode(coh) == POOL_COH_SW || coh_mode(coh) ==
	    POOL_COH_SIM ? coh : NULL;
	fd = open(file, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0 || fstatfs(fd, &sfs) != 0) {
		rc = cxlp_fail(-errno, "%s: %s", file, strerror(errno));
		goto err_close;
	}
	m->devdax = S_ISCHR(st.st_mode);
	m->off = off;
	m->dev = st.st_dev;
	pmap_stat_id(&st, &m->id_dev, &m->id_ino);
	if (file != path && (rc = map_identity(m, path)) != 0) {
		goto err_close;
	}
	m->is_volatile = m->devdax || sfs.f_type == TMPFS_MAGIC;
	m->fence_only = !m->devdax && sfs.f_type == TMPFS_MAGIC;
	if ((rc = map_source(m, file, fd, off, len)) != 0) {
		goto err_close;
	}
	close(fd);
	*out = m;
	return 0;
err_close:
	if (fd >= 0) {
		close(fd);
	}
	free(m);
	return rc;
}

/* pmap_open -- see map.h */
int
pmap_open(struct pmap **out, const char *path, uint64_t off, uint64_t len,
    bool writable)
{
	return pmap_open_coh(out, path, off, len, writable, NULL);
}

/* pmap_stat_id -- see map.h */
void
pmap_stat_id(const struct stat *st, uint64_t *dev, uint64_t *ino)
{
	bool chr = S_ISCHR(st->st_mode);

	*dev = (uint64_t)(chr ? st->st_rdev : st->st_dev);
	*ino = chr ? 0 : (uint64_t)st->st_ino;
}

/* pmap_file_id -- see map.h */
void
pmap_file_id(const struct pmap *m, uint64_t *dev, uint64_t *ino)
{
	*dev = m->id_dev;
	*ino = m->id_ino;
}

/* pmap_close -- see map.h */
void
pmap_close(struct pmap **m)
{
	if (m == NULL || *m == NULL) {
		return;
	}
	pmem2_map_delete(&(*m)->map);
	free(*m);
	*m = NULL;
}

/* pmap_addr -- start of the mapping */
void *
pmap_addr(const struct pmap *m)
{
	return m->addr;
}

/* pmap_len -- bytes mapped */
uint64_t
pmap_len(const struct pmap *m)
{
	return m->len;
}

/* pmap_file_size -- see map.h */
uint64_t
pmap_file_size(const struct pmap *m)
{
	return m->file_size;
}

/* pmap_alignment -- see map.h */
uint64_t
pmap_alignment(const struct pmap *m)
{
	return m->align;
}

/* pmap_granularity -- see map.h */
enum pmap_gran
pmap_granularity(const struct pmap *m)
{
	return m->gran;
}

/* pmap_gran_name -- see map.h */
const char *
pmap_gran_name(enum pmap_gran g)
{
	static const char *const names[] = {
		[PMAP_GRAN_BYTE] = "byte",
		[PMAP_GRAN_CACHE_LINE] = "cache-line",
		[PMAP_GRAN_PAGE] = "page",
	};

	return (unsigned)g < sizeof(names) / sizeof(names[0]) ?
	    names[g] : "unknown";
}

/* pmap_is_devdax -- see map.h */
bool
pmap_is_devdax(const struct pmap *m)
{
	return m->devdax;
}

/* pmap_is_volatile -- see map.h */
bool
pmap_is_volatile(const struct pmap *m)
{
	return m->is_volatile;
}

/* [addr, addr + len) lies in m; its offset in the file */
static uint64_t
file_off(const struct pmap *m, const void *addr, size_t len)
{
	const char *a = addr, *base = m->addr;

	cxlp_assert(a >= base && len <= m->len &&
	    (uint64_t)(a - base) <= m->len - len);
	return m->off + (uint64_t)(a - base);
}

/* pmap_persist -- see map.h; a no-op on a read-only mapping */
void
pmap_persist(const struct pmap *m, const void *addr, size_t len)
{
	uint64_t off = file_off(m, addr, len);

	if (!m->writable || len == 0) {
		return;
	}
	if (m->fence_only) {
		__atomic_thread_fence(__ATOMIC_RELEASE);
	} else {
		m->persist(addr, len);
	}
	if (m->coh != NULL) {
		coh_writeback(m->coh, addr, off, len);
	}
}

/* pmap_writeback -- see map.h */
void
pmap_writeback(const struct pmap *m, const void *addr, size_t len)
{
	if (m->coh != NULL && len != 0) {
		coh_writeback(m->coh, addr, file_off(m, addr, len), len);
	}
}

/* pmap_writeback_lines -- see map.h */
void
pmap_writeback_lines(const struct pmap *m, const void *addr, size_t len)
{
	if (m->coh != NULL && len != 0) {
		coh_writeback_lines(m->coh, addr, file_off(m, addr, len), len);
	}
}

/* pmap_fresh -- see map.h */
void
pmap_fresh(const struct pmap *m, const void *addr, size_t len)
{
	if (m->coh != NULL && len != 0) {
		coh_drop(m->coh, addr, file_off(m, addr, len), len);
	}
}

/* pmap_fresh_many -- see map.h */
void
pmap_fresh_many(const struct pmap *m, size_t n, const void *const addr[],
    const size_t len[])
{
	if (m->coh == NULL) {
		return;
	}
	for (size_t i = 0; i < n; i++) {
		coh_drop_lines(m->coh, addr[i], file_off(m, addr[i], len[i]),
		    len[i]);
	}
	coh_drop_fence(m->coh);
}

/* pmap_fresh_lines -- see map.h */
void
pmap_fresh_lines(const struct pmap *m, const void *addr, size_t len)
{
	if (m->coh != NULL && len != 0) {
		coh_drop_lines(m->coh, addr, file_off(m, addr, len), len);
	}
}

/* pmap_coherent -- see map.h */
bool
pmap_coherent(const struct pmap *m)
{
	return m->coh == NULL;
}

/* pmap_populate -- see map.h */
int
pmap_populate(const struct pmap *m, uint64_t off, uint64_t len)
{
	int advice = m->writable ? MADV_POPULATE_WRITE : MADV_POPULATE_READ;

	cxlp_assert(off <= m->len && len <= m->len - off);
	if (len != 0 && madvise((char *)m->addr + off, len, advice) != 0) {
		return cxlp_fail(-errno, "madvise populate: %s",
		    strerror(errno));
	}
	return 0;
}

/* pmap_prefault -- see map.h */
int
pmap_prefault(const struct pmap *m)
{
	return pmap_populate(m, 0, m->len);
}

/* pmap_file_create -- see map.h */
int
pmap_file_create(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0660);
	int rc = 0;

	if (fd < 0) {
		return cxlp_fail(-errno, "%s: cannot create: %s", path,
		    strerror(errno));
	}
	if (ftruncate(fd, (off_t)size) != 0) {
		rc = cxlp_fail(-errno, "%s: cannot size to %llu bytes: %s",
		    path, (unsigned long long)size, strerror(errno));
		unlink(path);
	}
	close(fd);
	return rc;
}

/* the bracketed word of shmem_enabled ("never", "deny", ...), or "" */
static void
shmem_enabled(char *out, size_t n)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled",
	    "re");
	char line[128], *a, *b;

	out[0] = '\0';
	if (f == NULL) {
		return;
	}
	if (fgets(line, sizeof(line), f) != NULL &&
	    (a = strchr(line, '[')) != NULL &&
	    (b = strchr(a, ']')) != NULL) {
		*b = '\0';
		snprintf(out, n, "%s", a + 1);
	}
	fclose(f);
}

/* the value of huge= in a mount's super options; "never" when absent */
static void
huge_opt(const char *opts, char *out, size_t n)
{
	const char *h = opts;

	snprintf(out, n, "never");
	while ((h = strstr(h, "huge=")) != NULL) {
		if (h == opts || h[-1] == ',') {
			snprintf(out, n, "%.*s", (int)strcspn(h + 5, ","),
			    h + 5);
			return;
		}
		h += 5;
	}
}

/* the huge= option of the tmpfs mount of dev, from /proc/self/mountinfo
 * ("36 35 0:38 / /dev/shm rw - tmpfs tmpfs rw,huge=advise") */
static void
tmpfs_huge(dev_t dev, char *out, size_t n)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *sep, opts[512];
	unsigned maj, min;
	size_t cap = 0;

	snprintf(out, n, "never");
	if (f == NULL) {
		return;
	}
	while (getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%*u %*u %u:%u", &maj, &min) == 2 &&
		    makedev(maj, min) == dev &&
		    (sep = strstr(line, " - ")) != NULL &&
		    sscanf(sep + 3, "%*s %*s %511s", opts) == 1) {
			huge_opt(opts, out, n);
			break;
		}
	}
	free(line);
	fclose(f);
}

/* what the media and its settings allow, before looking at the range */
static enum pmap_huge
huge_policy(struct pmap *m)
{
	char *why = m->huge_setting, shm[32], mnt[32];
	size_t n = sizeof(m->huge_setting);

	if (m->devdax) {
		snprintf(why, n, "devdax align %llu",
		    (unsigned long long)m->align);
		return m->align >= HUGE_PAGE ? PMAP_HUGE_DEVDAX :
		    PMAP_HUGE_NONE;
	}
	if (!m->fence_only) {
		snprintf(why, n, "not tmpfs");
		return PMAP_HUGE_NONE;
	}
	shmem_enabled(shm, sizeof(shm));
	if (strcmp(shm, "deny") == 0 || strcmp(shm, "force") == 0) {
		snprintf(why, n, "shmem_enabled=%s", shm);
		return shm[0] == 'f' ? PMAP_HUGE_ADVISED : PMAP_HUGE_NONE;
	}
	tmpfs_huge(m->dev, mnt, sizeof(mnt));
	snprintf(why, n, "tmpfs huge=%s", mnt);
	return strcmp(mnt, "never") == 0 ? PMAP_HUGE_NONE : PMAP_HUGE_ADVISED;
}

/* give [off, off + len) of the file MADV_HUGEPAGE; the choice */
static enum pmap_huge
advise_range(struct pmap *m, uint64_t off, uint64_t len)
{
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	uint64_t lo, hi;
	size_t n = strlen(m->huge_setting);
	char *why = m->huge_setting + n;

	n = sizeof(m->huge_setting) - n;
	off = off > m->off ? off : m->off;
	end = end < m->off + m->len ? end : m->off + m->len;
	lo = (off + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	hi = end & ~(HUGE_PAGE - 1);
	if (((uintptr_t)m->addr - m->off) % HUGE_PAGE != 0) {
		snprintf(why, n, ", mapping not 2 MiB-aligned");
		return PMAP_HUGE_NONE;
	}
	if (lo >= hi) {
		snprintf(why, n, ", no whole 2 MiB page in the range");
		return PMAP_HUGE_NONE;
	}
	if (madvise((char *)m->addr + (lo - m->off), hi - lo,
	    MADV_HUGEPAGE) != 0) {
		snprintf(why, n, ", madvise: %s", strerror(errno));
		return PMAP_HUGE_NONE;
	}
	return PMAP_HUGE_ADVISED;
}

/* pmap_advise_huge -- see map.h */
enum pmap_huge
pmap_advise_huge(struct pmap *m, uint64_t off, uint64_t len)
{
	static int logged;

	m->huge = huge_policy(m);
	if (m->huge == PMAP_HUGE_ADVISED) {
		m->huge = advise_range(m, off, len);
	}
	if (!__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED)) {
		log_info("pool mapping, %llu bytes at offset %llu: %s (%s)",
		    (unsigned long long)len, (unsigned long long)off,
		    m->huge == PMAP_HUGE_NONE ? "4 KiB pages" :
		    m->huge == PMAP_HUGE_DEVDAX ? "2 MiB pages, devdax" :
		    "2 MiB pages advised", m->huge_setting);
	}
	return m->huge;
}

/* pmap_huge -- see map.h */
enum pmap_huge
pmap_huge(const struct pmap *m)
{
	return m->huge;
}

/* pmap_huge_setting -- see map.h */
const char *
pmap_huge_setting(const struct pmap *m)
{
	return m->huge_setting;
}
