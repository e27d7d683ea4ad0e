/*
 * scratch.h -- reusable memory for one call's transient arrays and
 * request body (see scratch.c).
 */
#ifndef CXLP_SCRATCH_H
#define CXLP_SCRATCH_H

#include <pthread.h>
#include <stddef.h>

#include "proto.h"

#define SCRATCH_CACHED 8            /* idle scratches a cache keeps */
#define SCRATCH_KEEP_MAX (4u << 20) /* bytes a kept scratch may hold */

struct scratch;

struct scratch_cache {
	pthread_mutex_t lock;
	struct scratch *idle;
	unsigned nidle;
};

void scratch_cache_init(struct scratch_cache *c);
void scratch_cache_fini(struct scratch_cache *c);

struct scratch *scratch_get(struct scratch_cache *c);
void scratch_put(struct scratch_cache *c, struct scratch *s);
void *scratch_array(struct scratch *s, size_t n, size_t size);
struct pbuf *scratch_body(struct scratch *s);

#endif
