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
 * each read drops its lines first (pmap_fresh): the superblock copied at
 * open, its magic, uuid and commit_seq around lookups, the region records
 * read here, and through kvread's fresh hook (kvread.c note 9) every slot,
 * key record and region record of a lookup and the word validate reads
 * again. On host and hw pools the hook is NULL and pmap_fresh one test.
 * Each drop costs a fence that waits for its lines, then a miss, so the
 * superblock's words are dropped together (sb_head_fresh: magic, uuid
 * and commit_seq, one call) and one drop serves every load of them up
 * to the next that must come later: a lookup pass drops them once
 * before its first chunk and once after each chunk's lookups (that drop
 * serves the chunk's check after, the next chunk's check before and the
 * pass's last commit_seq); validate's direct_intact once for both words.
 *
 * Cached first [lookup_cached]. Most of a lookup's drops are of lines
 * that have not changed since this host last loaded them (a hot key's
 * slot, key record and region record), and each costs a fenced drop and
 * a miss (about 0.3 us here, a link round trip on CXL). So on sw and sim
 * a chunk is first looked up in this host's cache as it is, with no
 * drop; then each hit's slot word alone is dropped and read again, and
 * the hit stands only if it is the word the cached lookup saw. That
 * word's 24-bit seq moves with every change of the slot, and the slot's
 * key record and region record (checked against the slot's gen) do not
 * change while it holds that word, so an unchanged word proves the
 * whole cached answer current at the moment of the fresh read. Any
 * other answer (a miss, which a stale slot can fake; an odd or changed
 * word; KVREAD_ASK) is looked up again with every drop. Assumed: no
 * slot changes 2^24 times while a stale copy of it stays cached.
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
#include "region.h"
#include "kvread.h"
#include "layout.h"
#include "log.h"
#include "map.h"
#include "pool.h"

#define RECHECK_MS 200 /* how stale the pool file's identity may get */
#define COMMIT_PASSES 4 /* batch passes that may meet a group's commit */

struct direct {
	struct pmap *map;  /* [0, meta_len) of the pool, read-only */
	struct pmap *amap; /* the access area, writable; NULL: none */
	uint8_t *access;   /* one reference byte per index slot, or NULL;
	                    * in sw and sim this host's slice of counters */
	bool per_host;     /* access is a slice: a hit counts, written back
	                    * (pool/evict.c note 8) */
	struct kvread kr;  /* views into map */
	struct kvread kr_nodrop; /* the same, its fresh hook NULL: for reads
	                          * of lines just dropped (note above) */
	uint64_t magic;    /* the superblock's first 8 bytes when valid */
	uint64_t uuid[2];  /* its uuid, new at every format */
	dev_t dev;         /* the pool file mapped */
	ino_t ino;
	uint64_t check_ms; /* atomic: next identity check, monotonic ms */
	bool off;          /* atomic: turned off after open */
	pthread_t walker;  /* prefaults map; valid if walking */
	bool walking;
	int stop;          /* atomic: end the walk */
};

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

/* a hit on slot: set its reference byte unless it is set (a store only
 * when it changes something, so readers do not bounce the line); in sw
 * and sim count it in this host's slice and write the line back */
static inline void
access_touch(const struct direct *d, uint64_t slot)
{
	if (d->access == NULL || slot >= d->kr.nslots) {
		return;
	}
	if (d->per_host) {
		hostslice_count(d->amap, d->access, slot);
	} else if (__atomic_load_n(&d->access[slot], __ATOMIC_RELAXED) == 0) {
		__atomic_store_n(&d->access[slot], 1, __ATOMIC_RELAXED);
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

/* Direct reads turned off, for good: by a path that named another file,
 * or now by a session the metaserver no longer knows. */
static bool
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

/* Still the pool we mapped? Looks at the path at most every RECHECK_MS
 * (one thread of those that find the check due does it). */
static bool
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

/* Drop the superblock's head, [magic, commit_seq]: the magic, uuid and
 * commit_seq words a lookup or a validate checks (5 lines), in one
 * cline_drop, so one fence for the three. Each load of them that
 * follows reads what the device held after this drop, so one drop
 * serves every such load up to the next read that must come later
 * than something (cost: each drop is a fence that waits for the
 * lines, then a miss; separate drops of the three words cost three). */
static void
sb_head_fresh(const struct direct *d)
{
	const struct pool_sb *sb = pmap_addr(d->map);

	kvread_fresh(&d->kr, sb, offsetof(struct pool_sb, commit_seq) +
	    sizeof(sb->commit_seq));
}

/* the pool is still the one formatted when we mapped it (a pool being
 * reformatted in place clears its magic first); the caller dropped the
 * line (sb_head_fresh) */
static bool
magic_intact(const struct direct *d)
{
	const uint64_t *magic = pmap_addr(d->map);

	return __atomic_load_n(magic, __ATOMIC_ACQUIRE) == d->magic;
}

/* the superblock's head (sb_head_fresh) and the words of slots
 * slot[0..n), n <= KVREAD_BATCH, dropped with one fence */
static void
head_and_words_fresh(const struct direct *d, const uint64_t slot[],
    size_t n)
{
	const struct pool_sb *sb = pmap_addr(d->map);
	const void *addr[KVREAD_BATCH + 1];
	size_t len[KVREAD_BATCH + 1];

	addr[0] = sb;
	len[0] = offsetof(struct pool_sb, commit_seq) + sizeof(sb->commit_seq);
	for (size_t i = 0; i < n; i++) {
		addr[i + 1] = &d->kr.slots[slot[i]].word;
		len[i + 1] = sizeof(uint64_t);
	}
	pmap_fresh_many(d->map, n + 1, addr, len);
}

/* kvread_lookup_batch of keys[0..n) on a mapping that needs drops:
 * from this host's cache first, each hit then proven by a fresh read of
 * its slot word, the rest looked up again with drops (note above). The
 * hits' words are dropped with the superblock's head, after every cached
 * lookup: true if nothing was looked up after that drop, which then
 * serves the chunk's check after (direct_chunk) */
static bool
lookup_cached(const struct direct *d, size_t n, const void *const keys[],
    const size_t key_lens[], struct kvread_loc l[], int rc[])
{
	uint64_t slot[KVREAD_BATCH];
	size_t hits = 0;
	bool again = false;

	kvread_lookup_batch(&d->kr_nodrop, n, keys, key_lens, l, rc);
	for (size_t i = 0; i < n; i++) {
		if (rc[i] == 0) {
			slot[hits++] = l[i].slot;
		}
	}
	head_and_words_fresh(d, slot, hits);
	for (size_t i = 0; i < n; i++) {
		if (rc[i] == 0 &&
		    kvread_word(&d->kr_nodrop, l[i].slot) == l[i].word) {
			continue;
		}
		rc[i] = kvread_lookup(&d->kr, keys[i], key_lens[i], &l[i]);
		again = true;
	}
	return !again;
}

/* res and ask (and vers, unless NULL) of keys[0..n), n <= KVREAD_BATCH,
 * from the index: answers are kept only if the magic held before and
 * after the lookups. *intact is the check before (the previous chunk's
 * check after, or the pass's first), and is set to the check after:
 * nothing is read between one chunk's check after and the next's
 * before, so one load serves both. The drop before the check after
 * also covers commit_seq (sb_head_fresh), which direct_pass reads next
 * if this was its last chunk. */
static void
direct_chunk(struct direct *d, size_t n, const void *const keys[],
    const size_t key_lens[], struct proto_result res[], bool ask[],
    cxlp_version_t vers[], bool *intact_io)
{
	struct kvread_loc l[KVREAD_BATCH];
	int rc[KVREAD_BATCH];
	bool intact = *intact_io;

	bool dropped = false;

	if (intact && d->kr.fresh != NULL) {
		dropped = lookup_cached(d, n, keys, key_lens, l, rc);
	} else if (intact) {
		kvread_lookup_batch(&d->kr, n, keys, key_lens, l, rc);
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE); /* the lookups first */
	if (!dropped) {
		sb_head_fresh(d);
	}
	intact = intact && magic_intact(d);
	*intact_io = intact;
	for (size_t i = 0; i < n; i++) {
		ask[i] = !intact || rc[i] == KVREAD_ASK;
		if (ask[i]) {
			continue;
		}
		memset(&res[i], 0, sizeof(res[i]));
		res[i].status = rc[i];
		if (rc[i] == 0) {
			access_touch(d, l[i].slot);
			res[i].loc = (struct proto_loc){ .region = l[i].region,
			    .gen = l[i].gen, .region_off = l[i].region_off,
			    .region_len = l[i].region_len, .off = l[i].off,
			    .len = l[i].len };
			if (vers != NULL) { /* version_hits makes it a token */
				vers[i].opaque[0] = l[i].word;
				vers[i].opaque[1] = l[i].slot;
			}
		}
	}
}

/* the pool's commit_seq (pool_commit_begin), acquire: even between the
 * commits of request groups; the caller dropped the line
 * (sb_head_fresh) */
static uint64_t
commit_seq(const struct direct *d)
{
	const struct pool_sb *sb = pmap_addr(d->map);

	return __atomic_load_n(&sb->commit_seq, __ATOMIC_ACQUIRE);
}

/* One pass over keys[0..n); true if no request group's commit ran
 * during it (commit_seq even and unchanged around it), so that the
 * answers hold none or all of each group's keys: a commit's keys turn
 * visible one by one after its commit point (pool/kv.c note 2), and a
 * pass that met that would hold part of them. */
static bool
direct_pass(struct direct *d, size_t n, const void *const keys[],
    const size_t key_lens[], struct proto_result res[], bool ask[],
    cxlp_version_t vers[])
{
	uint64_t seq;
	bool intact;

	/* no drop: a stale copy of commit_seq and magic, from before the
	 * pass, proves as much as a fresh one once the check after the
	 * lookups (dropped) finds them unchanged: no commit and no format
	 * ran from the stale copy's time to then; a changed one fails the
	 * pass, which is tried again from the line that drop loaded */
	seq = commit_seq(d);
	intact = magic_intact(d);
	for (size_t i = 0; i < n; i += KVREAD_BATCH) {
		size_t k = n - i < KVREAD_BATCH ? n - i : KVREAD_BATCH;

		direct_chunk(d, k, keys + i, key_lens + i, res + i, ask + i,
		    vers == NULL ? NULL : vers + i, &intact);
	}
	/* no drop: the last chunk's drop came after all its lookups
	 * (direct_chunk) and covered commit_seq, and nothing read since
	 * needs to come before this load */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return (seq & 1u) == 0 && commit_seq(d) == seq;
}

/* direct_lookup_batch -- see region.h. A batch that keeps meeting
 * commits, or that the index could not answer whole, is asked of the
 * metaserver whole: its LOOKUP runs under the lock that commits take,
 * and a mix of both answers could hold half a group. */
size_t
direct_lookup_batch(struct cxlp_handler *h, size_t n,
    const void *const keys[], const size_t key_lens[],
    struct proto_result res[], bool ask[], cxlp_version_t vers[])
{
	struct direct *d = h->direct;
	size_t nask = 0;
	bool whole = false;

	for (unsigned pass = 0; d != NULL && direct_usable(h, d) && !whole &&
	    pass < COMMIT_PASSES; pass++) {
		whole = direct_pass(d, n, keys, key_lens, res, ask, vers);
	}
	for (size_t i = 0; whole && i < n; i++) {
		nask += ask[i];
	}
	if (!whole || (nask > 0 && n > 1)) {
		for (size_t i = 0; i < n; i++) {
			ask[i] = true;
		}
		return n;
	}
	return nask;
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

/* direct_intact -- see region.h */
bool
direct_intact(struct cxlp_handler *h, bool drop)
{
	const struct direct *d = h->direct;
	const struct pool_sb *sb;

	if (d == NULL) {
		return false;
	}
	if (drop) {
		sb_head_fresh(d); /* magic and uuid: one drop, one fence */
	}
	if (!magic_intact(d)) {
		return false;
	}
	sb = pmap_addr(d->map);
	return __atomic_load_n((const uint64_t *)(const void *)sb->uuid,
	    __ATOMIC_RELAXED) == d->uuid[0] &&
	    __atomic_load_n((const uint64_t *)(const void *)sb->uuid + 1,
	    __ATOMIC_RELAXED) == d->uuid[1];
}

/* direct_fresh_words -- see region.h */
const struct kvread *
direct_fresh_words(struct cxlp_handler *h, const uint64_t slot[], size_t n)
{
	const struct direct *d = h->direct;

	if (d == NULL || d->kr.fresh == NULL) {
		return NULL;
	}
	head_and_words_fresh(d, slot, n);
	return &d->kr_nodrop;
}
