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
 *
 * An sw or sim pool holds one slice of counters per host instead
 * (pool/evict.c note 8), which only grow: there a slot counts as
 * referenced when some host's counter is not 0 (read at least once
 * since format), since what the hand saw last is in the metaserver's
 * memory. Those lines are read through this host's view of the pool,
 * dropped first, as another host wrote them.
 */
#include <string.h>

#include "coh.h"
#include "err.h"
#include "inspect.h"
#include "layout.h"
#include "map.h"

/* the superblock of the pool at path (align: the pool's), validated, read
 * through c with its lines dropped first (the host table changes) */
static int
sb_read(const char *path, uint64_t align, struct coh *c, struct pool_sb *sb)
{
	struct pmap *head;
	char why[200];
	int rc = pmap_open_coh(&head, path, 0, align, false, c);

	if (rc != 0) {
		return rc;
	}
	pmap_fresh(head, pmap_addr(head), sizeof(*sb));
	memcpy(sb, pmap_addr(head), sizeof(*sb));
	rc = layout_validate(sb, pmap_file_size(head), why, sizeof(why));
	pmap_close(&head);
	return rc == 0 ? 0 : cxlp_fail(rc, "%s: %s", path, why);
}

/* slots [0, count) with a nonzero byte in any of the slices the host
 * table gives a host (sw, sim), or in the one shared slice */
static uint64_t
count_referenced(const struct pool_sb *sb, const struct pmap *m,
    const uint8_t *bytes, uint32_t *hosts)
{
	uint64_t stride = layout_access_stride(sb), n = 0;
	bool used[POOL_HOSTS_MAX] = { false };

	*hosts = 0;
	for (uint32_t h = 0; h < sb->access_hosts; h++) {
		if ((used[h] = sb->hosts[h] != 0)) {
			pmap_fresh(m, bytes + h * stride, sb->access.count);
			(*hosts)++;
		}
	}
	for (uint64_t i = 0; i < sb->access.count; i++) {
		bool ref = sb->access_hosts == 0 &&
		    __atomic_load_n(&bytes[i], __ATOMIC_RELAXED) != 0;

		for (uint32_t h = 0; !ref && h < sb->access_hosts; h++) {
			ref = used[h] && __atomic_load_n(&bytes[h * stride + i],
			    __ATOMIC_RELAXED) != 0;
		}
		n += ref;
	}
	return n;
}

/* inspect_access -- see inspect.h */
int
inspect_access(const char *path, uint64_t align, struct inspect_access *a)
{
	const struct pool_area *ar;
	struct coh *c = NULL;
	enum pool_coh mode;
	struct pool_sb sb;
	struct pmap *m;
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = coh_probe(path, &mode)) != 0 ||
	    (rc = coh_open(&c, path, mode)) != 0) {
		return rc;
	}
	if ((rc = sb_read(path, align, c, &sb)) != 0) {
		coh_close(&c);
		return rc;
	}
	a->major = sb.major;
	a->minor = sb.minor;
	if (!(sb.compat & POOL_COMPAT_ACCESS)) {
		coh_close(&c);
		return 0;
	}
	ar = &sb.access;
	if ((rc = pmap_open_coh(&m, path, ar->off, ar->len, false, c)) != 0) {
		coh_close(&c);
		return rc;
	}
	a->referenced = count_referenced(&sb, m, pmap_addr(m), &a->hosts);
	a->per_host = sb.access_hosts != 0;
	pmap_close(&m);
	coh_close(&c);
	a->area = true;
	a->slots = ar->count;
	a->off = ar->off;
	a->len = ar->len;
	return 0;
}
