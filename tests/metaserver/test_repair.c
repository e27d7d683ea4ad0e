/*
 * test_repair.c -- metaserver/repair.c: the real cxlpool-metaserver
 * (CXLP_METASERVER) started on a pool of 899 keys with one flipped bit
 * (issue 15, item 3). Damage refuses the pool (exit 1, the file not
 * changed by one byte, the damage and the loss named) unless --repair,
 * which drops it and says so at err level; a record a crash tore is
 * rolled back with no refusal and no err line. A region record damaged
 * in one of its two copies (pool/rmirror.c) is restored from the other
 * with nothing lost and no --repair. pool-inspect
 * (CXLP_POOL_INSPECT) checks the pool and lists its keys afterwards.
 *
 * The bits are flipped with pwrite on the closed file, so no open of
 * the pool (which recovers) comes between the damage and the server.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "pool_int.h"
#include "proc.h"
#include "server.h"

#define NKEYS 899
#define PAGE (64u << 10)

static struct test_server srv;
static char out[160];
static struct pool_sb sb;

static void
setup(void)
{
	int id = (int)getpid();

	memset(&srv, 0, sizeof(srv));
	snprintf(srv.pool, sizeof(srv.pool), "/dev/shm/cxlp-repair-%d.pool",
	    id);
	snprintf(srv.url, sizeof(srv.url), "ipc:///tmp/cxlp-repair-%d.sock",
	    id);
	snprintf(srv.log, sizeof(srv.log), "/tmp/cxlp-repair-%d.log", id);
	snprintf(out, sizeof(out), "/tmp/cxlp-repair-%d.out", id);
	unlink(srv.pool);
}

static void
teardown(void)
{
	if (srv.pid > 0) {
		test_server_kill(&srv, SIGKILL);
	}
	unlink(srv.pool);
	unlink(srv.log);
	unlink(out);
}

TestSuite(repair, .init = setup, .fini = teardown, .timeout = 60);

/* a pool holding NKEYS keys "key-N" of PAGE bytes, in region 0 */
static void
make_pool(void)
{
	struct pool_params pp = { .size = 128ull << 20 };
	struct pool_session s = { .pid = 1, .instance = 1 };
	struct pool_region r;
	struct pool_kv kv;
	struct pool *p;
	char key[32];
	bool ins;
	int fd;

	strcpy(s.host, "repair-test");
	cr_assert_eq(pool_open(&p, srv.pool, POOL_CREATE, &pp), 0);
	cr_assert_eq(pool_session_add(p, &s), 0);
	cr_assert_eq(pool_region_alloc(p, s.id, (uint64_t)NKEYS * PAGE, PAGE,
	    &r), 0);
	cr_assert_eq(r.id, 0);
	for (int i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		cr_assert_eq(pool_kv_insert(p, s.id, key, strlen(key), r.id,
		    r.off + (uint64_t)i * PAGE, PAGE, &kv, &ins), 0);
	}
	pool_close(&p);
	fd = open(srv.pool, O_RDONLY);
	cr_assert(fd >= 0 && pread(fd, &sb, sizeof(sb), 0) == sizeof(sb));
	close(fd);
}

/* flip bit `bit` of the byte at off of the closed pool file */
static void
flip(uint64_t off, unsigned bit)
{
	int fd = open(srv.pool, O_RDWR);
	uint8_t b;

	cr_assert(fd >= 0 && pread(fd, &b, 1, (off_t)off) == 1);
	b ^= (uint8_t)(1u << bit);
	cr_assert(pwrite(fd, &b, 1, (off_t)off) == 1);
	close(fd);
}

/* byte `byte` of region record id: its primary (copy 0) or its copy
 * (copy 1, pool/rmirror.c) */
static uint64_t
region_byte(unsigned copy, uint32_t id, unsigned byte)
{
	const struct pool_area *a = &sb.area[POOL_AREA_REGION];

	return a->off + (copy * a->count + id) * sizeof(struct pool_rrec) +
	    byte;
}

/* flip one bit of region 0's page size in both copies: damage the copy
 * cannot undo */
