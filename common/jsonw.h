/*
 * jsonw.h -- the one JSON writer of the tools and benchmarks
 * (pool-inspect --json, cxlpool-bench --json): values and containers are
 * separated and escaped here, so a caller cannot emit invalid JSON. It
 * writes to a FILE (open_memstream for a document built in memory), one
 * value at a time, in one of two spacings: ", " and ": " (pool-inspect),
 * or none (JW_COMPACT, cxlpool-bench). key is NULL inside arrays.
 *
 * No I/O of its own beyond the caller's FILE, no allocation, no nng: any
 * part may link it (libcxlpool.so does not).
 */
#ifndef CXLP_JSONW_H
#define CXLP_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JW_DEPTH 16       /* containers open at once; deeper ones nest flat */
#define JW_COMPACT 0x1u   /* jw_begin flag: "," and ":" with no spaces */

struct jw {
	FILE *f;               /* not owned */
	const char *comma;     /* between two values of one container */
	const char *colon;     /* between a key and its value */
	int depth;             /* 0: outside the top-level object */
	bool first[JW_DEPTH];  /* nothing written yet at this depth */
	char close[JW_DEPTH];  /* '}' or ']' ends this depth */
};

/* jw_begin -- start a document on f (borrowed until jw_end) with its
 * top-level object open; flags: 0 or JW_COMPACT. */
void jw_begin(struct jw *w, FILE *f, unsigned flags);
/* jw_end -- close every open container and end the line. */
void jw_end(struct jw *w);
/* jw_obj -- open an object (key NULL inside an array) */
void jw_obj(struct jw *w, const char *key);
/* jw_arr -- open an array */
void jw_arr(struct jw *w, const char *key);
/* jw_close -- close the innermost object or array */
void jw_close(struct jw *w);
/* jw_u64 -- an unsigned integer */
void jw_u64(struct jw *w, const char *key, uint64_t v);
/* jw_i64 -- a signed integer */
void jw_i64(struct jw *w, const char *key, int64_t v);
/* jw_num -- a double as %.6g; NaN and infinities as null */
void jw_num(struct jw *w, const char *key, double v);
/* jw_bool -- true or false */
void jw_bool(struct jw *w, const char *key, bool v);
/* jw_str -- a NUL-terminated string; NULL is written as null */
void jw_str(struct jw *w, const char *key, const char *s);
/* jw_bytes -- n opaque bytes as a string: valid UTF-8 as is, control
 * bytes, DEL and bytes of no valid UTF-8 sequence as \u00XX (read back
 * as their Latin-1 code points), '"' and '\\' escaped. */
void jw_bytes(struct jw *w, const char *key, const void *b, size_t n);

#endif /* CXLP_JSONW_H */
