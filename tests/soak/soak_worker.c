/*
 * soak_worker.c -- one handler process of the soak (see soak.c): a mixed
 * workload on one connection, reporting what it knows as events.
 *
 * Each step is one of: batch_store of shared keys (overlapping with every
 * other worker; sometimes with CXLP_STORE_PIN, unpinned right after),
 * batch_store of new private keys, deletes of private keys (of this or an
 * earlier, killed incarnation: random ones of the last SOAK_PRIVATE_LIVE
 * numbers, and every older one, once), batch_retrieve with pins of shared keys
 * (bytes checked; the pins are held until the next retrieve, so a kill
 * usually finds some), or pages allocated and written but never
 * registered (freed a step later). Any wrong byte or unexpected error
 * exits non-zero, which fails the soak. With CXLP_SOAK_STRICT=1 in its
 * environment (a soak without kills) every call must succeed: an outcome
 * left unknown (CXLP_E_UNKNOWN, a delete that timed out) fails it too.
 *
 * On a full pool (cxlp-soak --evict) a worker holds at most
 * CXLP_SOAK_MAX_REGIONS regions (its environment), so that the workers'
 * shares fill the pool and each one's stores evict its own keys; a
 * worker started in place of a killed one may find no region for its
 * connect until the server has seen its predecessor die and can empty
 * that one's orphaned regions: it tries again, for a few seconds, while
 * the connect answers CXLP_E_NOSPACE.
 *
 * A 'q' on stdin stops the workload: the worker drops its pins and
 * unregistered pages, writes E_STATS and its page counts, stays connected
 * until stdin closes, then closes the handler and exits 0.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxlpool.h"
#include "kvtest.h"
#include "soak.h"

#define BATCH_MAX 16
#define HELD_MAX 8

struct wstate {
	struct cxlp_handler *h;
	unsigned id;
	uint32_t next;               /* next private key number */
	uint32_t first;              /* first number of this incarnation */
	uint32_t swept;              /* numbers below this left the window */
	uint32_t pinned[BATCH_MAX];  /* shared keys held pinned */
	unsigned npinned;
	cxlp_page_t held[HELD_MAX];  /* allocated, never registered */
	unsigned nheld;
	bool strict;                 /* every call must succeed */
};

void
soak_shared_key(char *out, size_t n, uint32_t i)
{
	snprintf(out, n, "soak/shared/%u", i);
}

void
soak_private_key(char *out, size_t n, unsigned worker, uint32_t i)
{
	snprintf(out, n, "soak/w%u/%u", worker, i);
}

uint32_t
soak_private_id(unsigned worker, uint32_t i)
{
	return 0x80000000u | (uint32_t)worker << 20 | i;
}

static void
emit(uint8_t type, uint32_t key)
{
	struct soak_event e = { .type = type, .key = key };

	if (write(STDOUT_FILENO, &e, sizeof(e)) != (ssize_t)sizeof(e)) {
		exit(40);
	}
}

static unsigned
rnd(unsigned n)
{
	return (unsigned)rand() % n;
}

/* Store n keys (names and pattern numbers given); returns the batch_store
 * result and fills ok[]. Pages that cannot be had (pool full) end the
 * batch early: *n shrinks. */
static int
store_keys(struct wstate *w, char names[][48], const uint32_t *ids,
    size_t *n, unsigned flags, bool *ok)
{
	const void *kp[BATCH_MAX];
	size_t kl[BATCH_MAX], lens[BATCH_MAX];
	cxlp_page_t pages[BATCH_MAX];
	void *buf;
	size_t i;

	for (i = 0; i < *n; i++) {
		int rc = cxlp_alloc(w->h, &pages[i], &buf);

		if (rc == CXLP_E_NOSPACE) {
			break;
		}
		if (rc != 0) {
			exit(41);
		}
		kp[i] = names[i];
		kl[i] = strlen(names[i]);
		lens[i] = 64 + rnd(SOAK_PAGE - 64);
		kv_fill(buf, lens[i], w->id, ids[i]);
	}
	*n = i;
	if (i == 0) {
		return 0;
	}
	return cxlp_batch_store(w->h, i, kp, kl, pages, lens, flags, ok);
}

