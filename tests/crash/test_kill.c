/*
 * test_kill.c -- kill -9 of a live metaserver under load, five times
 * (issue 3, DESIGN contracts 4 and 8): three handler processes
 * (itest-worker crash-storer) batch_store in a loop on the same pool and
 * socket while the test SIGKILLs the server and starts it again. The
 * handlers are never restarted: they ride through on their retries (same
 * request ids) and their session tokens. Afterwards:
 *   - every key whose store reported true is in the pool with its exact
 *     bytes (kv_check: writer, key and length);
 *   - pool-inspect check passes;
 *   - per handler, pages_free + pages_registered + pages_allocated ==
 *     pages_total with none allocated or unresolved, and the pool holds
 *     exactly pages_registered keys of that handler: no page leaked (a
 *     key at a page its handler freed) and none doubly owned.
 * Also here: sessions of another host that a restarted server reloads end
 * after --grace-ms unless they come back (pins released, regions
 * disowned), while an idle handler of this host keeps its region however
 * long it is silent; pins survive a restart, and a volatile pool from
 * another boot is refused with advice to use --reformat.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cxlpool.h"
#include "kvtest.h"
#include "layout.h"
#include "pool.h"
#include "proc.h"
#include "proto.h"
#include "rawclient.h"
#include "server.h"
#include "worker.h"

#define MiB (1024ull * 1024)
#define WORKERS 3
#define KILLS 5

static struct test_server srv;
static const char *const grace_args[] = { "--grace-ms", "60000", NULL };
static char check_out[160];

struct worker {
	struct test_child ch; /* itest-worker crash-storer */
	uint32_t writer;
	uint32_t *acked; /* key indices stored true */
	size_t nacked, cap;
	atomic_bool ready; /* connected */
	bool ended;      /* CRASH_END and the result arrived */
	struct crash_result res;
	pthread_t th;
};

/* start worker w as writer; it connects when released with "g" */
static void
spawn(struct worker *w, uint32_t writer)
{
	char path[4096], arg[16];
	const char *const argv[] = { "itest-worker", "crash-storer", srv.url,
		arg, NULL };

	/* itest-worker sits in ../integration beside this directory */
	cr_assert_eq(test_worker_path(path, sizeof(path),
	    "../integration/itest-worker"), 0);
	snprintf(arg, sizeof(arg), "%u", writer);
	memset(w, 0, sizeof(*w));
	w->writer = writer;
	cr_assert_eq(test_child_spawn(&w->ch, path, argv), 0, "spawn %s: %s",
	    path, strerror(errno));
}

/* collect a worker's stdout until CRASH_END and its result (or EOF) */
static void *
collect(void *arg)
{
	struct worker *w = arg;
	uint32_t k;

	while (test_child_read(&w->ch, &k, sizeof(k))) {
		if (k == CRASH_READY) {
			atomic_store(&w->ready, true);
			continue;
		}
		if (k == CRASH_END) {
			w->ended = test_child_read(&w->ch, &w->res,
			    sizeof(w->res));
			break;
		}
		if (w->nacked == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 1024;
			w->acked = realloc(w->acked, w->cap * sizeof(k));
			if (w->acked == NULL) {
				break;
			}
		}
		w->acked[w->nacked++] = k;
	}
	return NULL;
}

static void
setup(void)
{
	cr_assert_eq(test_server_start(&srv, 256 * MiB, grace_args), 0);
	snprintf(check_out, sizeof(check_out), "%s.check", srv.log);
}

static void
teardown(void)
{
	unlink(check_out);
	test_server_stop(&srv);
}

TestSuite(kill, .init = setup, .fini = teardown, .timeout = 120);

/* the value of key k of writer w, read from the pool file */
static void
check_value(struct pool *p, int fd, const struct worker *w, uint32_t k)
{
	char key[32], prefix[16];
	struct pool_kv kv;
	uint32_t writer = 0;
	size_t kl;
	uint8_t *buf;

	snprintf(prefix, sizeof(prefix), "w%u", w->writer);
	kl = kv_key(key, sizeof(key), prefix, k);
	cr_assert_eq(pool_kv_lookup(p, key, kl, &kv), 0, "%s stored true, "
	    "not in the pool", key);
	cr_assert_eq(kv.len, crash_len(k), "%s: length %llu", key,
	    (unsigned long long)kv.len);
	buf = malloc(kv.len);
	cr_assert_not_null(buf);
	cr_assert_eq(pread(fd, buf, kv.len, (off_t)kv.off), (ssize_t)kv.len);
	cr_assert(kv_check(buf, kv.len, k, &writer) && writer == w->writer,
	    "%s: bytes are wrong", key);
	free(buf);
}

