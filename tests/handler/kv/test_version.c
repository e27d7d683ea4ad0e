/*
 * test_version.c -- tests of handler/kv/version.c: versioned retrieves and
 * cxlp_validate / cxlp_batch_validate, on every path a retrieve can take
 * (direct read, pinned through the server, unpinned through the server,
 * direct reads off). The race of readers against writers that reuse
 * their pages is test_version_churn.c.
 *
 * A real metaserver (tests/support/server.h) sits behind the counting
 * proxy (tests/support/proxy.h), so the tests can tell that validate
 * sends nothing; handlers run without keepalive, so the proxy sees only
 * the requests the test makes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "cxlpool.h"
#include "layout.h"
#include "proto.h"
#include "proxy_fixture.h"

#define PAGE (16u << 10)
#define REGION (2u << 20)

/* Set by a test: what the proxy does while it holds the next LOOKUP
 * reply (one at a time); see meddle_hook. */
static void (*meddle)(void);

static enum proxy_action
meddle_hook(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	void (*fn)(void);

	(void)arg;
	(void)req_id;
	(void)reply_len;
	(void)delay_ms;
	if (reply != NULL && op == PROTO_OP_LOOKUP &&
	    (fn = __atomic_exchange_n(&meddle, NULL, __ATOMIC_ACQ_REL)) !=
	    NULL) {
		fn();
	}
	return PROXY_PASS;
}

static void
setup(void)
{
	pfx_start("version", meddle_hook);
}

TestSuite(version, .init = setup, .fini = pfx_stop, .timeout = 100);

/* A handler on url without keepalive; timeout_ms 0: the default. */
static struct cxlp_handler *
connect_to(const char *url, bool direct, unsigned timeout_ms)
{
	struct cxlp_config *cfg = pfx_config(url, PAGE, REGION, direct);

	cr_assert_eq(cxlp_config_set_keepalive_ms(cfg, 0), 0);
	if (timeout_ms != 0) {
		cr_assert_eq(cxlp_config_set_timeout_ms(cfg, timeout_ms), 0);
	}
	return pfx_connect(cfg);
}

/* Requests of any kind the proxy has seen. */
static uint64_t
requests(void)
{
	uint64_t n = 0;

	for (unsigned op = 0; op <= PROTO_OP_MAX; op++) {
		n += proxy_requests(px, op);
	}
	return n;
}

/* store key -> len bytes of fill */
static void
store_ok(struct cxlp_handler *h, const char *key, size_t len, uint8_t fill)
{
	pfx_store_ok(h, key, len, fill, 0);
}

/* retrieve_v key, checking len bytes of fill came back; its version */
static cxlp_version_t
retrieve_v_ok(struct cxlp_handler *h, const char *key, unsigned flags,
    size_t len, uint8_t fill)
{
	cxlp_version_t v;
	const void *data = NULL;
	size_t got = 0;
	int rc = cxlp_retrieve_v(h, key, strlen(key), flags, &data, &got, &v);

	cr_assert_eq(rc, 0, "retrieve_v %s: %s (%s)", key, cxlp_strerror(rc),
	    cxlp_errormsg());
	cr_assert_eq(got, len);
	for (size_t i = 0; i < len; i++) {
		cr_assert_eq(((const uint8_t *)data)[i], fill, "%s: byte %zu",
		    key, i);
	}
	return v;
}

/* cr_assert that validate of v returns want */
#define assert_validate(h, v, want)                                        \
	do {                                                               \
		int rc_ = cxlp_validate((h), &(v));                        \
		cr_assert_eq(rc_, (want), "validate = %s (%s), want %s",   \
		    cxlp_strerror(rc_), cxlp_errormsg(),                   \
		    cxlp_strerror(want));                                  \
	} while (0)

