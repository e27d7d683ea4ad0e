/*
 * direct.c -- direct reads: unpinned retrieve and exists answered from the
 * pool's KV index in shared memory, without a round trip to the
 * metaserver.
 *
 * Why this shape: a LOOKUP costs an nng round trip (~100 us, mostly
 * thread hand-offs) and metaserver CPU for every key, while the index it
 * consults sits in the same pool file the handler already maps regions
 * of. So at connect the handler maps the pool's metadata area read-only
 * (superblock, region table, index, key heap: [0, data area offset)),
 * checks the superblock, and from then on looks keys up itself with
 * kvread.c's seqlock protocol; the metaserver stays the only writer. Only
 * what needs the server's word goes to it: pinned retrieves (the pin is
 * the server's), and keys the direct read could not settle (KVREAD_ASK: a
 * write that would not finish, or values that do not add up). Anything
 * unexpected at connect (another pool behind the path, an unknown layout
 * version, a mapping failure) leaves direct reads off for this handler,
 * logged, and every lookup goes through RPC as before.
 *
 * The mapping outlives the file it maps: a pool file deleted and created
 * anew under the same path (a metaserver restarted on a fresh pool) would
 * leave direct reads answering from the old one for good. So at most every
 * RECHECK_MS a lookup stats the path, and a path that names another file
 * now turns direct reads off; so does a session the metaserver no longer
 * knows (h->session_lost, which a failed reattach sets: call.c). Lookups
 * then go to the metaserver, which answers for the pool it serves.
 *
 * A hit also sets the key's byte in the pool's access area, which the
 * handler maps writable on its own (access_map): that is how reads that
 * never reach the metaserver count in the eviction order. A handler can
 * change only that order through it (pool/evict.c note 1).
 *
 * The mapping covers the session table too; a handler can already map
 * the whole pool file (foreign regions are read through it), so this
 * opens nothing new. The handler's own config switch is
 * cxlp_config_set_direct_reads (default on).
 *
 * A first lookup would fault on each metadata page it meets (two per key
 * at first; ~10 us each under a shadow-paging hypervisor). So a walker
 * thread maps in, after connect, the pages the pool file already backs
 * (pmap_prefault_walk with backed_only: the key heap's holes stay holes).
 * It runs at normal priority: at SCHED_IDLE it would cost the
 * application nothing on a busy box, but a starved thread inside
 * madvise or a fault holds the process's mmap lock, and every mmap,
 * munmap and thread start of the application would wait for it.
 * direct_close stops it before unmapping.
 *
 * The same mapping checks versions (version.c): a lookup that finds a key
 * returns its slot and word, and cxlp_validate reads that slot's word
 * again through direct_reader. Validate does not look at the pool path
 * (no system call on its path); once a lookup has found the path
 * replaced, direct_reader says no and validate reports a change.
 *
 * Everything read through the mapping is written by the metaserver, which
 * may run on another host (DESIGN.md contract 11). On a pool of sw or
 * sim coherence the mapping is not coherent with that host's writes, so
 * what is read here (the superblock copied at open, the region records
 * of direct_page_size) is dropped first (pmap_fresh), and kvread's fresh
 * hook (kvread.c note 9) drops every slot, key record and region record
 * a lookup reads that way. On host and hw pools the hook is NULL and
 * pmap_fresh one test. The lookups themselves, and how they spare most
 * drops, are directlook.c's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "coh.h"
#include "err.h"
#include "hostslice.h"
#include "direct_int.h"
#include "region.h"
#include "kvread.h"
#include "layout.h"
#include "log.h"
#include "map.h"
#include "pool.h"

#define RECHECK_MS 200 /* how stale the pool file's identity may get */


/* The file behind the pool path now; false if it cannot be stat'ed. */
static bool
path_identity(const char *path, dev_t *dev, ino_t *ino)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		return false;
	}
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
}

/* copy and validate the superblock through a mapping of the pool head */
static int
sb_read(struct cxlp_handler *h, struct pool_sb *sb)
{
	struct pmap *head;
	char why[200];
	int rc;

	rc = pmap_open_coh(&head, h->pool_path, 0, h->align, false, h->coh);
	if (rc != 0) {
		return rc;
	}
	pmap_fresh(head, pmap_addr(head), sizeof(*sb)); /* the server's */
	memcpy(sb, pmap_addr(head), sizeof(*sb));
	rc = layout_validate(sb, pmap_file_size(head), why, sizeof(why));
	pmap_close(&head);
	if (rc != 0) {
		return cxlp_fail(rc, "%s: %s", h->pool_path, why);
	}
	if (sb->size != h->pool_size || sb->align != h->align) {
		return cxlp_fail(CXLP_E_CORRUPT, "%s: pool of %llu bytes, "
		    "align %llu; the metaserver serves %llu, align %llu",
		    h->pool_path, (unsigned long long)sb->size,
		    (unsigned long long)sb->align,
		    (unsigned long long)h->pool_size,
		    (unsigned long long)h->align);
	}
	return 0;
}

