/*
 * secretfile.h -- read the shared secret from a file: the metaserver's
 * --secret-file and the handler's CXLP_SECRET_FILE, one reader for both
 * so that the two sides take the same bytes from the same file.
 */
#ifndef CXLP_SECRETFILE_H
#define CXLP_SECRETFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* cxlp_secret_read -- the secret in path: its bytes, less one trailing
 * newline, 1 to PROTO_SECRET_MAX of them, into buf (room for
 * PROTO_SECRET_MAX) and *len, only on success. *loose says the file is
 * readable by group or others (the caller warns). Returns 0, or a
 * negative errno with why[0..n) saying what is wrong (the caller names
 * the file and the setting): it cannot be opened (-errno) or read
 * (-EIO), or is empty or too long (-EINVAL). Sets no error message of
 * its own; leaves no copy of the secret on its stack. */
int cxlp_secret_read(const char *path, uint8_t *buf, uint16_t *len,
    bool *loose, char *why, size_t n);

#endif
