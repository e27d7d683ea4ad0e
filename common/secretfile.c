/*
 * secretfile.c -- see secretfile.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "proto.h"
#include "secretfile.h"

/* cxlp_secret_read -- see secretfile.h */
int
cxlp_secret_read(const char *path, uint8_t *buf, uint16_t *len,
    bool *loose, char *why, size_t n)
{
	uint8_t tmp[PROTO_SECRET_MAX + 2];
	FILE *f = fopen(path, "re");
	struct stat st;
	size_t got;
	int rc = 0;

	*loose = false;
	if (f == NULL) {
		rc = -errno;
		snprintf(why, n, "%s", strerror(errno));
		return rc;
	}
	*loose = fstat(fileno(f), &st) == 0 && (st.st_mode & 077) != 0;
	got = fread(tmp, 1, sizeof(tmp), f);
	if (ferror(f)) {
		rc = -EIO;
		snprintf(why, n, "read failed");
	}
	fclose(f);
	if (rc == 0 && got > 0 && tmp[got - 1] == '\n') {
		got--;
	}
	if (rc == 0 && (got == 0 || got > PROTO_SECRET_MAX)) {
		rc = -EINVAL;
		snprintf(why, n, "the secret must be 1..%d bytes",
		    PROTO_SECRET_MAX);
	} else if (rc == 0) {
		memcpy(buf, tmp, got);
		*len = (uint16_t)got;
	}
	explicit_bzero(tmp, sizeof(tmp));
	return rc;
}