/* kvread's fresh hook (kvread.c note 9): ctx is the metadata mapping */
static void
meta_fresh(const void *ctx, const void *addr, size_t len)
{
	pmap_fresh(ctx, addr, len);
}

/* map the metadata area and attach the reader; 0 or an error */
static int
meta_map(struct cxlp_handler *h, const struct pool_sb *sb, struct direct *d)
{
	uint64_t meta_len = sb->area[POOL_AREA_DATA].off;
	const struct pool_sb *live;
	char why[200];
	int rc;

	if (meta_len == 0 || meta_len % sb->align != 0) {
		return cxlp_fail(CXLP_E_CORRUPT, "%s: data area at %llu",
		    h->pool_path, (unsigned long long)meta_len);
	}
	if ((rc = pmap_open_coh(&d->map, h->pool_path, 0, meta_len, false,
	    h->coh)) != 0) {
		return rc;
	}
	if ((rc = h_check_mapping(h, d->map)) != 0) {
		pmap_close(&d->map); /* another file's index: not read */
		return rc;
	}
	live = pmap_addr(d->map);
	pmap_fresh(d->map, live, sizeof(*live));
	/* the same pool as the copy we validated (not reformatted since) */
	if (memcmp(live->uuid, sb->uuid, sizeof(sb->uuid)) != 0 ||
	    live->checksum != sb->checksum) {
		return cxlp_fail(CXLP_E_CORRUPT, "%s: superblock changed "
		    "while mapping", h->pool_path);
	}
	if ((rc = kvread_init(&d->kr, sb, live, meta_len, why,
	    sizeof(why))) != 0) {
		return cxlp_fail(rc, "%s: %s", h->pool_path, why);
	}
	if (!pmap_coherent(d->map)) {
		d->kr.fresh = meta_fresh;
		d->kr.fresh_ctx = d->map;
		d->kr_nodrop = d->kr;
		d->kr_nodrop.fresh = NULL;
	}
	memcpy(&d->magic, sb->magic, sizeof(d->magic));
	memcpy(d->uuid, sb->uuid, sizeof(d->uuid));
	return 0;
}

/* This host's slice of an sw or sim pool's access area (pool/evict.c
 * note 8): the one the host table gives it, which the server filled at
 * our HELLO. None (a full table): direct reads go uncounted, said once
 * per handler. */
static bool
access_slice(struct direct *d, const struct pool_sb *sb)
{
	int i = hostslice_find(d->map, pmap_addr(d->map), coh_host_hash());

	if (i < 0) {
		log_info("direct reads are not counted by eviction: the "
		    "pool's host table gives this host no access slice "
		    "(%u hosts have one)", sb->access_hosts);
		return false;
	}
	d->access = (uint8_t *)pmap_addr(d->amap) +
	    (uint64_t)i * layout_access_stride(sb);
	d->per_host = true;
	return true;
}

/* Map the access area writable (evict.c in pool/: a hit sets the key's
 * byte, which the eviction order counts; in sw and sim, counts in this
 * host's slice). Optional: without it (a pool before layout 2.2, a
 * mapping refused, no slice) direct reads go uncounted and the order
 * sees only the server's lookups. */
static void
access_map(struct cxlp_handler *h, const struct pool_sb *sb,
    struct direct *d)
{
	const struct pool_area *a = &sb->access;

	if (!(sb->compat & POOL_COMPAT_ACCESS)) {
		log_info("direct reads are not counted by eviction: the pool "
		    "predates its access area (layout 2.2)");
		return;
	}
	if (a->count != d->kr.nslots || pmap_open_coh(&d->amap, h->pool_path,
	    a->off, a->len, true, h->coh) != 0 ||
	    h_check_mapping(h, d->amap) != 0) {
		log_err("direct reads are not counted by eviction: cannot map "
		    "the access area: %s", cxlp_errormsg());
		pmap_close(&d->amap);
		return;
	}
	if (sb->access_hosts == 0) {
		d->access = pmap_addr(d->amap);
	} else if (!access_slice(d, sb)) {
		pmap_close(&d->amap);
	}
}

