/*
 * owner.c -- one pool, one metaserver: who serves a pool, kept where
 * every server that might open it can see it.
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
 *     [beat_main]. A record of another host is taken over only once its
 *     heartbeat has not moved for stale_ms [watch].
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
 *  2. Claim [owner_claim]: compare-and-swap word from what note 1 saw (0
 *     after a format) to a fresh random token, so of two servers racing
 *     for one stale record only one wins; the loser is refused. Then the
 *     body is written and the record's checksum sealed, then persisted
 *     [claim_cas]. On a pool of coherence sw or sim (coh.h) no CAS is
 *     atomic across hosts: there the claim is one of plain reads and
 *     writes with a wait (owner_sw.c: check, write the whole claim, wait
 *     two beats, re-read), which assumes a server pauses less than the
 *     wait between its check and its write. Either way the heartbeat
 *     starts at once, before recovery, which can be slow.
 *     A reader that finds word set and the checksum wrong sees a claim
 *     cut short (or under way): it cannot tell whose, so note 1 watches.
 *  3. Beat [beat_once]: if word is still our token, beat + 1 and beat_ns
 *     = now, each one 8-byte store, then persist. If it is not, another
 *     server took the pool over (we stalled past stale_ms): stop beating,
 *     log it and call own->lost, which the metaserver takes as a signal
 *     to shut down. A lease without fencing: a server paused longer than
 *     stale_ms may write once more before it sees that; the stale time
 *     is five beats so that a busy host does not lose its pool.
 *  4. Release [owner_release], at pool_close: stop the beat; if word is
 *     ours, zero the body first, then store word 0, so that a server
 *     that claims the moment word is 0 writes a body nobody else is
 *     still writing; the whole record then reads 0, as in a layout 2.0
 *     pool, which older builds require. Then drop the lock.
 *  5. Owner writes do not pass the crash points (crashpt.h; they go
 *     through persist.c's quiet calls): they come from a timer, not from
 *     the workload whose persists a crash test counts. A crash between
 *     them leaves what notes 1-4 read safely.
 *  6. Who writes the record: its owner (the beat thread, the release),
 *     and a claimant during a takeover only (note 2), on any host; every
 *     other host reads it. So every read of it drops its lines first
 *     (orec_load, beat_once's check of word, pool_owner_get; a no-op but
 *     for sw and sim), and every write is persisted, which writes back.
 *     The simulator's hosts, one machine's processes, are told apart by
 *     a lock file and a boot id of their own (owner_sw.c note 4).
 *  7. Terms [term_check, decide, owner_claim], with an election only
 *     (own->term != 0, cxlpool-metaserver --elect; docs/standby.md).
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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "owner.h"
#include "owner_sw.h"
#include "persist.h"
#include "pool_int.h"

#define WATCH_POLL_MS 50u
#define MSG_LISTEN_MAX 96 /* endpoints shown in a refusal, bytes */

struct owner {
	int lock_fd;            /* holds the flock; -1 when none */
	uint64_t seen;          /* word note 1 decided to take over, or 0 */
	uint64_t seen_beat;     /* and its beat then (owner_sw.c 2a) */
	uint64_t token;         /* our claim; 0 before it */
	unsigned beat_ms;
	unsigned stale_ms;
	void (*lost)(void *arg);
	void *lost_arg;
	uint64_t term;          /* own->term: our election term, or 0 */
	bool term_reset;        /* own->term_reset */
	bool fenced;            /* note 7: the record's term is over */
	bool (*may_write)(void *arg);
	void *may_write_arg;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* CLOCK_MONOTONIC */
	bool stop;              /* under mu */
	bool running;           /* beat thread started */
	pthread_t thread;
};

static uint64_t
now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct pool_orec *
orec(const struct pool *p)
{
	return &p->sb->owner;
}

/* a copy of the record, word read first (acquire): the one read of it,
 * after its lines are dropped (another host writes them: note 6) */
static void
orec_load(const struct pool *p, struct pool_orec *r)
{
	const struct pool_orec *o = orec(p);

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
	uint64_t now = now_ns(CLOCK_REALTIME);

	/* by two hosts' clocks: a skew can only make it look fresher */
	return now > o->beat_ns ? (double)(now - o->beat_ns) / 1e9 : 0.0;
}