Test(version, a_version_validates_with_no_round_trip_until_its_key_goes)
{
	struct cxlp_handler *w = connect_to(px_url, true, 0);
	struct cxlp_handler *r = connect_to(px_url, true, 0);
	cxlp_version_t v, mine;
	uint64_t before;

	store_ok(w, "gone@model", 1000, 7);
	before = requests();
	v = retrieve_v_ok(r, "gone@model", 0, 1000, 7);
	mine = retrieve_v_ok(w, "gone@model", 0, 1000, 7);
	for (int i = 0; i < 100; i++) {
		assert_validate(r, v, 0);
	}
	assert_validate(w, mine, 0);
	cr_assert_eq(requests(), before, "retrieve_v and validate sent "
	    "%llu requests", (unsigned long long)(requests() - before));
	cr_assert_eq(cxlp_delete(w, "gone@model", 10), 0);
	assert_validate(r, v, CXLP_E_CHANGED);
	assert_validate(w, mine, CXLP_E_CHANGED);
	cr_assert(strstr(cxlp_errormsg(), "changed") != NULL, "%s",
	    cxlp_errormsg());
	cxlp_close(&r);
	cxlp_close(&w);
}

Test(version, a_key_stored_again_with_the_same_bytes_is_a_new_version)
{
	struct cxlp_handler *w = connect_to(px_url, true, 0);
	struct cxlp_handler *r = connect_to(px_url, true, 0);
	const void *d1, *d2;
	size_t len;
	cxlp_version_t v1, v2;

	store_ok(w, "again@model", 512, 3);
	cr_assert_eq(cxlp_retrieve_v(r, "again@model", 11, 0, &d1, &len,
	    &v1), 0);
	cr_assert_eq(cxlp_delete(w, "again@model", 11), 0);
	store_ok(w, "again@model", 512, 3); /* the page just freed */
	cr_assert_eq(cxlp_retrieve_v(r, "again@model", 11, 0, &d2, &len,
	    &v2), 0);
	cr_assert_eq(d1, d2, "the owner reused its page");
	assert_validate(r, v1, CXLP_E_CHANGED);
	assert_validate(r, v2, 0);
	cxlp_close(&r);
	cxlp_close(&w);
}

Test(version, a_pinned_version_validates_while_the_pin_is_held)
{
	struct cxlp_handler *w = connect_to(px_url, true, 0);
	struct cxlp_handler *r = connect_to(px_url, true, 0);
	cxlp_version_t v, u;

	store_ok(w, "pin@model", 100, 1);
	v = retrieve_v_ok(r, "pin@model", CXLP_RETRIEVE_PIN, 100, 1);
	cr_assert_eq(proxy_requests(px, PROTO_OP_LOOKUP), 1, "pinned: RPC");
	u = retrieve_v_ok(r, "pin@model", 0, 100, 1);
	cr_assert_eq(memcmp(&u, &v, sizeof(u)), 0, "the read back is the "
	    "version a direct read takes");
	assert_validate(r, v, 0);
	cr_assert_eq(cxlp_delete(w, "pin@model", 9), CXLP_E_PINNED);
	assert_validate(r, v, 0);
	cr_assert_eq(cxlp_unpin(r, "pin@model", 9), 0);
	assert_validate(r, v, 0); /* unpinned, but the key is as it was */
	cr_assert_eq(cxlp_delete(w, "pin@model", 9), 0);
	assert_validate(r, v, CXLP_E_CHANGED);
	cxlp_close(&r);
	cxlp_close(&w);
}

