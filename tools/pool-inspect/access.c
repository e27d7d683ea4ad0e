/*
 * access.c -- the eviction policy's state as the media holds it: whether
 * the pool has an access area (layout 2.2, POOL_COMPAT_ACCESS: one
 * advisory byte per index slot that readers set on a hit, pool/evict.c)
 * and how many of its bytes are set now, that is how many keys the CLOCK
 * hand would pass over once more.
 *
 * Why this shape: the pool's API keeps the access bytes to itself (only
 * touch and the eviction read them), so the summary reads them here from
 * the media, as a handler maps them (handler/region/direct.c): the superblock
 * from the pool's first align bytes, then the area alone, both read-only.
 * On a pool a metaserver serves the count is a snapshot that readers and
 * the hand change under it.
 */
#include <string.h>

#include "err.h"
#include "inspect.h"
#include "layout.h"
#include "map.h"

/* the superblock of the pool at path (align: the pool's), validated */
static int
sb_read(const char *path, uint64_t align, struct pool_sb *sb)
{
	struct pmap *head;
	char why[200];
	int rc = pmap_open(&head, path, 0, align, false);

	if (rc != 0) {
		return rc;
	}
	memcpy(sb, pmap_addr(head), sizeof(*sb));
	rc = layout_validate(sb, pmap_file_size(head), why, sizeof(why));
	pmap_close(&head);
	return rc == 0 ? 0 : cxlp_fail(rc, "%s: %s", path, why);
}

/* inspect_access -- see inspect.h */
int
inspect_access(const char *path, uint64_t align, struct inspect_access *a)
{
	const struct pool_area *ar;
	const uint8_t *bytes;
	struct pool_sb sb;
	struct pmap *m;
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = sb_read(path, align, &sb)) != 0) {
		return rc;
	}
	a->major = sb.major;
	a->minor = sb.minor;
	if (!(sb.compat & POOL_COMPAT_ACCESS)) {
		return 0;
	}
	ar = &sb.access;
	if ((rc = pmap_open(&m, path, ar->off, ar->len, false)) != 0) {
		return rc;
	}
	bytes = pmap_addr(m);
	for (uint64_t i = 0; i < ar->count; i++) {
		a->referenced += __atomic_load_n(&bytes[i],
		    __ATOMIC_RELAXED) != 0;
	}
	pmap_close(&m);
	a->area = true;
	a->slots = ar->count;
	a->off = ar->off;
	a->len = ar->len;
	return 0;
}