static int
refuse_owner(const struct pool *p, const struct pool_owner *o)
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
		return refuse_owner(p, &o);
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
	uint64_t since = now_ns(CLOCK_MONOTONIC);
	uint64_t stale = (uint64_t)ow->stale_ms * 1000000ull;
	struct timespec nap = { 0, (long)WATCH_POLL_MS * 1000000L };
	struct pool_owner o;
	struct pool_orec r;

	log_info("%s: it names pid %u on host %s as its server; waiting up "
	    "to %.1f s for its heartbeat", p->path, first->pid,
	    first->host[0] ? first->host : "?", ow->stale_ms / 1000.0);
	while (now_ns(CLOCK_MONOTONIC) - since < stale) {
		nanosleep(&nap, NULL);
		orec_load(p, &r);
		if (r.word != first->word || r.beat != first->beat) {
			orec_decode(&r, &o);
			return refuse_owner(p, &o);
		}
	}
	orec_decode(first, &o);
	log_takeover(p, &o, "its heartbeat has not moved for the stale "
	    "time");
	ow->seen = first->word;
	ow->seen_beat = first->beat;
	return 0;
}

/* note 7: an elected server's term is not below the pool's */
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
		ow->fenced = true; /* note 7 */
		return 0;
	}
	return watch(p, ow, &r);
}

/* ---- entering, claiming, releasing ---------------------------------------- */

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

/* our whole record, sealed: who we are, under token */
static void
fill(const struct pool *p, struct pool_orec *o, const struct pool_own *own,
    uint64_t token)
{
	memset(o, 0, sizeof(*o));
	o->word = token;
	o->beat_ns = now_ns(CLOCK_REALTIME);
	o->start_ns = o->beat_ns;
	o->pid = (uint32_t)getpid();
	owner_ident(p, o->host, o->boot_id);
	snprintf(o->listen, sizeof(o->listen), "%s",
	    own->listen != NULL ? own->listen : "");
	o->term = own->term;
	o->checksum = layout_orec_checksum(o);
}

/* note 2: compare-and-swap word, then the body (host and hw modes) */
static bool
claim_cas(struct pool *p, const struct pool_orec *mine, uint64_t expect)
{
	struct pool_orec *o = orec(p);
	size_t at = offsetof(struct pool_orec, start_ns);

	if (!pool_cas8(&o->word, &expect, mine->word)) {
		return false;
	}
	pool_persist_quiet(p, &o->word, sizeof(o->word));
	memcpy((uint8_t *)o + at, (const uint8_t *)mine + at,
	    sizeof(*o) - at);
	pool_set8(&o->beat, 0);
	pool_set8(&o->beat_ns, mine->beat_ns);
	pool_persist_quiet(p, o, sizeof(*o));
	return true;
}

static void *beat_main(void *arg);

/* owner_claim -- see pool_int.h */
int
owner_claim(struct pool *p, const struct pool_own *own, bool fresh)
{
	struct pool_orec mine;
	struct pool_owner cur;
	uint64_t token = 0, expect, beat0;
	bool won;
	int rc;

	if (p->own == NULL && (rc = owner_enter(p, own)) != 0) {
		return rc;
	}
	expect = fresh ? 0 : p->own->seen;
	beat0 = fresh ? 0 : p->own->seen_beat;
	while (token == 0 && getrandom(&token, sizeof(token), 0) !=
	    sizeof(token)) {
	}
	fill(p, &mine, own, token);
	won = owner_sw(p) ? owner_sw_claim(p, &mine, expect, beat0,
	    p->own->fenced ? 0 : owner_sw_window_ms(p->own->beat_ms)) :
	    claim_cas(p, &mine, expect);
	if (!won) {
		(void)pool_owner_get(p, &cur);
		return refuse_owner(p, &cur); /* note 2: another won */
	}
	p->own->token = token;
	if (own->term != 0) { /* note 7: before recovery, before serving */
		pool_set8(&p->sb->term, own->term);
		pool_persist_quiet(p, &p->sb->term, sizeof(p->sb->term));
	}
	if (pthread_create(&p->own->thread, NULL, beat_main, p) != 0) {
		return cxlp_fail(-EAGAIN, "%s: cannot start the heartbeat "
		    "thread", p->path);
	}
	p->own->running = true;
	return 0;
}

