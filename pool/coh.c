/*
 * coh.c -- coherence modes and the per-process attachment that carries
 * them out (coh.h).
 *
 * DESIGN NOTES
 *  1. Where the mode lives. In the superblock (pool_sb.coherence, layout
 *     2.5), with POOL_INCOMPAT_COHERENCE set for every mode but host, so
 *     that a library older than the modes refuses a pool it would read
 *     wrong (it would trust its caches). A process learns the mode before
 *     it maps anything through a cache [coh_probe]: from the device's own
 *     bytes, which in sim mode no host's cache stands in front of, and on
 *     devdax after dropping the first page's lines.
 *  2. One branch in host and hw. coh_writeback and coh_drop switch on the
 *     mode; map.c calls them only when pmap_open_coh was given an
 *     attachment of sw or sim, so a host or hw mapping pays a test of one
 *     pointer (pmap_persist, pmap_fresh).
 *  3. sw pays per line: cline_writeback (clwb or its substitutes, then a
 *     fence) for a publish, cline_drop for a read of another host's lines.
 *     A CPU with neither (CLINE_NONE) cannot keep the mode's promise, so
 *     coh_open refuses it rather than running incoherent.
 *  4. sim keeps one struct sim per attachment: every mapping of the pool
 *     the process makes is of sim_cache_path, at the device's offsets, so
 *     offsets translate one to one (pool offset == cache offset).
 *  5. Host identity [coh_host_hash] for mode host: the machine id, which
 *     survives the reboots a disk-file pool survives, plus the simulated
 *     host's name, so that the simulator's hosts are told apart by the
 *     same check that tells real ones apart.
 *  6. The write-back gate [coh_set_gate, coh_writeback; set through
 *     pool_writeback_gate once the pool is open]: an elected
 *     metaserver checks its term before each write batch (standby.c note
 *     3), but a process paused inside a batch (SIGSTOP, a VM pause) wakes
 *     past that check with the rest of the batch to store. Its stores
 *     land in its host's cache; the gate asks the term again before each
 *     write-back and, once it is over, writes nothing back, so in sim
 *     they never reach the device (tests/multihost/test_standby.c
 *     proves it by the simulator's record). On hardware in sw mode the
 *     explicit write-back is skipped likewise, but the CPU may still
 *     evict such a dirty line by itself: what is left there is the
 *     stores of a batch a pause cut through, not any write made after
 *     the pause (docs/standby.md, Fencing). Drops are not gated: a drop
 *     writes back what is dirty on hardware too. host and hw have no
 *     write-back to gate.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cline.h"
#include "coh.h"
#include "err.h"
#include "sim.h"

struct coh {
	enum pool_coh mode;
	struct sim *sim; /* sim only */
	bool (*may_write)(void *arg); /* coh_set_gate; NULL: always */
	void *may_write_arg;
	_Atomic uint64_t refused; /* write-backs the gate refused */
};

static const char *const coh_names[] = {
	[POOL_COH_HOST] = "host",
	[POOL_COH_HW] = "hw",
	[POOL_COH_SW] = "sw",
	[POOL_COH_SIM] = "sim",
};

/* pool_coh_name -- see coh.h */
const char *
pool_coh_name(enum pool_coh m)
{
	if (m == POOL_COH_AUTO) {
		return "auto";
	}
	if ((unsigned)m >= sizeof(coh_names) / sizeof(coh_names[0])) {
		return "?";
	}
	return coh_names[m];
}

/* pool_coh_parse -- see coh.h */
int
pool_coh_parse(const char *s, enum pool_coh *out)
{
	for (unsigned i = 0; i < sizeof(coh_names) / sizeof(coh_names[0]);
	    i++) {
		if (strcmp(s, coh_names[i]) == 0) {
			*out = (enum pool_coh)i;
			return 0;
		}
	}
	if (strcmp(s, "auto") == 0) {
		*out = POOL_COH_AUTO;
		return 0;
	}
	return cxlp_fail(-EINVAL, "coherence '%s': not one of host, hw, sw, "
	    "sim, auto", s);
}

/* pool_coh_multi -- see coh.h */
bool
pool_coh_multi(enum pool_coh m)
{
	return m == POOL_COH_HW || m == POOL_COH_SW || m == POOL_COH_SIM;
}

static uint64_t
fnv1a(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	}
	return h;
}

static size_t
read_small(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "re");
	size_t got;

	if (f == NULL) {
		return 0;
	}
	got = fread(buf, 1, n, f);
	fclose(f);
	return got;
}

