/*
 * elect.h -- the metaserver's election through etcd (issue 28): every
 * metaserver of a pool campaigns on one key; the one whose lease holds it
 * is the leader and may write the pool while its fencing deadline lasts;
 * the others are standbys that campaign again when the key goes.
 * docs/standby.md explains the rule and its timing assumption.
 *
 * Built from elect.c with libcurl and libcjson, else from elect_none.c,
 * whose elect_start and elect_check_spec refuse with a clear message.
 */
#ifndef CXLP_ELECT_H
#define CXLP_ELECT_H

#include <stdbool.h>
#include <stdint.h>

#define ELECT_TTL_MS_DEFAULT 2000u
#define ELECT_TTL_MS_MIN 1000u     /* etcd counts TTLs in whole seconds */
#define ELECT_TTL_MS_MAX 300000u
#define ELECT_KEY_PREFIX "/cxlpool/" /* + the pool's uuid: the default */

struct elect_cfg {
	const char *endpoints; /* "etcd://HOST:PORT[,HOST:PORT...]" */
	const char *key;       /* the election key, e.g. /cxlpool/<uuid> */
	uint32_t ttl_ms;       /* lease TTL; rounded up to whole seconds */
	uint32_t margin_ms;    /* fencing margin; 0: ttl_ms / 4 */
	uint32_t poll_ms;      /* standby's look at the key; 0: ttl_ms / 4 */
	const char *value;     /* the leader's record under key (its
	                        * endpoints, host, pid): <= 4096 bytes */
	const char *name;      /* this server's name among the standbys:
	                        * while a standby it keeps value under
	                        * key + ELECT_STANDBY_DIR + name, on a lease
	                        * of its own; NULL: it does not register */
};

#define ELECT_STANDBY_DIR "/standby/" /* under the election key */
#define ELECT_STANDBYS_MAX 8u         /* standbys a leader keeps */
#define ELECT_NAME_MAX 96             /* bytes of a name, NUL incl. */
#define ELECT_INFO_MAX 384            /* bytes of its value kept */

/* A standby as the leader last listed it. */
struct elect_standby {
	char name[ELECT_NAME_MAX];
	char value[ELECT_INFO_MAX]; /* its endpoints, host, pid */
};

/* Called on the election's own thread, never with its lock held: they
 * may call elect_may_write/elect_status, not elect_stop. */
struct elect_cbs {
	/* this process became leader of term epoch (greater than every
	 * earlier term's); elect_may_write is true when it is called */
	void (*elected)(void *arg, uint64_t epoch);
	/* the term ended (reason: lease lost, deadline passed, key taken);
	 * elect_may_write was false before this is called, and this process
	 * is a standby again */
	void (*lost)(void *arg, const char *reason);
	/* a standby saw another leader: its value and epoch */
	void (*leader_changed)(void *arg, const char *value, uint64_t epoch);
	void *arg;
};

enum elect_role { ELECT_STANDBY = 0, ELECT_LEADER = 1 };

struct elect_status {
	enum elect_role role;
	uint64_t epoch;          /* leader: its term; standby: the leader's
	                          * last seen, 0 = none */
	uint64_t valid_until_ms; /* leader: CLOCK_BOOTTIME ms; 0 otherwise */
	uint64_t renew_sent_ms;  /* the last renewal that succeeded: when it
	                          * was sent (CLOCK_BOOTTIME ms) */
	uint64_t ttl_ms;         /* the TTL etcd granted */
	uint64_t margin_ms;
	uint64_t terms;          /* terms won by this process */
	/* leader: its campaign */
	uint64_t vacant_ms;      /* CLOCK_BOOTTIME ms its look found the key
	                          * absent (the vacancy it took) */
	uint64_t elected_ms;     /* CLOCK_BOOTTIME ms it won */
	uint64_t prev_epoch;     /* the leader it saw before; 0: none */
	/* leader: the standbys registered under key (elect_standbys) */
	int64_t standbys;        /* how many at the last listing; -1: not
	                          * listed yet */
	uint64_t listed_ms;      /* CLOCK_BOOTTIME ms of that listing */
};

struct elect;

/* elect_available -- whether this build has the election (libcurl and
 * libcjson were found). */
bool elect_available(void);
/* elect_check_spec -- validate "etcd://HOST:PORT[,...]" (config.c): 0,
 * or -EINVAL / -ENOTSUP (a build without the election) with
 * cxlp_errormsg() saying why. */
int elect_check_spec(const char *spec);
/* elect_start -- start campaigning on a thread of its own. Copies cfg
 * (strings included). Returns 0 and *out (stop with elect_stop), or a
 * negative error with cxlp_errormsg() and *out == NULL. */
int elect_start(struct elect **out, const struct elect_cfg *cfg,
    const struct elect_cbs *cbs);
/* elect_stop -- stop the thread, resign (revoke the lease, so that a
 * standby takes over at once), free (NULL-safe; sets *e = NULL). No
 * callback runs after it returns. */
void elect_stop(struct elect **e);
/* elect_may_write -- true while this process is leader and its fencing
 * deadline is ahead (CLOCK_BOOTTIME now < valid_until). Lock-free; call it
 * before each write batch. */
bool elect_may_write(const struct elect *e);
/* elect_status -- a snapshot of e's state. */
void elect_status(const struct elect *e, struct elect_status *st);
/* elect_standbys -- the leader's last listing of the standbys: at most
 * max into out; returns how many were copied (st.standbys says how many
 * there were). */
unsigned elect_standbys(const struct elect *e, struct elect_standby *out,
    unsigned max);
/* elect_test_hold -- tests: freeze (true) or thaw the election thread
 * between two steps, as a SIGSTOP would: no keepalive, no callback. */
void elect_test_hold(struct elect *e, bool hold);

#endif /* CXLP_ELECT_H */
