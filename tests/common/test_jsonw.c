/*
 * test_jsonw.c -- tests of common/jsonw.c: separators in both spacings,
 * nesting and closes, numbers, null, and string escaping (control bytes,
 * quotes, valid and invalid UTF-8). Each test writes into an
 * open_memstream and compares the exact bytes, since pool-inspect's and
 * cxlpool-bench's outputs must not change shape.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"

TestSuite(jsonw);

/* A document in memory: jw on f, read back by doc_text. */
struct doc {
	FILE *f;
	char *buf;
	size_t len;
};

static struct jw *
doc_begin(struct doc *d, struct jw *w, unsigned flags)
{
	d->f = open_memstream(&d->buf, &d->len);
	cr_assert_not_null(d->f);
	jw_begin(w, d->f, flags);
	return w;
}

/* the text so far; the doc stays usable */
static const char *
doc_text(struct doc *d)
{
	cr_assert_eq(fflush(d->f), 0);
	return d->buf;
}

static void
doc_free(struct doc *d)
{
	fclose(d->f);
	free(d->buf);
}

Test(jsonw, spaced_document_separates_with_comma_space_and_colon_space)
{
	struct doc d;
	struct jw w, *j = doc_begin(&d, &w, 0);

	jw_str(j, "pool", "/dev/shm/p");
	jw_arr(j, "list");
	jw_u64(j, NULL, 1);
	jw_u64(j, NULL, 2);
	jw_close(j);
	jw_obj(j, "o");
	jw_bool(j, "ok", true);
	jw_i64(j, "n", -3);
	jw_close(j);
	jw_end(j);
	cr_assert_str_eq(doc_text(&d), "{\"pool\": \"/dev/shm/p\", "
	    "\"list\": [1, 2], \"o\": {\"ok\": true, \"n\": -3}}\n");
	doc_free(&d);
}

Test(jsonw, compact_document_has_no_spaces)
{
	struct doc d;
	struct jw w, *j = doc_begin(&d, &w, JW_COMPACT);

	jw_str(j, "command", "bench --quick");
	jw_arr(j, "rows");
	jw_obj(j, NULL);
	jw_num(j, "p50_us", 12.5);
	jw_i64(j, "n", 1000);
	jw_close(j);
	jw_obj(j, NULL);
	jw_bool(j, "met", false);
	jw_close(j);
	jw_close(j);
	jw_i64(j, "failed_sections", 0);
	jw_end(j);
	cr_assert_str_eq(doc_text(&d), "{\"command\":\"bench --quick\","
	    "\"rows\":[{\"p50_us\":12.5,\"n\":1000},{\"met\":false}],"
	    "\"failed_sections\":0}\n");
	doc_free(&d);
}

Test(jsonw, end_closes_every_open_container_in_order)
{
	struct doc d;
	struct jw w, *j = doc_begin(&d, &w, 0);

	jw_arr(j, "a");
	jw_obj(j, NULL);
	jw_arr(j, "b");
	jw_end(j);
	cr_assert_str_eq(doc_text(&d), "{\"a\": [{\"b\": []}]}\n");
	jw_close(j); /* nothing left open: writes nothing */
	cr_assert_str_eq(doc_text(&d), "{\"a\": [{\"b\": []}]}\n");
	doc_free(&d);
}

Test(jsonw, numbers_use_six_significant_digits_and_null_for_non_finite)
{
	struct doc d;
	struct jw w, *j = doc_begin(&d, &w, JW_COMPACT);

	jw_num(j, "a", 1234567.0);
	jw_num(j, "b", 0.000123456789);
	jw_num(j, "c", NAN);
	jw_num(j, "d", INFINITY);
	jw_u64(j, "e", UINT64_MAX);
	jw_i64(j, "f", INT64_MIN);
	jw_end(j);
	cr_assert_str_eq(doc_text(&d), "{\"a\":1.23457e+06,"
	    "\"b\":0.000123457,\"c\":null,\"d\":null,"
	    "\"e\":18446744073709551615,\"f\":-9223372036854775808}\n");
	doc_free(&d);
}

Test(jsonw, null_string_is_written_as_null)
{
	struct doc d;
	struct jw w, *j = doc_begin(&d, &w, 0);

	jw_str(j, "mount", NULL);
	jw_end(j);
	cr_assert_str_eq(doc_text(&d), "{\"mount\": null}\n");
	doc_free(&d);
}

Test(jsonw, strings_escape_quotes_backslashes_control_bytes_and_del)
{
	struct doc d;
	struct jw w, *j = doc_begin(&d, &w, 0);

	jw_str(j, "k\"ey", "a\"b\\c\n\t\x01\x7f");
	jw_end(j);
	cr_assert_str_eq(doc_text(&d), "{\"k\\\"ey\": "
	    "\"a\\\"b\\\\c\\u000a\\u0009\\u0001\\u007f\"}\n");
	doc_free(&d);
}

Test(jsonw, bytes_keep_valid_utf8_and_escape_the_rest_as_latin1)
{
	static const unsigned char key[] = {
		'x', 0xc3, 0xa9,             /* U+00E9, kept */
		0xe2, 0x82, 0xac,            /* U+20AC, kept */
		0xf0, 0x9f, 0x98, 0x80,      /* U+1F600, kept */
		0xff,                        /* never UTF-8 */
		0xc3,                        /* lead byte without its tail */
		0xe0, 0x80, 0x80,            /* overlong */
		0xed, 0xa0, 0x80,            /* surrogate */
		0x00,                        /* NUL inside a key */
	};
	struct doc d;
	struct jw w, *j = doc_begin(&d, &w, 0);

	jw_bytes(j, "key", key, sizeof(key));
	jw_end(j);
	cr_assert_str_eq(doc_text(&d), "{\"key\": \"x\xc3\xa9\xe2\x82\xac"
	    "\xf0\x9f\x98\x80\\u00ff\\u00c3\\u00e0\\u0080\\u0080"
	    "\\u00ed\\u00a0\\u0080\\u0000\"}\n");
	doc_free(&d);
}

Test(jsonw, nesting_past_the_depth_limit_stays_bounded)
{
	struct doc d;
	struct jw w, *j = doc_begin(&d, &w, JW_COMPACT);

	for (int i = 0; i < JW_DEPTH + 4; i++) {
		jw_arr(j, NULL);
	}
	cr_assert_lt(j->depth, JW_DEPTH);
	jw_end(j);
	cr_assert_eq(j->depth, 0);
	doc_free(&d);
}
