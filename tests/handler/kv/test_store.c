/*
 * test_store.c -- tests of handler/kv/store.c against a real metaserver:
 * what a store that the server partly refuses tells its caller, and
 * DESIGN contract 1 read from the handler's recording hooks (trace.h):
 * every page's [0, len) persisted before the REGISTER naming it is sent.
 *
 * The pool is formatted with the smallest KV index (--index-slots 64,
 * room for 48 keys), so that a batch can fill it and the server refuses
 * the keys past the 48th with CXLP_E_NOSPACE.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlpool.h"
#include "handler_fixture.h"

#define PAGE (64u << 10)
#define REGION (8u << 20)
#define ROOM 48 /* keys a 64-slot index takes (3/4 of its slots) */
#define N 60

static void
setup(void)
{
	static const char *const args[] = { "--index-slots", "64", NULL };

	hfx_start_with(PAGE, REGION, args);
}

TestSuite(store, .init = setup, .fini = hfx_stop, .timeout = 100);

static char keybuf[N][16];
static const void *keys[N];
static size_t klens[N], lens[N];
static cxlp_page_t pages[N];

/* Allocate n pages, write one byte in each, name keys "<prefix>-<i>". */
static void
batch_fill(struct cxlp_handler *h, size_t n, const char *prefix)
{
	for (size_t i = 0; i < n; i++) {
		void *buf;
		int rc = cxlp_alloc(h, &pages[i], &buf);

		cr_assert_eq(rc, 0, "alloc: %s", cxlp_errormsg());
		*(unsigned char *)buf = (unsigned char)i;
		snprintf(keybuf[i], sizeof(keybuf[i]), "%s-%zu", prefix, i);
		keys[i] = keybuf[i];
		klens[i] = strlen(keybuf[i]);
		lens[i] = 1;
	}
}

Test(store, a_full_index_refuses_keys_with_nospace_per_key_and_says_why)
{
	struct cxlp_handler *h = hfx_connect();
	bool stored[N];
	int status[N];
	size_t nstored = 0;
	struct cxlp_stats st;

	batch_fill(h, N, "k");
	/* a stale message from an earlier failure must not survive */
	cr_assert_eq(cxlp_free(h, (cxlp_page_t)77 << 32), CXLP_E_BADPAGE);
	cr_assert_eq(cxlp_batch_store_status(h, N, keys, klens, pages, lens,
	    0, stored, status), 0);
	for (size_t i = 0; i < N; i++) {
		nstored += stored[i];
		cr_assert_eq(status[i], stored[i] ? 0 : CXLP_E_NOSPACE,
		    "key %zu: stored %d status %d", i, stored[i], status[i]);
	}
	cr_assert_eq(nstored, ROOM);
	cr_assert(stored[0] && !stored[ROOM]);
	cr_assert_not_null(strstr(cxlp_errormsg(), "12 of 60 keys not "
	    "stored; first key 48 \"k-48\": CXLP_E_NOSPACE"), "message: %s",
	    cxlp_errormsg());
	cr_assert_not_null(strstr(cxlp_errormsg(), "index"), "message: %s",
	    cxlp_errormsg());
	cr_assert(test_server_log_has(&srv, "failed=12 pin=0 rc=0 "
	    "first_failure=\"index full: 48 of 48 keys\""),
	    "the server's log says why too");
	cr_assert_eq(cxlp_stats(h, &st), 0);
	cr_assert_eq(st.keys, ROOM);
	cr_assert_eq(st.pages_registered, ROOM);
	cr_assert_eq(st.pages_allocated, 0, "refused pages were freed");
	cxlp_close(&h);
}

Test(store, a_single_store_into_a_full_index_names_its_key)
{
	struct cxlp_handler *h = hfx_connect();
	bool stored[N], one = true;
	char msg[256];

	batch_fill(h, ROOM, "f");
	cr_assert_eq(cxlp_batch_store(h, ROOM, keys, klens, pages, lens, 0,
	    stored), 0);
	batch_fill(h, 1, "late\x01");
	cr_assert_eq(cxlp_store(h, keys[0], klens[0], pages[0], 1, 0, &one),
	    0);
	cr_assert(!one);
	snprintf(msg, sizeof(msg), "%s", cxlp_errormsg());
	cr_assert_not_null(strstr(msg, "1 of 1 keys not stored; first key 0 "
	    "\"late\\x01-0\": CXLP_E_NOSPACE"), "message: %s", msg);
	cxlp_close(&h);
}

/* ---- contract 1: every page persisted before the REGISTER naming it -- */

#define MAX_EVENTS 256

struct range {
	unsigned long long off, len;
};

/* Check the trace at path: every "reg" entry's [off, off + len) lies in
 * a range persisted on an earlier line. Returns how many entries. */
static size_t
check_trace(const char *path)
{
	static struct range done[MAX_EVENTS];
	size_t ndone = 0, nreg = 0;
	unsigned long long off, len;
	char line[128];
	FILE *f = fopen(path, "r");

	cr_assert_not_null(f, "no trace at %s (built with -Dtest_hooks=false?)",
	    path);
	while (fgets(line, sizeof(line), f) != NULL) {
		bool covered = false;

		if (sscanf(line, "persist %llu %llu", &off, &len) == 2) {
			cr_assert_lt(ndone, MAX_EVENTS);
			done[ndone++] = (struct range){ off, len };
			continue;
		}
		if (sscanf(line, "reg %llu %llu", &off, &len) != 2) {
			continue; /* "register N" */
		}
		nreg++;
		for (size_t i = 0; i < ndone && !covered; i++) {
			covered = off >= done[i].off &&
			    off + len <= done[i].off + done[i].len;
		}
		cr_assert(covered || len == 0, "page at %llu (%llu bytes) was "
		    "registered before it was persisted", off, len);
	}
	fclose(f);
	return nreg;
}

Test(store, every_page_is_persisted_before_the_register_naming_it)
{
	char path[64];
	struct cxlp_handler *h;
	bool stored[N];
	size_t n = 16;

	snprintf(path, sizeof(path), "/tmp/cxlp_trace_%d", (int)getpid());
	unlink(path);
	cr_assert_eq(setenv("CXLP_TRACE_FILE", path, 1), 0);
	h = hfx_connect();
	batch_fill(h, 3, "one"); /* store, one key at a time */
	for (size_t i = 0; i < 3; i++) {
		lens[i] = 100 * i + 1;
		cr_assert_eq(cxlp_store(h, keys[i], klens[i], pages[i],
		    lens[i], 0, stored), 0);
		cr_assert(stored[0]);
	}
	batch_fill(h, n, "run"); /* adjacent pages: persisted as runs */
	for (size_t i = 0; i < n; i++) {
		lens[i] = i % 4 == 3 ? 5000 : PAGE;
	}
	cr_assert_eq(cxlp_batch_store(h, n, keys, klens, pages, lens, 0,
	    stored), 0);
	batch_fill(h, 8, "rev"); /* out of order, pinned */
	for (size_t i = 0; i < 4; i++) {
		cxlp_page_t t = pages[i];

		pages[i] = pages[7 - i];
		pages[7 - i] = t;
		lens[i] = 4096 * (i + 1);
	}
	cr_assert_eq(cxlp_batch_store(h, 8, keys, klens, pages, lens,
	    CXLP_STORE_PIN, stored), 0);
	cxlp_close(&h);
	cr_assert_eq(check_trace(path), 3 + n + 8);
	unlink(path);
}
