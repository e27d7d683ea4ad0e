/*
 * owner_sw.c -- the owner record (owner.c) on a pool that hosts share
 * without hardware coherence (coherence sw and sim, coh.h).
 *
 * Why this shape: there a compare-and-swap acts on the host's own cached
 * copy of the line (in the simulator literally: two hosts' CAS on one
 * word both succeed), and a store reaches another host only when its
 * line is written back and the other host drops its copy. So a claim is
 * made of plain reads and writes, Fischer's protocol, and every read of
 * the record drops its lines first (owner.c orec_load, owner_hold.c beat_once).
 *
 * DESIGN NOTES
 *  1. Who writes the record's lines: the owner (its beat thread, and
 *     its release); a claimant only during a takeover, that is after it
 *     saw the record empty or stale (owner.c note 1). Those are the only
 *     times two hosts write one line, and this protocol is for them.
 *  2. Claim [owner_sw_claim]:
 *     a. check: drop the record, read word and beat; unless they are
 *        what owner.c decided over (word0, beat0: 0 and 0 after a
 *        format), refuse. Done here, not at the watch's last look, so
 *        that a format or a validation between the two is not part of
 *        the pause note 3 bounds.
 *     b. write the whole claim (word = our token, body, beat 0, its
 *        checksum) and write it back.
 *     c. wait the claim window (note 3).
 *     d. drop the record and read word: our token -> ours; else refuse.
 *     e. ours, but the record is not ours byte for byte: write it whole
 *        again and write it back (re-seal; below).
 *     Two claims interleave line by line: the record is 8 lines, a line
 *     moves whole, and the device keeps each line from whichever host
 *     wrote it back last. So after two claims the device may hold A's
 *     line 0 (word, beat, pid, host[0..23]) and B's lines 1-7 (B's
 *     checksum, in line 7): word names A, the checksum fails. Word is in
 *     one line, so it names one of them, the same one for both (note 3:
 *     both re-read after both wrote): A, reading its token, goes on and
 *     re-seals; B, reading A's, refuses and writes nothing more, so A's
 *     second write-back is the last. Until then a reader sees word set
 *     and a bad checksum, a claim under way (owner_hold.c note 1), which it
 *     watches. (The simulator writes back only lines that differ from
 *     what the host loaded, so a line may also stay the old record's:
 *     the same case.)
 *  3. The window [owner_sw_window_ms] is two beats (2 s by default).
 *     Why it is enough: a rival R that passed its check saw word0, so
 *     it read the device before our line 0 reached it (after, it would
 *     have seen our token): R's check came before our write-back, and
 *     R's write-back comes at most P later, where P is the longest pause
 *     between a check and the end of its write-back. We re-read W after
 *     our write-back; with P <= W, R's claim is on the device by then,
 *     and ours by R's re-read: both read the final line 0. A server that
 *     checks later sees a token, not word0, and refuses. What it assumes:
 *     P <= W. Between check and write-back lies a copy of 504 bytes and
 *     8 line write-backs (with the fence: complete on return), so P is a
 *     pause of the process (preemption, a fault, SIGSTOP, a VM's steal),
 *     and two beats is the same order of stall the lease already asks a
 *     live owner to stay under (stale_ms is five beats). No clock is
 *     compared across hosts; W is timed on CLOCK_MONOTONIC. With an
 *     election, over a record of an older term, the window is 0
 *     (owner.c note 3): the fencing rule, not the wait, keeps the old
 *     owner and any rival from writing after our check.
 *     An old owner that was only paused and beats again reads line 0
 *     first (owner_hold.c note 2): if it sees word0 it writes its beat within
 *     P, so we read word0 (or a moved beat) and refuse; if it sees our
 *     token it stops and reports the pool lost.
 *  4. Simulated hosts [owner_ident, owner_lock_path] are processes of
 *     one machine: one boot id, one host name, one kernel, whose flock on
 *     the pool file every "host" shares. In sim each host is told apart
 *     as real ones are: the lock is a flock of <pool>.simowner-<H> (not a
 *     .simhost- file, which a format removes under a held lock), the boot
 *     id "sim-<H>-<hash of boot id and H>", the host name "<H>@<name>".
 *     A restart on one simulated host is then taken over at once, a
 *     server of another is watched.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "coh.h"
#include "log.h"
#include "owner_sw.h"
#include "persist.h"
#include "pool_int.h"
#include "sim.h"

/* owner_sw -- see owner_sw.h */
bool
owner_sw(const struct pool *p)
{
	enum pool_coh m = coh_mode(p->coh);

	return m == POOL_COH_SW || m == POOL_COH_SIM;
}