Test(version, with_direct_reads_off_only_pinned_versions_validate)
{
	struct cxlp_handler *w = connect_to(px_url, true, 0);
	struct cxlp_handler *r = connect_to(px_url, false, 0);
	cxlp_version_t pinned, plain;

	store_ok(w, "off@model", 200, 5);
	pinned = retrieve_v_ok(r, "off@model", CXLP_RETRIEVE_PIN, 200, 5);
	plain = retrieve_v_ok(r, "off@model", 0, 200, 5);
	cr_assert_eq(proxy_requests(px, PROTO_OP_LOOKUP), 2);
	assert_validate(r, pinned, 0);
	assert_validate(r, plain, CXLP_E_NOVERSION);
	cr_assert(strstr(cxlp_errormsg(), "pinned") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_eq(cxlp_unpin(r, "off@model", 9), 0);
	cr_assert_eq(cxlp_delete(w, "off@model", 9), 0);
	assert_validate(r, plain, CXLP_E_NOVERSION);
	/* the handler that reads the index does not take r's word for it */
	assert_validate(w, plain, CXLP_E_NOVERSION);
	cxlp_close(&r);
	cxlp_close(&w);
}

Test(version, batch_validate_reports_every_version)
{
	struct cxlp_handler *w = connect_to(px_url, true, 0);
	struct cxlp_handler *r = connect_to(px_url, true, 0);
	const void *keys[4] = { "b0@m", "b1@m", "absent", "b3@m" };
	size_t klen[4] = { 4, 4, 6, 4 }, lens[4];
	const void *data[4];
	cxlp_version_t vers[4], zero;
	int st[4], vst[4];

	store_ok(w, "b0@m", 10, 1);
	store_ok(w, "b1@m", 20, 2);
	store_ok(w, "b3@m", 30, 3);
	cr_assert_eq(cxlp_batch_retrieve_v(r, 4, keys, klen, 0, data, lens,
	    st, vers), 0);
	cr_assert(st[0] == 0 && st[1] == 0 && st[2] == CXLP_E_NOTFOUND &&
	    st[3] == 0);
	memset(&zero, 0, sizeof(zero));
	cr_assert_eq(memcmp(&vers[2], &zero, sizeof(zero)), 0, "a key not "
	    "found gets a zeroed version");
	cr_assert_eq(cxlp_batch_validate(r, 4, vers, vst), 1);
	cr_assert(vst[0] == 0 && vst[1] == 0 && vst[2] == -EINVAL &&
	    vst[3] == 0);
	cr_assert_eq(cxlp_delete(w, "b1@m", 4), 0);
	cr_assert_eq(cxlp_delete(w, "b3@m", 4), 0);
	store_ok(w, "b3@m", 30, 3);
	cr_assert_eq(cxlp_batch_validate(r, 4, vers, vst), 3);
	cr_assert_eq(vst[0], 0);
	cr_assert_eq(vst[1], CXLP_E_CHANGED);
	cr_assert_eq(vst[2], -EINVAL);
	cr_assert_eq(vst[3], CXLP_E_CHANGED);
	cr_assert(strstr(cxlp_errormsg(), "3 of 4") != NULL, "%s",
	    cxlp_errormsg());
	cxlp_close(&r);
	cxlp_close(&w);
}

Test(version, what_is_not_a_version_is_refused)
{
	struct cxlp_handler *w = connect_to(px_url, true, 0);
	cxlp_version_t v, bad;
	const void *data;
	size_t len;
	int st[2];

	store_ok(w, "k@m", 10, 1);
	v = retrieve_v_ok(w, "k@m", 0, 10, 1);
	memset(&bad, 0, sizeof(bad));
	assert_validate(w, bad, -EINVAL);
	bad = v;
	bad.opaque[1] |= 0xffull << 56; /* unknown kind */
	assert_validate(w, bad, -EINVAL);
	bad = v;
	bad.opaque[1] += 1ull << 40; /* slot far outside the index */
	assert_validate(w, bad, -EINVAL);
	bad = v;
	bad.opaque[0] += 1; /* an odd word: never a version */
	assert_validate(w, bad, -EINVAL);
	cr_assert_eq(cxlp_validate(w, NULL), -EINVAL);
	cr_assert_eq(cxlp_validate(NULL, &v), -EINVAL);
	cr_assert_eq(cxlp_batch_validate(w, 0, &v, st), CXLP_E_BATCH);
	cr_assert_eq(cxlp_batch_validate(w, CXLP_BATCH_MAX + 1, &v, st),
	    CXLP_E_BATCH);
	cr_assert_eq(cxlp_batch_validate(w, 1, NULL, st), -EINVAL);
	cr_assert_eq(cxlp_batch_validate(w, 1, &v, NULL), -EINVAL);
	cr_assert_eq(cxlp_retrieve_v(w, "k@m", 3, 0, &data, &len, NULL),
	    -EINVAL);
	cr_assert_eq(cxlp_batch_retrieve_v(w, 1, (const void *[]){ "k@m" },
	    (size_t[]){ 3 }, 0, &data, &len, st, NULL), -EINVAL);
	assert_validate(w, v, 0);
	cxlp_close(&w);
}

/* ---- a retrieve the server answers although direct reads are on ------ */

/* The pool's metadata area, mapped read-write by the test: it stands in
 * for a metaserver stuck in the middle of writing a slot. */
struct meta {
	uint8_t *base;
	size_t len;
	struct kv_slot *slots;
	uint64_t nslots;
};

static void
meta_map(struct meta *m)
{
	struct pool_sb sb;
	int fd = open(srv.pool, O_RDWR);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	m->len = sb.area[POOL_AREA_DATA].off;
	m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	    0);
	close(fd);
	cr_assert_neq(m->base, MAP_FAILED);
	m->slots = (void *)(m->base + sb.area[POOL_AREA_INDEX].off);
	m->nslots = sb.area[POOL_AREA_INDEX].count;
}