/* keys of writer w in the pool */
static uint64_t
count_keys(struct pool *p, uint32_t writer)
{
	char prefix[16];
	const void *key;
	struct pool_kv kv;
	uint64_t cursor = 0, n = 0;
	size_t klen, pl;

	pl = (size_t)snprintf(prefix, sizeof(prefix), "w%u-", writer);
	while (pool_kv_next(p, &cursor, &kv, &key, &klen) == 1) {
		n += klen > pl && memcmp(key, prefix, pl) == 0;
	}
	return n;
}

static void
verify_worker(struct pool *p, int fd, const struct worker *w)
{
	const struct crash_result *r = &w->res;

	cr_assert(w->ended, "worker %u did not report", w->writer);
	cr_assert_eq(r->stats_rc, 0);
	cr_assert_eq(r->pages_unresolved, 0, "worker %u: %llu pages never "
	    "resolved", w->writer, (unsigned long long)r->pages_unresolved);
	cr_assert_eq(r->pages_allocated, 0);
	cr_assert_eq(r->pages_free + r->pages_registered + r->pages_allocated,
	    r->pages_total, "worker %u: pages leaked", w->writer);
	cr_assert_eq(count_keys(p, w->writer), r->pages_registered,
	    "worker %u: %llu keys in the pool, %llu pages registered",
	    w->writer, (unsigned long long)count_keys(p, w->writer),
	    (unsigned long long)r->pages_registered);
	cr_assert_geq(r->pages_registered, w->nacked);
	for (size_t i = 0; i < w->nacked; i++) {
		check_value(p, fd, w, w->acked[i]);
	}
}

Test(kill, handlers_ride_through_five_kills_and_lose_nothing)
{
	struct worker w[WORKERS];
	struct pool *p = NULL;
	int fd;

	for (int i = 0; i < WORKERS; i++) {
		spawn(&w[i], (uint32_t)i + 1);
		cr_assert_eq(pthread_create(&w[i].th, NULL, collect, &w[i]),
		    0);
		cr_assert_eq(write(w[i].ch.go_fd, "g", 1), 1);
	}
	for (int i = 0; i < WORKERS; i++) {
		for (int t = 0; t < 3000 && !atomic_load(&w[i].ready); t++) {
			test_sleep_ms(10); /* connects go to a live server */
		}
		cr_assert(atomic_load(&w[i].ready), "worker %d did not "
		    "connect", i + 1);
	}
	for (int k = 0; k < KILLS; k++) {
		test_sleep_ms(150);
		test_server_kill(&srv, SIGKILL);
		test_sleep_ms(50);
		cr_assert_eq(test_server_restart(&srv, grace_args), 0,
		    "restart %d failed; see %s", k + 1, srv.log);
	}
	test_sleep_ms(400);
	for (int i = 0; i < WORKERS; i++) {
		kill(w[i].ch.pid, SIGUSR1);
		pthread_join(w[i].th, NULL);
		cr_assert_eq(kv_wait_child(w[i].ch.pid), 0, "worker %d failed",
		    i + 1);
		close(w[i].ch.go_fd);
		close(w[i].ch.out_fd);
		cr_log_info("worker %u: %zu keys stored true, %u false, %u "
		    "unknown batches", w[i].writer, w[i].nacked,
		    w[i].res.false_keys, w[i].res.unknown);
	}
	test_server_kill(&srv, SIGTERM);
	cr_assert_eq(test_inspect_check(srv.pool, check_out), 0,
	    "pool-inspect check failed; see %s", check_out);
	cr_assert_eq(pool_open(&p, srv.pool, POOL_RDONLY, NULL), 0);
	fd = open(srv.pool, O_RDONLY);
	cr_assert_geq(fd, 0);
	for (int i = 0; i < WORKERS; i++) {
		cr_assert_gt(w[i].nacked, 0, "worker %d stored nothing", i + 1);
		verify_worker(p, fd, &w[i]);
		free(w[i].acked);
	}
	close(fd);
	pool_close(&p);
}

/* ---- sessions, pins and stale pools across a restart ------------------ */

static void
raw_session(struct raw_client *c, struct proto_loc *reg)
{
	struct proto_result res;
	struct pbuf b;
	const void *kp[1] = { "pinned" };
	size_t kl[1] = { 6 };
	uint32_t n = 0;

	cr_assert_eq(raw_open(c, srv.url), 0);
	cr_assert_eq(raw_hello(c), 0);
	cr_assert_eq(raw_region(c, 2 * MiB, 4096, reg), 0);
	cr_assert_eq(raw_register(c, "pinned", reg->region, reg->region_off,
	    16, &res), 0);
	pbuf_init(&b);
	proto_put_keys(&b, 0, 1, kp, kl);
	cr_assert_eq(raw_request(c, PROTO_OP_PIN, &b, &res, 1, &n), 0);
	pbuf_fini(&b);
}

