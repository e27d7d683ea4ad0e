/*
 * config.c -- the handler's configuration object.
 *
 * A config is a plain heap struct with range-checked setters. Every setter
 * either applies its value or returns -EINVAL and leaves the config as it
 * was, so a config is valid at every moment: page size at least one cache
 * line (note 1), region size at least one page, and a timeout above zero.
 * connect checks it once more (config_check) because a caller can also
 * pass NULL for defaults, and fills in the secret from CXLP_SECRET_FILE
 * when the config has none (config_secret_env, note 2).
 *
 * DESIGN NOTES
 * 1. Page sizes: any size from 64 bytes (CFG_PAGE_MIN, the pool's
 *    POOL_PAGE_MIN) up, not only multiples of 4 KiB (issue 29: Maru's own
 *    tests use 1 KiB chunks). Nothing maps, protects or hands out a single
 *    page: regions are mapped, given back and read whole (4 KiB-aligned
 *    extents), a persist of a page's [0, len) is a cache-line flush or an
 *    msync that libpmem2 widens to the 4 KiB pages it touches, and the
 *    pages of one region all belong to one writer, so a cache line two
 *    pages share (a size that is not a multiple of 64) still has one
 *    writing host (contract 11). Below 64 bytes a page would be smaller
 *    than the unit of flush and of the pool's own page records, and the
 *    pool refuses such regions: the one size refused, with that reason.
 *    A pool's KV index is sized at format for one key per 4 KiB of data
 *    (POOL_BYTES_PER_SLOT): with smaller chunks a pool can run out of
 *    index slots before data (stores refused CXLP_E_NOSPACE, the index
 *    full); the metaserver's --index-slots sizes it for them.
 * 2. CXLP_SECRET_FILE: an integration that builds its handler's config
 *    from its own settings (vLLM, LMCache, SGLang through cxlpool.maru)
 *    has no way to set a secret; the environment variable names a file
 *    read like the metaserver's --secret-file (one trailing newline
 *    dropped, 1..256 bytes). A secret set on the config wins and the
 *    variable is not looked at; set but unusable (missing, unreadable,
 *    empty, too long) fails the connect with the file named, never
 *    silently connects without it. Read at connect, so a rotated file is
 *    picked up by the next handler.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "core.h"
#include "log.h"
#include "secretfile.h"

#define CFG_PAGE_MIN 64u /* = POOL_PAGE_MIN (note 1) */

void
config_defaults(struct cxlp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->server, "ipc:///tmp/cxlpool.sock");
	cfg->page_size = 64u << 10;
	cfg->region_size = 64u << 20;
	cfg->auto_expand = true;
	cfg->max_regions = 0;
	cfg->timeout_ms = 5000;
	cfg->retries = 3;
	cfg->instance_id = 0;
	cfg->direct_reads = true;
	cfg->keepalive_ms = 1000;
	cfg->lease_ms = CXLP_LEASE_MS_DEFAULT;
	cfg->reserve_regions = 1;
	cfg->max_inflight = CXLP_MAX_INFLIGHT_DEFAULT;
}

static bool
page_size_ok(size_t bytes)
{
	return bytes >= CFG_PAGE_MIN;
}

/* config_check -- 0 if cfg is usable for connect, else -EINVAL. */
int
config_check(const struct cxlp_config *cfg)
{
	if (cfg->server[0] == '\0' ||
	    memchr(cfg->server, '\0', sizeof(cfg->server)) == NULL) {
		return cxlp_fail(-EINVAL, "config: no server URL");
	}
	if (!page_size_ok(cfg->page_size) ||
	    cfg->region_size < cfg->page_size ||
	    cfg->region_size > CFG_REGION_MAX) {
		return cxlp_fail(-EINVAL, "config: page %zu / region %zu bad",
		    cfg->page_size, cfg->region_size);
	}
	if (cfg->timeout_ms == 0) {
		return cxlp_fail(-EINVAL, "config: timeout must be > 0");
	}
	return 0;
}

/* cxlp_config_new -- a config with defaults; caller owns *out. */
int
cxlp_config_new(struct cxlp_config **out)
{
	struct cxlp_config *cfg;

	if (out == NULL) {
		return cxlp_fail(-EINVAL, "config_new: out is NULL");
	}
	*out = NULL;
	cfg = malloc(sizeof(*cfg));
	if (cfg == NULL) {
		return cxlp_fail(-ENOMEM, "config_new: out of memory");
	}
	config_defaults(cfg);
	*out = cfg;
	return 0;
}