/* A pinned store whose outcome is unknown holds one pin or none on each
 * key it did not report stored (cxlpool.h, CXLP_E_UNKNOWN): unpin them
 * all, a refusal meaning there was none, so that the live audit finds no
 * pin of this worker's. */
static void
unpin_unsure(struct wstate *w, char names[][48], size_t n, const bool *ok)
{
	const void *kp[BATCH_MAX];
	size_t kl[BATCH_MAX], m = 0;
	int st[BATCH_MAX];

	for (size_t i = 0; i < n; i++) {
		if (!ok[i]) {
			kp[m] = names[i];
			kl[m++] = strlen(names[i]);
		}
	}
	if (m > 0) {
		(void)cxlp_batch_unpin(w->h, m, kp, kl, st);
	}
}

static void
step_shared(struct wstate *w)
{
	char names[BATCH_MAX][48];
	uint32_t ids[BATCH_MAX];
	const void *kp[BATCH_MAX];
	size_t kl[BATCH_MAX], n = 4 + rnd(BATCH_MAX - 3), np = 0;
	unsigned flags = rnd(3) == 0 ? CXLP_STORE_PIN : 0;
	bool ok[BATCH_MAX];
	int st[BATCH_MAX];
	int rc;

	for (size_t i = 0; i < n; i++) {
		ids[i] = rnd(SOAK_SHARED);
		soak_shared_key(names[i], sizeof(names[i]), ids[i]);
	}
	rc = store_keys(w, names, ids, &n, flags, ok);
	if (rc != 0 && (w->strict || rc != CXLP_E_UNKNOWN)) {
		exit(42);
	}
	for (size_t i = 0; i < n; i++) {
		if (ok[i]) {
			emit(E_STORED_SHARED, ids[i]);
			kp[np] = names[i];
			kl[np++] = strlen(names[i]);
		}
	}
	if (flags == CXLP_STORE_PIN && np > 0 &&
	    cxlp_batch_unpin(w->h, np, kp, kl, st) != 0) {
		exit(43);
	}
	for (size_t i = 0; flags == CXLP_STORE_PIN && i < np; i++) {
		if (st[i] != 0) {
			exit(44);
		}
	}
	if (flags == CXLP_STORE_PIN && rc == CXLP_E_UNKNOWN) {
		unpin_unsure(w, names, n, ok);
	}
}

static void
step_private(struct wstate *w)
{
	char names[BATCH_MAX][48];
	uint32_t ids[BATCH_MAX], nums[BATCH_MAX];
	size_t n = 1 + rnd(8);
	bool ok[BATCH_MAX];
	int rc;

	for (size_t i = 0; i < n; i++) {
		nums[i] = w->next++;
		ids[i] = soak_private_id(w->id, nums[i]);
		soak_private_key(names[i], sizeof(names[i]), w->id, nums[i]);
	}
	rc = store_keys(w, names, ids, &n, 0, ok);
	if (rc != 0 && (w->strict || rc != CXLP_E_UNKNOWN)) {
		exit(45);
	}
	for (size_t i = 0; i < n; i++) {
		emit(ok[i] ? E_STORED_PRIV : rc != 0 ? E_UNKNOWN_PRIV :
		    E_DELETED_PRIV, nums[i]);
	}
}

/* Delete private key i of this worker id, telling the parent before and
 * after. */
