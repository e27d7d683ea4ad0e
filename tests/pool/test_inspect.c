/*
 * test_inspect.c -- tools/pool-inspect run as a program (CXLP_POOL_INSPECT)
 * on pools this test makes: every command's text and JSON (the JSON is
 * checked by a strict validator, json_check.h), keys with bytes that are
 * neither printable nor UTF-8, check on a pool damaged in each of several
 * ways (each named, exit 1), devices, live stats and sessions against a
 * metaserver (CXLP_METASERVER, with a raw protocol client as the handler
 * to be listed), and usage errors.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cxlpool.h"
#include "json_check.h"
#include "pool_int.h"
#include "pool_test.h"
#include "rawclient.h"

static char path[256];
static char out[65536];
static uint64_t sid;
static struct pool_region r1, r2;

static void
setup(void)
{
	test_pool_path(path, sizeof(path), "/dev/shm");
}

static void
teardown(void)
{
	unlink(path);
}

TestSuite(inspect, .init = setup, .fini = teardown);

/* run pool-inspect with args; stderr folded in unless json; returns the
 * exit status */
static int
run_to(const char *args, bool json)
{
	const char *exe = getenv("CXLP_POOL_INSPECT");
	char cmd[1024];
	size_t n;
	FILE *f;
	int st;

	if (exe == NULL) {
		cr_skip_test("CXLP_POOL_INSPECT unset (run via meson)");
	}
	snprintf(cmd, sizeof(cmd), "'%s' %s %s", exe, args,
	    json ? "2>/dev/null" : "2>&1");
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	st = pclose(f);
	cr_assert(WIFEXITED(st), "%s", cmd);
	return WEXITSTATUS(st);
}

static int
run(const char *fmt, const char *arg)
{
	char args[1024];

	snprintf(args, sizeof(args), fmt, arg);
	return run_to(args, false);
}

/* run with --json; the output must be valid JSON */
static int
run_json(const char *fmt, const char *arg)
{
	char args[1024];
	int rc;

	snprintf(args, sizeof(args), fmt, arg);
	strcat(args, " --json");
	rc = run_to(args, true);
	cr_assert(json_valid(out), "not JSON: %s", out);
	return rc;
}

static void
has(const char *s)
{
	cr_assert(strstr(out, s) != NULL, "no \"%s\" in:\n%s", s, out);
}

static void
insert(struct pool *p, const void *key, size_t klen,
    const struct pool_region *r, uint64_t page, uint64_t len)
{
	struct pool_kv kv;
	bool ins;

	cr_assert_eq(pool_kv_insert(p, sid, key, klen, r->id,
	    r->off + page * r->page_size, len, &kv, &ins), 0, "%s",
	    cxlp_errormsg());
}

/* a session owning r1 (4 KiB pages: nkeys keys of 100 bytes) and r2
 * (8 KiB pages: key "other" on page 1) */
static void
make_pool(int nkeys)
{
	struct pool_params pp = { .size = TEST_POOL_SIZE };
	struct pool_session s = { .pid = 4242, .instance = 7 };
	struct pool *p;
	char key[32];

	strcpy(s.host, "inspect-host");
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0);
	cr_assert_eq(pool_session_add(p, &s), 0);
	sid = s.id;
	cr_assert_eq(pool_region_alloc(p, sid, 2u << 20, 4096, &r1), 0);
	cr_assert_eq(pool_region_alloc(p, sid, 4u << 20, 8192, &r2), 0);
	for (int i = 0; i < nkeys; i++) {
		snprintf(key, sizeof(key), "model@0@%d", i);
		insert(p, key, strlen(key), &r1, (uint64_t)i, 100);
	}
	insert(p, "other", 5, &r2, 1, 5000);
	pool_close(&p);
}

Test(inspect, the_json_checker_rejects_what_is_not_json)
{
	cr_assert(json_valid("{\"a\": [1, -2.5e3, true, null, \"\\u00ff\"]}"));
	cr_assert_not(json_valid("{\"a\": }"));
	cr_assert_not(json_valid("{\"a\": 1,}"));
	cr_assert_not(json_valid("{\"a\": \"\x01\"}"));
	cr_assert_not(json_valid("{\"a\": \"\xff\"}"));
	cr_assert_not(json_valid("{} {}"));
}

