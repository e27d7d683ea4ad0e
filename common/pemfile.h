/*
 * pemfile.h -- read a PEM file (a TLS certificate, key or CA bundle) into
 * memory, for the handler's and the metaserver's TLS configs.
 */
#ifndef CXLP_PEMFILE_H
#define CXLP_PEMFILE_H

#include <stddef.h>

#define CXLP_PEM_MAX (1u << 20) /* a PEM file larger than this is refused */

/* cxlp_pem_read -- read path into *out, a NUL-terminated heap string the
 * caller frees. Returns 0, or a negative errno with *why saying what is
 * wrong (the caller names the file and the setting): the file cannot be
 * opened or read (-errno), is a directory (-EISDIR), or is empty, larger
 * than CXLP_PEM_MAX or has no -----BEGIN line (-EINVAL). Sets no error
 * message of its own. */
int cxlp_pem_read(const char *path, char **out, const char **why);

#endif
