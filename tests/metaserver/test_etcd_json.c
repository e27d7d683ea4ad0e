/*
 * test_etcd_json.c -- tests of metaserver/etcd_json.c: endpoint lists,
 * base64, and the parser of etcd's answers, with the answers etcd 3.4.23
 * really sends (captured here) and hostile ones: every truncation,
 * random byte changes, wrong types, deep nesting, huge bodies. A bad
 * answer is an error and a zeroed result, never a crash (run under ASan
 * by scripts/test.sh).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "etcd.h"

TestSuite(etcd_json, .timeout = 60);

/* captured from etcd 3.4.23 */
static const char grant[] = "{\"header\":{\"cluster_id\":"
    "\"15118495548433857066\",\"member_id\":\"13668033151171901709\","
    "\"revision\":\"1\",\"raft_term\":\"2\"},\"ID\":"
    "\"4111120380979990277\",\"TTL\":\"2\"}";
static const char txn_won[] = "{\"header\":{\"cluster_id\":\"1\","
    "\"revision\":\"2\",\"raft_term\":\"2\"},\"succeeded\":true,"
    "\"responses\":[{\"response_put\":{\"header\":{\"revision\":\"2\"}}}]}";
static const char txn_lost[] = "{\"header\":{\"cluster_id\":\"1\","
    "\"revision\":\"2\",\"raft_term\":\"2\"},\"responses\":[{"
    "\"response_range\":{\"header\":{\"revision\":\"2\"},\"kvs\":[{"
    "\"key\":\"L2N4bHBvb2wveA==\",\"create_revision\":\"2\","
    "\"mod_revision\":\"2\",\"version\":\"1\",\"value\":\"bWU=\","
    "\"lease\":\"4111120380979990279\"}],\"count\":\"1\"}}]}";
static const char ka[] = "{\"result\":{\"header\":{\"cluster_id\":\"1\","
    "\"revision\":\"2\",\"raft_term\":\"2\"},\"ID\":"
    "\"4111120380979990279\",\"TTL\":\"5\"}}\n";
static const char ka_gone[] = "{\"result\":{\"header\":{\"revision\":"
    "\"3\"},\"ID\":\"4111120380979990279\"}}";
static const char range_empty[] = "{\"header\":{\"cluster_id\":\"1\","
    "\"revision\":\"3\",\"raft_term\":\"2\"}}";
static const char err_unary[] = "{\"error\":\"etcdserver: requested lease "
    "not found\",\"message\":\"etcdserver: requested lease not found\","
    "\"code\":5}";
static const char err_stream[] = "{\"error\":{\"grpc_code\":14,"
    "\"http_code\":503,\"message\":\"etcdserver: no leader\"}}";

static int
parse(enum etcd_call c, const char *s, struct etcd_ans *a)
{
	return etcd_parse(c, s, strlen(s), a);
}

Test(etcd_json, real_answers_parse_into_their_fields)
{
	struct etcd_ans a;

	cr_assert_eq(parse(ETCD_GRANT, grant, &a), 0, "%s", cxlp_errormsg());
	cr_assert_eq(a.id, 4111120380979990277LL);
	cr_assert_eq(a.ttl, 2);
	cr_assert_eq(a.revision, 1);
	cr_assert_eq(parse(ETCD_TXN, txn_won, &a), 0);
	cr_assert(a.succeeded);
	cr_assert_eq(a.revision, 2);
	cr_assert_eq(parse(ETCD_TXN, txn_lost, &a), 0, "%s", cxlp_errormsg());
	cr_assert(!a.succeeded);
	cr_assert(a.has_kv);
	cr_assert_eq(a.kv.create_rev, 2);
	cr_assert_eq(a.kv.lease, 4111120380979990279LL);
	cr_assert_str_eq(a.kv.value, "me");
	cr_assert_eq(parse(ETCD_KEEPALIVE, ka, &a), 0, "%s", cxlp_errormsg());
	cr_assert_eq(a.ttl, 5);
	cr_assert_eq(parse(ETCD_KEEPALIVE, ka_gone, &a), 0);
	cr_assert_eq(a.ttl, 0, "an absent TTL is 0: the lease is gone");
	cr_assert_eq(parse(ETCD_RANGE, range_empty, &a), 0);
	cr_assert(!a.has_kv);
	cr_assert_eq(a.count, 0);
	cr_assert_eq(parse(ETCD_REVOKE, err_unary, &a), 0);
	cr_assert_eq(a.code, 5);
	cr_assert_str_eq(a.msg, "etcdserver: requested lease not found");
	cr_assert_eq(parse(ETCD_KEEPALIVE, err_stream, &a), 0);
	cr_assert_eq(a.code, 14);
}

