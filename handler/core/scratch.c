/*
 * scratch.c -- the memory of one call's transient arrays and request body,
 * reused from call to call.
 *
 * A batch call of a thousand keys needs a few hundred KiB for a moment:
 * result and page arrays, the encoded request. Taken from malloc and
 * given back on every call, that much memory at the top of glibc's heap
 * crosses its trim threshold (128 KiB unless the host changed it): the
 * free hands the pages back to the kernel (brk, or madvise in a thread's
 * arena) and the next call faults them in again, with TLB shootdowns
 * across the process's threads. On the 2-core test VM a 1024-key
 * batch_store took 600-900 us of the caller's CPU that way, against
 * 110-165 us without it (bench/README.md, session 6). A library must not change the
 * host's malloc settings, so it keeps this memory itself.
 *
 * DESIGN NOTES
 * 1. A cache holds up to SCRATCH_CACHED idle scratches. A call takes one
 *    (or makes one when other threads hold them all) and gives it back
 *    when done; nested calls on one thread simply take a second one.
 * 2. Arrays are carved from one block, zeroed and 16-byte aligned. What
 *    does not fit comes from extra blocks for this call only; when the
 *    scratch comes back its block is grown to what the call used, so the
 *    next call of that size carves without malloc.
 * 3. A scratch whose block or body grew past SCRATCH_KEEP_MAX is freed,
 *    not kept: one huge batch does not hold its memory for good.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "scratch.h"

#define SCRATCH_ALIGN 16

struct sblock {
	struct sblock *next;
	max_align_t data[]; /* the carved memory follows */
};

struct scratch {
	struct scratch *next; /* on the cache's idle list */
	struct pbuf body;
	uint8_t *mem;         /* the block: cap bytes, used of them carved */
	size_t cap, used;
	struct sblock *extra; /* this call's overflow blocks */
	size_t want;          /* bytes this call carved in all */
};

/* scratch_cache_init -- an empty cache. */
void
scratch_cache_init(struct scratch_cache *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
}

static void
extra_free(struct scratch *s)
{
	while (s->extra != NULL) {
		struct sblock *b = s->extra;

		s->extra = b->next;
		free(b);
	}
}

static void
scratch_free(struct scratch *s)
{
	extra_free(s);
	pbuf_fini(&s->body);
	free(s->mem);
	free(s);
}

/* scratch_cache_fini -- free every idle scratch; none may be out. */
void
scratch_cache_fini(struct scratch_cache *c)
{
	while (c->idle != NULL) {
		struct scratch *s = c->idle;

		c->idle = s->next;
		scratch_free(s);
	}
	c->nidle = 0;
	pthread_mutex_destroy(&c->lock);
}

/* scratch_get -- an idle scratch with an empty body and nothing carved,
 * or NULL (-ENOMEM, reason set). */
struct scratch *
scratch_get(struct scratch_cache *c)
{
	struct scratch *s;

	pthread_mutex_lock(&c->lock);
	s = c->idle;
	if (s != NULL) {
		c->idle = s->next;
		c->nidle--;
	}
	pthread_mutex_unlock(&c->lock);
	if (s == NULL && (s = calloc(1, sizeof(*s))) == NULL) {
		cxlp_fail(-ENOMEM, "out of memory");
		return NULL;
	}
	s->next = NULL;
	return s;
}

/* Notes 2 and 3: make the block fit what this call carved, and say
 * whether s is small enough to keep. */
static bool
scratch_settle(struct scratch *s)
{
	bool keep = s->want <= SCRATCH_KEEP_MAX &&
	    s->body.cap <= SCRATCH_KEEP_MAX;

	if (keep && s->extra != NULL) {
		extra_free(s);
		free(s->mem);
		s->cap = 0;
		if ((s->mem = malloc(s->want)) != NULL) {
			s->cap = s->want;
		}
	}
	s->used = s->want = 0;
	pbuf_reset(&s->body);
	return keep;
}

/* scratch_put -- give s back (NULL-safe); notes 1 and 3. */
void
scratch_put(struct scratch_cache *c, struct scratch *s)
{
	if (s == NULL) {
		return;
	}
	if (scratch_settle(s)) {
		pthread_mutex_lock(&c->lock);
		if (c->nidle < SCRATCH_CACHED) {
			s->next = c->idle;
			c->idle = s;
			c->nidle++;
			s = NULL;
		}
		pthread_mutex_unlock(&c->lock);
	}
	if (s != NULL) {
		scratch_free(s);
	}
}

/* scratch_array -- n zeroed elements of size bytes, valid until s is put
 * back; NULL (-ENOMEM, reason set) if memory runs out. */
void *
scratch_array(struct scratch *s, size_t n, size_t size)
{
	size_t bytes;
	void *p;

	if (size != 0 && n > (SIZE_MAX - SCRATCH_ALIGN) / size) {
		cxlp_fail(-ENOMEM, "scratch: %zu x %zu bytes", n, size);
		return NULL;
	}
	bytes = (n * size + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
	if (bytes == 0) {
		bytes = SCRATCH_ALIGN; /* a distinct, valid pointer */
	}
	if (bytes > SIZE_MAX - s->want) {
		cxlp_fail(-ENOMEM, "scratch: %zu x %zu bytes", n, size);
		return NULL;
	}
	if (bytes <= s->cap - s->used) {
		p = s->mem + s->used;
		s->used += bytes;
	} else {
		struct sblock *b = malloc(sizeof(*b) + bytes);

		if (b == NULL) {
			cxlp_fail(-ENOMEM, "out of memory");
			return NULL;
		}
		b->next = s->extra;
		s->extra = b;
		p = b->data;
	}
	s->want += bytes;
	return memset(p, 0, bytes);
}

/* scratch_body -- the request body to encode into; empty after get. */
struct pbuf *
scratch_body(struct scratch *s)
{
	return &s->body;
}
