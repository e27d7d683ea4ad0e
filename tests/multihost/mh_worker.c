/*
 * mh_worker.c -- mh-worker: the handler processes of the multi-host
 * tests, each on the simulated host its environment names (mh.h has the
 * roles and what they write). Like tests/integration/worker.c, exec'd
 * fresh (nng does not run in a forked copy), and it reports through its
 * stdout and its exit code; unlike it, a worker connects before its go
 * byte, so that every host has its view of the pool before the writes.
 * This file: the writer and the reader; mh_worker_roles.c the others.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvtest.h"
#include "mh_worker.h"

/* mh_connect -- see mh_worker.h */
struct cxlp_handler *
mh_connect(const char *url, size_t page, size_t region, bool direct)
{
	return mh_connect_pool(url, NULL, page, region, direct);
}

/* mh_connect_pool -- see mh_worker.h */
struct cxlp_handler *
mh_connect_pool(const char *url, const char *pool, size_t page,
    size_t region, bool direct)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;
	int rc;

	if (cxlp_config_new(&cfg) != 0) {
		return NULL;
	}
	rc = cxlp_config_set_server(cfg, url);
	rc = rc ? rc : cxlp_config_set_pool(cfg, pool);
	rc = rc ? rc : cxlp_config_set_page_size(cfg, page);
	rc = rc ? rc : cxlp_config_set_region_size(cfg, region);
	rc = rc ? rc : cxlp_config_set_auto_expand(cfg, true);
	rc = rc ? rc : cxlp_config_set_direct_reads(cfg, direct);
	/* a server killed under it comes back within seconds (restart) */
	rc = rc ? rc : cxlp_config_set_timeout_ms(cfg, 2000);
	rc = rc ? rc : cxlp_config_set_retries(cfg, 15);
	rc = rc ? rc : cxlp_connect(&h, cfg);
	if (rc != 0) {
		fprintf(stderr, "mh-worker: connect %s: %s (%s)\n", url,
		    cxlp_strerror(rc), cxlp_errormsg());
	}
	cxlp_config_delete(&cfg);
	return h;
}

/* mh_ready_go -- see mh_worker.h */
int
mh_ready_go(void)
{
	char c = MH_READY;

	if (write(STDOUT_FILENO, &c, 1) != 1 ||
	    read(STDIN_FILENO, &c, 1) != 1) {
		return -1;
	}
	return 0;
}

/* mh_stdin_said -- see mh_worker.h */
bool
mh_stdin_said(void)
{
	struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
	char c;

	if (poll(&p, 1, 0) <= 0) {
		return false;
	}
	(void)!read(STDIN_FILENO, &c, 1);
	return true;
}

/* mh_put_u32 -- see mh_worker.h */
int
mh_put_u32(uint32_t v)
{
	return write(STDOUT_FILENO, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

/* ---- writer ---- */

static int
write_batch(struct cxlp_handler *h, const char *prefix, uint32_t writer,
    uint32_t first, uint32_t n)
{
	char kb[MH_BATCH][48];
	const void *kp[MH_BATCH];
	size_t kl[MH_BATCH], lens[MH_BATCH];
	cxlp_page_t pg[MH_BATCH];
	bool ok[MH_BATCH];
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		void *buf;

		if ((rc = cxlp_alloc(h, &pg[i], &buf)) != 0) {
			fprintf(stderr, "mh-worker: alloc: %s (%s)\n",
			    cxlp_strerror(rc), cxlp_errormsg());
			return 10;
		}
		kl[i] = kv_key(kb[i], sizeof(kb[i]), prefix, first + i);
		kp[i] = kb[i];
		lens[i] = mh_len(first + i);
		kv_fill(buf, lens[i], writer, first + i);
	}
	rc = cxlp_batch_store(h, n, kp, kl, pg, lens, 0, ok);
	if (rc == CXLP_E_UNKNOWN) {
		return 0; /* maybe stored: not acknowledged */
	}
	if (rc != 0) {
		fprintf(stderr, "mh-worker: batch_store %s-%u: %s (%s)\n",
		    prefix, first, cxlp_strerror(rc), cxlp_errormsg());
		return 11;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!ok[i]) {
			fprintf(stderr, "mh-worker: %s stored false\n", kb[i]);
			return 12;
		}
		if (mh_put_u32(first + i) != 0) {
			return 13;
		}
	}
	return 0;
}

