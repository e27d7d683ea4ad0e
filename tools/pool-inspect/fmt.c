/*
 * fmt.c -- output helpers shared by pool-inspect's commands: sizes with
 * binary units for terminals, keys as safe terminal text, and a small
 * JSON writer. Keys are opaque bytes, so both the terminal and the JSON
 * forms escape whatever could break the output: control bytes always,
 * and in JSON any byte that is not part of a valid UTF-8 sequence
 * (written as \u00XX, i.e. read back as its Latin-1 code point).
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

/* ---- JSON --------------------------------------------------------------- */

/* length of the valid UTF-8 sequence at s[0..left), 0 if invalid */
static size_t
utf8_len(const unsigned char *s, size_t left)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		lo = c == 0xe0 ? 0xa0 : 0x80;
		hi = c == 0xed ? 0x9f : 0xbf;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		lo = c == 0xf0 ? 0x90 : 0x80;
		hi = c == 0xf4 ? 0x8f : 0xbf;
	} else {
		return 0;
	}
	if (left < len || s[1] < lo || s[1] > hi) {
		return 0;
	}
	for (size_t i = 2; i < len; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf) {
			return 0;
		}
	}
	return len;
}

static void
json_bytes(FILE *f, const unsigned char *s, size_t n)
{
	size_t i = 0, len;

	fputc('"', f);
	while (i < n) {
		if (s[i] == '"' || s[i] == '\\') {
			fprintf(f, "\\%c", s[i++]);
		} else if (s[i] < 0x20 || s[i] == 0x7f) {
			fprintf(f, "\\u%04x", s[i++]);
		} else if (s[i] < 0x80) {
			fputc(s[i++], f);
		} else if ((len = utf8_len(s + i, n - i)) > 0) {
			fwrite(s + i, 1, len, f);
			i += len;
		} else {
			fprintf(f, "\\u%04x", s[i++]);
		}
	}
	fputc('"', f);
}

/* separator and key before a value at the current depth */
static void
sep(struct jw *w, const char *key)
{
	if (!w->first[w->depth]) {
		fputs(", ", w->f);
	}
	w->first[w->depth] = false;
	if (key != NULL) {
		json_bytes(w->f, (const unsigned char *)key, strlen(key));
		fputs(": ", w->f);
	}
}

static void
open_c(struct jw *w, const char *key, char open, char close)
{
	sep(w, key);
	fputc(open, w->f);
	if (w->depth + 1 < JW_DEPTH) {
		w->depth++;
	}
	w->first[w->depth] = true;
	w->close[w->depth] = close;
}

/* jw_begin -- see inspect.h */
void
jw_begin(struct jw *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->first[0] = true;
	open_c(w, NULL, '{', '}');
}

/* jw_end -- see inspect.h */
void
jw_end(struct jw *w)
{
	while (w->depth > 0) {
		jw_close(w);
	}
	fputc('\n', w->f);
}

/* jw_obj -- see inspect.h */
void
jw_obj(struct jw *w, const char *key)
{
	open_c(w, key, '{', '}');
}

/* jw_arr -- see inspect.h */
void
jw_arr(struct jw *w, const char *key)
{
	open_c(w, key, '[', ']');
}

/* jw_close -- see inspect.h */
void
jw_close(struct jw *w)
{
	if (w->depth > 0) {
		fputc(w->close[w->depth], w->f);
		w->depth--;
	}
}

/* jw_u64 -- see inspect.h */
void
jw_u64(struct jw *w, const char *key, uint64_t v)
{
	sep(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

/* jw_i64 -- see inspect.h */
void
jw_i64(struct jw *w, const char *key, int64_t v)
{
	sep(w, key);
	fprintf(w->f, "%" PRId64, v);
}

/* jw_bool -- see inspect.h */
void
jw_bool(struct jw *w, const char *key, bool v)
{
	sep(w, key);
	fputs(v ? "true" : "false", w->f);
}

/* jw_str -- see inspect.h; NULL is written as null */
void
jw_str(struct jw *w, const char *key, const char *s)
{
	if (s == NULL) {
		sep(w, key);
		fputs("null", w->f);
		return;
	}
	jw_bytes(w, key, s, strlen(s));
}

/* jw_bytes -- see inspect.h */
void
jw_bytes(struct jw *w, const char *key, const void *b, size_t n)
{
	sep(w, key);
	json_bytes(w->f, b, n);
}