Test(etcd_json, wrong_types_and_impossible_values_are_eproto)
{
	static const struct {
		enum etcd_call c;
		const char *s;
	} bad[] = {
		{ ETCD_GRANT, "{\"header\":{\"revision\":\"1\"},\"ID\":true}" },
		{ ETCD_GRANT, "{\"header\":{\"revision\":\"x1\"}}" },
		{ ETCD_GRANT, "{\"header\":{\"revision\":\"99999999999999999999"
		    "9\"}}" },
		{ ETCD_GRANT, "{\"header\":{\"revision\":1.5}}" },
		{ ETCD_GRANT, "{\"header\":{\"revision\":1e300}}" },
		{ ETCD_GRANT, "{\"header\":{\"revision\":\"1\"},\"TTL\":\"-3\"}" },
		{ ETCD_GRANT, "{\"header\":[]}" },
		{ ETCD_GRANT, "{}" },
		{ ETCD_GRANT, "[]" },
		{ ETCD_GRANT, "\"header\"" },
		{ ETCD_GRANT, "{\"header\":{}} trailing" },
		{ ETCD_KEEPALIVE, "{\"result\":7}" },
		{ ETCD_KEEPALIVE, "{\"header\":{}}" },
		{ ETCD_TXN, "{\"header\":{},\"succeeded\":\"yes\"}" },
		{ ETCD_TXN, "{\"header\":{},\"succeeded\":true}" },
		{ ETCD_TXN, "{\"header\":{},\"responses\":{}}" },
		{ ETCD_TXN, "{\"header\":{},\"responses\":[1]}" },
		{ ETCD_TXN, "{\"header\":{},\"responses\":[{}]}" },
		{ ETCD_RANGE, "{\"header\":{},\"kvs\":[{\"value\":\"bWU=\"}]}" },
		{ ETCD_RANGE, "{\"header\":{},\"kvs\":[{\"create_revision\":\"2"
		    "\",\"mod_revision\":\"2\",\"value\":\"bW=U\"}]}" },
		{ ETCD_RANGE, "{\"header\":{},\"kvs\":[{\"create_revision\":\"2"
		    "\",\"mod_revision\":\"2\",\"value\":5}]}" },
		{ ETCD_RANGE, "{\"header\":{},\"kvs\":[{\"create_revision\":\"3"
		    "\",\"mod_revision\":\"2\"}]}" },
		{ ETCD_RANGE, "{\"header\":{},\"kvs\":[],\"count\":\"-1\"}" },
		{ ETCD_PUT, "{\"error\":\"x\",\"code\":99}" },
		{ ETCD_PUT, "{\"error\":{\"grpc_code\":\"a\"}}" },
	};
	struct etcd_ans a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&a, 0x5a, sizeof(a));
		cr_assert_eq(parse(bad[i].c, bad[i].s, &a), -EPROTO, "%s",
		    bad[i].s);
		cr_assert_eq(a.revision, 0, "%s: result zeroed", bad[i].s);
		cr_assert_eq(a.code, 0);
	}
}