/* cxlp_config_delete -- NULL-safe; sets *cfg to NULL. */
void
cxlp_config_delete(struct cxlp_config **cfg)
{
	if (cfg == NULL || *cfg == NULL) {
		return;
	}
	explicit_bzero((*cfg)->secret, sizeof((*cfg)->secret));
	free(*cfg);
	*cfg = NULL;
}

/* cxlp_config_set_server -- URL of the metaserver (nng syntax), or
 * several, comma-separated (checked at connect: net/endpoints.c). */
int
cxlp_config_set_server(struct cxlp_config *cfg, const char *url)
{
	size_t len;

	if (cfg == NULL || url == NULL) {
		return cxlp_fail(-EINVAL, "config_set_server: NULL argument");
	}
	len = strnlen(url, CFG_SERVER_MAX);
	if (len == 0 || len >= CFG_SERVER_MAX) {
		return cxlp_fail(-EINVAL, "config_set_server: URL empty or "
		    "longer than %d bytes", CFG_SERVER_MAX - 1);
	}
	memcpy(cfg->server, url, len + 1);
	return 0;
}

/* cxlp_config_set_pool -- the pool's path, for its owner record (see
 * cxlpool.h; session/leader.c); NULL or "" clears. */
int
cxlp_config_set_pool(struct cxlp_config *cfg, const char *path)
{
	size_t len = path == NULL ? 0 : strnlen(path, CFG_POOL_MAX);

	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_pool: NULL config");
	}
	if (len >= CFG_POOL_MAX) {
		return cxlp_fail(-EINVAL, "config_set_pool: path longer than "
		    "%d bytes", CFG_POOL_MAX - 1);
	}
	memcpy(cfg->pool, len > 0 ? path : "", len);
	cfg->pool[len] = '\0';
	return 0;
}

/* cxlp_config_set_page_size -- >= 64 (note 1), and not larger than the
 * region size. */
int
cxlp_config_set_page_size(struct cxlp_config *cfg, size_t bytes)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_page_size: NULL config");
	}
	if (!page_size_ok(bytes)) {
		return cxlp_fail(-EINVAL, "config_set_page_size: %zu is "
		    "below %u bytes: a page is at least one cache line, the "
		    "unit of flush and of the pool's page records", bytes,
		    CFG_PAGE_MIN);
	}
	if (bytes > cfg->region_size) {
		return cxlp_fail(-EINVAL, "config_set_page_size: %zu is "
		    "larger than the region size %zu", bytes,
		    cfg->region_size);
	}
	cfg->page_size = bytes;
	return 0;
}

/* cxlp_config_set_region_size -- >= page size, <= 1 TiB. */
int
cxlp_config_set_region_size(struct cxlp_config *cfg, size_t bytes)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_region_size: NULL");
	}
	if (bytes < cfg->page_size || bytes > CFG_REGION_MAX) {
		return cxlp_fail(-EINVAL, "config_set_region_size: %zu not in "
		    "[page size %zu, %llu]", bytes, cfg->page_size,
		    (unsigned long long)CFG_REGION_MAX);
	}
	cfg->region_size = bytes;
	return 0;
}

/* cxlp_config_set_auto_expand -- take new regions when full. */
int
cxlp_config_set_auto_expand(struct cxlp_config *cfg, bool on)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_auto_expand: NULL");
	}
	cfg->auto_expand = on;
	return 0;
}

/* cxlp_config_set_direct_reads -- unpinned lookups from shared memory. */
int
cxlp_config_set_direct_reads(struct cxlp_config *cfg, bool on)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_direct_reads: NULL");
	}
	cfg->direct_reads = on;
	return 0;
}

/* cxlp_config_set_max_regions -- 0 means no limit. */
int
cxlp_config_set_max_regions(struct cxlp_config *cfg, unsigned n)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_max_regions: NULL");
	}
	cfg->max_regions = n;
	return 0;
}

/* cxlp_config_set_timeout_ms -- per-attempt reply timeout, > 0. */
int
cxlp_config_set_timeout_ms(struct cxlp_config *cfg, unsigned ms)
{
	if (cfg == NULL || ms == 0 || ms > (unsigned)INT32_MAX) {
		return cxlp_fail(-EINVAL, "config_set_timeout_ms: %u out of "
		    "range (1..%d)", ms, INT32_MAX);
	}
	cfg->timeout_ms = ms;
	return 0;
}

