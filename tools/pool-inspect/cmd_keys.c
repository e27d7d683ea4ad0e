/*
 * cmd_keys.c -- `pool-inspect keys POOL [--prefix P] [--json]`: the keys
 * of the index, sorted bytewise, optionally only those starting with P,
 * each with where its value lives: region (and its gen), page index in
 * the region, byte offset from the pool's start, and value length. Keys
 * are opaque bytes: text output escapes them (fmt_key), JSON keeps valid
 * UTF-8 and escapes the rest. Entries point into the read-only mapping,
 * so collecting them costs one small struct per key.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "pool.h"

#define KEY_COL_MAX 48 /* widest key column in text output */

struct ent {
	const void *key;
	size_t klen;
	struct pool_kv kv;
	uint64_t page;
};

static int
cmp_ent(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = memcmp(x->key, y->key, n);

	return c != 0 ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

/* the matching keys, sorted, in a malloc'd array (caller frees) */
static int
collect(const struct pool *p, const char *prefix, struct ent **out,
    size_t *n)
{
	size_t plen = prefix ? strlen(prefix) : 0, cap = 0;
	struct ent e, *v = NULL, *t;
	struct pool_region r;
	uint64_t cursor = 0;

	*n = 0;
	while (pool_kv_next(p, &cursor, &e.kv, &e.key, &e.klen) == 1) {
		if (plen > 0 && (e.klen < plen ||
		    memcmp(e.key, prefix, plen) != 0)) {
			continue;
		}
		e.page = pool_region_get(p, e.kv.region, &r) == 0 ?
		    (e.kv.off - r.off) / r.page_size : 0;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			if ((t = realloc(v, cap * sizeof(*v))) == NULL) {
				free(v);
				return -ENOMEM;
			}
			v = t;
		}
		v[(*n)++] = e;
	}
	if (*n > 0) {
		qsort(v, *n, sizeof(*v), cmp_ent);
	}
	*out = v;
	return 0;
}

static void
print_text(const struct ent *v, size_t n)
{
	char key[KEY_COL_MAX * 4 + 4], len[FMT_SIZE_LEN];
	size_t width = 3;

	for (size_t i = 0; i < n; i++) {
		size_t w = strlen(fmt_key(key, sizeof(key), v[i].key,
		    v[i].klen, KEY_COL_MAX));

		width = w > width ? w : width;
	}
	printf("%-*s  %6s  %5s  %7s  %12s  %10s\n", (int)width, "KEY",
	    "REGION", "GEN", "PAGE", "OFFSET", "LENGTH");
	for (size_t i = 0; i < n; i++) {
		printf("%-*s  %6u  %5u  %7" PRIu64 "  %#12" PRIx64 "  %10s\n",
		    (int)width, fmt_key(key, sizeof(key), v[i].key, v[i].klen,
		    KEY_COL_MAX), v[i].kv.region, v[i].kv.gen, v[i].page,
		    v[i].kv.off, fmt_size(len, v[i].kv.len));
	}
}

static void
print_json(struct jw *w, const struct ent *v, size_t n)
{
	jw_arr(w, "keys");
	for (size_t i = 0; i < n; i++) {
		jw_obj(w, NULL);
		jw_bytes(w, "key", v[i].key, v[i].klen);
		jw_u64(w, "key_len", v[i].klen);
		jw_u64(w, "region", v[i].kv.region);
		jw_u64(w, "gen", v[i].kv.gen);
		jw_u64(w, "page", v[i].page);
		jw_u64(w, "offset", v[i].kv.off);
		jw_u64(w, "length", v[i].kv.len);
		jw_close(w);
	}
	jw_close(w);
}

static void
print(const struct inspect_opts *o, const struct ent *v, size_t n)
{
	char sz[FMT_SIZE_LEN], key[KEY_COL_MAX * 4 + 4];
	uint64_t bytes = 0;
	struct jw w;

	for (size_t i = 0; i < n; i++) {
		bytes += v[i].kv.len;
	}
	if (o->json) {
		jw_begin(&w, stdout, 0);
		jw_str(&w, "pool", o->path);
		jw_str(&w, "prefix", o->prefix);
		print_json(&w, v, n);
		jw_u64(&w, "count", n);
		jw_u64(&w, "value_bytes", bytes);
		jw_end(&w);
		return;
	}
	print_text(v, n);
	printf("%zu key%s, %s of values", n, n == 1 ? "" : "s",
	    fmt_size(sz, bytes));
	if (o->prefix != NULL) {
		printf(" (prefix \"%s\")", fmt_key(key, sizeof(key), o->prefix,
		    strlen(o->prefix), KEY_COL_MAX));
	}
	printf("\n");
}

/* cmd_keys -- see inspect.h */
int
cmd_keys(int argc, char **argv)
{
	struct inspect_opts o;
	struct ent *v = NULL;
	struct pool *p;
	size_t n;
	int rc;

	if ((rc = inspect_args(argc, argv, OPT_POOL | OPT_PREFIX,
	    "POOL [--prefix P] [--json]", &o)) != 0 ||
	    (rc = inspect_open(o.path, &p)) != 0) {
		return rc;
	}
	if (collect(p, o.prefix, &v, &n) != 0) {
		fprintf(stderr, "pool-inspect: out of memory\n");
		pool_close(&p);
		return 1;
	}
	print(&o, v, n);
	free(v);
	pool_close(&p);
	return 0;
}