/* coh_host_hash -- see coh.h */
uint64_t
coh_host_hash(void)
{
	const char *sim = sim_host();
	uint64_t h = 0xcbf29ce484222325ull;
	char buf[64];
	size_t n = read_small("/etc/machine-id", buf, sizeof(buf));

	if (n == 0) {
		n = read_small("/proc/sys/kernel/random/boot_id", buf,
		    sizeof(buf));
	}
	h = fnv1a(h, buf, n);
	if (strcmp(sim, "0") != 0) {
		h = fnv1a(h, "/sim/", 5);
		h = fnv1a(h, sim, strlen(sim));
	}
	return h != 0 ? h : 1;
}

/* coh_open -- see coh.h */
int
coh_open(struct coh **out, const char *path, enum pool_coh m)
{
	struct coh *c;
	int rc;

	*out = NULL;
	if (m != POOL_COH_HOST && m != POOL_COH_HW && m != POOL_COH_SW &&
	    m != POOL_COH_SIM) {
		return cxlp_fail(-EINVAL, "%s: coherence mode %u unknown",
		    path, (unsigned)m);
	}
	if (m == POOL_COH_SW && cline_init() == CLINE_NONE) {
		return cxlp_fail(-ENOTSUP, "%s: coherence sw needs cache-line "
		    "write-back and drop, which this CPU does not offer to "
		    "user space", path);
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		return cxlp_fail(-ENOMEM, "%s: no memory", path);
	}
	c->mode = m;
	if (m == POOL_COH_SIM && (rc = sim_open(&c->sim, path, NULL)) != 0) {
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* coh_close -- see coh.h */
void
coh_close(struct coh **c)
{
	if (*c == NULL) {
		return;
	}
	sim_close(&(*c)->sim);
	free(*c);
	*c = NULL;
}

/* coh_mode -- see coh.h */
enum pool_coh
coh_mode(const struct coh *c)
{
	return c == NULL ? POOL_COH_HOST : c->mode;
}

/* coh_map_path -- see coh.h */
const char *
coh_map_path(const struct coh *c, const char *path)
{
	return c != NULL && c->sim != NULL ? sim_cache_path(c->sim) : path;
}

/* coh_set_gate -- see coh.h */
void
coh_set_gate(struct coh *c, bool (*may_write)(void *arg), void *arg)
{
	c->may_write_arg = arg;
	c->may_write = may_write;
}

/* coh_refused -- see coh.h */
uint64_t
coh_refused(const struct coh *c)
{
	return c == NULL ? 0 : atomic_load(&((struct coh *)c)->refused);
}

/* the gate (note 6) refuses this write-back: counted */
static bool
gate_shut(struct coh *c)
{
	if (c->may_write != NULL && c->mode != POOL_COH_HOST &&
	    c->mode != POOL_COH_HW && !c->may_write(c->may_write_arg)) {
		atomic_fetch_add(&c->refused, 1);
		return true;
	}
	return false;
}

/* coh_writeback -- see coh.h */
void
coh_writeback(struct coh *c, const void *addr, uint64_t off, size_t len)
{
	if (gate_shut(c)) {
		return;
	}
	if (c->mode == POOL_COH_SW) {
		cline_writeback(addr, len);
	} else if (c->mode == POOL_COH_SIM) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		sim_writeback(c->sim, off, len);
	}
}

/* coh_writeback_lines -- see coh.h */
void
coh_writeback_lines(struct coh *c, const void *addr, uint64_t off,
    size_t len)
{
	if (c->mode == POOL_COH_SW) {
		if (!gate_shut(c)) {
			cline_writeback_unfenced(addr, len);
		}
	} else {
		coh_writeback(c, addr, off, len);
	}
}

/* coh_drop -- see coh.h */
void
coh_drop(struct coh *c, const void *addr, uint64_t off, size_t len)
{
	if (c->mode == POOL_COH_SW) {
		cline_drop(addr, len);
	} else if (c->mode == POOL_COH_SIM) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		sim_drop(c->sim, off, len);
	}
}

/* coh_drop_lines -- see coh.h */
void
coh_drop_lines(struct coh *c, const void *addr, uint64_t off, size_t len)
{
	if (c->mode == POOL_COH_SW) {
		cline_drop_unfenced(addr, len);
	} else if (c->mode == POOL_COH_SIM) {
		coh_drop(c, addr, off, len);
	}
}

/* coh_drop_fence -- see coh.h */
void
coh_drop_fence(struct coh *c)
{
	if (c->mode == POOL_COH_SW) {
		cline_drop_fence();
	}
}
