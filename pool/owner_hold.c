/*
 * owner_hold.c -- the pool's owner record held, once owner.c decided
 * that this server may take the pool (owner.c note 1): the claim, the
 * heartbeat from a thread of our own, the release at pool_close. Every
 * write of the record is here (and in owner_sw.c, for sw and sim);
 * owner.c only reads it.
 *
 * DESIGN NOTES
 *  1. Claim [owner_claim]: compare-and-swap word from what owner.c note
 *     1 saw (0 after a format) to a fresh random token, so of two
 *     servers racing for one stale record only one wins; the loser is
 *     refused. Then the body is written and the record's checksum
 *     sealed, then persisted [claim_cas]. On a pool of coherence sw or
 *     sim (coh.h) no CAS is atomic across hosts: there the claim is one
 *     of plain reads and writes with a wait (owner_sw.c: check, write
 *     the whole claim, wait two beats, re-read), which assumes a server
 *     pauses less than the wait between its check and its write. Either
 *     way the heartbeat starts at once, before recovery, which can be
 *     slow.
 *     A reader that finds word set and the checksum wrong sees a claim
 *     cut short (or under way): it cannot tell whose, so owner.c note 1
 *     watches.
 *  2. Beat [beat_once]: if word is still our token, beat + 1 and beat_ns
 *     = now, each one 8-byte store, then persist. If it is not, another
 *     server took the pool over (we stalled past stale_ms): stop beating,
 *     log it and call own->lost, which the metaserver takes as a signal
 *     to shut down. A lease without fencing: a server paused longer than
 *     stale_ms may write once more before it sees that; the stale time
 *     is five beats so that a busy host does not lose its pool.
 *  3. Release [owner_release], at pool_close: stop the beat; if word is
 *     ours, zero the body first, then store word 0, so that a server
 *     that claims the moment word is 0 writes a body nobody else is
 *     still writing; the whole record then reads 0, as in a layout 2.0
 *     pool, which older builds require. Then drop the lock.
 *  4. Owner writes do not pass the crash points (crashpt.h; they go
 *     through persist.c's quiet calls): they come from a timer, not from
 *     the workload whose persists a crash test counts. A crash between
 *     them leaves what owner.c note 1 and notes 1-3 read safely.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "owner.h"
#include "owner_int.h"
#include "owner_sw.h"
#include "persist.h"
#include "pool_int.h"

/* ---- claiming ------------------------------------------------------------ */

/* our whole record, sealed: who we are, under token */
static void
fill(const struct pool *p, struct pool_orec *o, const struct pool_own *own,
    uint64_t token)
{
	memset(o, 0, sizeof(*o));
	o->word = token;
	o->beat_ns = owner_now_ns(CLOCK_REALTIME);
	o->start_ns = o->beat_ns;
	o->pid = (uint32_t)getpid();
	owner_ident(p, o->host, o->boot_id);
	snprintf(o->listen, sizeof(o->listen), "%s",
	    own->listen != NULL ? own->listen : "");
	o->term = own->term;
	o->checksum = layout_orec_checksum(o);
}

/* note 1: compare-and-swap word, then the body (host and hw modes) */
static bool
claim_cas(struct pool *p, const struct pool_orec *mine, uint64_t expect)
{
	struct pool_orec *o = owner_orec(p);
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
		return owner_refuse(p, &cur); /* note 1: another won */
	}
	p->own->token = token;
	if (own->term != 0) { /* owner.c note 3: before recovery, serving */
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

/* ---- the heartbeat ------------------------------------------------------- */

/* pool_owner_beat -- see owner.h */
void
pool_owner_beat(struct pool *p)
{
	struct pool_orec *o = owner_orec(p);

	/* its writer's own word: no drop (beat_once dropped the line; a
	 * claim that lands meanwhile rereads, owner_sw.c note 3) */
	pool_set8(&o->beat, pool_load8_here(&o->beat) + 1);
	pool_set8(&o->beat_ns, owner_now_ns(CLOCK_REALTIME));
	pool_persist_quiet(p, &o->beat, 2 * sizeof(o->beat));
}

/* note 2: one beat if the record is still ours */
static bool
beat_once(struct pool *p)
{
	if (pool_load8(p, &owner_orec(p)->word) != p->own->token) {
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
		uint64_t at = owner_now_ns(CLOCK_MONOTONIC) +
		    (uint64_t)ow->beat_ms * 1000000ull;
		struct timespec until = { (time_t)(at / 1000000000ull),
			(long)(at % 1000000000ull) };

		while (!ow->stop && pthread_cond_timedwait(&ow->cv, &ow->mu,
		    &until) == 0) {
		}
		if (!ow->stop && ow->may_write != NULL &&
		    !ow->may_write(ow->may_write_arg)) {
			over = true; /* owner.c note 3: term over, no beat */
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

/* ---- releasing ----------------------------------------------------------- */

/* note 3: zero the body, then word, if the record is still ours */
static void
clear_record(struct pool *p)
{
	struct pool_orec *o = owner_orec(p);
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

/* pool_owner_write -- see owner.h */
void
pool_owner_write(struct pool *p, const struct pool_owner *src)
{
	struct pool_orec *o = owner_orec(p);
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
