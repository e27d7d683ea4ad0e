/*
 * poolcoh.c -- a pool's coherence mode at open and format (coh.h has the
 * modes, coh.c the mechanism): how pool.c maps a pool, which mode a
 * format records, and the refusals that go with them.
 *
 * DESIGN NOTES
 *  1. Open [poolcoh_map]: the mode is read from the device (coh_probe),
 *     the attachment made for it, the pool mapped through it, and the
 *     superblock's lines dropped before anything reads them (the owner
 *     record above all: a server of another host writes it).
 *  2. Format [poolcoh_format]: the mode asked for (AUTO: sw on a devdax
 *     device, which a switch pool's hosts may all attach; host on files)
 *     may not be the mode the target was mapped for; the mapping is then
 *     made again for the new one before a byte is written. A sim format
 *     forgets every host's cache first (they hold the old pool) and
 *     writes through this host's view, so the format itself reaches the
 *     device only by write-back, as every later write does.
 *  3. After validation [poolcoh_attach], before any table is read, the
 *     whole metadata area is dropped in sw and sim: a restarted server on
 *     a host whose cache holds an older pool reads only what is on the
 *     device. Then mode host refuses a writer of another host (contract
 *     11); a reader (pool-inspect) of another host is let in, since in
 *     host mode its mapping is the device's own bytes.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "coh.h"
#include "err.h"
#include "persist.h"
#include "pool_int.h"
#include "sim.h"

static int
map_with(struct pool *p, uint64_t len, enum pool_coh m)
{
	int rc;

	if ((rc = coh_open(&p->coh, p->path, m)) != 0) {
		return rc;
	}
	if ((rc = pmap_open_coh(&p->map, p->path, 0, len, !p->rdonly,
	    p->coh)) != 0) {
		coh_close(&p->coh);
		return rc;
	}
	p->base = pmap_addr(p->map);
	p->sb = (void *)p->base;
	pmap_fresh(p->map, p->base, POOL_SB_SIZE);
	return 0;
}

static void
unmap(struct pool *p)
{
	pmap_close(&p->map);
	coh_close(&p->coh);
	p->base = NULL;
	p->sb = NULL;
}

/* poolcoh_map -- see pool_int.h */
int
poolcoh_map(struct pool *p, uint64_t len)
{
	enum pool_coh m;
	int rc;

	if ((rc = coh_probe(p->path, &m)) != 0) {
		return rc;
	}
	return map_with(p, len, m);
}

/* poolcoh_want -- see pool_int.h */
enum pool_coh
poolcoh_want(const char *path, const struct pool_params *pp)
{
	struct stat st;

	if (pp != NULL && pp->coherence != POOL_COH_AUTO) {
		return pp->coherence;
	}
	if (pp == NULL) {
		return POOL_COH_HOST;
	}
	return stat(path, &st) == 0 && S_ISCHR(st.st_mode) ? POOL_COH_SW :
	    POOL_COH_HOST;
}

/* poolcoh_format -- see pool_int.h */
int
poolcoh_format(struct pool *p, uint64_t len, enum pool_coh m)
{
	int rc;

	if (m != POOL_COH_HOST && m != POOL_COH_HW && m != POOL_COH_SW &&
	    m != POOL_COH_SIM) {
		return cxlp_fail(-EINVAL, "%s: coherence mode %u unknown",
		    p->path, (unsigned)m);
	}
	if (p->map != NULL && coh_mode(p->coh) == m && m != POOL_COH_SIM) {
		return 0;
	}
	if (p->map != NULL) {
		len = pmap_len(p->map);
		unmap(p);
	}
	if (m == POOL_COH_SIM && (rc = sim_forget_hosts(p->path)) < 0) {
		return cxlp_fail(rc, "%s: cannot forget the simulated hosts' "
		    "caches: %s", p->path, strerror(-rc));
	}
	return map_with(p, len, m);
}

/* poolcoh_seal -- see pool_int.h */
void
poolcoh_seal(struct pool_sb *sb, enum pool_coh m)
{
	sb->coherence = (uint32_t)m;
	if (m != POOL_COH_HOST) {
		sb->incompat |= POOL_INCOMPAT_COHERENCE;
		sb->coh_host = 0;
	} else {
		sb->coh_host = coh_host_hash();
	}
}

/* poolcoh_attach -- see pool_int.h */
int
poolcoh_attach(struct pool *p)
{
	const struct pool_sb *sb = p->sb;

	pmap_fresh(p->map, p->base, sb->area[POOL_AREA_DATA].off);
	if ((enum pool_coh)sb->coherence != coh_mode(p->coh)) {
		/* coh_probe read the device's mode, validate the mapped one */
		return cxlp_fail(CXLP_E_CORRUPT, "%s: its coherence mode "
		    "changed while it was opened", p->path);
	}
	if (sb->coherence == POOL_COH_HOST && !p->rdonly &&
	    sb->coh_host != 0 && sb->coh_host != coh_host_hash()) {
		bool sim = strcmp(sim_host(), "0") != 0;

		return cxlp_fail(CXLP_E_HOST, "%s: formatted with coherence "
		    "host on another host than this one (%s%s): a host pool "
		    "serves one host. To share it between hosts, format it "
		    "again: cxlpool-metaserver --coherence sw --reformat (hw "
		    "where the device keeps hosts coherent)", p->path,
		    sim ? "simulated host " : "this machine id",
		    sim ? sim_host() : "");
	}
	return 0;
}

/* pool_coherence -- see pool.h */
enum pool_coh
pool_coherence(const struct pool *p)
{
	return (enum pool_coh)p->sb->coherence;
}

/* pool_writeback_gate -- see pool.h */
void
pool_writeback_gate(struct pool *p, bool (*may_write)(void *arg),
    void *arg)
{
	coh_set_gate(p->coh, may_write, arg);
}

/* pool_writebacks_refused -- see pool.h */
uint64_t
pool_writebacks_refused(const struct pool *p)
{
	return coh_refused(p->coh);
}

/* pool_fresh -- see pool.h */
void
pool_fresh(const struct pool *p, const void *addr, size_t len)
{
	pmap_fresh(p->map, addr, len);
}

/* pool_writeback -- see pool.h */
void
pool_writeback(const struct pool *p, const void *addr, size_t len)
{
	pmap_writeback(p->map, addr, len);
}
