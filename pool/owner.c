/*
 * owner.c -- one pool, one metaserver: who serves a pool, kept where
 * every server that might open it can see it, and whether this server
 * may take it over. Once it may, owner_hold.c claims the record, beats
 * in it and releases it: this file reads the record, that one writes it.
 *
 * Why this shape: two servers on one pool hand out overlapping regions
 * and write the index at once, so the second must be refused before it
 * writes a byte (a format, a recovery). Two layers, because neither
 * alone covers both cases:
 *   - Same host: an exclusive flock on the pool file or device, taken
 *     on an fd of our own and held for the pool's life [lock_take]. The
 *     kernel drops it when the process dies, kill -9 included, so a
 *     restart is never blocked, and it is exact where a pid check is
 *     not (pids are reused and differ between pid namespaces).
 *   - Across hosts sharing a device, a lock on the file reaches no other
 *     kernel: the superblock carries an owner record (layout.h, struct
 *     pool_orec) with the owner's host, boot, pid, endpoints and a
 *     heartbeat it bumps every beat_ms from a thread of its own
 *     (owner_hold.c beat_main). A record of another host is taken over
 *     only once its heartbeat has not moved for stale_ms [watch].
 *
 * DESIGN NOTES
 *  1. Who decides [owner_enter], after the lock, before any write:
 *     lock held by another process -> refuse (it runs on this host);
 *     no record (word 0) or the head is not a pool of this layout -> go;
 *     a record of this host's boot -> its process is gone (it would hold
 *     the lock): take over at once, which keeps kill -9 + restart fast;
 *     a record of another boot, or a torn one -> watch it for stale_ms:
 *     any change of word or beat -> refuse; none -> take over. A record
 *     of this host from a boot before is "another boot": a host name
 *     does not prove identity, the boot id (shared by containers) does.
 *  2. Who writes the record: its owner (the beat thread, the release),
 *     and a claimant during a takeover only (owner_hold.c note 1), on
 *     any host; every other host reads it. So every read of it drops its
 *     lines first (orec_load, pool_owner_get, owner_hold.c beat_once's
 *     check of word; a no-op but for sw and sim), and every write is
 *     persisted, which writes back. The simulator's hosts, one machine's
 *     processes, are told apart by a lock file and a boot id of their
 *     own (owner_sw.c note 4).
 *  3. Terms [term_check, decide; owner_hold.c owner_claim], with an
 *     election only (own->term != 0, cxlpool-metaserver --elect;
 *     docs/standby.md).
 *     The pool keeps the highest term a leader served it under
 *     (sb.term) and the record the term of its owner (orec.term), both
 *     written at the claim, before recovery, so before the leader
 *     serves. A server elected for a term below the pool's is refused
 *     (-ESTALE): etcd's revisions never go back, so it is an old term's
 *     leader, or an etcd rebuilt from nothing, which the operator must
 *     say (own->term_reset: --elect-term-reset) or the pool would serve
 *     two terms of one number. A record of an older nonzero term is
 *     taken over at once: no stale wait (note 1), and in sw and sim no
 *     claim window (owner_sw.c note 3, window 0). Why it is safe: its
 *     owner's term ended before ours began. etcd elects no one before
 *     the old lease expires, and the old leader stopped writing before
 *     that by its own deadline (elect_may_write, which also stops its
 *     heartbeat: own->may_write), so no write of the old owner can land
 *     after our claim, and no rival claims: a rival of a newer term
 *     could not be elected while we hold ours, one of an older term is
 *     refused by term_check. What it assumes: the fencing rule of
 *     docs/standby.md (the clocks' rates, the margin), and that every
 *     server of the pool runs with --elect on one key: a record of term
 *     0 (a server without --elect) or of our term or a newer one is
 *     watched as in note 1, and a server without --elect does not wait
 *     for a term, so it must not share a pool with elected ones.
 * A server of a format and a claim on a blank or reformatted target is
 * excluded from a second one on another host only from its claim on: two
 * hosts formatting one device in the same seconds are not told apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "err.h"
#include "log.h"
#include "owner.h"
#include "owner_int.h"
#include "owner_sw.h"
#include "persist.h"
#include "pool_int.h"

#define WATCH_POLL_MS 50u
#define MSG_LISTEN_MAX 96 /* endpoints shown in a refusal, bytes */

