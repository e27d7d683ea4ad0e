/*
 * test_args.c -- batch_store's argument errors (DESIGN contract 2): each is
 * reported before any page is consumed, so every page is still allocated to
 * the caller afterwards (cxlp_free of it succeeds exactly once).
 */
#include "itest.h"

TestSuite(args, .init = itest_start, .fini = itest_stop, .timeout = 60);

struct fixture {
	struct cxlp_handler *h;
	cxlp_page_t pages[2];
	const void *kp[2];
	size_t kl[2];
	size_t lens[2];
	bool ok[2];
};

static void
setup(struct fixture *f)
{
	void *buf;

	f->h = itest_connect();
	for (int i = 0; i < 2; i++) {
		cr_assert_rc(cxlp_alloc(f->h, &f->pages[i], &buf), 0);
		memset(buf, 'a' + i, 64);
		f->kp[i] = i ? "k1" : "k0";
		f->kl[i] = 2;
		f->lens[i] = 64;
		f->ok[i] = true;
	}
}

/* Both pages are still the caller's: allocated, not registered. */
static void
pages_untouched(struct fixture *f)
{
	struct cxlp_stats st = kv_stats(f->h);

	cr_assert_eq(st.pages_allocated, 2, "pages were consumed");
	cr_assert_eq(st.keys, 0, "a key was registered");
	cr_assert_rc(cxlp_free(f->h, f->pages[0]), 0);
	cr_assert_rc(cxlp_free(f->h, f->pages[1]), 0);
	cxlp_close(&f->h);
}

static int
store(struct fixture *f, size_t n)
{
	return cxlp_batch_store(f->h, n, f->kp, f->kl, f->pages, f->lens, 0,
	    f->ok);
}

Test(args, zero_or_oversized_batch_is_refused)
{
	struct fixture f;

	setup(&f);
	cr_assert_rc(store(&f, 0), -EINVAL);
	cr_assert_rc(store(&f, CXLP_BATCH_MAX + 1), -EINVAL);
	pages_untouched(&f);
}

Test(args, null_arrays_are_refused)
{
	struct fixture f;

	setup(&f);
	cr_assert_rc(cxlp_batch_store(f.h, 2, NULL, f.kl, f.pages, f.lens, 0,
	    f.ok), -EINVAL);
	cr_assert_rc(cxlp_batch_store(f.h, 2, f.kp, f.kl, NULL, f.lens, 0,
	    f.ok), -EINVAL);
	cr_assert_rc(cxlp_batch_store(f.h, 2, f.kp, f.kl, f.pages, f.lens, 0,
	    NULL), -EINVAL);
	cr_assert_rc(cxlp_batch_store(NULL, 2, f.kp, f.kl, f.pages, f.lens, 0,
	    f.ok), -EINVAL);
	pages_untouched(&f);
}

Test(args, empty_and_oversized_keys_are_refused)
{
	struct fixture f;
	static char big[CXLP_KEY_MAX + 1];

	setup(&f);
	f.kl[1] = 0;
	cr_assert_rc(store(&f, 2), CXLP_E_KEYLEN);
	memset(big, 'k', sizeof(big));
	f.kp[1] = big;
	f.kl[1] = sizeof(big);
	cr_assert_rc(store(&f, 2), CXLP_E_KEYLEN);
	pages_untouched(&f);
}

Test(args, value_longer_than_a_page_is_refused)
{
	struct fixture f;

	setup(&f);
	f.lens[1] = cxlp_page_size(f.h) + 1;
	cr_assert_rc(store(&f, 2), CXLP_E_TOOBIG);
	pages_untouched(&f);
}

Test(args, page_named_twice_is_refused)
{
	struct fixture f;
	cxlp_page_t second;

	setup(&f);
	second = f.pages[1];
	f.pages[1] = f.pages[0];
	cr_assert_rc(store(&f, 2), CXLP_E_BADPAGE);
	f.pages[1] = second;
	pages_untouched(&f);
}

Test(args, freed_and_foreign_pages_are_refused)
{
	struct fixture f;
	cxlp_page_t freed, bogus = ((cxlp_page_t)77 << 32) | 5;
	void *buf;

	setup(&f);
	cr_assert_rc(cxlp_alloc(f.h, &freed, &buf), 0);
	cr_assert_rc(cxlp_free(f.h, freed), 0);
	cr_assert_rc(cxlp_free(f.h, freed), CXLP_E_BADPAGE);
	f.pages[1] = freed;
	cr_assert_rc(store(&f, 2), CXLP_E_BADPAGE);
	f.pages[1] = bogus;
	cr_assert_rc(store(&f, 2), CXLP_E_BADPAGE);
	cr_assert_rc(cxlp_free(f.h, bogus), CXLP_E_BADPAGE);
	cr_assert_rc(cxlp_free(f.h, f.pages[0]), 0);
	{
		struct cxlp_stats st = kv_stats(f.h);

		cr_assert_eq(st.pages_allocated, 1);
		cr_assert_eq(st.keys, 0);
	}
	cxlp_close(&f.h);
}

Test(args, registered_page_cannot_be_stored_again_or_freed)
{
	struct fixture f;

	setup(&f);
	cr_assert_rc(store(&f, 1), 0);
	cr_assert(f.ok[0]);
	f.kp[0] = "other";
	f.kl[0] = 5;
	cr_assert_rc(store(&f, 1), CXLP_E_BADPAGE);
	cr_assert_rc(cxlp_free(f.h, f.pages[0]), CXLP_E_BADPAGE);
	cr_assert_rc(cxlp_exists(f.h, "other", 5), 0);
	cxlp_close(&f.h);
}