/* The writer may store key k: a byte on stdin (waited for when k has
 * reached *allow, the keys it may store; LEG 0: never) is MH_MORE,
 * which lets it store leg keys more, or stops it (any other byte, EOF). */
static bool
writer_may(uint32_t k, uint32_t leg, uint32_t *allow)
{
	struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
	char c;
	int r;

	while ((r = poll(&p, 1, leg != 0 && k >= *allow ? -1 : 0)) != 0) {
		if (r < 0 && errno == EINTR) {
			continue;
		}
		if (r < 0 || read(STDIN_FILENO, &c, 1) != 1 || leg == 0 ||
		    c != MH_MORE) {
			return false;
		}
		*allow += leg;
	}
	return leg == 0 || k < *allow;
}

/* writer PREFIX:WRITER:N[:LEG] -- mh.h */
static int
writer(const char *url, const char *arg)
{
	char prefix[MH_PREFIX];
	unsigned w, n, leg = 0;
	uint32_t allow;
	struct cxlp_handler *h;
	int rc = 0;

	if (sscanf(arg, "%15[^:]:%u:%u:%u", prefix, &w, &n, &leg) < 3) {
		return 2;
	}
	if ((h = mh_connect(url, MH_PAGE, MH_REGION, true)) == NULL) {
		return 100;
	}
	if (mh_ready_go() != 0) {
		return 99;
	}
	allow = leg;
	for (uint32_t k = 0, b = 0; rc == 0 && (n == 0 || k < n) &&
	    writer_may(k, leg, &allow); k += b) {
		b = n == 0 || n - k >= MH_BATCH ? MH_BATCH : n - k;
		if (leg != 0 && allow - k < b) {
			b = allow - k;
		}
		rc = write_batch(h, prefix, w, k, b);
	}
	if (rc == 0 && mh_put_u32(MH_END) != 0) {
		rc = 13;
	}
	cxlp_close(&h);
	return rc;
}

/* ---- reader ---- */

struct rstate {
	struct cxlp_handler *h;
	char mode;
	struct mh_spec *spec;
	uint32_t nspec;
	struct mh_result r;
	uint8_t copy[MH_PAGE];
};

static void
note_bad(struct rstate *s, const char *key)
{
	if (s->r.first_bad[0] == '\0') {
		snprintf(s->r.first_bad, sizeof(s->r.first_bad), "%.47s",
		    key);
	}
}

static void
note_error(struct rstate *s, const char *key, int rc)
{
	if (s->r.error == 0) {
		s->r.error = rc;
		fprintf(stderr, "mh-worker: reading %s: %s (%s)\n", key,
		    cxlp_strerror(rc), cxlp_errormsg());
	}
}

/* is data[0..len) the pattern of (writer, key)? */
static bool
intact(const void *data, size_t len, uint32_t key, uint32_t writer)
{
	uint32_t w = 0;

	return kv_check(data, len, key, &w) && w == writer;
}

/* v: retrieve_v, copy, validate; again while validate says CHANGED.
 * 0 with the copy in s->copy, CXLP_E_NOTFOUND, or an error. */
static int
get_versioned(struct rstate *s, const char *k, size_t kl, size_t *len)
{
	for (int tries = 0; tries < 20; tries++) {
		cxlp_version_t ver;
		const void *data;
		int rc = cxlp_retrieve_v(s->h, k, kl, 0, &data, len, &ver);

		if (rc != 0) {
			return rc;
		}
		if (*len > sizeof(s->copy)) {
			return CXLP_E_BOUNDS;
		}
		memcpy(s->copy, data, *len);
		if ((rc = cxlp_validate(s->h, &ver)) == 0) {
			return 0;
		}
		if (rc != CXLP_E_CHANGED) {
			return rc;
		}
		s->r.changed++;
	}
	return CXLP_E_CHANGED;
}

/* one key of a spec: 1 found intact, 0 absent, -1 wrong or failed */
static int
read_one(struct rstate *s, const struct mh_spec *sp, uint32_t i)
{
	char k[48];
	size_t kl = kv_key(k, sizeof(k), sp->prefix, i), len = 0;
	const void *data = s->copy;
	int rc = s->mode == 'v' ? get_versioned(s, k, kl, &len) :
	    cxlp_retrieve(s->h, k, kl, 0, &data, &len);

	if (rc == CXLP_E_NOTFOUND) {
		return 0;
	}
	if (rc != 0) {
		note_error(s, k, rc);
		note_bad(s, k);
		return -1;
	}
	if (!intact(data, len, i, sp->writer)) {
		s->r.wrong++;
		note_bad(s, k);
		return -1;
	}
	s->r.seen++;
	return 1;
}