/* a copy of the record, word read first (acquire): the one read of it,
 * after its lines are dropped (another host writes them: note 2) */
static void
orec_load(const struct pool *p, struct pool_orec *r)
{
	const struct pool_orec *o = owner_orec(p);

	pool_fresh(p, o, sizeof(*o));
	r->word = pool_load8_here(&o->word);
	r->beat = pool_load8_here(&o->beat);
	memcpy(&r->beat_ns, &o->beat_ns, sizeof(*r) - 2 * sizeof(r->word));
}

static void
orec_decode(const struct pool_orec *r, struct pool_owner *out)
{
	memset(out, 0, sizeof(*out));
	out->pid = r->pid;
	memcpy(out->host, r->host, sizeof(out->host) - 1);
	memcpy(out->boot_id, r->boot_id, sizeof(out->boot_id) - 1);
	memcpy(out->listen, r->listen, sizeof(out->listen) - 1);
	out->start_ns = r->start_ns;
	out->beat = r->beat;
	out->beat_ns = r->beat_ns;
	out->term = r->term;
}

/* pool_owner_get -- see owner.h */
int
pool_owner_get(const struct pool *p, struct pool_owner *out)
{
	struct pool_orec r;

	orec_load(p, &r);
	orec_decode(&r, out);
	if (r.word == 0) {
		return CXLP_E_NOTFOUND;
	}
	return layout_orec_checksum(&r) == r.checksum ? 0 : CXLP_E_CHECKSUM;
}

/* ---- the lock ------------------------------------------------------------ */

/* take the flock on an fd of our own; *busy if another process holds it */
static int
lock_take(struct pool *p, struct owner *ow, bool *busy)
{
	char buf[PATH_MAX];
	const char *at = owner_lock_path(p, buf, sizeof(buf));

	if (at == NULL) {
		return cxlp_fail(-ENAMETOOLONG, "%s: path too long", p->path);
	}
	ow->lock_fd = open(at, at == p->path ? O_RDONLY | O_CLOEXEC :
	    O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (ow->lock_fd < 0) {
		return cxlp_fail(-errno, "%s: cannot open it to lock it: %s",
		    at, strerror(errno));
	}
	*busy = false;
	if (flock(ow->lock_fd, LOCK_EX | LOCK_NB) == 0) {
		return 0;
	}
	if (errno == EWOULDBLOCK) {
		*busy = true;
		return 0;
	}
	return cxlp_fail(-errno, "%s: cannot lock it: %s", p->path,
	    strerror(errno));
}

/* the pid /proc/locks names as the holder of the flock on fd's file; 0
 * if none is found (another pid namespace may show none) */
static long
lock_holder(int fd)
{
	char line[256], kind[16];
	unsigned maj, min;
	unsigned long long ino;
	struct stat st;
	long pid = 0, lp;
	FILE *f;

	if (fstat(fd, &st) != 0 || (f = fopen("/proc/locks", "re")) == NULL) {
		return 0;
	}
	while (pid == 0 && fgets(line, sizeof(line), f) != NULL) {
		/* "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF" */
		if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", kind, &lp,
		    &maj, &min, &ino) == 5 && strcmp(kind, "FLOCK") == 0 &&
		    maj == major(st.st_dev) && min == minor(st.st_dev) &&
		    ino == (unsigned long long)st.st_ino) {
			pid = lp;
		}
	}
	fclose(f);
	return pid;
}

/* ---- refusing and taking over -------------------------------------------- */

static double
beat_age_s(const struct pool_owner *o)
{
	uint64_t now = owner_now_ns(CLOCK_REALTIME);

	/* by two hosts' clocks: a skew can only make it look fresher */
	return now > o->beat_ns ? (double)(now - o->beat_ns) / 1e9 : 0.0;
}

/* owner_refuse -- see owner_int.h */
int
owner_refuse(const struct pool *p, const struct pool_owner *o)
{
	return cxlp_fail(-EBUSY, "pool %s is served by pid %u on host %s "
	    "(listen %.*s), heartbeat %.1f s ago; stop it first", p->path,
	    o->pid, o->host[0] ? o->host : "?", MSG_LISTEN_MAX,
	    o->listen[0] ? o->listen : "-", beat_age_s(o));
}

