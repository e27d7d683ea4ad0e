/*
 * test_inspect.c -- tools/pool-inspect run as a program (CXLP_POOL_INSPECT)
 * on pools this test makes: every read command's text and JSON (the JSON
 * is checked by a strict validator, json_check.h), keys with bytes that
 * are neither printable nor UTF-8, devices, and usage errors. check on
 * damaged pools is test_inspect_check.c; stats and sessions of a live
 * metaserver, test_inspect_stats.c.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "inspect_fixture.h"
#include "json_check.h"

TestSuite(inspect, .init = inspect_setup, .fini = inspect_teardown);

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
	has("2 regions (0 orphan), 6.0 MiB of 60.0 MiB data allocated");
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


/* ---- devices and usage -------------------------------------------------- */

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