Test(inspect, summary_reports_counts_and_sizes_in_units)
{
	make_pool(3);
	cr_assert_eq(run("summary %s", path), 0, "%s", out);
	has("\nkeys           4 (index ");
	has("\nregions        2 of ");
	has("\nvalues         5.2 KiB\n");
	has("\nsize           64.0 MiB (metadata ");
	has("\nallocated      6.0 MiB\n");
	has("\nmedia          file, volatile, page store granularity");
	has("\nsessions       1\n");
}

Test(inspect, summary_json_reports_counts_and_media)
{
	make_pool(5);
	cr_assert_eq(run_json("summary %s", path), 0, "%s", out);
	has("\"keys\": 6,");
	has("\"value_bytes\": 5500,");
	has("\"granularity\": \"page\"");
	has("\"allocated_bytes\": 6291456,");
}

Test(inspect, regions_lists_owner_state_size_page_size_and_pages_used)
{
	char row[200];

	make_pool(3);
	cr_assert_eq(run("regions %s", path), 0, "%s", out);
	has("   ID  STATE    OWNER");
	snprintf(row, sizeof(row), "    %u  owned   %6llu  %#12llx     2.0 MiB"
	    "     4.0 KiB      512        3    0.6%%\n", r1.id,
	    (unsigned long long)sid, (unsigned long long)r1.off);
	has(row);
	has("     4.0 MiB     8.0 KiB      512        1    0.2%\n");
	has("2 regions (0 orphan), 6.0 MiB of 62.0 MiB data allocated");
}

Test(inspect, regions_json_has_one_object_per_region)
{
	make_pool(3);
	cr_assert_eq(run_json("regions %s", path), 0, "%s", out);
	has("\"state\": \"owned\", \"owner\": 1,");
	has("\"page_size\": 4096, \"pages\": 512, \"pages_used\": 3,");
	has("\"count\": 2,");
}

Test(inspect, regions_shows_an_orphan_without_owner)
{
	struct pool *p;

	make_pool(1);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0);
	cr_assert_eq(pool_region_disown(p, r1.id), 0);
	pool_close(&p);
	cr_assert_eq(run("regions %s", path), 0, "%s", out);
	has("  orphan       -  ");
	has("(1 orphan)");
}

Test(inspect, keys_are_listed_sorted_with_their_location)
{
	char row[200];

	make_pool(3);
	cr_assert_eq(run("keys %s", path), 0, "%s", out);
	has("KEY        REGION    GEN     PAGE        OFFSET      LENGTH\n");
	cr_assert(strstr(out, "model@0@0") < strstr(out, "model@0@1") &&
	    strstr(out, "model@0@2") < strstr(out, "other"), "%s", out);
	snprintf(row, sizeof(row), "model@0@2  %6u  %5u        2  %#12llx"
	    "       100 B\n", r1.id, r1.gen,
	    (unsigned long long)(r1.off + 2 * 4096));
	has(row);
	has("4 keys, 5.2 KiB of values\n");
}

Test(inspect, keys_prefix_filters_and_json_reports_locations)
{
	char want[200];

	make_pool(12);
	cr_assert_eq(run("keys %s --prefix model@0@1", path), 0, "%s", out);
	has("3 keys, 300 B of values (prefix \"model@0@1\")");
	cr_assert_null(strstr(out, "model@0@2"), "%s", out);
	cr_assert_eq(run_json("keys --prefix=oth %s", path), 0, "%s", out);
	snprintf(want, sizeof(want), "{\"key\": \"other\", \"key_len\": 5, "
	    "\"region\": %u, \"gen\": %u, \"page\": 1, \"offset\": %llu, "
	    "\"length\": 5000}", r2.id, r2.gen,
	    (unsigned long long)(r2.off + 8192));
	has(want);
	has("\"count\": 1,");
}

Test(inspect, keys_of_any_bytes_print_escaped_and_stay_valid_json)
{
	static const char odd[] = "a\"b\\c\x01\xff\xc3\xa9z";
	struct pool *p;

	make_pool(0);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0);
	insert(p, odd, sizeof(odd) - 1, &r1, 0, 1);
	pool_close(&p);
	cr_assert_eq(run("keys %s", path), 0, "%s", out);
	has("a\"b\\x5cc\\x01\\xff\\xc3\\xa9z ");
	cr_assert_eq(run_json("keys %s", path), 0, "%s", out);
	has("\"key\": \"a\\\"b\\\\c\\u0001\\u00ff\xc3\xa9z\"");
}

