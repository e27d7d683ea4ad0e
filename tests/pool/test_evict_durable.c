/*
 * test_evict_durable.c -- pool/evict.c note 3, the durability half of
 * DESIGN contract 9: a page freed by eviction is handed out again only
 * after the key's removal is durable in the index. A recorder of every
 * persist (crashpt.h) keeps, per key, whether its index slot has been
 * persisted in a state other than LIVE; the eviction's gone callback
 * (where the metaserver names the page to a handler, metaserver/evict.c
 * note 2) and the persist that frees an emptied orphan region (after
 * which its extent may be allocated again) must each find every key
 * they free durably gone. A persist removed or moved after the hand-off
 * leaves a LIVE slot on media behind a reused page: after a power cut
 * the index would name a page that holds another key's bytes.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "crashpt.h"
#include "layout.h"
#include "pool.h"
#include "pool_int.h"
#include "pool_test.h"

#define PAGES 64

static char path[128];
static struct pool *p;
static uint64_t sess;
static struct pool_region reg;
static uint64_t slot_of[PAGES];

static struct {
	bool gone[PAGES];   /* slot persisted in a state other than LIVE */
	int frees;          /* persists of reg's record as FREE */
	int frees_early;    /* ... while one of its keys was not gone */
} rec;

static bool
all_gone(void)
{
	for (int i = 0; i < PAGES; i++) {
		if (!rec.gone[i]) {
			return false;
		}
	}
	return true;
}

static bool
covers(const void *addr, size_t len, const void *x)
{
	const char *a = addr;

	return (const char *)x >= a && (const char *)x < a + len;
}

/* the recorder: what is durable after this persist */
static void
record(void *arg, const void *addr, size_t len)
{
	(void)arg;
	for (int i = 0; i < PAGES; i++) {
		const struct kv_slot *s = &p->kv.slots[slot_of[i]];

		if (covers(addr, len, &s->word)) {
			rec.gone[i] = kv_state(s->word) != KV_LIVE;
		}
	}
	if (covers(addr, len, &p->rprim[reg.id].word) &&
	    rrec_state(p->rprim[reg.id].word) == POOL_REGION_FREE) {
		rec.frees++;
		rec.frees_early += !all_gone();
	}
}

static void
setup(void)
{
	p = test_pool_keys(path, sizeof(path), &sess, &reg, slot_of, PAGES);
	memset(&rec, 0, sizeof(rec));
	if (!crashpt_set_recorder(record, NULL)) {
		cr_skip_test("built with -Dtest_hooks=false: no recorder");
	}
}

static void
teardown(void)
{
	crashpt_set_recorder(NULL, NULL);
	pool_close(&p);
	unlink(path);
}

TestSuite(evict_durable, .init = setup, .fini = teardown);

static int
key_at(uint64_t slot)
{
	for (int i = 0; i < PAGES; i++) {
		if (slot_of[i] == slot) {
			return i;
		}
	}
	cr_assert_fail("slot %llu holds none of the test's keys",
	    (unsigned long long)slot);
	return -1;
}

/* the page is handed out here: its key's removal must be durable */
static void
gone(void *arg, const struct pool_kv *kv)
{
	int i = key_at(kv->slot);

	++*(int *)arg;
	cr_assert(rec.gone[i], "key %d's page was handed out before its "
	    "removal was persisted", i);
}

Test(evict_durable, a_victims_page_is_named_only_after_its_removal_persists)
{
	int n = 0;
	struct evict_ops ops = { .gone = gone, .arg = &n };

	cr_assert_eq(pool_evict_clock(p, PAGES / 2, POOL_EVICT_PRESSURE,
	    &ops), PAGES / 2);
	cr_assert_eq(n, PAGES / 2);
}

Test(evict_durable, an_emptied_orphan_is_freed_only_after_its_keys_persist)
{
	int n = 0;
	struct evict_ops ops = { .gone = gone, .arg = &n };
	struct pool_region r;

	cr_assert_eq(pool_region_disown(p, reg.id), 0);
	cr_assert_eq(pool_evict_region(p, reg.id, POOL_EVICT_ORPHAN, &ops),
	    PAGES);
	cr_assert_eq(n, PAGES);
	cr_assert_eq(pool_region_get(p, reg.id, &r), CXLP_E_NOTFOUND);
	cr_assert_eq(rec.frees, 1, "the region's free was never persisted");
	cr_assert_eq(rec.frees_early, 0, "the region was freed on media "
	    "while a key into it was not durably gone");
}