/* the lock is held on this host: name the record if it is the holder's */
static int
refuse_locked(const struct pool *p, const struct owner *ow, bool ours)
{
	char host[POOL_OREC_HOST_LEN], boot[POOL_BOOT_ID_LEN];
	struct pool_owner o;
	int rc = ours ? pool_owner_get(p, &o) : CXLP_E_NOTFOUND;
	long holder = lock_holder(ow->lock_fd);

	owner_ident(p, host, boot);
	if (rc == 0 && strcmp(o.boot_id, boot) == 0 &&
	    (holder == 0 || holder == (long)o.pid)) {
		return owner_refuse(p, &o);
	}
	if (holder != 0) {
		return cxlp_fail(-EBUSY, "pool %s is locked by pid %ld on this "
		    "host (a metaserver still starting, or another program); "
		    "stop it first", p->path, holder);
	}
	return cxlp_fail(-EBUSY, "pool %s is locked by another process on "
	    "this host (a metaserver still starting?); stop it first",
	    p->path);
}

static void
log_takeover(const struct pool *p, const struct pool_owner *o,
    const char *why)
{
	log_info("%s: taking the pool over from pid %u on host %s (listen "
	    "%s): %s", p->path, o->pid, o->host[0] ? o->host : "?",
	    o->listen[0] ? o->listen : "-", why);
}

/* note 1: watch a record of another host until it moves (refuse) or has
 * not moved for stale_ms (take it over) */
static int
watch(struct pool *p, struct owner *ow, const struct pool_orec *first)
{
	uint64_t since = owner_now_ns(CLOCK_MONOTONIC);
	uint64_t stale = (uint64_t)ow->stale_ms * 1000000ull;
	struct timespec nap = { 0, (long)WATCH_POLL_MS * 1000000L };
	struct pool_owner o;
	struct pool_orec r;

	log_info("%s: it names pid %u on host %s as its server; waiting up "
	    "to %.1f s for its heartbeat", p->path, first->pid,
	    first->host[0] ? first->host : "?", ow->stale_ms / 1000.0);
	while (owner_now_ns(CLOCK_MONOTONIC) - since < stale) {
		nanosleep(&nap, NULL);
		orec_load(p, &r);
		if (r.word != first->word || r.beat != first->beat) {
			orec_decode(&r, &o);
			return owner_refuse(p, &o);
		}
	}
	orec_decode(first, &o);
	log_takeover(p, &o, "its heartbeat has not moved for the stale "
	    "time");
	ow->seen = first->word;
	ow->seen_beat = first->beat;
	return 0;
}

/* note 3: an elected server's term is not below the pool's */
static int
term_check(const struct pool *p, const struct owner *ow)
{
	uint64_t have = pool_load8(p, &p->sb->term);

	if (ow->term == 0 || ow->term >= have) {
		return 0;
	}
	if (ow->term_reset) {
		log_info("%s: the pool was served in term %llu; this server "
		    "holds term %llu, and was told the election restarted "
		    "(term reset): the pool's term goes back to %llu", p->path,
		    (unsigned long long)have, (unsigned long long)ow->term,
		    (unsigned long long)ow->term);
		return 0;
	}
	return cxlp_fail(-ESTALE, "pool %s was served in term %llu, and this "
	    "server was elected for term %llu, an older one: refusing to "
	    "serve it. If the etcd cluster was rebuilt from nothing (its "
	    "revisions start again at 1), start one server with "
	    "--elect-term-reset (or --reformat)", p->path,
	    (unsigned long long)have, (unsigned long long)ow->term);
}

