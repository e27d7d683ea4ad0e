/*
 * leader.c -- where the pool's leader listens, as its owner record says
 * (issue 28): the finder the client asks when its endpoint stops
 * answering (net/endpoints.c note 3), so that a handler follows a
 * standby that took the pool over without being told its address.
 *
 * Every metaserver that serves a pool writes its endpoints into the
 * owner record in the pool's superblock (layout.h struct pool_orec,
 * pool/owner_hold.c: at its claim, persisted, which writes the lines back
 * on sw and sim pools) before it recovers the pool and listens. A
 * handler maps the pool anyway, so it reads the record itself: no
 * etcd client in the library, and no round trip to a server it cannot
 * reach. The record is another host's write: on a pool of sw or sim
 * coherence its lines are dropped before they are read (pmap_fresh,
 * contract 11), or the handler would read its host's stale copy, the
 * dead leader's.
 *
 * Only for a handler configured with the pool (cxlp_config_set_pool):
 * one configured with a relay's endpoint must not be moved past it. At
 * connect, before any WELCOME, the record is read from the configured
 * path through an attachment made for the read (so connect finds the
 * leader when no configured endpoint answers); from the first WELCOME
 * on, from the path it named, through the handler's attachment.
 *
 * A record whose word is 0 (no owner: between a leader's release and
 * the next claim) or whose checksum is wrong (a claim under way or cut
 * short) names nobody; the client then tries its configured endpoints
 * and looks again at its next timeout.
 *
 * The pool's term (issue: term reset). The client drops a reply of an
 * older term than it has seen, a deposed leader's (net/client.c). After
 * etcd is rebuilt from nothing a leader started with --elect-term-reset
 * serves a LOWER term, and every running handler would drop its replies
 * for good. So the client asks, for such a reply only, whether its term
 * is the pool's: the superblock's term, which the serving leader wrote
 * at its claim before it served, read here fresh as the owner record is
 * (the same mapping, its line dropped first). A deposed leader's term
 * is never the pool's once another leader claimed it, so its replies
 * stay dropped. The read works for any handler that has the pool's path
 * (the first WELCOME's, or the configured one before it); without one
 * the answer is no, and the reply is dropped as before.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "coh.h"
#include "err.h"
#include "layout.h"
#include "log.h"
#include "map.h"
#include "session.h"

/* the path the record is read from (orec_read) */
static const char *
pool_of(const struct cxlp_handler *h)
{
	return h->pool_path != NULL ? h->pool_path : h->cfg.pool;
}

/* n bytes at offset off of the superblock of the pool at path now, into
 * dst, through a fresh mapping of [0, len) (0: all of it) made through
 * coh, their lines dropped first: another host's writes */
static int
sb_map_read(const char *path, uint64_t len, struct coh *coh, size_t off,
    void *dst, size_t n)
{
	const uint8_t *sb;
	struct pmap *head;
	int rc;

	if ((rc = pmap_open_coh(&head, path, 0, len, false, coh)) != 0) {
		return rc;
	}
	if (pmap_len(head) < sizeof(struct pool_sb)) {
		pmap_close(&head);
		return cxlp_fail(CXLP_E_BADMAGIC, "%s: not a pool", path);
	}
	sb = pmap_addr(head);
	pmap_fresh(head, sb + off, n);
	memcpy(dst, sb + off, n);
	pmap_close(&head);
	return 0;
}

/* n bytes at off of the superblock: of the pool the first WELCOME named,
 * through the handler's own attachment; before it, of the configured
 * pool, through an attachment for this read (the pool's mode read from
 * the device). *sim: the pool is the simulator's. */
static int
sb_read_fresh(struct cxlp_handler *h, size_t off, void *dst, size_t n,
    bool *sim)
{
	enum pool_coh mode;
	struct coh *coh = NULL;
	int rc;

	if (h->pool_path != NULL) {
		*sim = h->coh != NULL && coh_mode(h->coh) == POOL_COH_SIM;
		return sb_map_read(h->pool_path, h->align, h->coh, off, dst,
		    n);
	}
	*sim = false;
	if ((rc = coh_probe(h->cfg.pool, &mode)) != 0 ||
	    (rc = coh_open(&coh, h->cfg.pool, mode)) != 0) {
		return rc;
	}
	rc = sb_map_read(h->cfg.pool, 0, coh, off, dst, n);
	coh_close(&coh);
	*sim = mode == POOL_COH_SIM;
	return rc;
}

/* the owner record, as sb_read_fresh reads it */
static int
orec_read(struct cxlp_handler *h, struct pool_orec *r, bool *sim)
{
	return sb_read_fresh(h, offsetof(struct pool_sb, owner), r,
	    sizeof(*r), sim);
}

/* the owner runs on this kernel, where its ipc:// endpoints are: its
 * host name is ours (in sim the record's name is "<H>@<name>",
 * pool/owner_sw.c note 4, and every simulated host is this kernel) */
static bool
owner_local(const struct pool_orec *r, bool sim)
{
	char host[POOL_OREC_HOST_LEN] = "";
	const char *name = r->host, *at = strchr(r->host, '@');

	if (sim && at != NULL) {
		name = at + 1;
	}
	(void)gethostname(host, sizeof(host) - 1);
	return strcmp(host, name) == 0;
}

/* client_finder_fn over h's pool: see net.h */
static int
leader_find(void *arg, char *list, size_t n, bool *local)
{
	struct cxlp_handler *h = arg;
	struct pool_orec r;
	bool sim;
	int rc;

	list[0] = '\0';
	if ((rc = orec_read(h, &r, &sim)) != 0) {
		return rc;
	}
	if (r.word == 0) {
		return cxlp_fail(CXLP_E_NOTFOUND, "%s: no server owns the pool",
		    pool_of(h));
	}
	if (layout_orec_checksum(&r) != r.checksum) {
		return cxlp_fail(CXLP_E_CHECKSUM, "%s: the owner record is "
		    "being claimed", pool_of(h));
	}
	r.listen[sizeof(r.listen) - 1] = '\0';
	r.host[sizeof(r.host) - 1] = '\0';
	snprintf(list, n, "%s", r.listen);
	*local = owner_local(&r, sim);
	return 0;
}

/* client_term_fn over h's pool: see net.h. The superblock's term is the
 * one the leader serving the pool now wrote at its claim, before it
 * served (pool/owner.c note 3), written back on sw and sim pools, so a
 * fresh read of it names the current leader's term. */
static bool
leader_term_is_pools(void *arg, uint64_t term)
{
	struct cxlp_handler *h = arg;
	uint64_t have = 0;
	bool sim;

	if (h->pool_path == NULL && h->cfg.pool[0] == '\0') {
		return false; /* no pool to ask */
	}
	if (sb_read_fresh(h, offsetof(struct pool_sb, term), &have,
	    sizeof(have), &sim) != 0) {
		log_err("a reply of metaserver term %llu: the pool's term "
		    "cannot be read (%s): dropped", (unsigned long long)term,
		    cxlp_errormsg());
		return false;
	}
	return have == term;
}

/* leader_watch_terms -- see session.h */
void
leader_watch_terms(struct cxlp_handler *h)
{
	client_set_term_check(h->cl, leader_term_is_pools, h);
}

/* leader_finder -- see session.h */
client_finder_fn
leader_finder(const struct cxlp_handler *h)
{
	return h->cfg.pool[0] != '\0' ? leader_find : NULL;
}
