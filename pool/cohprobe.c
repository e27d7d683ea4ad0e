/*
 * cohprobe.c -- the coherence mode a pool records, read from the device
 * itself before any mapping through a host's cache exists (coh.h,
 * coh_probe; coh.c note 1). Apart from coh.c because it maps the device
 * (map.c), which maps through coh.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cline.h"
#include "coh.h"
#include "err.h"
#include "layout.h"
#include "map.h"

static int
head_of_device(const char *path, struct pool_sb *sb)
{
	struct pmap *m = NULL;
	int rc = pmap_open(&m, path, 0, 0, false);

	if (rc != 0) {
		return rc;
	}
	if (pmap_len(m) < sizeof(*sb)) {
		pmap_close(&m);
		return cxlp_fail(CXLP_E_CORRUPT, "%s: smaller than a "
		    "superblock", path);
	}
	cline_drop(pmap_addr(m), sizeof(*sb));
	memcpy(sb, pmap_addr(m), sizeof(*sb));
	pmap_close(&m);
	return 0;
}

static int
head_of_file(const char *path, struct pool_sb *sb)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		return cxlp_fail(-errno, "%s: %s", path, strerror(errno));
	}
	n = pread(fd, sb, sizeof(*sb), 0);
	close(fd);
	if (n < 0) {
		return cxlp_fail(-errno, "%s: %s", path, strerror(errno));
	}
	if ((size_t)n < sizeof(*sb)) {
		memset((char *)sb + n, 0, sizeof(*sb) - (size_t)n);
	}
	return 0;
}

/* coh_probe -- see coh.h */
int
coh_probe(const char *path, enum pool_coh *out)
{
	uint64_t host;

	return coh_probe_host(path, out, &host);
}

/* coh_probe_host -- see coh.h */
int
coh_probe_host(const char *path, enum pool_coh *out, uint64_t *host)
{
	struct pool_sb *sb = malloc(sizeof(*sb));
	struct stat st;
	int rc;

	*out = POOL_COH_HOST;
	*host = 0;
	if (sb == NULL) {
		return cxlp_fail(-ENOMEM, "%s: no memory", path);
	}
	if (stat(path, &st) != 0) {
		rc = cxlp_fail(-errno, "%s: %s", path, strerror(errno));
	} else {
		rc = S_ISCHR(st.st_mode) ? head_of_device(path, sb) :
		    head_of_file(path, sb);
	}
	if (rc == 0 && memcmp(sb->magic, POOL_MAGIC, sizeof(sb->magic)) ==
	    0) {
		*out = sb->incompat & POOL_INCOMPAT_COHERENCE ?
		    (enum pool_coh)sb->coherence : POOL_COH_HOST;
		*host = sb->minor >= 5 ? sb->coh_host : 0;
		if (*out > POOL_COH_SIM) {
			rc = cxlp_fail(CXLP_E_VERSION, "%s: records coherence "
			    "mode %u, which this build does not know", path,
			    (unsigned)*out);
		}
	}
	free(sb);
	return rc;
}