Test(inspect, sessions_lists_the_table_without_tokens)
{
	make_pool(1);
	cr_assert_eq(run("sessions %s", path), 0, "%s", out);
	has("      ID       PID  HOST");
	has("       1      4242  inspect-host");
	has("1 session recorded\n");
	cr_assert_eq(run_json("sessions %s", path), 0, "%s", out);
	has("\"id\": 1, \"pid\": 4242, \"host\": \"inspect-host\", "
	    "\"instance\": 7,");
	has("\"regions\": 2}");
	cr_assert_null(strstr(out, "token"), "%s", out);
}

Test(inspect, check_exits_zero_on_a_clean_pool)
{
	make_pool(2);
	cr_assert_eq(run("check %s", path), 0, "%s", out);
	has(": 0 problems\n");
	cr_assert_eq(run_json("check %s", path), 0, "%s", out);
	has("\"problems_list\": [], \"problems\": 0, \"ok\": true");
}

/* ---- check on damaged pools -------------------------------------------- */

static void
slot_of(struct pool *p, const char *key, struct kv_slot **s, uint64_t *i)
{
	struct pool_kv kv;

	cr_assert_eq(pool_kv_lookup(p, key, strlen(key), &kv), 0);
	*i = kv.slot;
	*s = &p->kv.slots[kv.slot];
}

static void
bad_region_checksum(struct pool *p)
{
	p->rtab[r2.id].page_size = 2048;
}

static void
overlapping_regions(struct pool *p)
{
	struct pool_rrec *r = &p->rtab[r2.id];

	r->off = r1.off;
	r->checksum = layout_rrec_checksum(r);
}

static void
flipped_index_slot(struct pool *p)
{
	struct kv_slot *s;
	uint64_t i;

	slot_of(p, "other", &s, &i);
	s->len ^= 4;
}

static void
slot_mid_write(struct pool *p)
{
	struct kv_slot *s;
	uint64_t i;

	slot_of(p, "model@0@0", &s, &i);
	s->word = kv_word(kv_seq(s->word) + 1, KV_TOMB, 0);
}

static void
key_into_freed_region(struct pool *p)
{
	struct pool_rrec *r = &p->rtab[r2.id];

	r->word = rrec_word(POOL_REGION_FREE, rrec_gen(r->word));
}

static void
two_keys_on_one_page(struct pool *p)
{
	struct kv_slot *s;
	uint64_t i;

	slot_of(p, "other", &s, &i);
	s->region = r1.id;
	s->gen = r1.gen;
	s->page = 0;
	s->len = 100;
	s->word = kv_word(kv_seq(s->word), KV_LIVE, layout_slot_checksum(s, i));
}

static void
bad_session_record(struct pool *p)
{
	for (uint32_t i = 0; i < p->nsess; i++) {
		if (p->stab[i].id == sid) {
			p->stab[i].pid = 99;
		}
	}
}

static void
orphan_without_keys(struct pool *p)
{
	struct pool_region r3;
	struct pool_rrec *r;

	cr_assert_eq(pool_region_alloc(p, sid, 2u << 20, 4096, &r3), 0);
	r = &p->rtab[r3.id];
	r->word = rrec_word(POOL_REGION_ORPHAN, rrec_gen(r->word));
}

static void
flipped_superblock(struct pool *p)
{
	((uint8_t *)p->sb)[60] ^= 1;
}

/* make a pool, damage it through a writable open (closing does not
 * repair), then check must exit 1 and name the damage, in text and JSON */
static void
damaged(void (*damage)(struct pool *p), const char *named)
{
	struct pool *p;

	make_pool(2);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0);
	damage(p);
	pool_close(&p);
	cr_assert_eq(run("check %s", path), 1, "%s", out);
	has(named);
	cr_assert(strstr(out, "problem: ") != NULL, "%s", out);
	cr_assert_eq(run_json("check %s", path), 1, "%s", out);
	has(named);
	has("\"ok\": false");
}

Test(inspect, check_names_a_region_record_with_a_bad_checksum)
{
	damaged(bad_region_checksum, "region 1: checksum mismatch");
}

