/*
 * evfill.c -- see evfill.h.
 */
#include "evfill.h"

/* ev_start -- see evfill.h */
void
ev_start(const char *order, const char *const extra[])
{
	const char *args[16] = { "--evict-order", order, "--evict-free", "0" };
	size_t n = 4;

	for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 15; i++) {
		args[n++] = extra[i];
	}
	args[n] = NULL;
	cr_assert_eq(test_server_start(&srv, POOL, args), 0,
	    "metaserver did not start");
}

/* ev_config -- see evfill.h */
struct cxlp_config *
ev_config(void)
{
	struct cxlp_config *cfg = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, srv.url), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, PAGE), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, REGION), 0);
	return cfg;
}

/* ev_connect_with -- see evfill.h */
struct cxlp_handler *
ev_connect_with(struct cxlp_config *cfg)
{
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_connect(&h, cfg), 0, "connect to %s", srv.url);
	cxlp_config_delete(&cfg);
	return h;
}

/* ev_connect -- see evfill.h */
struct cxlp_handler *
ev_connect(unsigned lease_ms)
{
	struct cxlp_config *cfg = ev_config();

	if (lease_ms != 0) {
		cr_assert_rc(cxlp_config_set_lease_ms(cfg, lease_ms), 0);
	}
	return ev_connect_with(cfg);
}

/* ev_capacity -- see evfill.h */
uint64_t
ev_capacity(struct cxlp_handler *h)
{
	return kv_stats(h).data_bytes / PAGE;
}

/* ev_store -- see evfill.h */
void
ev_store(struct cxlp_handler *h, const char *prefix, uint32_t first,
    size_t n, unsigned flags)
{
	char kb[BATCH][32];
	const void *keys[BATCH];
	size_t klen[BATCH], lens[BATCH];
	cxlp_page_t pages[BATCH];
	bool ok[BATCH];

	cr_assert_leq(n, BATCH);
	for (size_t i = 0; i < n; i++) {
		void *buf;

		cr_assert_rc(cxlp_alloc(h, &pages[i], &buf), 0,
		    "alloc of key %u", first + (unsigned)i);
		kv_fill(buf, VLEN, 1, first + (uint32_t)i);
		klen[i] = kv_key(kb[i], sizeof(kb[i]), prefix,
		    first + (unsigned)i);
		keys[i] = kb[i];
		lens[i] = VLEN;
	}
	cr_assert_rc(cxlp_batch_store(h, n, keys, klen, pages, lens, flags,
	    ok), 0);
	for (size_t i = 0; i < n; i++) {
		cr_assert(ok[i], "store of %s reported false", kb[i]);
	}
}

/* ev_fill -- see evfill.h */
uint64_t
ev_fill(struct cxlp_handler *h, const char *prefix, unsigned flags)
{
	uint64_t n = 0;

	for (;;) {
		struct cxlp_stats st = kv_stats(h);

		if (st.free_bytes < REGION && st.pages_free == 0) {
			return n;
		}
		ev_store(h, prefix, (uint32_t)n, 1, flags);
		n++;
	}
}
