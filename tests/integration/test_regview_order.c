/*
 * test_regview_order.c -- the region callback's order and re-entry
 * (handler/region/regview.c notes 2-4): a given-back region's UNMAPPING comes
 * while the region is still this handler's and as mapped as the callback
 * knew it; callbacks of two handlers nested on one thread do not wait
 * for themselves; a callback swapped while another thread maps regions
 * hears no change twice and no UNMAPPING of a region it was not told of.
 * (From a review's probes.)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "itest.h"

#define PAGE 4096u

TestSuite(regview_order, .init = itest_start, .fini = itest_stop, .timeout = 60);

static struct cxlp_handler *
connect_opts(size_t region, bool direct, unsigned reserve)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, srv.url), 0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, PAGE), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, region), 0);
	cr_assert_rc(cxlp_config_set_direct_reads(cfg, direct), 0);
	cr_assert_rc(cxlp_config_set_reserve_regions(cfg, reserve), 0);
	cr_assert_rc(cxlp_connect(&h, cfg), 0);
	cxlp_config_delete(&cfg);
	return h;
}

/* perms of the mapping holding p, from /proc/self/maps */
static void
perms_of(const void *p, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	strcpy(out, "????");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;
		char pr[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, pr) == 3 &&
		    (unsigned long)p >= lo && (unsigned long)p < hi) {
			memcpy(out, pr, 5);
			break;
		}
	}
	if (f != NULL) {
		fclose(f);
	}
}

/* ---- a given-back region ------------------------------------------- */
struct gb {
	struct cxlp_handler *other; /* a second handler, direct reads */
	uint32_t watch;
	int seen;
	char perms[5];
	int view_rc; /* other's region_view of the region, in the callback */
};

static void
gb_fn(void *arg, int event, const struct cxlp_region_info *info)
{
	struct gb *g = arg;
	struct cxlp_region_info v;

	if (event != CXLP_REGION_UNMAPPING || info->region != g->watch) {
		return;
	}
	perms_of(info->addr, g->perms);
	g->view_rc = cxlp_region_view(g->other, info->region, &v);
	g->seen = 1;
}

Test(regview_order, a_given_back_region_is_reported_before_it_goes_back)
{
	struct cxlp_handler *a = connect_opts(64 << 10, true, 0);
	struct cxlp_handler *o = itest_connect();
	struct cxlp_region_info first;
	struct gb g = {.other = o};
	cxlp_page_t *pg;
	void *buf;
	uint32_t r2, per;
	uint64_t off;

	cr_assert_rc(cxlp_region_list(a, &first, 1), 1);
	per = first.pages;
	pg = calloc(per + 1, sizeof(*pg));
	for (uint32_t i = 0; i <= per; i++) {
		cr_assert_rc(cxlp_alloc(a, &pg[i], &buf), 0);
	}
	cr_assert_rc(cxlp_locate(a, buf, &r2, &off), 0);
	g.watch = r2;
	cr_assert_rc(cxlp_set_region_fn(a, gb_fn, &g), 0);
	cr_assert_rc(cxlp_free(a, pg[per]), 0);
	for (int t = 0; t < 2000 && !__atomic_load_n(&g.seen, 0); t++) {
		usleep(5000);
	}
	cr_assert(g.seen, "no UNMAPPING of the given-back region");
	cr_assert(g.perms[0] == 'r' && g.perms[1] == 'w', "region %u: "
	    "mapped %s when its UNMAPPING came (write-protected already)",
	    r2, g.perms);
	cr_assert_rc(g.view_rc, 0, "region %u was no longer live when its "
	    "UNMAPPING came", r2);
	cxlp_set_region_fn(a, NULL, NULL);
	for (uint32_t i = 0; i < per; i++) {
		cxlp_free(a, pg[i]);
	}
	free(pg);
	cxlp_close(&o);
	cxlp_close(&a);
}

/* ---- callbacks nested on one thread ------------------------------- */
struct nest {
	struct cxlp_handler *a, *b;
	uint32_t foreign; /* a region of o that b has not mapped */
	int arm;
	int done;
};
static struct nest N;

static void
fn_b(void *arg, int event, const struct cxlp_region_info *info)
{
	(void)arg;
	(void)info;
	if (event == CXLP_REGION_MAPPED && __atomic_load_n(&N.arm, 0) == 2) {
		cxlp_page_t pg;
		void *buf;

		N.arm = 3;
		/* a call on a from b's callback, itself inside a's callback */
		if (cxlp_alloc(N.a, &pg, &buf) == 0) {
			cxlp_free(N.a, pg);
		}
	}
}