Test(etcd_json, every_truncation_of_every_answer_is_an_error)
{
	static const struct {
		enum etcd_call c;
		const char *s;
	} ok[] = {
		{ ETCD_GRANT, grant }, { ETCD_TXN, txn_won },
		{ ETCD_TXN, txn_lost }, { ETCD_KEEPALIVE, ka },
		{ ETCD_RANGE, range_empty }, { ETCD_PUT, err_unary },
	};
	struct etcd_ans a;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t n = strlen(ok[i].s);

		while (n > 0 && ok[i].s[n - 1] == '\n') {
			n--;
		}
		for (size_t len = 0; len < n; len++) {
			cr_assert_neq(etcd_parse(ok[i].c, ok[i].s, len, &a), 0,
			    "answer %zu cut at %zu parsed", i, len);
		}
		cr_assert_eq(etcd_parse(ok[i].c, ok[i].s, n, &a), 0);
	}
}

/* random byte changes of real answers: any outcome but a crash, and a
 * failed parse leaves a zeroed answer */
Test(etcd_json, random_byte_changes_never_crash)
{
	static const char *const ok[] = { grant, txn_won, txn_lost, ka,
		range_empty, err_unary, err_stream };
	static const char alphabet[] = "{}[]\":,0123456789-+.eE \\/tfnul"
	    "\x00\xff\x80=";
	char buf[1024];
	struct etcd_ans a;
	unsigned seed = 12345;

	for (int it = 0; it < 30000; it++) {
		const char *s = ok[it % 7];
		size_t n = strlen(s);
		int flips = 1 + rand_r(&seed) % 4;

		memcpy(buf, s, n);
		for (int f = 0; f < flips; f++) {
			buf[rand_r(&seed) % n] = alphabet[rand_r(&seed) %
			    (sizeof(alphabet) - 1)];
		}
		for (int c = ETCD_GRANT; c <= ETCD_LIST; c++) {
			if (etcd_parse((enum etcd_call)c, buf, n, &a) != 0) {
				cr_assert_eq(a.revision, 0);
				cr_assert_eq(a.has_kv, false);
				cr_assert_eq(a.nitems, 0);
			}
		}
	}
}

Test(etcd_json, deep_nesting_and_huge_bodies_are_refused)
{
	size_t n = 200000;
	char *big = malloc(n + 1);
	struct etcd_ans a;

	cr_assert(big != NULL);
	for (size_t i = 0; i < n; i++) {
		big[i] = i < n / 2 ? '[' : ']';
	}
	cr_assert_eq(etcd_parse(ETCD_RANGE, big, n, &a), -EMSGSIZE);
	cr_assert_eq(etcd_parse(ETCD_RANGE, big, 20000, &a), -EPROTO,
	    "10000 open brackets (cJSON stops at 1000 levels)");
	/* a value longer than we keep */
	snprintf(big, n, "{\"header\":{},\"kvs\":[{\"create_revision\":\"1\","
	    "\"mod_revision\":\"1\",\"value\":\"");
	size_t off = strlen(big);
	memset(big + off, 'A', 8000);
	snprintf(big + off + 8000, n - off - 8000, "\"}]}");
	cr_assert_eq(parse(ETCD_RANGE, big, &a), -EMSGSIZE);
	free(big);
}

Test(etcd_json, base64_round_trips_and_refuses_bad_input)
{
	uint8_t src[64], out[64];
	char enc[100];

	for (size_t i = 0; i < sizeof(src); i++) {
		src[i] = (uint8_t)(i * 37 + 1);
	}
	for (size_t len = 0; len <= sizeof(src); len++) {
		int n = etcd_b64_encode(src, len, enc, sizeof(enc));

		cr_assert_eq((size_t)n, (len + 2) / 3 * 4);
		cr_assert_eq(etcd_b64_decode(enc, (size_t)n, out, sizeof(out)),
		    (int)len);
		cr_assert_arr_eq(out, src, len);
	}
	cr_assert_str_eq((etcd_b64_encode("/cxlpool/x", 10, enc,
	    sizeof(enc)), enc), "L2N4bHBvb2wveA==");
	cr_assert_eq(etcd_b64_encode(src, 64, enc, 88), -EMSGSIZE);
	cr_assert_eq(etcd_b64_decode("bWU", 3, out, 8), -EPROTO);
	cr_assert_eq(etcd_b64_decode("b=WU", 4, out, 8), -EPROTO);
	cr_assert_eq(etcd_b64_decode("bW=U", 4, out, 8), -EPROTO);
	cr_assert_eq(etcd_b64_decode("====", 4, out, 8), -EPROTO);
	cr_assert_eq(etcd_b64_decode("bWU=bWU=", 8, out, 8), -EPROTO,
	    "padding only at the end");
	cr_assert_eq(etcd_b64_decode("bWVt", 4, out, 2), -EMSGSIZE);
	cr_assert_eq(etcd_b64_decode("bW\x00=", 4, out, 8), -EPROTO);
}

