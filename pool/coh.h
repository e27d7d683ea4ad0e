/*
 * coh.h -- which coherence a pool assumes of the hosts that attach it,
 * and the attachment through which a process writes back and drops the
 * lines it shares with other hosts (DESIGN.md, contract 11). coh.c has
 * the rules.
 *
 * A process holds one struct coh per pool it maps (the metaserver's pool,
 * a handler's pool, pool-inspect's); every mapping of that pool is made
 * through it (map.h: pmap_open_coh), so a mapping knows how to publish
 * (pmap_persist writes back in sw and sim) and how to read what another
 * host wrote (pmap_fresh drops first in sw and sim). In host and hw both
 * are what they were before the modes existed: one branch each.
 */
#ifndef CXLP_POOL_COH_H
#define CXLP_POOL_COH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The coherence a pool was formatted for (pool_sb.coherence). */
enum pool_coh {
	POOL_COH_HOST = 0, /* one host (one coherence domain): another
	                    * host's server or handler is refused */
	POOL_COH_HW = 1,   /* several hosts, the device keeps them coherent */
	POOL_COH_SW = 2,   /* several hosts, software writes back and drops */
	POOL_COH_SIM = 3,  /* sw, each host seen through the simulator
	                    * (sim.h); plain files only, a test tool */
	POOL_COH_AUTO = 255, /* a format's request only: sw on a devdax
	                      * device, host elsewhere */
};

/* pool_coh_name -- "host", "hw", "sw", "sim" ("auto"; "?" otherwise). */
const char *pool_coh_name(enum pool_coh m);
/* pool_coh_parse -- the mode named s (pool_coh_name's names). Returns 0
 * and *out, or -EINVAL with cxlp_errormsg() listing the names. */
int pool_coh_parse(const char *s, enum pool_coh *out);
/* pool_coh_multi -- m lets several hosts attach (hw, sw, sim). */
bool pool_coh_multi(enum pool_coh m);

/* coh_host_hash -- who "this host" is for a pool of mode host: a hash of
 * /etc/machine-id (the boot id where there is none), and of CXLP_SIM_HOST
 * when it names a host other than "0", so that simulated hosts differ.
 * Never 0. Stable across reboots, unlike the boot id. */
uint64_t coh_host_hash(void);

struct coh;

/* coh_open -- attach this process to the pool file or device at path
 * for mode m (not AUTO): sw checks that this CPU can write back and drop
 * lines (cline.h), sim opens this host's view of path (sim.h; path must
 * be a plain file). Returns 0 and *out (caller owns; coh_close), or a
 * negative error with *out == NULL and cxlp_errormsg() saying why. */
int coh_open(struct coh **out, const char *path, enum pool_coh m);
/* coh_close -- detach; NULL-safe; sets *c = NULL. Every mapping made
 * through c must be closed first. */
void coh_close(struct coh **c);

/* coh_probe -- the mode the pool at path was formatted for, read from
 * the device itself (a plain file's bytes, or a devdax device's first
 * page with its lines dropped first), not from any host's cache: the
 * first thing a process reads, before it knows how to read the rest.
 * A blank head or a pool of a layout before the modes reads as host.
 * Returns 0 and *out, or a negative error with cxlp_errormsg(). */
int coh_probe(const char *path, enum pool_coh *out);
/* coh_probe_host -- coh_probe, and *host = the superblock's coh_host (the
 * one host a host pool serves; 0: any, a pool before the modes). */
int coh_probe_host(const char *path, enum pool_coh *out, uint64_t *host);

enum pool_coh coh_mode(const struct coh *c);
/* coh_map_path -- the file a mapping of path is made from: path, or in
 * sim this host's cache of it (sim_cache_path). Owned by c (or path). */
const char *coh_map_path(const struct coh *c, const char *path);

/* coh_writeback -- [addr, addr + len), which is [off, off + len) of the
 * pool, leaves this host: in sw every line is written back (cline.h), in
 * sim this host's dirty lines are copied to the device; else nothing. */
void coh_writeback(struct coh *c, const void *addr, uint64_t off,
    size_t len);
/* coh_writeback_lines -- coh_writeback whose completion nobody waits
 * for (sw: cline_writeback_unfenced; sim: as coh_writeback), for
 * advisory bytes only. */
void coh_writeback_lines(struct coh *c, const void *addr, uint64_t off,
    size_t len);
/* coh_set_gate -- from now on, coh_writeback in sw and sim first asks
 * may_write(arg) (a metaserver's term still holds: elect_may_write) and,
 * if false, writes nothing back (coh.c note 6). NULL: no gate. Set by
 * the metaserver (pool_writeback_gate) once its pool is open. */
void coh_set_gate(struct coh *c, bool (*may_write)(void *arg), void *arg);
/* coh_refused -- write-backs the gate refused so far (NULL-safe: 0). */
uint64_t coh_refused(const struct coh *c);

/* coh_drop -- the next loads of [addr, addr + len) (pool offset off) read
 * the device: in sw the lines are written back and dropped, in sim this
 * host's lines are reloaded from the device (dirty ones written back
 * first); else nothing. */
void coh_drop(struct coh *c, const void *addr, uint64_t off, size_t len);
/* coh_drop_lines, coh_drop_fence -- coh_drop in two steps, for several
 * ranges and one fence (sw: cline_drop_unfenced, cline_drop_fence; sim:
 * each range dropped whole by the first). */
void coh_drop_lines(struct coh *c, const void *addr, uint64_t off,
    size_t len);
void coh_drop_fence(struct coh *c);

#endif /* CXLP_POOL_COH_H */
