/*
 * poolid.c -- is the file a handler mapped the one its metaserver serves?
 *
 * A handler maps regions itself, by the path the WELCOME named. If that
 * path was replaced under a running metaserver (rm and a second server on
 * a new file; mv and cp), the handler would write its values into
 * another file than the one whose index the server keeps, and read
 * another server's bytes under its own keys. So the WELCOME (to a HELLO
 * with PROTO_HELLO_POOLID) says which file the server serves: its open
 * nonce, written into the superblock at each open by a writer, and the
 * device and inode it mapped (a devdax device's number: pmap_stat_id),
 * which mean something only on the server's kernel (the boot hash
 * tells). After each new mapping the handler
 * checks both: dev and ino of the mapping (fstat of the descriptor it
 * was made from), where its kernel is the server's, and the nonce in
 * the superblock of that same inode (read through a descriptor whose
 * dev and ino are the mapping's).
 *
 * A mismatch can be legitimate: the server restarted (a new nonce in the
 * same file), or restarted on the copy the path names now. So the
 * identity is asked again once, by a reattaching HELLO (call.c,
 * h_check_mapping; this file asks the server nothing), before the
 * mapping is refused with CXLP_E_STALE. Where dev and ino match on the
 * server's kernel the file is the one served, whatever its nonce says:
 * a server restarting on it writes its new nonce at open, seconds
 * before it listens (recovery), and a read of bytes that are valid must
 * not fail for that.
 *
 * A mapping made before a replacement is of the old inode, and a
 * handler whose server restarted on the copy would go on writing its
 * stores into the free pages of the old file's regions, which the
 * server no longer reads: lost, though reported stored. So each
 * reattach's WELCOME is compared with the first (poolid_welcome):
 * on the server's kernel by dev and ino; elsewhere by the nonce read
 * through a descriptor of the first file, kept open from the first
 * WELCOME (a restart on the same file writes its nonce into that inode;
 * a copy does not). When the server serves another file now, the
 * handler is switched for good: every call fails with CXLP_E_STALE
 * (poolid_stale, from h_check_open and after each reattach) until it
 * is closed and connected again; nothing is remapped.
 *
 * Limits: on devdax the superblock cannot be read(2), only mapped, and
 * its nonce is not checked (the device and inode still are on the
 * server's host). Every WELCOME carries the identity (the handler always
 * sends PROTO_HELLO_POOLID, and a server that predates it refuses the
 * HELLO).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "session.h"
#include "layout.h"
#include "log.h"
#include "map.h"
#include "procstat.h"

static bool
same_id(const struct stat *st, uint64_t dev, uint64_t ino)
{
	uint64_t d, i;

	pmap_stat_id(st, &d, &i);
	return d == dev && i == ino;
}

/* The open nonce in the superblock of the file at path, if path still
 * names the inode (dev, ino): 0 and *nonce; 1 when it cannot be read
 * (devdax: no read(2)); -1 when path names another file now. */
static int
file_nonce(const char *path, uint64_t dev, uint64_t ino, uint64_t *nonce)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int rc = 1;

	if (fd < 0) {
		return -1;
	}
	if (fstat(fd, &st) != 0 || !same_id(&st, dev, ino)) {
		rc = -1;
	} else if (!S_ISCHR(st.st_mode) && pread(fd, nonce, sizeof(*nonce),
	    (off_t)offsetof(struct pool_sb, open_nonce)) ==
	    (ssize_t)sizeof(*nonce)) {
		rc = 0;
	}
	close(fd);
	return rc;
}

/* m is of the file id names: 0, or CXLP_E_STALE with the reason. */
static int
poolid_match(const struct cxlp_handler *h, const struct pmap *m,
    const struct proto_poolid *id)
{
	uint64_t dev, ino, nonce = 0;
	int rc;

	pmap_file_id(m, &dev, &ino);
	if (id->boot != 0 && id->boot == procstat_boot_hash()) {
		if (dev == id->dev && ino == id->ino) {
			return 0; /* the served file, even mid-restart */
		}
		return cxlp_fail(CXLP_E_STALE, "%s is not the pool file the "
		    "metaserver serves (it mapped device %llu inode %llu, "
		    "this is device %llu inode %llu): replaced under it",
		    h->pool_path, (unsigned long long)id->dev,
		    (unsigned long long)id->ino, (unsigned long long)dev,
		    (unsigned long long)ino);
	}
	rc = file_nonce(h->pool_path, dev, ino, &nonce);
	if (rc < 0) {
		return cxlp_fail(CXLP_E_STALE, "%s names another file than "
		    "the one just mapped: replaced under the metaserver",
		    h->pool_path);
	}
	if (rc == 0 && nonce != id->nonce) {
		return cxlp_fail(CXLP_E_STALE, "%s is not the pool file the "
		    "metaserver serves (open nonce %016llx, the server's "
		    "%016llx): replaced under it, or another server's",
		    h->pool_path, (unsigned long long)nonce,
		    (unsigned long long)id->nonce);
	}
	return 0;
}