/* note 1, after the lock: may this server go on, and over which word? */
static int
decide(struct pool *p, struct owner *ow, bool busy, bool ours)
{
	char host[POOL_OREC_HOST_LEN], boot[POOL_BOOT_ID_LEN];
	struct pool_owner o;
	struct pool_orec r;
	int rc;

	if (busy) {
		return refuse_locked(p, ow, ours);
	}
	if (!ours) {
		return 0; /* blank, not a pool, or another layout */
	}
	if ((rc = term_check(p, ow)) != 0) {
		return rc;
	}
	orec_load(p, &r);
	if (r.word == 0) {
		return 0;
	}
	owner_ident(p, host, boot);
	orec_decode(&r, &o);
	if (layout_orec_checksum(&r) == r.checksum &&
	    strcmp(o.boot_id, boot) == 0) {
		log_takeover(p, &o, "its process on this host is gone (the "
		    "pool's lock was free)");
		ow->seen = r.word;
		ow->seen_beat = r.beat;
		return 0;
	}
	if (ow->term != 0 && r.term != 0 && r.term < ow->term &&
	    layout_orec_checksum(&r) == r.checksum) {
		char why[96];

		snprintf(why, sizeof(why), "its term %llu is over (this server "
		    "was elected for term %llu)", (unsigned long long)r.term,
		    (unsigned long long)ow->term);
		log_takeover(p, &o, why);
		ow->seen = r.word;
		ow->seen_beat = r.beat;
		ow->fenced = true; /* note 3 */
		return 0;
	}
	return watch(p, ow, &r);
}

/* ---- entering ------------------------------------------------------------ */

static int
owner_new(struct pool *p, const struct pool_own *own)
{
	struct owner *ow = calloc(1, sizeof(*ow));
	pthread_condattr_t ca;

	if (ow == NULL) {
		return cxlp_fail(-ENOMEM, "%s: no memory", p->path);
	}
	ow->lock_fd = -1;
	ow->beat_ms = own->beat_ms ? own->beat_ms : POOL_OWNER_BEAT_MS;
	ow->stale_ms = own->stale_ms ? own->stale_ms : POOL_OWNER_STALE_MS;
	ow->lost = own->lost;
	ow->lost_arg = own->lost_arg;
	ow->term = own->term;
	ow->term_reset = own->term_reset;
	ow->may_write = own->may_write;
	ow->may_write_arg = own->may_write_arg;
	pthread_mutex_init(&ow->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ow->cv, &ca);
	pthread_condattr_destroy(&ca);
	p->own = ow;
	return 0;
}

/* owner_enter -- see pool_int.h */
int
owner_enter(struct pool *p, const struct pool_own *own)
{
	const struct pool_sb *sb = p->sb;
	bool busy, ours;
	int rc;

	cxlp_assert(p->own == NULL && !p->rdonly);
	if ((rc = owner_new(p, own)) != 0 ||
	    (rc = lock_take(p, p->own, &busy)) != 0) {
		return rc;
	}
	ours = memcmp(sb->magic, POOL_MAGIC, sizeof(sb->magic)) == 0 &&
	    sb->major == POOL_MAJOR;
	return decide(p, p->own, busy, ours);
}

/* ---- the terms ----------------------------------------------------------- */

/* pool_term -- see owner.h */
uint64_t
pool_term(const struct pool *p)
{
	return pool_load8(p, &p->sb->term);
}

/* pool_takeover_get -- see owner.h */
void
pool_takeover_get(const struct pool *p, struct pool_takeover *out)
{
	out->at_ns = pool_load8(p, &p->sb->takeover_ns);
	out->ms = pool_load8(p, &p->sb->takeover_ms);
	out->from_term = pool_load8(p, &p->sb->takeover_from);
	out->term = pool_load8(p, &p->sb->takeover_term);
}

/* pool_takeover_set -- see owner.h. at_ns goes last: a reader that sees
 * it 0 (the store cut short) reads no takeover. */
void
pool_takeover_set(struct pool *p, const struct pool_takeover *t)
{
	struct pool_sb *sb = p->sb;

	cxlp_assert(!p->rdonly);
	pool_set8(&sb->takeover_ns, 0);
	pool_set8(&sb->takeover_ms, t->ms);
	pool_set8(&sb->takeover_from, t->from_term);
	pool_set8(&sb->takeover_term, t->term);
	pool_set8(&sb->takeover_ns, t->at_ns);
	pool_persist_quiet(p, &sb->takeover_ns, 4 * sizeof(uint64_t));
}
