/*
 * test_config.c -- tests of metaserver/config.c: the flag parser, its
 * size suffixes, and the --help text that lists them.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ms_int.h"

TestSuite(config, .timeout = 30);

/* ms_config_parse of {"cxlpool-metaserver", flag, value}; its result */
static int
parse2(struct ms_config *cfg, const char *flag, const char *value)
{
	char *argv[] = { "cxlpool-metaserver", (char *)flag, (char *)value,
		NULL };

	return ms_config_parse(cfg, 3, argv);
}

Test(config, size_takes_k_m_g_t_suffixes_in_either_case)
{
	static const struct {
		const char *v;
		uint64_t bytes;
	} ok[] = {
		{ "4096", 4096 }, { "8K", 8ull << 10 }, { "64m", 64ull << 20 },
		{ "3G", 3ull << 30 }, { "1T", 1ull << 40 },
		{ "2t", 2ull << 40 }, { "16777215T", 16777215ull << 40 },
	};
	struct ms_config cfg;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(parse2(&cfg, "--size", ok[i].v), 0, "%s",
		    ok[i].v);
		cr_assert_eq(cfg.size, ok[i].bytes, "%s: %llu", ok[i].v,
		    (unsigned long long)cfg.size);
	}
	cr_assert_eq(parse2(&cfg, "--index-slots", "1K"), 0);
	cr_assert_eq(cfg.index_slots, 1024);
}

Test(config, size_refuses_other_suffixes_and_overflow)
{
	static const char *const bad[] = { "1P", "1E", "1KB", "T", "-1T",
		"16777216T", "0", "" };
	struct ms_config cfg;

	(void)freopen("/dev/null", "w", stderr); /* the usage lines */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(parse2(&cfg, "--size", bad[i]), 2, "'%s'",
		    bad[i]);
	}
}

Test(config, help_lists_the_suffixes_the_parser_takes)
{
	char path[] = "/tmp/cxlp_help_XXXXXX", buf[4096];
	char *argv[] = { "cxlpool-metaserver", "--help", NULL };
	struct ms_config cfg;
	int fd = mkstemp(path);
	size_t n;
	FILE *f;

	cr_assert(fd >= 0);
	fflush(stdout);
	cr_assert(dup2(fd, STDOUT_FILENO) >= 0);
	cr_assert_eq(ms_config_parse(&cfg, 2, argv), 1);
	fflush(stdout);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	unlink(path);
	cr_assert_not_null(strstr(buf, "K/M/G/T suffixes"), "help: %s", buf);
}

Test(config, eviction_flags_take_their_words_and_ranges)
{
	static const struct {
		const char *flag, *v;
		int rc;
	} cases[] = {
		{ "--evict", "off", 0 }, { "--evict", "no", 2 },
		{ "--evict-order", "sweep", 0 }, { "--evict-order", "lru", 2 },
		{ "--evict-free", "0", 0 }, { "--evict-free", "50", 0 },
		{ "--evict-free", "51", 2 }, { "--evict-free", "-1", 2 },
		{ "--lease-max-ms", "1", 0 }, { "--lease-max-ms", "0", 2 },
		{ "--lease-max-ms", "3600001", 2 },
		{ "--lease-max-ms", "10s", 2 },
		{ "--max-sessions-per-process", "0", 2 },
	};
	struct ms_config cfg;

	(void)freopen("/dev/null", "w", stderr); /* the usage lines */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(parse2(&cfg, cases[i].flag, cases[i].v),
		    cases[i].rc, "%s %s", cases[i].flag, cases[i].v);
	}
	cr_assert_eq(parse2(&cfg, "--evict", "off"), 0);
	cr_assert(!cfg.evict);
	cr_assert(cfg.evict_clock, "the default order is clock");
	cr_assert_eq(parse2(&cfg, "--lease-max-ms", "2500"), 0);
	cr_assert_eq(cfg.lease_max_ms, 2500);
	cr_assert_eq(cfg.evict_free_pct, MS_EVICT_FREE_PCT_DEFAULT);
}

/* ms_config_parse of argv (NULL-terminated); stderr to /dev/null */
static int
parsev(struct ms_config *cfg, char **argv)
{
	int argc = 0;

	while (argv[argc] != NULL) {
		argc++;
	}
	return ms_config_parse(cfg, argc, argv);
}

Test(config, elect_flags_parse_with_their_defaults)
{
	struct ms_config cfg;
	char *a[] = { "m", "--elect", "etcd://h1:2379,[::1]:2380", NULL };
	char *b[] = { "m", "--elect", "etcd://h:1", "--elect-key", "/x/y",
		"--elect-ttl", "5s", NULL };
	char *c[] = { "m", "--elect-ttl", "3000ms", "--elect", "etcd://h:1",
		NULL };
	char *d[] = { "m", NULL };

	cr_assert_eq(parsev(&cfg, a), 0);
	cr_assert_str_eq(cfg.elect, "etcd://h1:2379,[::1]:2380");
	cr_assert_null(cfg.elect_key, "the caller fills the pool's uuid");
	cr_assert_eq(cfg.elect_ttl_ms, 2000);
	cr_assert_eq(parsev(&cfg, b), 0);
	cr_assert_str_eq(cfg.elect_key, "/x/y");
	cr_assert_eq(cfg.elect_ttl_ms, 5000);
	cr_assert_eq(parsev(&cfg, c), 0);
	cr_assert_eq(cfg.elect_ttl_ms, 3000);
	cr_assert_eq(parsev(&cfg, d), 0);
	cr_assert_null(cfg.elect, "no election unless asked");
}

Test(config, elect_flags_refuse_bad_values)
{
	static const char *const bad[][2] = {
		{ "--elect", "http://h:1" }, { "--elect", "etcd://h" },
		{ "--elect", "etcd://h:99999" }, { "--elect", "etcd://" },
		{ "--elect-ttl", "0" }, { "--elect-ttl", "1500ms" },
		{ "--elect-ttl", "301s" }, { "--elect-ttl", "2m" },
		{ "--elect-ttl", "-2" }, { "--elect-key", "nope" },
		{ "--elect-key", "/a b" }, { "--elect-key", "/" },
	};
	struct ms_config cfg;

	(void)freopen("/dev/null", "w", stderr);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "m", "--elect", "etcd://h:1",
			(char *)bad[i][0], (char *)bad[i][1], NULL };

		cr_assert_eq(parsev(&cfg, argv), 2, "%s %s", bad[i][0],
		    bad[i][1]);
	}
	char *alone[] = { "m", "--elect-ttl", "2s", NULL };
	cr_assert_eq(parsev(&cfg, alone), 2, "--elect-ttl without --elect");
}