static uint64_t
home_of(const struct meta *m, const char *key)
{
	return XXH3_64bits(key, strlen(key)) & (m->nslots - 1);
}

/* A key (into buf) whose home slot is home. */
static void
key_with_home(const struct meta *m, uint64_t home, char *buf, size_t n)
{
	for (unsigned i = 0;; i++) {
		snprintf(buf, n, "collide-%u@model", i);
		if (home_of(m, buf) == home) {
			return;
		}
	}
}

/* Stores "first@model" and a key b whose probe passes first's slot, then
 * leaves that slot mid-write (odd): a direct read of b gives up on it
 * (KVREAD_ASK) and asks the server, which skips the odd slot and finds
 * b. Returns first's slot word, for stuck_end. */
static uint64_t
stuck_begin(struct cxlp_handler *w, struct meta *m, char *b, size_t n)
{
	uint64_t h = home_of(m, "first@model"), word;

	store_ok(w, "first@model", 64, 9);
	key_with_home(m, h, b, n);
	store_ok(w, b, 100, 4);
	word = __atomic_load_n(&m->slots[h].word, __ATOMIC_ACQUIRE);
	cr_assert_eq(kv_state(word), KV_LIVE, "first is in its home slot");
	__atomic_store_n(&m->slots[h].word, kv_word(kv_seq(word) + 1,
	    KV_LIVE, 0), __ATOMIC_RELEASE);
	return word;
}

/* the stuck write of stuck_begin finishes */
static void
stuck_end(struct meta *m, uint64_t word)
{
	__atomic_store_n(&m->slots[home_of(m, "first@model")].word, word,
	    __ATOMIC_RELEASE);
}

Test(version, a_retrieve_the_server_answered_is_checked_if_it_reads_back)
{
	struct cxlp_handler *w = connect_to(px_url, true, 0);
	struct cxlp_handler *r = connect_to(px_url, true, 0);
	cxlp_version_t plain, pinned, later;
	struct meta m;
	char b[64];
	uint64_t word;

	meta_map(&m);
	word = stuck_begin(w, &m, b, sizeof(b));
	/* the read back meets the same stuck slot: nothing to check, unless
	 * the key is pinned */
	plain = retrieve_v_ok(r, b, 0, 100, 4);
	pinned = retrieve_v_ok(r, b, CXLP_RETRIEVE_PIN, 100, 4);
	cr_assert_eq(proxy_requests(px, PROTO_OP_LOOKUP), 2,
	    "both went to the server");
	assert_validate(r, plain, CXLP_E_NOVERSION);
	assert_validate(r, pinned, 0);
	stuck_end(&m, word);
	/* the slot written at last: a retrieve reads its key back */
	later = retrieve_v_ok(r, b, CXLP_RETRIEVE_PIN, 100, 4);
	assert_validate(r, later, 0);
	cr_assert_eq(cxlp_unpin(r, b, strlen(b)), 0);
	cr_assert_eq(cxlp_unpin(r, b, strlen(b)), 0);
	cr_assert_eq(cxlp_delete(w, b, strlen(b)), 0);
	assert_validate(r, later, CXLP_E_CHANGED);
	assert_validate(r, plain, CXLP_E_NOVERSION);
	munmap(m.base, m.len);
	cxlp_close(&r);
	cxlp_close(&w);
}

/* What the hook does in the next test, and what came of it. */
static struct {
	struct cxlp_handler *w; /* straight to srv, not through the proxy */
	struct meta *m;
	uint64_t word;
	const char *key;
	cxlp_page_t elsewhere;  /* w's page for the key's next value */
	int rc_delete, rc_store;
	bool stored;
} md;