static bool
poolid_get(struct cxlp_handler *h, struct proto_poolid *id)
{
	bool known;

	pthread_mutex_lock(&h->poolid_lock);
	known = h->poolid_known;
	*id = h->poolid;
	pthread_mutex_unlock(&h->poolid_lock);
	return known;
}

/* The nonce in the first file's superblock, through the descriptor
 * kept from the first WELCOME: true and *nonce, or false (none kept,
 * devdax, a read error). poolid_lock held. */
static bool
first_nonce(const struct cxlp_handler *h, uint64_t *nonce)
{
	return h->poolid_fd >= 0 && pread(h->poolid_fd, nonce,
	    sizeof(*nonce), (off_t)offsetof(struct pool_sb, open_nonce)) ==
	    (ssize_t)sizeof(*nonce);
}

/* The first WELCOME's file, opened by its path and kept when it is the
 * served one (its nonce is the WELCOME's); poolid_lock held. */
static void
first_keep(struct cxlp_handler *h, const struct proto_poolid *id)
{
	uint64_t nonce = 0;
	struct stat st;

	h->poolid_first = *id;
	h->poolid_fd = open(h->pool_path, O_RDONLY | O_CLOEXEC);
	if (h->poolid_fd >= 0 && fstat(h->poolid_fd, &st) == 0) {
		pmap_stat_id(&st, &h->poolid_fd_dev, &h->poolid_fd_ino);
	}
	if (h->poolid_fd >= 0 && (!first_nonce(h, &nonce) ||
	    nonce != id->nonce)) {
		close(h->poolid_fd); /* devdax, or not the served file */
		h->poolid_fd = -1;
	}
}

/* id (a reattach's) names another file than the first WELCOME did;
 * poolid_lock held. */
static bool
switched(const struct cxlp_handler *h, const struct proto_poolid *id)
{
	const struct proto_poolid *f = &h->poolid_first;
	uint64_t nonce;

	if (id->boot != 0 && id->boot == f->boot &&
	    id->boot == procstat_boot_hash()) {
		return id->dev != f->dev || id->ino != f->ino;
	}
	return first_nonce(h, &nonce) && nonce != id->nonce;
}

/* poolid_welcome -- see session.h */
void
poolid_welcome(struct cxlp_handler *h, const struct proto_poolid *id,
    bool first)
{
	pthread_mutex_lock(&h->poolid_lock);
	if (first) {
		first_keep(h, id);
	} else if (switched(h, id) &&
	    !__atomic_exchange_n(&h->poolid_switched, 1, __ATOMIC_ACQ_REL)) {
		log_err("%s: the metaserver serves another file than the one "
		    "this handler mapped (replaced, and the server restarted "
		    "on the new one): every call fails with CXLP_E_STALE; "
		    "reconnect", h->pool_path);
	}
	h->poolid = *id;
	h->poolid_known = true;
	pthread_mutex_unlock(&h->poolid_lock);
}

/* poolid_stale -- see session.h */
int
poolid_stale(const struct cxlp_handler *h)
{
	if (__atomic_load_n(&h->poolid_switched, __ATOMIC_ACQUIRE)) {
		return cxlp_fail(CXLP_E_STALE, "%s was replaced and the "
		    "metaserver now serves another file than the one this "
		    "handler mapped: nothing more is read or written through "
		    "it; reconnect (cxlp_close, then cxlp_connect)",
		    h->pool_path);
	}
	return 0;
}

/* poolid_moved -- see session.h */
bool
poolid_moved(struct cxlp_handler *h)
{
	uint64_t nonce = 0, dev = 0, ino = 0;
	bool restarted = false, kept;
	struct stat st;

	pthread_mutex_lock(&h->poolid_lock);
	kept = h->poolid_fd >= 0;
	if (kept) {
		restarted = first_nonce(h, &nonce) &&
		    nonce != h->poolid.nonce;
		dev = h->poolid_fd_dev;
		ino = h->poolid_fd_ino;
	}
	pthread_mutex_unlock(&h->poolid_lock);
	return kept && (restarted || stat(h->pool_path, &st) != 0 ||
	    !same_id(&st, dev, ino));
}

/* poolid_map_match -- see session.h */
int
poolid_map_match(struct cxlp_handler *h, const struct pmap *m)
{
	struct proto_poolid id;

	return poolid_get(h, &id) ? poolid_match(h, m, &id) : 0;
}