/* cxlp_config_set_retries -- resends (same request id) after a timeout. */
int
cxlp_config_set_retries(struct cxlp_config *cfg, unsigned n)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_retries: NULL config");
	}
	cfg->retries = n;
	return 0;
}

/* cxlp_config_set_keepalive_ms -- see cxlpool.h. */
int
cxlp_config_set_keepalive_ms(struct cxlp_config *cfg, unsigned ms)
{
	if (cfg == NULL || ms > (unsigned)INT32_MAX) {
		return cxlp_fail(-EINVAL, "config_set_keepalive_ms: %u out of "
		    "range (0..%d)", ms, INT32_MAX);
	}
	cfg->keepalive_ms = ms;
	return 0;
}

/* cxlp_config_set_lease_ms -- see cxlpool.h. */
int
cxlp_config_set_lease_ms(struct cxlp_config *cfg, unsigned ms)
{
	if (cfg == NULL || ms == 0 || ms > 3600000u) {
		return cxlp_fail(-EINVAL, "config_set_lease_ms: %u out of "
		    "range (1..3600000)", ms);
	}
	cfg->lease_ms = ms;
	return 0;
}

/* cxlp_config_set_alloc_wait_ms -- see cxlpool.h. */
int
cxlp_config_set_alloc_wait_ms(struct cxlp_config *cfg, unsigned ms)
{
	if (cfg == NULL || ms > 3600000u) {
		return cxlp_fail(-EINVAL, "config_set_alloc_wait_ms: %u out of "
		    "range (0..3600000)", ms);
	}
	cfg->alloc_wait_ms = ms;
	return 0;
}

/* cxlp_config_set_reserve_regions -- see cxlpool.h; any n. */
int
cxlp_config_set_reserve_regions(struct cxlp_config *cfg, unsigned n)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_reserve_regions: NULL");
	}
	cfg->reserve_regions = n;
	return 0;
}

/* cxlp_config_set_instance_id -- sent in HELLO to tell instances apart. */
int
cxlp_config_set_instance_id(struct cxlp_config *cfg, uint64_t id)
{
	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_instance_id: NULL");
	}
	cfg->instance_id = id;
	return 0;
}

/* cxlp_config_set_secret -- the shared secret sent in HELLO, which a
 * metaserver listening on tcp:// requires. NULL or "" clears it. */
int
cxlp_config_set_secret(struct cxlp_config *cfg, const char *secret)
{
	size_t len;

	if (cfg == NULL) {
		return cxlp_fail(-EINVAL, "config_set_secret: NULL config");
	}
	len = secret == NULL ? 0 : strnlen(secret, PROTO_SECRET_MAX + 1);
	if (len > PROTO_SECRET_MAX) {
		return cxlp_fail(-EINVAL, "config_set_secret: longer than %d "
		    "bytes", PROTO_SECRET_MAX);
	}
	explicit_bzero(cfg->secret, sizeof(cfg->secret));
	memcpy(cfg->secret, secret == NULL ? "" : secret, len);
	cfg->secret_len = (uint16_t)len;
	return 0;
}

/* secret_read -- the secret in file path (note 2) into cfg, or -errno /
 * -EINVAL naming the file and CXLP_SECRET_FILE. */
static int
secret_read(struct cxlp_config *cfg, const char *path)
{
	char why[128];
	bool loose;
	int rc = cxlp_secret_read(path, cfg->secret, &cfg->secret_len, &loose,
	    why, sizeof(why));

	if (loose) {
		log_err("CXLP_SECRET_FILE=%s is readable by group or others; "
		    "chmod 600 it", path);
	}
	return rc == 0 ? 0 : cxlp_fail(rc, "CXLP_SECRET_FILE=%s: %s", path,
	    why);
}

/* config_secret_env -- see core.h (note 2) */
int
config_secret_env(struct cxlp_config *cfg)
{
	const char *path = getenv("CXLP_SECRET_FILE");

	if (cfg->secret_len > 0 || path == NULL || path[0] == '\0') {
		return 0;
	}
	return secret_read(cfg, path);
}

/* cxlp_config_set_max_inflight -- see cxlpool.h (async.c). */
int
cxlp_config_set_max_inflight(struct cxlp_config *cfg, unsigned n)
{
	if (cfg == NULL || n == 0 || n > CXLP_MAX_INFLIGHT_MAX) {
		return cxlp_fail(-EINVAL, "config_set_max_inflight: %u out of "
		    "range (1..%u)", n, CXLP_MAX_INFLIGHT_MAX);
	}
	cfg->max_inflight = n;
	return 0;
}
