/*
 * sim.h -- a simulator of memory that several hosts attach without
 * hardware coherence (a CXL 2.0 switch pool), so that one machine can
 * test the software-coherence mode (DESIGN.md contract 11). A test tool:
 * only a pool formatted for it ("sim" coherence) may ever be run through
 * it.
 *
 * The model. The pool file is the device. Each simulated host (named by
 * CXLP_SIM_HOST in a process's environment; "0" without it) sees the
 * device through a cache of its own: a file beside the pool that holds a
 * copy of every line, shared by all processes of that host (processes of
 * one host are coherent with each other, as on real hardware), plus a
 * twin of the copy that says what the host last loaded from the device.
 * - A store lands in the host's cache only.
 * - sim_writeback of a line copies it to the device only if it differs
 *   from its twin (it is dirty), then the twin takes it: so two hosts that
 *   write different bytes of one line each write back the whole line and
 *   one host's write is lost, as false sharing loses it on the hardware.
 * - sim_drop of a line writes it back if dirty, then reloads it (cache
 *   and twin) from the device.
 * - A load sees the host's cache, stale or not, until the line is
 *   dropped; an atomic acts on the host's cache only, so a compare-and-
 *   swap that two hosts both win shows as a lost write on the device.
 * The cache starts as a copy of the whole device, taken when the host's
 * first process opens it: stricter than hardware, where a line never
 * cached reads fresh; a reader that forgets a drop reads stale bytes
 * however cold the line. What the model leaves out: ordering on the link
 * (a write-back is complete when sim_writeback returns, as after the
 * fence the real one needs), and capacity evictions (hardware may write a
 * dirty line back at any time; here only an explicit write-back or drop
 * does), and a line written with the bytes it held (or changed and
 * changed back), which the model takes for clean where hardware would
 * write it back and could so clobber another host's bytes of the line:
 * a test of false sharing must change the bytes it writes.
 * CXLP_SIM_RECORD=<file> records every line a process writes back to the
 * device (sim.c note 5): a test tool.
 */
#ifndef CXLP_POOL_SIM_H
#define CXLP_POOL_SIM_H

#include <stddef.h>
#include <stdint.h>

#define SIM_HOST_MAX 32 /* bytes of a host name, NUL included */

struct sim;

/* sim_host -- this process's simulated host: CXLP_SIM_HOST, or "0". A
 * name of [A-Za-z0-9_-], 1 to SIM_HOST_MAX - 1 bytes; anything else is
 * refused by sim_open. Not owned by the caller. */
const char *sim_host(void);

/* sim_open -- attach host (NULL: sim_host()) to the device at dev_path, a
 * plain file: open the host's cache and twin beside it, making them as
 * copies of the device if the host has none yet (atomically: a half-made
 * cache is never used). Returns 0 and *out (caller owns; sim_close), or
 * a negative error with *out == NULL and cxlp_errormsg() saying why:
 * -EINVAL for a bad host name or a device that is not a plain file,
 * else -errno. */
int sim_open(struct sim **out, const char *dev_path, const char *host);
/* sim_close -- detach; NULL-safe; sets *s = NULL. The host's cache stays
 * for its other processes and later ones. */
void sim_close(struct sim **s);

/* sim_cache_path -- the file that holds this host's view of the device,
 * to be mapped at the device's offsets instead of it. Owned by s. */
const char *sim_cache_path(const struct sim *s);
/* sim_size -- bytes of the device (and of the cache). */
uint64_t sim_size(const struct sim *s);

/* sim_writeback -- write the dirty lines of [off, off + len) of the
 * device back from this host's cache. */
void sim_writeback(struct sim *s, uint64_t off, uint64_t len);
/* sim_drop -- write back the dirty lines of [off, off + len), then reload
 * every line of it from the device. */
void sim_drop(struct sim *s, uint64_t off, uint64_t len);

/* sim_forget_hosts -- remove every host's cache of dev_path (a pool
 * formatted anew: the caches hold the old one). Returns how many hosts'
 * caches were removed, or -errno. */
int sim_forget_hosts(const char *dev_path);

#endif /* CXLP_POOL_SIM_H */
