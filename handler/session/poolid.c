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
 * dev and ino are the mapping's). A mapping made before a replacement
 * stays of the old inode, which is right, and is not checked again.
 *
 * A mismatch can be legitimate: the server restarted (a new nonce in the
 * same file), or restarted on the copy the path names now. So the
 * identity is asked again once, by a reattaching HELLO, before the
 * mapping is refused with CXLP_E_STALE. Limits: on devdax the superblock
 * cannot be read(2), only mapped, and its nonce is not checked (the
 * device and inode still are on the server's host); a server that sends
 * no identity (before PROTO_HELLO_POOLID) is not checked at all.
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
	if (id->boot != 0 && id->boot == procstat_boot_hash() &&
	    (dev != id->dev || ino != id->ino)) {
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

/* poolid_check -- see session.h */
int
poolid_check(struct cxlp_handler *h, const struct pmap *m)
{
	struct proto_poolid id;
	int rc;

	if (!poolid_get(h, &id) || poolid_match(h, m, &id) == 0) {
		return 0;
	}
	pthread_mutex_lock(&h->reattach_lock);
	rc = h_hello(h, PROTO_HELLO_REATTACH); /* the server's identity now */
	pthread_mutex_unlock(&h->reattach_lock);
	if (rc != 0) {
		return rc;
	}
	if (!poolid_get(h, &id) || (rc = poolid_match(h, m, &id)) == 0) {
		return 0;
	}
	log_err("%s", cxlp_errormsg());
	return rc;
}