/* g: one group, all or none */
static void
read_group(struct rstate *s, const struct mh_spec *sp, bool last)
{
	char kb[MH_GROUP][48];
	const void *kp[MH_GROUP], *data[MH_GROUP];
	size_t kl[MH_GROUP], lens[MH_GROUP];
	int st[MH_GROUP], rc;
	uint32_t found = 0, n = sp->n < MH_GROUP ? sp->n : MH_GROUP;

	if (n == 0) {
		return;
	}

	for (uint32_t i = 0; i < n; i++) {
		kl[i] = kv_key(kb[i], sizeof(kb[i]), sp->prefix, i);
		kp[i] = kb[i];
	}
	if ((rc = cxlp_batch_retrieve(s->h, n, kp, kl, 0, data, lens,
	    st)) != 0) {
		note_error(s, kb[0], rc);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (st[i] == 0 && intact(data[i], lens[i], i, sp->writer)) {
			found++;
		} else if (st[i] == 0) {
			s->r.wrong++;
			note_bad(s, kb[i]);
		} else if (st[i] != CXLP_E_NOTFOUND) {
			note_error(s, kb[i], st[i]);
		}
	}
	s->r.seen += found;
	if (found > 0 && found < n) {
		s->r.partial++;
		note_bad(s, kb[0]);
	}
	if (last && sp->must && found < n) {
		s->r.missing++;
		note_bad(s, kb[0]);
	}
}

static void
read_pass(struct rstate *s, bool last)
{
	for (uint32_t j = 0; j < s->nspec; j++) {
		const struct mh_spec *sp = &s->spec[j];

		if (s->mode == 'g') {
			read_group(s, sp, last);
			continue;
		}
		for (uint32_t i = sp->first; i < sp->first + sp->n; i++) {
			if (read_one(s, sp, i) == 0 && last && sp->must) {
				char k[48];

				kv_key(k, sizeof(k), sp->prefix, i);
				s->r.missing++;
				note_bad(s, k);
			}
		}
	}
	s->r.passes++;
}

static int
read_specs(struct rstate *s)
{
	size_t want;

	if (read(STDIN_FILENO, &s->nspec, sizeof(s->nspec)) !=
	    sizeof(s->nspec) || s->nspec == 0 || s->nspec > 4096) {
		return -1;
	}
	want = s->nspec * sizeof(*s->spec);
	if ((s->spec = malloc(want)) == NULL) {
		return -1;
	}
	for (size_t got = 0; got < want;) {
		ssize_t k = read(STDIN_FILENO, (char *)s->spec + got,
		    want - got);

		if (k <= 0) {
			return -1;
		}
		got += (size_t)k;
	}
	return 0;
}

/* reader MODE -- mh.h */
static int
reader(const char *url, const char *arg)
{
	static struct rstate s;
	bool once = arg[0] != '\0' && arg[1] == 'o';

	s.mode = arg[0];
	if (strchr("dsvg", s.mode) == NULL || s.mode == '\0') {
		return 2;
	}
	s.h = mh_connect(url, MH_PAGE, MH_REGION, s.mode != 's');
	if (s.h == NULL) {
		return 100;
	}
	if (mh_ready_go() != 0 || read_specs(&s) != 0) {
		return 99;
	}
	while (!once && !mh_stdin_said()) {
		read_pass(&s, false);
	}
	read_pass(&s, true);
	if (write(STDOUT_FILENO, &s.r, sizeof(s.r)) != sizeof(s.r)) {
		return 13;
	}
	cxlp_close(&s.h);
	free(s.spec);
	return 0;
}

static const struct role {
	const char *name;
	int (*fn)(const char *url, const char *arg);
} roles[] = {
	{ "writer", writer },
	{ "reader", reader },
	{ "group-writer", mh_group_writer },
	{ "churn", mh_churn },
	{ "hot-reader", mh_hot_reader },
	{ "connect", mh_connect_only },
	{ "rewrite", mh_rewrite },
	{ "follower", mh_follower },
};

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: mh-worker ROLE URL ARG\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
		if (strcmp(argv[1], roles[i].name) == 0) {
			return roles[i].fn(argv[2], argv[3]);
		}
	}
	fprintf(stderr, "mh-worker: unknown role %s\n", argv[1]);
	return 2;
}
