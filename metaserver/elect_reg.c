/*
 * elect_reg.c -- the standbys' registry (elect_reg.h). Each standby puts
 * its record (the value it would publish as leader: endpoints, host,
 * pid) under <key>/standby/<name>, attached to a lease of the standby's
 * own TTL, renewed at each of its looks at the election key; so a
 * standby that dies or hangs drops out of the list within one TTL,
 * without anyone deleting it. An elected one revokes that lease (its
 * record goes: it is the leader now). The leader lists the prefix at
 * each renewal of its own lease. Names are one per host (elect.h):
 * two standbys of one name share one record, the later one's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "elect_reg.h"
#include "err.h"
#include "etcd.h"
#include "log.h"

struct elect_reg {
	struct etcd *etcd;
	char prefix[ETCD_KEY_MAX + 1]; /* <key>/standby/ */
	char key[ETCD_KEY_MAX + 1];    /* prefix + name; "" without name */
	char *value;
	int64_t ttl_s;
	int64_t lease;                 /* the standby's lease; 0: none */
	pthread_mutex_t lock;          /* the listing below */
	struct elect_standby list[ELECT_STANDBYS_MAX];
	unsigned n;
	int64_t count;                 /* -1: not listed */
	uint64_t listed_ms;            /* CLOCK_BOOTTIME */
};

/* reg_new -- see elect_reg.h */
int
reg_new(struct elect_reg **out, struct etcd *etcd, const char *key,
    const char *name, const char *value, uint64_t ttl_ms)
{
	struct elect_reg *r;

	*out = NULL;
	if (name != NULL && (name[0] == '\0' || strchr(name, '/') != NULL ||
	    strlen(name) >= ELECT_NAME_MAX)) {
		return cxlp_fail(-EINVAL, "standby name '%s': 1 to %d bytes, "
		    "no '/'", name, ELECT_NAME_MAX - 1);
	}
	if (strlen(key) + sizeof(ELECT_STANDBY_DIR) + ELECT_NAME_MAX >
	    ETCD_KEY_MAX) {
		return cxlp_fail(-EINVAL, "election key too long for the "
		    "standbys' records under it");
	}
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->value = strdup(value)) == NULL) {
		free(r);
		return cxlp_fail(-ENOMEM, "no memory for the standby registry");
	}
	r->etcd = etcd;
	snprintf(r->prefix, sizeof(r->prefix), "%s%s", key,
	    ELECT_STANDBY_DIR);
	if (name != NULL) {
		snprintf(r->key, sizeof(r->key), "%s%s", r->prefix, name);
	}
	r->ttl_s = (int64_t)((ttl_ms + 999) / 1000);
	r->count = -1;
	pthread_mutex_init(&r->lock, NULL);
	*out = r;
	return 0;
}

/* reg_withdraw -- see elect_reg.h */
void
reg_withdraw(struct elect_reg *r)
{
	if (r->lease != 0 && etcd_lease_revoke(r->etcd, r->lease) != 0) {
		log_dbg("op=elect standby_revoke=fail msg=\"%s\"",
		    cxlp_errormsg());
	}
	r->lease = 0;
}

/* reg_free -- see elect_reg.h */
void
reg_free(struct elect_reg **rp)
{
	struct elect_reg *r = *rp;

	if (r == NULL) {
		return;
	}
	reg_withdraw(r);
	pthread_mutex_destroy(&r->lock);
	free(r->value);
	free(r);
	*rp = NULL;
}

/* a lease, and the record on it */
static void
reg_put(struct elect_reg *r)
{
	int64_t granted;
	int rc;

	if ((rc = etcd_lease_grant(r->etcd, r->ttl_s, &r->lease,
	    &granted)) != 0) {
		r->lease = 0;
		return; /* the election's own look logs etcd's trouble */
	}
	rc = etcd_put(r->etcd, r->key, r->value, strlen(r->value), r->lease,
	    NULL);
	if (rc != 0) {
		log_rl_err("op=elect step=register rc=%d msg=\"%s\"", rc,
		    cxlp_errormsg());
		reg_withdraw(r);
	}
}

/* reg_standby_step -- see elect_reg.h */
void
reg_standby_step(struct elect_reg *r)
{
	int64_t ttl;
	int rc;

	if (r->key[0] == '\0') {
		return;
	}
	if (r->lease != 0) {
		rc = etcd_lease_keepalive(r->etcd, r->lease, &ttl);
		if (rc != -ENOENT) {
			return; /* renewed, or etcd is away: try next time */
		}
		r->lease = 0; /* it expired: register again */
	}
	reg_put(r);
}

/* src into dst[n], cut to fit */
static void
copy_cut(char *dst, size_t n, const char *src)
{
	size_t len = strnlen(src, n - 1);

	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* reg_list -- see elect_reg.h */
void
reg_list(struct elect_reg *r)
{
	struct etcd_item *it = malloc(ELECT_STANDBYS_MAX * sizeof(*it));
	size_t plen = strlen(r->prefix);
	unsigned n = 0;
	int64_t count;

	if (it == NULL || etcd_list(r->etcd, r->prefix, it,
	    ELECT_STANDBYS_MAX, &n, &count) != 0) {
		free(it);
		return; /* the last listing stands; listed_ms says its age */
	}
	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < n; i++) {
		const char *name = strlen(it[i].key) > plen ?
		    it[i].key + plen : it[i].key;

		copy_cut(r->list[i].name, sizeof(r->list[i].name), name);
		copy_cut(r->list[i].value, sizeof(r->list[i].value),
		    it[i].value);
	}
	r->n = n;
	r->count = count;
	r->listed_ms = cxlp_clock_ms(CLOCK_BOOTTIME);
	pthread_mutex_unlock(&r->lock);
	free(it);
}

/* reg_forget -- see elect_reg.h */
void
reg_forget(struct elect_reg *r)
{
	pthread_mutex_lock(&r->lock);
	r->n = 0;
	r->count = -1;
	r->listed_ms = 0;
	pthread_mutex_unlock(&r->lock);
}

/* reg_standbys -- see elect_reg.h */
unsigned
reg_standbys(struct elect_reg *r, struct elect_standby *out, unsigned max,
    int64_t *count, uint64_t *listed_ms)
{
	unsigned n;

	pthread_mutex_lock(&r->lock);
	n = r->n < max ? r->n : max;
	memcpy(out, r->list, n * sizeof(*out));
	*count = r->count;
	*listed_ms = r->listed_ms;
	pthread_mutex_unlock(&r->lock);
	return n;
}