static int
delete_pinned(struct raw_client *c)
{
	struct proto_result res;
	struct pbuf b;
	const void *kp[1] = { "pinned" };
	size_t kl[1] = { 6 };
	uint32_t n = 0;
	int rc;

	pbuf_init(&b);
	proto_put_keys(&b, 0, 1, kp, kl);
	rc = raw_request(c, PROTO_OP_DELETE, &b, &res, 1, &n);
	pbuf_fini(&b);
	return rc != 0 ? rc : n == 1 ? res.status : CXLP_E_PROTO;
}

Test(kill, a_session_that_comes_back_keeps_its_pins_and_regions)
{
	struct raw_client a, other;
	struct proto_loc reg;
	struct proto_result res;
	int rc;

	raw_session(&a, &reg);
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, grace_args), 0);
	/* the same session and token: it just goes on, on the same socket or,
	 * when nng 1.5's ipc dialer never redials the restarted server (seen
	 * once: a CI run hung here for good before sends had a timeout), on
	 * one dialed afresh, as a handler does after repeated timeouts */
	rc = raw_register(&a, "after", reg.region, reg.region_off + 4096, 16,
	    &res);
	if (rc != 0) {
		cr_assert_eq(raw_redial(&a, srv.url), 0);
		rc = raw_register(&a, "after", reg.region,
		    reg.region_off + 4096, 16, &res);
	}
	cr_assert_eq(rc, 0, "its region is still its");
	cr_assert_eq(res.status, 0);
	/* and over a new connection too */
	cr_assert_eq(raw_redial(&a, srv.url), 0);
	cr_assert_eq(raw_register(&a, "after2", reg.region,
	    reg.region_off + 8192, 16, &res), 0);
	cr_assert_eq(res.status, 0);
	cr_assert_eq(raw_open(&other, srv.url), 0);
	cr_assert_eq(raw_hello(&other), 0);
	cr_assert_eq(delete_pinned(&other), CXLP_E_PINNED, "the pin "
	    "survived the restart");
	raw_close(&other);
	raw_close(&a);
}

/* A handler of 4 KiB pages in 4 MiB regions; keepalive_ms 0: off. */
static struct cxlp_handler *
connect_small(unsigned keepalive_ms)
{
	struct cxlp_config *cfg;
	struct cxlp_handler *h = NULL;

	cr_assert_eq(cxlp_config_new(&cfg), 0);
	cr_assert_eq(cxlp_config_set_server(cfg, srv.url), 0);
	cr_assert_eq(cxlp_config_set_page_size(cfg, 4096), 0);
	cr_assert_eq(cxlp_config_set_region_size(cfg, 4 * MiB), 0);
	cr_assert_eq(cxlp_config_set_timeout_ms(cfg, 1000), 0);
	cr_assert_eq(cxlp_config_set_keepalive_ms(cfg, keepalive_ms), 0);
	cr_assert_eq(cxlp_connect(&h, cfg), 0, "connect: %s",
	    cxlp_errormsg());
	cxlp_config_delete(&cfg);
	return h;
}

static void
store_filled(struct cxlp_handler *h, const char *key, int byte,
    void **where)
{
	cxlp_page_t pg;
	bool stored = false;

	cr_assert_eq(cxlp_alloc(h, &pg, where), 0, "%s: alloc: %s", key,
	    cxlp_errormsg());
	memset(*where, byte, 4096);
	cr_assert_eq(cxlp_store(h, key, strlen(key), pg, 4096, 0, &stored),
	    0, "%s: store: %s", key, cxlp_errormsg());
	cr_assert(stored, "%s not stored", key);
}

/* A handler that says nothing while the server restarts, and for many
 * grace periods after, still maps its region read-write and may be
 * writing into it: the region must stay its own, not go to the next
 * handler that asks, or the two would write over each other's keys. */
Test(kill, an_idle_handler_keeps_its_region_through_a_restart)
{
	const char *const short_grace[] = { "--grace-ms", "100", NULL };
	struct cxlp_handler *a = connect_small(0), *b; /* silent */
	void *pa, *pb;
	const void *data;
	size_t len;

	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, short_grace), 0);
	test_sleep_ms(1000); /* ten grace periods; a says nothing */
	b = connect_small(0);
	store_filled(b, "from-b", 'B', &pb);
	store_filled(a, "from-a", 'A', &pa);
	cr_assert_neq(pa, pb);
	cr_assert_eq(cxlp_retrieve(b, "from-b", 6, 0, &data, &len), 0);
	cr_assert_eq(len, 4096);
	for (size_t i = 0; i < len; i++) {
		cr_assert_eq(((const uint8_t *)data)[i], 'B', "byte %zu of "
		    "b's key was written by a", i);
	}
	cr_assert_not(test_server_log_has(&srv, "why=grace_expired"));
	cxlp_close(&a);
	cxlp_close(&b);
}