static void
fn_a(void *arg, int event, const struct cxlp_region_info *info)
{
	struct cxlp_region_info v;

	(void)arg;
	(void)info;
	if (event == CXLP_REGION_MAPPED && __atomic_load_n(&N.arm, 0) == 1) {
		N.arm = 2;
		(void)cxlp_region_view(N.b, N.foreign, &v); /* b maps: fn_b */
	}
}

static void *
nest_thread(void *x)
{
	struct cxlp_region_info v;
	uint32_t *ids = x;

	(void)cxlp_region_view(N.a, ids[0], &v); /* a maps: fn_a */
	__atomic_store_n(&N.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

Test(regview_order, callbacks_of_two_handlers_nest_on_one_thread)
{
	struct cxlp_handler *o = connect_opts(2 << 20, true, 1);
	struct cxlp_region_info list[4];
	cxlp_page_t pg;
	void *buf;
	uint32_t ids[2];
	pthread_t t;
	int n;

	/* o owns two regions: a views one, b the other */
	for (int i = 0; i < 513; i++) {
		cr_assert_rc(cxlp_alloc(o, &pg, &buf), 0);
	}
	n = cxlp_region_list(o, list, 4);
	cr_assert_eq(n, 2);
	ids[0] = list[0].region;
	ids[1] = list[1].region;
	N.a = itest_connect();
	N.b = itest_connect();
	N.foreign = ids[1];
	cr_assert_rc(cxlp_set_region_fn(N.a, fn_a, NULL), 0);
	cr_assert_rc(cxlp_set_region_fn(N.b, fn_b, NULL), 0);
	N.arm = 1;
	pthread_create(&t, NULL, nest_thread, ids);
	for (int i = 0; i < 400 && !__atomic_load_n(&N.done, 0); i++) {
		usleep(5000);
	}
	cr_assert(N.done, "deadlock: a callback of a inside b's inside a's "
	    "(arm %d)", N.arm);
	cr_assert_eq(N.arm, 3, "the nested callbacks did not run");
	pthread_join(t, NULL);
}

/* ---- a swap of the callback while another thread maps ------------ */
#define RMAX 256
struct epoch {
	int mapped[RMAX];
	int dup; /* a second MAPPED of a region with no UNMAPPING between */
	int orphan_unmap; /* UNMAPPING of a region never MAPPED here */
};

static void
ep_fn(void *arg, int event, const struct cxlp_region_info *info)
{
	struct epoch *e = arg;
	uint32_t r = info->region % RMAX;

	if (event == CXLP_REGION_MAPPED) {
		if (e->mapped[r]++ > 0) {
			e->dup++;
		}
	} else if (e->mapped[r]-- <= 0) {
		e->orphan_unmap++;
	}
}

struct mapper {
	struct cxlp_handler *b;
	uint32_t *ids;
	int n;
};

static void *
mapper_thread(void *x)
{
	struct mapper *m = x;
	struct cxlp_region_info v;

	for (int i = 0; i < m->n; i++) {
		(void)cxlp_region_view(m->b, m->ids[i], &v);
	}
	return NULL;
}

Test(regview_order, a_swapped_callback_hears_each_change_once)
{
	struct cxlp_handler *o = connect_opts(2 << 20, true, 1);
	struct cxlp_handler *b = itest_connect();
	static struct cxlp_region_info list[RMAX];
	static uint32_t ids[RMAX];
	static struct epoch eps[4000];
	struct mapper m = {.b = b, .ids = ids};
	cxlp_page_t pg;
	void *buf;
	pthread_t t;
	int n, k = 0, dups = 0, orph = 0;

	for (int i = 0; i < 512 * 60; i++) {
		if (cxlp_alloc(o, &pg, &buf) != 0) {
			break;
		}
	}
	n = cxlp_region_list(o, list, RMAX);
	for (int i = 0; i < n; i++) {
		ids[i] = list[i].region;
	}
	m.n = n;
	cxlp_close(&b);
	for (int round = 0; round < 15; round++) {
		memset(eps, 0, sizeof(eps));
		b = itest_connect();
		m.b = b;
		pthread_create(&t, NULL, mapper_thread, &m);
		for (k = 0; k < 4000; k++) {
			cr_assert_rc(cxlp_set_region_fn(b, ep_fn, &eps[k]), 0);
			if (cxlp_region_list(b, NULL, 0) > n) {
				k++;
				break;
			}
		}
		pthread_join(t, NULL);
		cxlp_set_region_fn(b, NULL, NULL);
		for (int i = 0; i < k; i++) {
			dups += eps[i].dup;
			orph += eps[i].orphan_unmap;
		}
		cxlp_close(&b);
	}
	cr_assert_eq(dups, 0, "%d MAPPED heard twice", dups);
	cr_assert_eq(orph, 0, "%d UNMAPPING of a region never MAPPED", orph);
	b = itest_connect();
	cxlp_close(&b);
	cxlp_close(&o);
}