static void
flip_both(void)
{
	unsigned at = offsetof(struct pool_rrec, page_size) + 1;

	flip(region_byte(0, 0, at), 3);
	flip(region_byte(1, 0, at), 3);
}

/* byte `byte` of the index slot holding key */
static uint64_t
slot_byte(const char *key, unsigned byte)
{
	struct pool *p;
	struct pool_kv kv;

	cr_assert_eq(pool_open(&p, srv.pool, POOL_RDONLY, NULL), 0);
	cr_assert_eq(pool_kv_lookup(p, key, strlen(key), &kv), 0);
	pool_close(&p);
	return sb.area[POOL_AREA_INDEX].off + kv.slot * sizeof(struct kv_slot) +
	    byte;
}

static uint64_t
file_hash(void)
{
	static uint8_t buf[1 << 20];
	XXH3_state_t *st = XXH3_createState();
	int fd = open(srv.pool, O_RDONLY);
	uint64_t h;
	ssize_t n;

	cr_assert(fd >= 0 && st != NULL);
	XXH3_64bits_reset(st);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		XXH3_64bits_update(st, buf, (size_t)n);
	}
	close(fd);
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

/* run the metaserver on the pool, its output into out, and return its
 * exit status; it must not start: one still running after 15 s is
 * killed and -1 returned */