Test(inspect, check_names_overlapping_regions)
{
	damaged(overlapping_regions, "overlaps region");
}

Test(inspect, check_names_a_damaged_index_slot)
{
	damaged(flipped_index_slot, "bad state, checksum or key record");
}

Test(inspect, check_names_a_slot_caught_mid_write)
{
	damaged(slot_mid_write, "mid-write");
}

Test(inspect, check_names_a_key_pointing_into_a_freed_region)
{
	damaged(key_into_freed_region, "region 1 is not live");
}

Test(inspect, check_names_a_page_owned_by_two_keys)
{
	damaged(two_keys_on_one_page, "page 0 holds two keys");
}

Test(inspect, check_names_a_damaged_session_record)
{
	damaged(bad_session_record, "session record");
}

Test(inspect, check_names_an_orphan_region_that_should_have_been_freed)
{
	damaged(orphan_without_keys, "ORPHAN with no keys");
}

Test(inspect, check_names_a_torn_superblock)
{
	damaged(flipped_superblock, "superblock checksum mismatch");
}

Test(inspect, check_names_a_truncated_pool)
{
	make_pool(1);
	cr_assert_eq(truncate(path, TEST_POOL_SIZE / 2), 0);
	cr_assert_eq(run("check %s", path), 1, "%s", out);
	has("truncated");
	has("1 problem\n");
}

Test(inspect, check_names_each_of_several_problems)
{
	struct pool *p;

	make_pool(2);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0);
	bad_session_record(p);
	slot_mid_write(p);
	orphan_without_keys(p);
	pool_close(&p);
	cr_assert_eq(run("check %s", path), 1, "%s", out);
	has("session record");
	has("mid-write");
	has("ORPHAN with no keys");
	cr_assert_eq(run_json("check %s", path), 1, "%s", out);
	cr_assert_null(strstr(out, "\"problems\": 0,"), "%s", out);
}

/* ---- devices, stats, usage --------------------------------------------- */

Test(inspect, devices_lists_what_devscan_finds_in_text_and_json)
{
	cr_assert_eq(run("devices", NULL), 0, "%s", out);
	cr_assert(strstr(out, "no DAX devices found") != NULL ||
	    strstr(out, "PATH  ") != NULL, "%s", out);
	cr_assert_eq(run_json("devices", NULL), 0, "%s", out);
	has("\"devices\": [");
}

Test(inspect, devices_with_a_path_that_is_no_dax_device_fails)
{
	make_pool(0);
	cr_assert_eq(run("devices %s", path), 1, "%s", out);
	has("not a DAX device or fsdax file");
}

/* start a metaserver on a fresh pool; returns its pid once it serves */
static pid_t
start_server(const char *url)
{
	const char *ms = getenv("CXLP_METASERVER");
	char args[512];
	pid_t pid;

	if (ms == NULL) {
		cr_skip_test("CXLP_METASERVER unset (run via meson)");
	}
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execl(ms, ms, "--pool", path, "--size", "64M", "--listen", url,
		    "--log-level", "err", (char *)NULL);
		_exit(127);
	}
	snprintf(args, sizeof(args), "stats --server %s", url);
	for (int i = 0; i < 300 && run_to(args, false) != 0; i++) {
		usleep(50 * 1000); /* polling for readiness, not timing */
	}
	return pid;
}

static void
stop_server(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
}

Test(inspect, stats_asks_a_live_metaserver)
{
	char url[300];
	pid_t pid;

	snprintf(url, sizeof(url), "ipc:///tmp/cxlp-inspect-%d.sock",
	    (int)getpid());
	pid = start_server(url);
	cr_assert_eq(run("stats --server %s", url), 0, "%s", out);
	has("\npool_bytes      64.0 MiB\n");
	has("\nsessions        1 (this one included)\n");
	cr_assert_eq(run_json("stats --server %s", url), 0, "%s", out);
	has("\"pool_size\": 67108864");
	has("\"keys\": 0,");
	stop_server(pid);
}