static void
delete_private(struct wstate *w, uint32_t i)
{
	char name[48];
	int rc;

	soak_private_key(name, sizeof(name), w->id, i);
	emit(E_DELETING_PRIV, i);
	rc = cxlp_delete(w->h, name, strlen(name));
	if (rc == 0 || rc == CXLP_E_NOTFOUND) {
		emit(E_DELETED_PRIV, i);
	} else if (rc == CXLP_E_PERM || rc == CXLP_E_PINNED) {
		emit(E_KEPT_PRIV, i); /* an earlier me not yet ended */
	} else if (w->strict) {
		exit(39);
	} else {
		emit(E_UNKNOWN_PRIV, i);
	}
}

/* A few random private keys of the live window, then every key that has
 * left it: the live private keys stay within SOAK_PRIVATE_LIVE per
 * worker, so the pool does not fill however long the soak runs (random
 * picks alone leave about half of the keys behind). */
static void
step_delete(struct wstate *w)
{
	uint32_t lo = w->next > SOAK_PRIVATE_LIVE ?
	    w->next - SOAK_PRIVATE_LIVE : 0;

	for (unsigned k = 1 + rnd(6); k > 0 && w->next > lo; k--) {
		delete_private(w, lo + rnd(w->next - lo));
	}
	for (; w->swept < lo; w->swept++) {
		delete_private(w, w->swept);
	}
}

static void
unpin_held(struct wstate *w)
{
	char names[BATCH_MAX][48];
	const void *kp[BATCH_MAX];
	size_t kl[BATCH_MAX];
	int st[BATCH_MAX];

	if (w->npinned == 0) {
		return;
	}
	for (unsigned i = 0; i < w->npinned; i++) {
		soak_shared_key(names[i], sizeof(names[i]), w->pinned[i]);
		kp[i] = names[i];
		kl[i] = strlen(names[i]);
	}
	if (cxlp_batch_unpin(w->h, w->npinned, kp, kl, st) != 0) {
		exit(46);
	}
	for (unsigned i = 0; i < w->npinned; i++) {
		if (st[i] != 0) {
			exit(47);
		}
	}
	w->npinned = 0;
}

static void
step_retrieve(struct wstate *w)
{
	char names[BATCH_MAX][48];
	uint32_t ids[BATCH_MAX];
	const void *kp[BATCH_MAX], *data[BATCH_MAX];
	size_t kl[BATCH_MAX], lens[BATCH_MAX], n = 1 + rnd(8);
	int st[BATCH_MAX];

	unpin_held(w);
	for (size_t i = 0; i < n; i++) {
		ids[i] = rnd(SOAK_SHARED);
		soak_shared_key(names[i], sizeof(names[i]), ids[i]);
		kp[i] = names[i];
		kl[i] = strlen(names[i]);
	}
	if (cxlp_batch_retrieve(w->h, n, kp, kl, CXLP_RETRIEVE_PIN, data,
	    lens, st) != 0) {
		exit(48);
	}
	for (size_t i = 0; i < n; i++) {
		if (st[i] == CXLP_E_NOTFOUND) {
			continue;
		}
		if (st[i] != 0 || !kv_check(data[i], lens[i], ids[i], NULL)) {
			fprintf(stderr, "soak worker %u: %s: status %d or "
			    "bad bytes\n", w->id, names[i], st[i]);
			exit(49);
		}
		w->pinned[w->npinned++] = ids[i];
	}
}

static void
free_held(struct wstate *w)
{
	for (unsigned i = 0; i < w->nheld; i++) {
		if (cxlp_free(w->h, w->held[i]) != 0) {
			exit(50);
		}
	}
	w->nheld = 0;
}

static void
step_hold_pages(struct wstate *w)
{
	void *buf;

	free_held(w);
	for (unsigned k = 1 + rnd(HELD_MAX); k > 0; k--) {
		int rc = cxlp_alloc(w->h, &w->held[w->nheld], &buf);

		if (rc == CXLP_E_NOSPACE) {
			return;
		}
		if (rc != 0) {
			exit(51);
		}
		memset(buf, 0x5a, SOAK_PAGE);
		w->nheld++;
	}
}