static int
run_server(void)
{
	const char *bin = getenv("CXLP_METASERVER");
	const char *const argv[] = { "cxlpool-metaserver", "--pool", srv.pool,
		"--listen", srv.url, NULL };
	int status, fd;
	pid_t pid;

	if (bin == NULL) {
		cr_skip_test("CXLP_METASERVER unset (run via meson)");
	}
	if ((pid = fork()) == 0) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	cr_assert(pid > 0);
	for (int i = 0; i < 1500; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		}
		test_sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* start it with extra args, wait for ready, stop it (SIGTERM; the pool
 * and log stay for the test to read) */
static void
serve_once(const char *const args[])
{
	cr_assert_eq(test_server_restart(&srv, args), 0, "log %s", srv.log);
	test_server_kill(&srv, SIGTERM);
}

/* pool-inspect with argv (after the program name) into out */
static int
inspect(const char *cmd)
{
	const char *bin = getenv("CXLP_POOL_INSPECT");
	const char *const argv[] = { "pool-inspect", cmd, srv.pool, NULL };

	cr_assert(bin != NULL);
	return test_run_logged(bin, argv, out);
}

static void
assert_keys(const char *count_line)
{
	cr_assert_eq(inspect("keys"), 0);
	cr_assert(test_file_has(out, count_line), "want \"%s\" in %s",
	    count_line, out);
}

static void
assert_out_has(const char *needle)
{
	cr_assert(test_file_has(out, needle), "want \"%s\" in %s", needle,
	    out);
}

static const char *const repair_args[] = { "--repair", "--log-level", "err",
	NULL };

Test(repair, a_flipped_bit_in_a_region_record_refuses_the_pool)
{
	uint64_t before;

	make_pool();
	flip_both();
	before = file_hash();
	cr_assert_eq(run_server(), 1);
	assert_out_has("pool is damaged: region 0 record: checksum mismatch "
	    "(899 keys, 56.2 MiB)");
	assert_out_has("899 keys (56.2 MiB) would be lost");
	assert_out_has("run pool-inspect check ");
	assert_out_has("--repair drops them");
	cr_assert_eq(file_hash(), before, "the refused pool was written");
	cr_assert_eq(inspect("check"), 1);
	assert_out_has("region 0: checksum mismatch");
	/* nothing was dropped: with the bits back, every key is there */
	flip_both();
	assert_keys("899 keys, ");
}

Test(repair, repair_drops_a_damaged_region_and_says_so_at_err_level)
{
	make_pool();
	flip_both();
	serve_once(repair_args);
	cr_assert(test_server_log_has(&srv, "op=repair_dropped"), "%s",
	    srv.log);
	cr_assert(test_server_log_has(&srv, "record=\"region 0 record: "
	    "checksum mismatch (899 keys, 56.2 MiB)\""));
	cr_assert(test_server_log_has(&srv, "keys_lost=899 "));
	cr_assert_eq(inspect("check"), 0, "check after --repair");
	assert_keys("0 keys, ");
}

Test(repair, a_flipped_bit_in_an_index_slot_refuses_the_pool)
{
	uint64_t at, before;

	make_pool();
	at = slot_byte("key-17", offsetof(struct kv_slot, len));
	flip(at, 1);
	before = file_hash();
	cr_assert_eq(run_server(), 1);
	assert_out_has("pool is damaged: index slot ");
	assert_out_has(" (key \"key-17\"): checksum mismatch; 1 key "
	    "(64.0 KiB) would be lost");
	cr_assert_eq(file_hash(), before, "the refused pool was written");
	flip(at, 1);
	assert_keys("899 keys, ");
}

Test(repair, repair_drops_a_damaged_index_slot_and_names_its_key)
{
	make_pool();
	flip(slot_byte("key-17", offsetof(struct kv_slot, page)), 0);
	serve_once(repair_args);
	cr_assert(test_server_log_has(&srv, "(key \"key-17\"): checksum "
	    "mismatch"), "%s", srv.log);
	cr_assert(test_server_log_has(&srv, "keys_lost=1 "), "%s", srv.log);
	cr_assert_eq(inspect("check"), 0);
	assert_keys("898 keys, ");
	cr_assert_eq(inspect("keys"), 0);
	cr_assert_not(test_file_has(out, "key-17 "));
}

Test(repair, a_flipped_low_bit_of_a_live_slot_word_is_damage_not_a_crash)
{
	make_pool();
	flip(slot_byte("key-3", 0), 0); /* seq odd, state still LIVE */
	cr_assert_eq(run_server(), 1);
	assert_out_has("(key \"key-3\"): odd sequence word on a published "
	    "slot");
}

Test(repair, a_slot_a_crash_left_mid_write_is_rolled_back_silently)
{
	struct pool *p;
	struct kv_slot *s;
	struct pool_kv kv;

	make_pool();
	/* what kvindex_put leaves when killed between its steps c and e,
	 * here over the tombstone of a deleted key */
	cr_assert_eq(pool_open(&p, srv.pool, 0, NULL), 0);
	cr_assert_eq(pool_kv_remove(p, "key-5", 5, &kv), 0);
	s = &p->kv.slots[kv.slot];
	s->word = kv_word(kv_seq(s->word) + 1, KV_TOMB, 0);
	s->page = 12345;
	pool_close(&p);
	serve_once((const char *const[]){ "--log-level", "err", NULL });
	cr_assert_not(test_server_log_has(&srv, "op=damaged"));
	cr_assert_not(test_server_log_has(&srv, "op=repair"));
	cr_assert_eq(inspect("check"), 0);
	assert_keys("898 keys, ");
}

Test(repair, a_flipped_bit_in_a_region_record_is_undone_by_its_copy)
{
	make_pool();
	flip(region_byte(0, 0, offsetof(struct pool_rrec, off) + 2), 5);
	cr_assert_eq(inspect("check"), 1);
	assert_out_has("region 0: checksum mismatch (its copy is intact");
	assert_keys("899 keys, ");
	serve_once((const char *const[]){ "--log-level", "err", NULL });
	cr_assert(test_server_log_has(&srv, "op=repair pool="), "%s",
	    srv.log);
	cr_assert(test_server_log_has(&srv, " restored=1 "), "%s", srv.log);
	cr_assert_not(test_server_log_has(&srv, "keys_lost"));
	cr_assert_eq(inspect("check"), 0, "check after the restore");
	assert_keys("899 keys, ");
}

Test(repair, a_flipped_bit_in_a_region_copy_is_undone_by_the_primary)
{
	make_pool();
	flip(region_byte(1, 0, offsetof(struct pool_rrec, checksum)), 0);
	cr_assert_eq(inspect("check"), 1);
	assert_out_has("region 0 copy: checksum mismatch");
	serve_once((const char *const[]){ "--log-level", "err", NULL });
	cr_assert(test_server_log_has(&srv, " restored=1 "), "%s", srv.log);
	cr_assert_eq(inspect("check"), 0);
	assert_keys("899 keys, ");
}
