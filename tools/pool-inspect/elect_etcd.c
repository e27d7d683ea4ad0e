/*
 * elect_etcd.c -- inspect_elect_read through the metaserver's etcd
 * client (metaserver/etcd.c, linked where libcurl and libcjson are: meson
 * -Delect): one read of the election key, one listing of its standbys
 * (metaserver/elect_reg.c). Read only: nothing is written to etcd.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elect.h"
#include "err.h"
#include "etcd.h"
#include "inspect.h"

#define ELECT_READ_MS 3000u /* one call, all endpoints */

static int
read_leader(struct etcd *c, struct inspect_elect *e)
{
	struct etcd_kv *kv = malloc(sizeof(*kv));
	int rc;

	if (kv == NULL) {
		return cxlp_fail(-ENOMEM, "no memory");
	}
	rc = etcd_get(c, e->key, kv);
	if (rc == 0) {
		e->leader = true;
		e->epoch = (uint64_t)kv->create_rev;
		snprintf(e->value, sizeof(e->value), "%s", kv->value);
	}
	free(kv);
	return rc == -ENOENT ? 0 : rc;
}

static int
read_standbys(struct etcd *c, struct inspect_elect *e)
{
	struct etcd_item *it = malloc(INSPECT_SB_MAX * sizeof(*it));
	char prefix[sizeof(e->key) + sizeof(ELECT_STANDBY_DIR)];
	int rc;

	if (it == NULL) {
		return cxlp_fail(-ENOMEM, "no memory");
	}
	snprintf(prefix, sizeof(prefix), "%s%s", e->key, ELECT_STANDBY_DIR);
	rc = etcd_list(c, prefix, it, INSPECT_SB_MAX, &e->n, &e->count);
	for (unsigned i = 0; rc == 0 && i < e->n; i++) {
		snprintf(e->name[i], sizeof(e->name[i]), "%s",
		    it[i].key + strlen(prefix));
		snprintf(e->info[i], sizeof(e->info[i]), "%s", it[i].value);
	}
	free(it);
	return rc;
}

/* inspect_elect_read -- see inspect.h */
void
inspect_elect_read(const char *spec, const char *key,
    struct inspect_elect *e)
{
	struct etcd_endpoints ep;
	struct etcd *c = NULL;

	memset(e, 0, sizeof(*e));
	e->spec = spec;
	snprintf(e->key, sizeof(e->key), "%s", key);
	if ((e->rc = etcd_endpoints_parse(spec, &ep)) == 0 &&
	    (e->rc = etcd_new(&c, &ep, ELECT_READ_MS)) == 0 &&
	    (e->rc = read_leader(c, e)) == 0) {
		e->rc = read_standbys(c, e);
	}
	if (e->rc != 0) {
		snprintf(e->why, sizeof(e->why), "%s", cxlp_errormsg());
	}
	etcd_delete(&c);
}