#define CONNECT_TRIES 100 /* 50 ms apart */

/* a handler on url, trying again while the pool has no region for it */
static struct cxlp_handler *
connect_full(const char *url)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;
	int rc = cxlp_config_new(&cfg);

	rc = rc ? rc : cxlp_config_set_server(cfg, url);
	rc = rc ? rc : cxlp_config_set_page_size(cfg, SOAK_PAGE);
	rc = rc ? rc : cxlp_config_set_region_size(cfg, SOAK_REGION);
	rc = rc ? rc : cxlp_config_set_auto_expand(cfg, true);
	if (getenv("CXLP_SOAK_MAX_REGIONS") != NULL) {
		rc = rc ? rc : cxlp_config_set_max_regions(cfg,
		    (unsigned)atoi(getenv("CXLP_SOAK_MAX_REGIONS")));
	}
	for (int i = 0; rc == 0 || (rc == CXLP_E_NOSPACE &&
	    i < CONNECT_TRIES); i++) {
		if (i > 0) {
			usleep(50000);
		}
		if ((rc = cxlp_connect(&h, cfg)) == 0) {
			break;
		}
	}
	if (h == NULL) {
		fprintf(stderr, "soak worker: connect %s: %s (%s)\n", url,
		    cxlp_strerror(rc), cxlp_errormsg());
	}
	cxlp_config_delete(&cfg);
	return h;
}

/* A 'q' (or EOF) on stdin? */
static bool
asked_to_stop(void)
{
	struct pollfd p = { STDIN_FILENO, POLLIN, 0 };

	return poll(&p, 1, 0) > 0;
}

static void
stop(struct wstate *w)
{
	struct cxlp_stats st;
	struct soak_stats ss;
	char c;

	unpin_held(w);
	free_held(w);
	if (cxlp_stats(w->h, &st) != 0) {
		exit(52);
	}
	ss = (struct soak_stats){ st.pages_total, st.pages_free,
		st.pages_allocated, st.pages_registered, st.pages_unresolved,
		st.own_regions };
	emit(E_STATS, 0);
	if (write(STDOUT_FILENO, &ss, sizeof(ss)) != (ssize_t)sizeof(ss)) {
		exit(53);
	}
	while (read(STDIN_FILENO, &c, 1) > 0) {
	}
	cxlp_close(&w->h);
}

/* soak_worker -- main of `cxlp-soak --worker URL ID SEED NEXT`. */
int
soak_worker(int argc, char **argv)
{
	struct wstate w = { 0 };

	if (argc != 4) {
		return 2;
	}
	w.id = (unsigned)atoi(argv[1]);
	w.strict = getenv("CXLP_SOAK_STRICT") != NULL &&
	    strcmp(getenv("CXLP_SOAK_STRICT"), "1") == 0;
	srand((unsigned)strtoull(argv[2], NULL, 10));
	w.next = w.first = (uint32_t)strtoul(argv[3], NULL, 10);
	/* the window an earlier incarnation left, and the numbers skipped
	 * since, are swept by this one */
	w.swept = w.first > SOAK_PRIVATE_LIVE + SOAK_RESTART_GAP ?
	    w.first - SOAK_PRIVATE_LIVE - SOAK_RESTART_GAP : 0;
	w.h = connect_full(argv[0]);
	if (w.h == NULL || w.id >= SOAK_WORKERS_MAX) {
		return 30;
	}
	while (!asked_to_stop()) {
		unsigned r = rnd(100);

		if (w.next + BATCH_MAX >= SOAK_PRIVATE_MAX) {
			r = 0; /* no private numbers left: shared only */
		}
		if (r < 35) {
			step_shared(&w);
		} else if (r < 55) {
			step_private(&w);
		} else if (r < 72) {
			step_delete(&w);
		} else if (r < 92) {
			step_retrieve(&w);
		} else {
			step_hold_pages(&w);
		}
	}
	stop(&w);
	return 0;
}