/* pool_owner_beat -- see owner.h */
void
pool_owner_beat(struct pool *p)
{
	struct pool_orec *o = orec(p);

	/* its writer's own word: no drop (beat_once dropped the line; a
	 * claim that lands meanwhile rereads, owner_sw.c note 3) */
	pool_set8(&o->beat, pool_load8_here(&o->beat) + 1);
	pool_set8(&o->beat_ns, now_ns(CLOCK_REALTIME));
	pool_persist_quiet(p, &o->beat, 2 * sizeof(o->beat));
}

/* note 3: one beat if the record is still ours */
static bool
beat_once(struct pool *p)
{
	if (pool_load8(p, &orec(p)->word) != p->own->token) {
		return false;
	}
	pool_owner_beat(p);
	return true;
}

static void
report_lost(struct pool *p)
{
	struct pool_owner o;

	(void)pool_owner_get(p, &o);
	log_err("%s: another metaserver took the pool over: pid %u on host "
	    "%s (listen %s); this one must stop serving it", p->path, o.pid,
	    o.host[0] ? o.host : "?", o.listen[0] ? o.listen : "-");
	if (p->own->lost != NULL) {
		p->own->lost(p->own->lost_arg);
	}
}

static void *
beat_main(void *arg)
{
	struct pool *p = arg;
	struct owner *ow = p->own;
	bool ok = true, over = false;

	pthread_mutex_lock(&ow->mu);
	while (!ow->stop && ok) {
		uint64_t at = now_ns(CLOCK_MONOTONIC) +
		    (uint64_t)ow->beat_ms * 1000000ull;
		struct timespec until = { (time_t)(at / 1000000000ull),
			(long)(at % 1000000000ull) };

		while (!ow->stop && pthread_cond_timedwait(&ow->cv, &ow->mu,
		    &until) == 0) {
		}
		if (!ow->stop && ow->may_write != NULL &&
		    !ow->may_write(ow->may_write_arg)) {
			over = true; /* note 7: the term is over: no beat */
			break;
		}
		ok = ow->stop || beat_once(p);
	}
	pthread_mutex_unlock(&ow->mu);
	if (!ok) {
		report_lost(p);
	} else if (over) {
		log_err("%s: this server's term is over: its heartbeat stops",
		    p->path);
	}
	return NULL;
}

/* note 4: zero the body, then word, if the record is still ours */
static void
clear_record(struct pool *p)
{
	struct pool_orec *o = orec(p);
	size_t body = sizeof(*o) - sizeof(o->word);

	if (pool_load8(p, &o->word) != p->own->token) {
		return;
	}
	memset((uint8_t *)o + sizeof(o->word), 0, body);
	pool_persist_quiet(p, (uint8_t *)o + sizeof(o->word), body);
	pool_set8(&o->word, 0);
	pool_persist_quiet(p, &o->word, sizeof(o->word));
}

/* owner_release -- see pool_int.h */
void
owner_release(struct pool *p)
{
	struct owner *ow = p->own;

	if (ow == NULL) {
		return;
	}
	if (ow->running) {
		pthread_mutex_lock(&ow->mu);
		ow->stop = true;
		pthread_cond_broadcast(&ow->cv);
		pthread_mutex_unlock(&ow->mu);
		pthread_join(ow->thread, NULL);
	}
	if (ow->token != 0) {
		clear_record(p);
	}
	if (ow->lock_fd >= 0) {
		close(ow->lock_fd); /* drops the flock */
	}
	pthread_cond_destroy(&ow->cv);
	pthread_mutex_destroy(&ow->mu);
	free(ow);
	p->own = NULL;
}

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

/* pool_owner_write -- see owner.h */
void
pool_owner_write(struct pool *p, const struct pool_owner *src)
{
	struct pool_orec *o = orec(p);
	uint64_t token = 0;

	cxlp_assert(!p->rdonly && p->own == NULL);
	while (token == 0 && getrandom(&token, sizeof(token), 0) !=
	    sizeof(token)) {
	}
	memset(o, 0, sizeof(*o));
	o->word = token;
	o->pid = src->pid;
	memcpy(o->host, src->host, sizeof(o->host) - 1);
	memcpy(o->boot_id, src->boot_id, sizeof(o->boot_id) - 1);
	memcpy(o->listen, src->listen, sizeof(o->listen) - 1);
	o->start_ns = src->start_ns;
	o->beat = src->beat;
	o->beat_ns = src->beat_ns;
	o->term = src->term;
	o->checksum = layout_orec_checksum(o);
	pool_persist_quiet(p, o, sizeof(*o));
}
