/*
 * map.h -- mappings of a pool file or device range, through libpmem2.
 * map.c is the only file in cxlpool that includes libpmem2.h.
 *
 * Both the metaserver (whole pool, read-write) and handlers (one region at
 * a time: their own read-write, others' read-only) map through here, so the
 * granularity choice and the persist primitive are decided in one place.
 */
#ifndef CXLP_MAP_H
#define CXLP_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pmap;

/* Store granularity of a mapping: the finest the media offers. BYTE: stores
 * are durable once visible (eADR/CXL); CACHE_LINE: flush cache lines (ADR
 * DAX); PAGE: msync (tmpfs, disk files, DAX without MAP_SYNC). */
enum pmap_gran {
	PMAP_GRAN_BYTE = 0,
	PMAP_GRAN_CACHE_LINE = 1,
	PMAP_GRAN_PAGE = 2,
};

/* pmap_open -- map [off, off + len) of the file or device at path; len 0
 * maps to the end. off and len must be multiples of pmap_alignment()
 * (4 KiB on files, the device alignment on devdax). writable false maps
 * read-only: a store through it faults. Returns 0 and *out (caller owns;
 * pmap_close), or a negative error with *out == NULL. */
int pmap_open(struct pmap **out, const char *path, uint64_t off, uint64_t len,
    bool writable);
/* pmap_open_coh -- pmap_open through a coherence attachment (coh.h;
 * NULL: as pmap_open): in sim the mapping is of this host's cache of
 * path, at path's offsets; in sw and sim pmap_persist also writes the
 * range back to the device and pmap_fresh drops it. coh must outlive
 * the mapping. pmap_file_id is path's in every mode. */
struct coh;
int pmap_open_coh(struct pmap **out, const char *path, uint64_t off,
    uint64_t len, bool writable, struct coh *coh);
/* pmap_close -- unmap; NULL-safe; sets *m = NULL. */
void pmap_close(struct pmap **m);

void *pmap_addr(const struct pmap *m);
uint64_t pmap_len(const struct pmap *m);
/* pmap_file_id -- which file or device is mapped, as fstat of the
 * descriptor the mapping was made from gave it (pmap_stat_id). */
void pmap_file_id(const struct pmap *m, uint64_t *dev, uint64_t *ino);
/* pmap_stat_id -- the identity of the file st describes: st_dev and
 * st_ino, or for a character device (devdax) st_rdev and 0, since a
 * container's node for the same device is another inode. */
struct stat;
void pmap_stat_id(const struct stat *st, uint64_t *dev, uint64_t *ino);
/* pmap_file_size -- size of the whole file or device behind the mapping. */
uint64_t pmap_file_size(const struct pmap *m);
/* pmap_alignment -- offset/length granule of mappings of this file or
 * device, bytes: the system page on files, the device alignment on devdax
 * (pmem2_source_alignment). A power of two. */
uint64_t pmap_alignment(const struct pmap *m);
/* pmap_granularity -- the store granularity libpmem2 gave the mapping. We
 * require PAGE as the coarsest acceptable, so this is the media's finest. */
enum pmap_gran pmap_granularity(const struct pmap *m);
/* pmap_gran_name -- "byte", "cache-line", "page" ("unknown" otherwise). */
const char *pmap_gran_name(enum pmap_gran g);
/* pmap_is_devdax -- the mapping is of a device DAX character device. */
bool pmap_is_devdax(const struct pmap *m);
/* pmap_is_volatile -- contents do not survive a reboot (tmpfs, devdax on
 * volatile CXL memory); the pool records the boot it was formatted in. */
bool pmap_is_volatile(const struct pmap *m);

/* pmap_persist -- make [addr, addr + len) visible to other processes and
 * durable where the media is persistent. addr must lie in the mapping. */
void pmap_persist(const struct pmap *m, const void *addr, size_t len);

/* pmap_writeback -- [addr, addr + len) of m, stored by this host, goes
 * to the device, for a line that is not persisted (an advisory byte):
 * nothing unless m was opened through an sw or sim attachment. */
void pmap_writeback(const struct pmap *m, const void *addr, size_t len);
/* pmap_writeback_lines -- pmap_writeback without waiting for it (coh.h:
 * coh_writeback_lines): for a byte whose delay costs nothing. */
