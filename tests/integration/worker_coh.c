/*
 * worker_coh.c -- itest-worker's coh-writer and coh-reader roles
 * (test_coh_read.c): a handler on a simulated host of its own (the role's
 * argument names it: CXLP_SIM_HOST), driven one command byte at a time
 * from stdin, answering each with a struct coh_reply on stdout.
 *
 *   coh-writer: 'p' store key COH_KEY (writer 1) in a new page;
 *               's' delete it and store it again in the same page (the
 *               writer's id goes up by one: other bytes);
 *               'o' store it again in another page (likewise).
 *   coh-reader: 'g' retrieve_v it, check its bytes, validate the version
 *               just taken (vrc) and keep the first one taken;
 *               'v' validate that first version (vrc);
 *               'P' cxlp_prepare_read of the last value retrieved, then
 *               check its bytes again without a retrieve (prc, writer).
 *   both:       'q' close and exit 0.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvtest.h"
#include "worker.h"

#define MiB (1024ull * 1024)

static int
reply(const struct coh_reply *r)
{
	return write(STDOUT_FILENO, r, sizeof(*r)) == (ssize_t)sizeof(*r) ?
	    0 : 33;
}

static struct cxlp_handler *
coh_connect(const char *host)
{
	char ready = 'c';
	struct cxlp_handler *h;

	setenv("CXLP_SIM_HOST", host, 1); /* before any thread starts */
	h = kv_connect(worker_url, 4096, 4 * MiB, true);
	if (h == NULL || write(STDOUT_FILENO, &ready, 1) != 1) {
		cxlp_close(&h);
		return NULL;
	}
	return h;
}

/* store COH_KEY with writer w's bytes in page pg (buf) */
static int
store_in(struct cxlp_handler *h, cxlp_page_t pg, void *buf, uint32_t w)
{
	char k[32];
	size_t kl = kv_key(k, sizeof(k), "coh", COH_KEY);
	bool ok = false;
	int rc;

	kv_fill(buf, COH_LEN, w, COH_KEY);
	rc = cxlp_store(h, k, kl, pg, COH_LEN, 0, &ok);
	return rc == 0 && !ok ? -1 : rc;
}

static int
del(struct cxlp_handler *h)
{
	char k[32];

	return cxlp_delete(h, k, kv_key(k, sizeof(k), "coh", COH_KEY));
}

/* a page again at buf (the page freed by the delete): alloc until it
 * comes back, freeing the others; 0 and *pg, or an error */
static int
alloc_at(struct cxlp_handler *h, void *want, cxlp_page_t *pg)
{
	cxlp_page_t other[64];
	int n = 0, rc = -1;
	void *buf = NULL;

	while (n < 64 && (rc = cxlp_alloc(h, pg, &buf)) == 0 && buf != want) {
		other[n++] = *pg;
	}
	while (n > 0) {
		(void)cxlp_free(h, other[--n]);
	}
	return rc != 0 ? rc : buf == want ? 0 : -2;
}

/* coh_writer -- see the top */
int
coh_writer(int argc, char **argv)
{
	struct cxlp_handler *h = coh_connect(argv[argc - 1]);
	uint32_t w = 1;
	cxlp_page_t pg = 0, pg2;
	void *buf = NULL, *buf2;
	char c;

	if (h == NULL) {
		return 100;
	}
	while (read(STDIN_FILENO, &c, 1) == 1 && c != 'q') {
		struct coh_reply r = { 0 };

		if (c == 'p') {
			r.rc = cxlp_alloc(h, &pg, &buf);
			r.rc = r.rc != 0 ? r.rc : store_in(h, pg, buf, w);
		} else if (c == 's') {
			r.rc = del(h);
			r.rc = r.rc != 0 ? r.rc : alloc_at(h, buf, &pg);
			r.rc = r.rc != 0 ? r.rc : store_in(h, pg, buf, ++w);
		} else if (c == 'o') {
			r.rc = cxlp_alloc(h, &pg2, &buf2);
			r.rc = r.rc != 0 ? r.rc : del(h);
			r.rc = r.rc != 0 ? r.rc : store_in(h, pg2, buf2, ++w);
			pg = pg2;
			buf = buf2;
		} else {
			r.rc = -22;
		}
		r.writer = w;
		if (reply(&r) != 0) {
			return 33;
		}
	}
	cxlp_close(&h);
	return 0;
}

/* the writer whose bytes data holds, or 0 if they are not a whole value */
static uint32_t
whose(const void *data, size_t len)
{
	uint32_t w = 0;

	return len == COH_LEN && kv_check(data, len, COH_KEY, &w) ? w : 0;
}

/* coh_reader -- see the top */
int
coh_reader(int argc, char **argv)
{
	struct cxlp_handler *h = coh_connect(argv[argc - 1]);
	cxlp_version_t first, ver;
	bool have_first = false;
	const void *data = NULL;
	size_t len = 0;
	char c, k[32];
	size_t kl = kv_key(k, sizeof(k), "coh", COH_KEY);

	if (h == NULL) {
		return 100;
	}
	while (read(STDIN_FILENO, &c, 1) == 1 && c != 'q') {
		struct coh_reply r = { 0 };

		if (c == 'g') {
			r.rc = cxlp_retrieve_v(h, k, kl, 0, &data, &len, &ver);
			if (r.rc == 0) {
				r.writer = whose(data, len);
				r.vrc = cxlp_validate(h, &ver);
				if (!have_first) {
					first = ver;
					have_first = true;
				}
			}
		} else if (c == 'v') {
			r.vrc = have_first ? cxlp_validate(h, &first) : -22;
		} else if (c == 'P' && data != NULL) {
			r.prc = cxlp_prepare_read(h, data, len);
			r.writer = whose(data, len);
		} else {
			r.rc = -22;
		}
		if (reply(&r) != 0) {
			return 33;
		}
	}
	cxlp_close(&h);
	return 0;
}
