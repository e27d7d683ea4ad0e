/*
 * fmt.c -- terminal output helpers shared by pool-inspect's commands:
 * sizes with binary units, and keys as safe terminal text. Keys are
 * opaque bytes, so the terminal form escapes whatever could break the
 * output (control bytes, backslash, anything not printable ASCII, as
 * \xNN). The JSON form of the same keys is common/jsonw.c's, which
 * escapes the bytes of no valid UTF-8 sequence as \u00XX.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"

/* fmt_size -- see inspect.h */
const char *
fmt_size(char buf[FMT_SIZE_LEN], uint64_t bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB",
	    "PiB", "EiB" };
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, FMT_SIZE_LEN, "%" PRIu64 " B", bytes);
		return buf;
	}
	while (v >= 1024.0 && u < 5) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, FMT_SIZE_LEN, "%.1f %s", v, units[u]);
	return buf;
}

/* one key byte as terminal text; returns its length */
static size_t
key_char(unsigned char c, char out[5])
{
	if (c >= 0x20 && c < 0x7f && c != '\\') {
		out[0] = (char)c;
		out[1] = '\0';
		return 1;
	}
	snprintf(out, 5, "\\x%02x", c);
	return 4;
}

/* fmt_key -- see inspect.h; width 0: no limit but n */
const char *
fmt_key(char *buf, size_t n, const void *key, size_t klen, size_t width)
{
	const unsigned char *k = key;
	size_t full = 0, j = 0, room;
	char one[5];

	for (size_t i = 0; i < klen; i++) {
		full += key_char(k[i], one);
	}
	room = width == 0 || width >= n ? n - 1 : width;
	if (full > room && room > 3) {
		room -= 3; /* leave space for "..." */
	}
	for (size_t i = 0; i < klen; i++) {
		size_t len = key_char(k[i], one);

		if (j + len > room) {
			break;
		}
		memcpy(buf + j, one, len);
		j += len;
	}
	buf[j] = '\0';
	if (full > j && j + 3 < n) {
		memcpy(buf + j, "...", 4);
	}
	return buf;
}