/* While the server's answer is on its way: the stuck write finishes, and
 * the key moves to another page (no Criterion assert on this thread). */
static void
move_key(void)
{
	size_t kl = strlen(md.key);

	stuck_end(md.m, md.word);
	md.rc_delete = cxlp_delete(md.w, md.key, kl);
	md.rc_store = cxlp_store(md.w, md.key, kl, md.elsewhere, 100, 0,
	    &md.stored);
}

Test(version, a_retrieve_the_server_answered_is_stale_if_the_key_moved_since)
{
	struct cxlp_handler *r = connect_to(px_url, true, 0);
	cxlp_version_t v;
	struct meta m;
	char b[64];
	void *buf;

	md.w = connect_to(srv.url, true, 0);
	meta_map(&m);
	md.m = &m;
	md.key = b;
	md.word = stuck_begin(md.w, &m, b, sizeof(b));
	cr_assert_eq(cxlp_alloc(md.w, &md.elsewhere, &buf), 0);
	memset(buf, 4, 100);
	__atomic_store_n(&meddle, move_key, __ATOMIC_RELEASE);
	v = retrieve_v_ok(r, b, 0, 100, 4); /* the old page, not yet reused */
	cr_assert_null(meddle, "the retrieve asked the server");
	cr_assert(md.rc_delete == 0 && md.rc_store == 0 && md.stored,
	    "delete %d, store %d", md.rc_delete, md.rc_store);
	/* the index read back holds the key elsewhere: the page the server
	 * named is free for its owner to reuse */
	assert_validate(r, v, CXLP_E_CHANGED);
	cr_assert(strstr(cxlp_errormsg(), "read it back") != NULL, "%s",
	    cxlp_errormsg());
	v = retrieve_v_ok(r, b, 0, 100, 4);
	assert_validate(r, v, 0);
	munmap(m.base, m.len);
	cxlp_close(&r);
	cxlp_close(&md.w);
}

Test(version, a_version_of_a_pool_formatted_again_in_place_has_changed)
{
	struct cxlp_handler *h = connect_to(px_url, true, 0);
	struct pool_sb *sb;
	cxlp_version_t v;
	struct meta m;
	uint64_t magic;

	meta_map(&m);
	sb = (void *)m.base;
	store_ok(h, "fmt@model", 100, 7);
	v = retrieve_v_ok(h, "fmt@model", 0, 100, 7);
	/* a format in place clears the magic first ... */
	memcpy(&magic, sb->magic, sizeof(magic));
	__atomic_store_n((uint64_t *)(void *)sb->magic, 0, __ATOMIC_RELEASE);
	assert_validate(h, v, CXLP_E_CHANGED);
	__atomic_store_n((uint64_t *)(void *)sb->magic, magic,
	    __ATOMIC_RELEASE);
	assert_validate(h, v, 0);
	/* ... and ends with a new uuid, its slots counting from 0 again */
	sb->uuid[3] ^= 0x5a;
	assert_validate(h, v, CXLP_E_CHANGED);
	sb->uuid[3] ^= 0x5a;
	assert_validate(h, v, 0);
	munmap(m.base, m.len);
	cxlp_close(&h);
}

Test(version, a_version_of_a_pool_replaced_under_the_path_has_changed)
{
	const char *size_args[] = {"--size", "128M", NULL};
	struct cxlp_handler *h = connect_to(srv.url, true, 500);
	const void *data;
	size_t len;
	cxlp_version_t v;

	store_ok(h, "old@model", 100, 7);
	v = retrieve_v_ok(h, "old@model", 0, 100, 7);
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(unlink(srv.pool), 0);
	cr_assert_eq(test_server_restart(&srv, size_args), 0);
	usleep(300 * 1000); /* past direct.c's RECHECK_MS */
	cr_assert_eq(cxlp_retrieve(h, "old@model", 9, 0, &data, &len),
	    CXLP_E_SESSION);
	assert_validate(h, v, CXLP_E_CHANGED);
	cr_assert(strstr(cxlp_errormsg(), "direct reads are off") != NULL,
	    "%s", cxlp_errormsg());
	cxlp_close(&h);
}
