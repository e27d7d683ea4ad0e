/*
 * repair.c -- how the metaserver opens its pool when recovery finds
 * damage: it refuses to start rather than drop acknowledged keys, unless
 * --repair says to drop them, and then says at err level what it dropped.
 *
 * Why this shape: the pool tells records a crash tore (rolled back at
 * every start, which is what recovery is for, and stays quiet) from
 * records that were whole when published and are damaged now (a flipped
 * bit, a stray write): pool_open_owned (pool/owner.h, damage.h) finds
 * them before it writes anything but the owner record. Dropping a damaged region record drops every key in
 * it, and on a disk or fsdax pool those keys were acknowledged as
 * durable; so by default the metaserver stops with exit 1, the file left
 * as it was, naming what is damaged, what would be lost and where to
 * look (pool-inspect check). The operator decides: --repair drops them.
 * Damage that loses nothing (a region record restored from its mirror)
 * is repaired always and logged at err level, since the medium is
 * suspect.
 */
#include <stdio.h>
#include <string.h>

#include "damage.h"
#include "owner.h"
#include "err.h"
#include "log.h"
#include "ms_int.h"

static uint32_t
kept(const struct pool_damage *d)
{
	return d->nrec < POOL_DAMAGE_KEEP ? d->nrec : POOL_DAMAGE_KEEP;
}

/* one err line per damaged record kept; op says refused or dropped */
static void
log_records(const char *path, const struct pool_damage *d, const char *op)
{
	char what[200];

	for (uint32_t i = 0; i < kept(d); i++) {
		log_err("op=%s pool=%s record=\"%s\" keys=%llu bytes=%llu",
		    op, path, pool_damage_describe(&d->rec[i], what,
		    sizeof(what)), (unsigned long long)d->rec[i].keys,
		    (unsigned long long)d->rec[i].bytes);
	}
	if (d->nrec > kept(d)) {
		log_err("op=%s pool=%s more_records=%u", op, path,
		    d->nrec - kept(d));
	}
}

/* the refusal: what, what would be lost, what to do (errormsg) */
static int
refuse(const char *path, const struct pool_damage *d)
{
	char what[200], more[48] = "", extra[64] = "", b[32];

	log_records(path, d, "damaged");
	pool_damage_describe(&d->rec[0], what, sizeof(what));
	if (d->nrec > 1) {
		snprintf(more, sizeof(more), " and %u more damaged records",
		    d->nrec - 1);
	}
	if (d->sessions > 0 || d->pins > 0) {
		snprintf(extra, sizeof(extra), ", %llu sessions, %llu pins",
		    (unsigned long long)d->sessions,
		    (unsigned long long)d->pins);
	}
	return cxlp_fail(CXLP_E_CORRUPT, "pool is damaged: %s%s; %llu key%s "
	    "(%s)%s would be lost; run pool-inspect check %s; --repair drops "
	    "them", what, more, (unsigned long long)d->keys,
	    d->keys == 1 ? "" : "s", pool_damage_bytes(d->bytes, b, sizeof(b)),
	    extra, path);
}

/* after a successful open: what recovery did */
static void
log_recovery(const char *path, const struct pool_damage *d)
{
	if (d->dropped) {
		log_records(path, d, "repair_dropped");
		log_err("op=repair pool=%s records=%u keys_lost=%llu "
		    "bytes_lost=%llu sessions_lost=%llu pins_lost=%llu", path,
		    d->nrec, (unsigned long long)d->keys,
		    (unsigned long long)d->bytes,
		    (unsigned long long)d->sessions,
		    (unsigned long long)d->pins);
	}
	if (d->restored > 0) {
		log_err("op=repair pool=%s restored=%llu msg=\"damaged region "
		    "records rewritten from their copy; nothing lost\"", path,
		    (unsigned long long)d->restored);
	}
	if (d->torn > 0) {
		log_info("op=recover pool=%s torn=%llu msg=\"records a crash "
		    "left mid-write rolled back\"", path,
		    (unsigned long long)d->torn);
	}
}

/* ms_pool_open -- see ms_int.h */
int
ms_pool_open(struct pool **out, const struct ms_config *cfg, unsigned flags,
    const struct pool_params *params, const struct pool_own *own)
{
	struct pool_damage d;
	int rc;

	if (!cfg->repair) {
		flags |= POOL_NODROP;
	}
	rc = pool_open_owned(out, cfg->pool_path, flags, params, own, &d);
	if (rc == CXLP_E_CORRUPT && d.nrec > 0 && !cfg->repair) {
		return refuse(cfg->pool_path, &d);
	}
	if (rc == 0) {
		log_recovery(cfg->pool_path, &d);
	}
	return rc;
}