/* owner_sw_window_ms -- see owner_sw.h */
unsigned
owner_sw_window_ms(unsigned beat_ms)
{
	return 2 * beat_ms;
}

static void
nap_ms(unsigned ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until,
	    NULL) == EINTR) {
	}
}

/* note 2b, e: the whole record, written back */
static void
put(struct pool *p, const struct pool_orec *mine)
{
	struct pool_orec *o = &p->sb->owner;

	memcpy(o, mine, sizeof(*o));
	pool_persist_quiet(p, o, sizeof(*o));
}

/* owner_sw_claim -- see owner_sw.h */
bool
owner_sw_claim(struct pool *p, const struct pool_orec *mine,
    uint64_t word0, uint64_t beat0, unsigned window_ms)
{
	struct pool_orec *o = &p->sb->owner;

	pool_fresh(p, o, sizeof(*o));
	if (pool_load8_here(&o->word) != word0 ||
	    pool_load8_here(&o->beat) != beat0) {
		return false; /* a: claimed, or its owner beat again */
	}
	put(p, mine);
	nap_ms(window_ms);
	pool_fresh(p, o, sizeof(*o));
	if (pool_load8_here(&o->word) != mine->word) {
		return false; /* d: another claim's line 0 came last */
	}
	if (memcmp(o, mine, sizeof(*o)) != 0) {
		/* e: lines of a rival's claim, or of the old record */
		log_info("%s: the owner record is ours but holds lines of "
		    "another claim; sealing it again", p->path);
		put(p, mine);
	}
	return true;
}

/* pool_boot_id -- see pool_int.h */
void
pool_boot_id(char out[POOL_BOOT_ID_LEN])
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	size_t n = 0;

	memset(out, 0, POOL_BOOT_ID_LEN);
	if (f != NULL) {
		n = fread(out, 1, POOL_BOOT_ID_LEN - 1, f);
		fclose(f);
	}
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0')) {
		out[--n] = '\0';
	}
}

/* owner_ident -- see owner_sw.h */
void
owner_ident(const struct pool *p, char host[POOL_OREC_HOST_LEN],
    char boot[POOL_BOOT_ID_LEN])
{
	char name[POOL_OREC_HOST_LEN], key[POOL_BOOT_ID_LEN + SIM_HOST_MAX + 8];
	const char *h = sim_host();
	uint64_t hash;
	int n;

	memset(name, 0, sizeof(name));
	if (gethostname(name, sizeof(name) - 1) != 0) {
		name[0] = '\0';
	}
	pool_boot_id(boot);
	memset(host, 0, POOL_OREC_HOST_LEN);
	if (coh_mode(p->coh) != POOL_COH_SIM) {
		memcpy(host, name, POOL_OREC_HOST_LEN - 1);
		return;
	}
	n = snprintf(key, sizeof(key), "%s/sim/%s", boot, h);
	hash = XXH64(key, n > 0 ? (size_t)n : 0, 0);
	memset(boot, 0, POOL_BOOT_ID_LEN);
	snprintf(boot, POOL_BOOT_ID_LEN, "sim-%.18s-%016llx", h,
	    (unsigned long long)hash);
	snprintf(host, POOL_OREC_HOST_LEN, "%.*s@%.*s", SIM_HOST_MAX - 1, h,
	    POOL_OREC_HOST_LEN - SIM_HOST_MAX - 1, name);
}

/* owner_lock_path -- see owner_sw.h */
const char *
owner_lock_path(const struct pool *p, char *buf, size_t n)
{
	if (coh_mode(p->coh) != POOL_COH_SIM) {
		return p->path;
	}
	if (snprintf(buf, n, "%s.simowner-%s", p->path, sim_host()) >=
	    (int)n) {
		return NULL;
	}
	return buf;
}