/* After a restart every session is detached until its handler speaks;
 * one of another host that stays silent past --grace-ms is ended. The
 * handler's keepalive speaks for an idle one: it reattaches by itself,
 * with no call from the application. */
Test(kill, an_idle_handler_reattaches_by_itself_after_a_restart)
{
	struct cxlp_handler *h = connect_small(100);
	bool seen = false;

	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, NULL), 0);
	for (int i = 0; i < 1000 && !seen; i++) {
		test_sleep_ms(20);
		seen = test_server_log_has(&srv, "op=reattach session=");
	}
	cr_assert(seen, "no reattach within 20 s of the restart");
	cxlp_close(&h);
}

/* Once the metaserver refuses to reattach a handler's session (here its
 * pool was reformatted under it), the regions that handler maps may be
 * another's: it must hand out no more pages and register none. It went
 * on handing out pages of its old region, now the next handler's. */
Test(kill, a_handler_whose_session_is_gone_hands_out_no_more_pages)
{
	const char *const reformat[] = { "--reformat", NULL };
	struct cxlp_handler *a = connect_small(0), *b;
	cxlp_page_t pg, pg2;
	void *buf, *pb;
	const void *data;
	size_t len;
	bool stored = false;

	cr_assert_eq(cxlp_alloc(a, &pg, &buf), 0);
	test_server_kill(&srv, SIGKILL);
	cr_assert_eq(test_server_restart(&srv, reformat), 0);
	b = connect_small(0);
	store_filled(b, "from-b", 'B', &pb);
	cr_assert_eq(cxlp_healthcheck(a), CXLP_E_SESSION);
	cr_assert_eq(cxlp_alloc(a, &pg2, &buf), CXLP_E_SESSION);
	cr_assert_eq(cxlp_store(a, "from-a", 6, pg, 16, 0, &stored),
	    CXLP_E_SESSION);
	cr_assert_eq(cxlp_free(a, pg), 0, "the refused store consumed the "
	    "page");
	cr_assert_eq(cxlp_retrieve(b, "from-b", 6, 0, &data, &len), 0);
	cr_assert_eq(((const uint8_t *)data)[0], 'B');
	cr_assert_eq(cxlp_exists(b, "from-a", 6), 0);
	cxlp_close(&a);
	cxlp_close(&b);
}

/* raw_hello names another host, so the server cannot see whether its
 * process runs: the grace period decides. */
Test(kill, a_session_that_does_not_come_back_ends_after_the_grace_period)
{
	const char *const short_grace[] = { "--grace-ms", "300", NULL };
	struct raw_client a, other;
	struct proto_loc reg;
	int rc = CXLP_E_PINNED;

	raw_session(&a, &reg);
	test_server_kill(&srv, SIGKILL);
	raw_close(&a); /* never speaks again */
	cr_assert_eq(test_server_restart(&srv, short_grace), 0);
	cr_assert_eq(raw_open(&other, srv.url), 0);
	cr_assert_eq(raw_hello(&other), 0);
	for (int i = 0; i < 500 && rc == CXLP_E_PINNED; i++) {
		test_sleep_ms(20); /* until the reaper ends it */
		rc = delete_pinned(&other);
	}
	cr_assert_eq(rc, 0, "the dead session's pin was released and its "
	    "region disowned, so its key can go (rc %d)", rc);
	cr_assert(test_server_log_has(&srv, "why=grace_expired"));
	raw_close(&other);
}

static void
other_boot(struct pool_sb *sb)
{
	memcpy(sb->boot_id, "00000000-0000-0000-0000-000000000000", 36);
	layout_seal(sb);
}

Test(kill, a_volatile_pool_from_another_boot_is_refused_until_reformat)
{
	const char *const reformat[] = { "--reformat", NULL };
	struct pool_sb sb;
	FILE *f;

	test_server_kill(&srv, SIGTERM);
	f = fopen(srv.pool, "r+");
	cr_assert_not_null(f);
	cr_assert_eq(fread(&sb, sizeof(sb), 1, f), 1);
	cr_assert(sb.flags & POOL_SB_VOLATILE, "a /dev/shm pool is volatile");
	other_boot(&sb);
	rewind(f);
	cr_assert_eq(fwrite(&sb, sizeof(sb), 1, f), 1);
	fclose(f);
	cr_assert_neq(test_server_restart(&srv, NULL), 0, "stale pool served");
	cr_assert(test_server_log_has(&srv, "--reformat"), "the message "
	    "says what to do; see %s", srv.log);
	cr_assert_eq(test_server_restart(&srv, reformat), 0);
}
