/*
 * pemfile.c -- see pemfile.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pemfile.h"

static int
fail(int rc, const char *what, const char **why)
{
	*why = what;
	return rc;
}

/* cxlp_pem_read -- see pemfile.h */
int
cxlp_pem_read(const char *path, char **out, const char **why)
{
	struct stat st;
	FILE *f;
	char *buf;
	size_t n;
	int err;

	*out = NULL;
	if ((f = fopen(path, "r")) == NULL) {
		err = errno;
		return fail(-err, strerror(err), why);
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return fail(-EISDIR, "a directory, not a PEM file", why);
	}
	if ((buf = malloc(CXLP_PEM_MAX + 1)) == NULL) {
		fclose(f);
		return fail(-ENOMEM, "out of memory", why);
	}
	n = fread(buf, 1, CXLP_PEM_MAX + 1, f);
	err = ferror(f) ? (errno != 0 ? errno : EIO) : 0;
	fclose(f);
	if (err != 0) {
		free(buf);
		return fail(-err, strerror(err), why);
	}
	if (n > CXLP_PEM_MAX) {
		free(buf);
		return fail(-EINVAL, "larger than 1 MiB: not a PEM file", why);
	}
	buf[n] = '\0';
	if (n == 0 || strstr(buf, "-----BEGIN") == NULL) {
		free(buf);
		return fail(-EINVAL, n == 0 ? "empty: not a PEM file" :
		    "no -----BEGIN line: not a PEM file", why);
	}
	*out = buf;
	return 0;
}