void pmap_writeback_lines(const struct pmap *m, const void *addr,
    size_t len);
/* pmap_fresh -- the next loads of [addr, addr + len) of m read what the
 * device holds now, not this host's cached copy: before every read of
 * bytes another host writes. Nothing unless m was opened through an sw
 * or sim attachment (then coh.h: coh_drop). */
void pmap_fresh(const struct pmap *m, const void *addr, size_t len);
/* pmap_fresh_many -- pmap_fresh of the n ranges [addr[i], addr[i] +
 * len[i]) of m, with one fence for them all. */
void pmap_fresh_many(const struct pmap *m, size_t n, const void *const addr[],
    const size_t len[]);
/* pmap_fresh_lines -- the drops of pmap_fresh of [addr, addr + len) of
 * m without their fence: the loads of the range read the device only
 * after the caller's next pmap_fresh_many (or pmap_fresh) on a mapping
 * of the same attachment, whose fence covers them. */
void pmap_fresh_lines(const struct pmap *m, const void *addr, size_t len);
/* pmap_coherent -- m needs no write-back or drop (host or hw). */
bool pmap_coherent(const struct pmap *m);

/* pmap_prefault -- populate the whole mapping's pages now, off the hot
 * path (MADV_POPULATE_WRITE / _READ). Best effort; returns 0 or -errno.
 * On a sparse file this allocates its holes. */
int pmap_prefault(const struct pmap *m);
/* pmap_populate -- the same for [off, off + len) of the mapping. */
int pmap_populate(const struct pmap *m, uint64_t off, uint64_t len);

/* pmap_prefault_walk (prefault.c) -- populate, then load one byte of each
 * system page from the top of the mapping down (a hypervisor that
 * shadows page tables maps a page for user space only on a user access).
 * With backed_only, only the pages the file already backs (mincore: in
 * the page cache), so a sparse file's holes stay holes; all of a device
 * DAX mapping, which has none. stop (may be NULL) is polled every 64
 * pages: the walk ends early once it is nonzero. */
void pmap_prefault_walk(const struct pmap *m, bool backed_only,
    const int *stop);

/* pmap_file_create -- create path as a sparse file of size bytes (fails
 * with -EEXIST if it exists). */
int pmap_file_create(const char *path, uint64_t size);

/* Page size that backs a range, as chosen by pmap_advise_huge. */
enum pmap_huge {
	PMAP_HUGE_NONE = 0,    /* base pages: huge ones not possible here */
	PMAP_HUGE_DEVDAX = 1,  /* devdax aligned to >= 2 MiB: PMD-mapped by
	                        * the device already */
	PMAP_HUGE_ADVISED = 2, /* tmpfs whose setting honours the advice:
	                        * MADV_HUGEPAGE given, so pages first touched
	                        * from now on are 2 MiB */
};

/* pmap_advise_huge -- back [off, off + len) of the file (offsets in the
 * file, inside the mapping; trimmed inward to 2 MiB) with huge pages
 * where the media and its setting allow it: devdax aligned to >= 2 MiB
 * already is; a tmpfs file is when its mount has huge=advise, always or
 * within_size, or shmem_enabled is force (and deny forbids it), given
 * MADV_HUGEPAGE. Elsewhere (disk files, tmpfs huge=never, a mapping not
 * 2 MiB-aligned) a silent no-op. Logs the choice at info level once per
 * process. Pages already touched keep their size. Returns the choice,
 * which pmap_huge() reports later; never fails. */
enum pmap_huge pmap_advise_huge(struct pmap *m, uint64_t off, uint64_t len);
/* pmap_huge -- the last pmap_advise_huge choice (PMAP_HUGE_NONE before). */
enum pmap_huge pmap_huge(const struct pmap *m);
/* pmap_huge_setting -- what decided that choice, e.g. "tmpfs huge=never",
 * "shmem_enabled=deny", "devdax align 2097152", "not tmpfs"; "" before
 * pmap_advise_huge. Owned by m. */
const char *pmap_huge_setting(const struct pmap *m);

#endif /* CXLP_MAP_H */
