/*
 * direct_int.h -- direct reads' private state, shared by direct.c (the
 * mapping: open, close, the identity checks, the access area) and
 * directlook.c (the lookups and their drops).
 */
#ifndef CXLP_HANDLER_REGION_DIRECT_INT_H
#define CXLP_HANDLER_REGION_DIRECT_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "handler_int.h"
#include "hostslice.h"
#include "kvread.h"

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

/* direct_off -- direct reads turned off, for good: by a path that named
 * another file, or now by a session the metaserver no longer knows. */
bool direct_off(struct cxlp_handler *h, struct direct *d);
/* direct_usable -- still the pool we mapped? Looks at the path at most
 * every RECHECK_MS (one thread of those that find the check due does
 * it). */
bool direct_usable(struct cxlp_handler *h, struct direct *d);

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

#endif /* CXLP_HANDLER_REGION_DIRECT_INT_H */