Test(etcd_json, endpoint_lists_parse_and_bad_ones_say_why)
{
	struct etcd_endpoints ep;

	cr_assert_eq(etcd_endpoints_parse("etcd://h1:2379,10.0.0.2:1,"
	    "[::1]:65535", &ep), 0, "%s", cxlp_errormsg());
	cr_assert_eq(ep.n, 3);
	cr_assert_str_eq(ep.url[0], "http://h1:2379");
	cr_assert_str_eq(ep.url[1], "http://10.0.0.2:1");
	cr_assert_str_eq(ep.url[2], "http://[::1]:65535");
	static const char *const bad[] = { "http://h:1", "etcd://", "etcd://h",
		"etcd://h:", "etcd://:1", "etcd://h:0", "etcd://h:65536",
		"etcd://h:1x", "etcd://h:1,", "etcd://h:1,,h:2",
		"etcd://h h:1", "etcd://::1:5", "etcd://[::1]5",
		"etcd://a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1,a:1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cxlp_errmsg_clear();
		cr_assert_eq(etcd_endpoints_parse(bad[i], &ep), -EINVAL, "%s",
		    bad[i]);
		cr_assert_neq(cxlp_errormsg()[0], '\0', "%s: no reason", bad[i]);
		cr_assert_eq(ep.n, 0);
	}
}

/* a prefix's range (ETCD_LIST, elect_reg.c): every key with its value
 * and lease, in order; a non-object among kvs is an error */
Test(etcd_json, a_list_keeps_every_key_with_its_value)
{
	static const char two[] = "{\"header\":{\"revision\":\"9\"},\"kvs\":["
	    "{\"key\":\"L2svc3RhbmRieS9oMQ==\",\"create_revision\":\"4\","
	    "\"mod_revision\":\"4\",\"version\":\"1\",\"value\":"
	    "\"bGlzdGVuPWlwYzovLy9hIGhvc3Q9aDEgcGlkPTE=\",\"lease\":\"7\"},"
	    "{\"key\":\"L2svc3RhbmRieS9oMg==\",\"create_revision\":\"5\","
	    "\"mod_revision\":\"5\",\"version\":\"1\",\"value\":\"djI=\","
	    "\"lease\":\"8\"}],\"count\":\"2\"}";
	static const char bad[] = "{\"header\":{\"revision\":\"9\"},\"kvs\":["
	    "{\"key\":\"L2svc3RhbmRieS9oMQ==\",\"create_revision\":\"4\","
	    "\"mod_revision\":\"4\"},1],\"count\":\"2\"}";
	struct etcd_ans a;

	cr_assert_eq(parse(ETCD_LIST, two, &a), 0, "%s", cxlp_errormsg());
	cr_assert_eq(a.count, 2);
	cr_assert_eq(a.nitems, 2);
	cr_assert_str_eq(a.items[0].key, "/k/standby/h1");
	cr_assert_str_eq(a.items[0].value, "listen=ipc:///a host=h1 pid=1");
	cr_assert_eq(a.items[0].lease, 7);
	cr_assert_str_eq(a.items[1].key, "/k/standby/h2");
	cr_assert_str_eq(a.items[1].value, "v2");
	cr_assert_eq(a.items[1].lease, 8);
	cr_assert_eq(parse(ETCD_LIST, range_empty, &a), 0);
	cr_assert_eq(a.nitems, 0);
	cr_assert_eq(parse(ETCD_LIST, bad, &a), -EPROTO);
	cr_assert_eq(a.nitems, 0, "a failed parse leaves a zeroed answer");
}