static void *
walker_main(void *arg)
{
	struct direct *d = arg;

	pmap_prefault_walk(d->map, true, &d->stop);
	return NULL;
}

/* direct_open -- see region.h */
void
direct_open(struct cxlp_handler *h)
{
	struct direct *d;
	struct pool_sb sb;
	int rc;

	h->direct = NULL;
	if (!h->cfg.direct_reads) {
		return;
	}
	if ((d = calloc(1, sizeof(*d))) == NULL) {
		log_err("direct reads off: out of memory");
		return;
	}
	if (!path_identity(h->pool_path, &d->dev, &d->ino)) {
		rc = cxlp_fail(-errno, "%s: %s", h->pool_path,
		    strerror(errno));
	} else if ((rc = sb_read(h, &sb)) == 0) {
		rc = meta_map(h, &sb, d);
	}
	if (rc != 0) {
		log_err("direct reads off, lookups go through the metaserver: "
		    "%s", cxlp_errormsg());
		pmap_close(&d->map);
		free(d);
		return;
	}
	access_map(h, &sb, d);
	log_info("direct reads on: %s, %llu index slots",
	    h->pool_path, (unsigned long long)d->kr.nslots);
	d->check_ms = cxlp_now_coarse_ms() + RECHECK_MS;
	d->walking = pthread_create(&d->walker, NULL, walker_main, d) == 0;
	h->direct = d;
}

/* Turn direct reads off for good (the session is gone, or the path names
 * another pool now); lookups go to the server. */
static void
direct_invalidate(struct cxlp_handler *h, const char *why)
{
	struct direct *d = h->direct;

	if (d != NULL && !__atomic_exchange_n(&d->off, true,
	    __ATOMIC_ACQ_REL)) {
		log_info("direct reads off: %s", why);
	}
}

/* direct_off -- see direct_int.h */
bool
direct_off(struct cxlp_handler *h, struct direct *d)
{
	if (__atomic_load_n(&d->off, __ATOMIC_ACQUIRE)) {
		return true;
	}
	if (__atomic_load_n(&h->session_lost, __ATOMIC_ACQUIRE)) {
		direct_invalidate(h, "the metaserver no longer knows this "
		    "session");
		return true;
	}
	return false;
}

/* direct_usable -- see direct_int.h */
bool
direct_usable(struct cxlp_handler *h, struct direct *d)
{
	uint64_t due = __atomic_load_n(&d->check_ms, __ATOMIC_RELAXED);
	uint64_t now;
	dev_t dev;
	ino_t ino;

	if (direct_off(h, d)) {
		return false;
	}
	now = cxlp_now_coarse_ms();
	if (now < due || !__atomic_compare_exchange_n(&d->check_ms, &due,
	    now + RECHECK_MS, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		return true;
	}
	if (!path_identity(h->pool_path, &dev, &ino) || dev != d->dev ||
	    ino != d->ino) {
		direct_invalidate(h, "the pool path names another file now");
		return false;
	}
	return true;
}

/* direct_close -- see region.h */
void
direct_close(struct cxlp_handler *h)
{
	if (h->direct != NULL) {
		if (h->direct->walking) {
			__atomic_store_n(&h->direct->stop, 1,
			    __ATOMIC_RELAXED);
			pthread_join(h->direct->walker, NULL);
		}
		pmap_close(&h->direct->map);
		pmap_close(&h->direct->amap);
		free(h->direct);
		h->direct = NULL;
	}
}

/* direct_reader -- see region.h */
const struct kvread *
direct_reader(struct cxlp_handler *h)
{
	struct direct *d = h->direct;

	if (d == NULL || direct_off(h, d)) {
		return NULL;
	}
	return &d->kr;
}

/* direct_page_size -- see region.h */
uint64_t
direct_page_size(struct cxlp_handler *h, uint32_t region, uint32_t gen)
{
	const struct kvread *kr = direct_reader(h);
	const struct pool_rrec *r;
	uint64_t word, ps;

	if (kr == NULL || region >= kr->nregions) {
		return 0;
	}
	r = &kr->rtab[region];
	kvread_fresh(kr, r, sizeof(*r));
	word = __atomic_load_n(&r->word, __ATOMIC_ACQUIRE);
	ps = __atomic_load_n(&r->page_size, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	kvread_fresh(kr, &r->word, sizeof(r->word));
	if (__atomic_load_n(&r->word, __ATOMIC_RELAXED) != word ||
	    rrec_gen(word) != gen || rrec_state(word) == POOL_REGION_FREE ||
	    ps == 0 || ps > UINT32_MAX) {
		return 0;
	}
	return ps;
}