/* a handler session on url: one region, one key pinned once */
static void
handler_session(struct raw_client *c, const char *url)
{
	const void *k[] = { "k" };
	size_t kl[] = { 1 };
	struct proto_result res;
	struct proto_loc loc;
	struct pbuf b;
	uint32_t n = 0;

	cr_assert_eq(raw_open(c, url), 0, "%s", cxlp_errormsg());
	cr_assert_eq(raw_hello(c), 0, "%s", cxlp_errormsg());
	cr_assert_eq(raw_region(c, 2u << 20, 65536, &loc), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(raw_register(c, "k", loc.region, loc.region_off, 100,
	    &res), 0);
	cr_assert_eq(res.status, 0);
	pbuf_init(&b);
	proto_put_keys(&b, 0, 1, k, kl);
	cr_assert_eq(raw_request(c, PROTO_OP_PIN, &b, &res, 1, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(res.status, 0);
	pbuf_fini(&b);
}

/* the text row of the session whose host is "rawclient" */
static void
text_row(unsigned *pid, char *state, unsigned *regions, unsigned *pins)
{
	const char *at = strstr(out, "rawclient");
	const char *line;
	unsigned long long id, inst;
	char host[32];

	cr_assert_not_null(at, "no rawclient session in:\n%s", out);
	for (line = at; line > out && line[-1] != '\n'; line--) {
	}
	cr_assert_eq(sscanf(line, "%llu %u %31s %llx %15s %u %u", &id, pid,
	    host, &inst, state, regions, pins), 7, "row: %.100s", line);
}

Test(inspect, stats_lists_a_live_handler_session_but_not_its_own)
{
	struct raw_client c;
	char url[300], want[64], state[16];
	unsigned pid = 0, regions = 0, pins = 0;
	pid_t srv;

	snprintf(url, sizeof(url), "ipc:///tmp/cxlp-inspect-s-%d.sock",
	    (int)getpid());
	srv = start_server(url);
	handler_session(&c, url);
	cr_assert_eq(run("stats --server %s", url), 0, "%s", out);
	has("\nsessions        2 (this one included)\n");
	has("STATE");
	text_row(&pid, state, &regions, &pins);
	cr_assert_eq(pid, (unsigned)getpid());
	cr_assert_str_eq(state, "attached");
	cr_assert_eq(regions, 1);
	cr_assert_eq(pins, 1);
	has("\n1 session besides this one\n");
	cr_assert_eq(run_json("stats --server %s", url), 0, "%s", out);
	snprintf(want, sizeof(want), "\"pid\": %d,", (int)getpid());
	has(want);
	has("\"host\": \"rawclient\"");
	has("\"state\": \"attached\"");
	has("\"regions\": 1,");
	has("\"pins\": 1");
	cr_assert_null(strstr(strstr(out, "\"state\"") + 1, "\"state\""),
	    "pool-inspect's own session is not listed: %s", out);
	raw_close(&c);
	stop_server(srv);
}

Test(inspect, stats_without_a_server_fails_with_a_message)
{
	cr_assert_eq(run("stats --server ipc:///tmp/cxlp-nobody-%s.sock "
	    "--timeout-ms 500", "x"), 1, "%s", out);
	has("cannot reach");
	cr_assert_eq(run("stats", NULL), 2, "%s", out);
}

Test(inspect, a_missing_path_fails_with_a_message)
{
	cr_assert_eq(run("summary %s", "/nonexistent/pool"), 1, "%s", out);
	has("/nonexistent/pool");
}

Test(inspect, a_file_that_is_not_a_pool_fails_with_a_message)
{
	FILE *f = fopen(path, "w");

	fputs("hello\n", f);
	fclose(f);
	cr_assert_eq(truncate(path, 1 << 20), 0);
	cr_assert_eq(run("summary %s", path), 1, "%s", out);
	has("not a cxlpool pool");
	cr_assert_eq(run("check %s", path), 1, "%s", out);
	has("problem: ");
	has("not a cxlpool pool");
}

Test(inspect, usage_errors_exit_two_and_help_lists_commands)
{
	cr_assert_eq(run("summary", NULL), 2, "%s", out);
	cr_assert_eq(run("frobnicate x", NULL), 2, "%s", out);
	cr_assert_eq(run("keys %s --prefix", "x"), 2, "%s", out);
	cr_assert_eq(run("regions %s extra", "x"), 2, "%s", out);
	cr_assert_eq(run("--help", NULL), 0, "%s", out);
	for (const char *c = "summary\0regions\0keys\0sessions\0check\0"
	    "devices\0stats\0"; *c; c += strlen(c) + 1) {
		has(c);
	}
}
