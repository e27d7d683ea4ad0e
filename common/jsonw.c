/*
 * jsonw.c -- a streaming JSON writer (jsonw.h), shared by pool-inspect
 * and cxlpool-bench. It keeps one "first value" flag and one closing
 * bracket per open container, so separators and closes come out right
 * whatever order the caller writes in, and escapes every string it is
 * given. Keys in the pool are opaque bytes, so strings are escaped
 * byte-wise: anything that is not part of a valid UTF-8 sequence is
 * written as \u00XX rather than passed through as invalid JSON.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "jsonw.h"

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

/* s[0..n) as a quoted, escaped JSON string */
static void
quoted(FILE *f, const unsigned char *s, size_t n)
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
		fputs(w->comma, w->f);
	}
	w->first[w->depth] = false;
	if (key != NULL) {
		quoted(w->f, (const unsigned char *)key, strlen(key));
		fputs(w->colon, w->f);
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

/* jw_begin -- see jsonw.h */
void
jw_begin(struct jw *w, FILE *f, unsigned flags)
{
	bool compact = (flags & JW_COMPACT) != 0;

	memset(w, 0, sizeof(*w));
	w->f = f;
	w->comma = compact ? "," : ", ";
	w->colon = compact ? ":" : ": ";
	w->first[0] = true;
	open_c(w, NULL, '{', '}');
}

/* jw_end -- see jsonw.h */
void
jw_end(struct jw *w)
{
	while (w->depth > 0) {
		jw_close(w);
	}
	fputc('\n', w->f);
}

/* jw_obj -- see jsonw.h */
void
jw_obj(struct jw *w, const char *key)
{
	open_c(w, key, '{', '}');
}

/* jw_arr -- see jsonw.h */
void
jw_arr(struct jw *w, const char *key)
{
	open_c(w, key, '[', ']');
}

/* jw_close -- see jsonw.h */
void
jw_close(struct jw *w)
{
	if (w->depth > 0) {
		fputc(w->close[w->depth], w->f);
		w->depth--;
	}
}

/* jw_u64 -- see jsonw.h */
void
jw_u64(struct jw *w, const char *key, uint64_t v)
{
	sep(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

/* jw_i64 -- see jsonw.h */
void
jw_i64(struct jw *w, const char *key, int64_t v)
{
	sep(w, key);
	fprintf(w->f, "%" PRId64, v);
}

/* jw_num -- see jsonw.h */
void
jw_num(struct jw *w, const char *key, double v)
{
	sep(w, key);
	if (isfinite(v)) {
		fprintf(w->f, "%.6g", v);
	} else {
		fputs("null", w->f);
	}
}

/* jw_bool -- see jsonw.h */
void
jw_bool(struct jw *w, const char *key, bool v)
{
	sep(w, key);
	fputs(v ? "true" : "false", w->f);
}

/* jw_str -- see jsonw.h */
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

/* jw_bytes -- see jsonw.h */
void
jw_bytes(struct jw *w, const char *key, const void *b, size_t n)
{
	sep(w, key);
	quoted(w->f, b, n);
}
