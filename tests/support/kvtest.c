/*
 * kvtest.c -- see kvtest.h. The page pattern is a 16-byte header (magic,
 * writer, key, length) followed by bytes derived from all three, so a torn,
 * misplaced or overwritten page fails kv_check.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "kvtest.h"

#define KV_MAGIC 0x4b565054u

struct kv_hdr {
	uint32_t magic;
	uint32_t writer;
	uint32_t key;
	uint32_t len;
};

/* Connect with the given geometry; timeout_ms 0 keeps the library's
 * timeout and retries; secret NULL sends none. */
static struct cxlp_handler *
connect_with(const char *url, size_t page_size, size_t region_size,
    bool auto_expand, unsigned timeout_ms, unsigned retries,
    const char *secret)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;
	int rc;

	if (cxlp_config_new(&cfg) != 0) {
		return NULL;
	}
	rc = cxlp_config_set_server(cfg, url);
	rc = rc ? rc : cxlp_config_set_page_size(cfg, page_size);
	rc = rc ? rc : cxlp_config_set_region_size(cfg, region_size);
	rc = rc ? rc : cxlp_config_set_auto_expand(cfg, auto_expand);
	if (timeout_ms != 0) {
		rc = rc ? rc : cxlp_config_set_timeout_ms(cfg, timeout_ms);
		rc = rc ? rc : cxlp_config_set_retries(cfg, retries);
	}
	if (secret != NULL) {
		rc = rc ? rc : cxlp_config_set_secret(cfg, secret);
	}
	rc = rc ? rc : cxlp_connect(&h, cfg);
	if (rc != 0) {
		fprintf(stderr, "connect %s: %s (%s)\n", url,
		    cxlp_strerror(rc), cxlp_errormsg());
	}
	cxlp_config_delete(&cfg);
	return h;
}

struct cxlp_handler *
kv_connect(const char *url, size_t page_size, size_t region_size,
    bool auto_expand)
{
	return connect_with(url, page_size, region_size, auto_expand, 0, 0,
	    NULL);
}

struct cxlp_handler *
kv_connect_timeout(const char *url, unsigned timeout_ms, unsigned retries)
{
	return connect_with(url, 4096, 4u << 20, true, timeout_ms, retries,
	    NULL);
}

struct cxlp_handler *
kv_connect_secret(const char *url, size_t page_size, size_t region_size,
    unsigned timeout_ms, unsigned retries, const char *secret)
{
	return connect_with(url, page_size, region_size, true, timeout_ms,
	    retries, secret);
}

static uint8_t
pattern_byte(uint32_t writer, uint32_t key, size_t i)
{
	return (uint8_t)(writer * 131u + key * 7u + i * 13u + (i >> 8));
}

void
kv_fill(void *buf, size_t len, uint32_t writer, uint32_t key)
{
	struct kv_hdr h = { KV_MAGIC, writer, key, (uint32_t)len };
	uint8_t *p = buf;

	memcpy(p, &h, sizeof(h));
	for (size_t i = sizeof(h); i < len; i++) {
		p[i] = pattern_byte(writer, key, i);
	}
}

bool
kv_check(const void *buf, size_t len, uint32_t key, uint32_t *writer)
{
	struct kv_hdr h;
	const uint8_t *p = buf;

	if (len < sizeof(h)) {
		return false;
	}
	memcpy(&h, p, sizeof(h));
	if (h.magic != KV_MAGIC || h.key != key || h.len != len) {
		return false;
	}
	for (size_t i = sizeof(h); i < len; i++) {
		if (p[i] != pattern_byte(h.writer, key, i)) {
			return false;
		}
	}
	if (writer != NULL) {
		*writer = h.writer;
	}
	return true;
}

size_t
kv_key(char *out, size_t n, const char *prefix, unsigned i)
{
	int k = snprintf(out, n, "%s-%u", prefix, i);

	return k < 0 ? 0 : (size_t)k;
}

struct cxlp_stats
kv_stats(struct cxlp_handler *h)
{
	struct cxlp_stats st;
	int rc = cxlp_stats(h, &st);

	if (rc != 0) {
		fprintf(stderr, "cxlp_stats: %s\n", cxlp_strerror(rc));
		memset(&st, 0, sizeof(st));
	}
	return st;
}

int
kv_wait_child(int pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid) {
		return -1;
	}
	if (WIFEXITED(status)) {
		return WEXITSTATUS(status);
	}
	return 128 + WTERMSIG(status);
}
