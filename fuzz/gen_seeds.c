/*
 * gen_seeds.c -- write the seed corpus of fuzz_proto: a few valid frames
 * of every request and reply type, built with the codec's own encoders.
 *
 * Usage: gen_seeds DIR. Each frame goes to DIR/<name>.bin. The output is
 * deterministic, so regenerating the committed corpus changes nothing
 * unless the protocol changed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"

static const char *dir;
static int failures;

static void
save(const char *name, struct pbuf *b)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	f = fopen(path, "wb");
	if (b->err != 0 || f == NULL ||
	    fwrite(b->data, 1, b->len, f) != b->len) {
		fprintf(stderr, "gen_seeds: %s: %s\n", path, strerror(errno));
		failures++;
	}
	if (f != NULL && fclose(f) != 0) {
		failures++;
	}
	pbuf_reset(b);
}

static void
req(struct pbuf *b, unsigned op, uint64_t id)
{
	struct proto_req_hdr h = {
		.version = PROTO_VERSION, .op = (uint16_t)op, .req_id = id,
		.session = 7, .token = 0x1234567890abcdefULL,
	};

	proto_put_req_hdr(b, &h);
}

static void
rep(struct pbuf *b, unsigned op, int32_t status)
{
	struct proto_rep_hdr h = {
		.version = PROTO_VERSION, .op = (uint16_t)op, .req_id = 42,
		.status = status,
	};

	proto_put_rep_hdr(b, &h);
}

static void
seed_requests(struct pbuf *b)
{
	static const char *const k[] = { "model@0@abc", "k", "model@1@ff" };
	static const size_t kl[] = { 11, 1, 10 };
	struct proto_hello hello = { .pid = 4242, .start_time = 99,
		.instance_id = 5, .host = "node1", .host_len = 5 };
	struct proto_reg regs[2] = {
		{ { (const uint8_t *)"model@0@abc", 11 }, 3, 4 << 20, 4096 },
		{ { (const uint8_t *)"x", 1 }, 4, 6 << 20, 1 },
	};

	req(b, PROTO_OP_HELLO, 1);
	proto_put_hello(b, &hello);
	save("req_hello", b);
	hello.flags = PROTO_HELLO_REATTACH;
	req(b, PROTO_OP_HELLO, 2);
	proto_put_hello(b, &hello);
	save("req_hello_reattach", b);
	req(b, PROTO_OP_REGION_ALLOC, 3);
	proto_put_region_req(b, 2 << 20, 65536);
	save("req_region_alloc", b);
	req(b, PROTO_OP_REGION_FREE, 4);
	proto_put_region_free(b, 3, 1);
	save("req_region_free", b);
	req(b, PROTO_OP_REGISTER, 5);
	proto_put_regs(b, PROTO_F_PIN, 2, regs);
	save("req_register", b);
	for (unsigned op = PROTO_OP_LOOKUP; op <= PROTO_OP_DELETE; op++) {
		char name[32];

		snprintf(name, sizeof(name), "req_%s", proto_op_name(op));
		req(b, op, op);
		proto_put_keys(b, 0, 3, (const void *const *)k, kl);
		save(name, b);
	}
	req(b, PROTO_OP_STATS, 10);
	save("req_stats", b);
	req(b, PROTO_OP_HEARTBEAT, 11);
	save("req_heartbeat", b);
	req(b, PROTO_OP_BYE, 12);
	save("req_bye", b);
}

static void
seed_replies(struct pbuf *b)
{
	struct proto_welcome w = { 7, 0x1234567890abcdefULL, 1ULL << 30,
		2 << 20, "/dev/shm/cxlpool", 16 };
	struct proto_loc loc = { 3, 1, 4 << 20, 2 << 20, 0, 0 };
	struct proto_result res[2] = {
		{ 0, PROTO_R_NEW, { 3, 1, 4 << 20, 2 << 20, 4 << 20, 4096 } },
		{ CXLP_E_NOTFOUND, 0, { 0 } },
	};
	uint64_t stats[PROTO_STAT_COUNT];

	for (unsigned i = 0; i < PROTO_STAT_COUNT; i++) {
		stats[i] = 1000 * i;
	}
	rep(b, PROTO_OP_HELLO, 0);
	proto_put_welcome(b, &w);
	save("rep_welcome", b);
	rep(b, PROTO_OP_REGION_ALLOC, 0);
	proto_put_loc(b, &loc);
	save("rep_region_alloc", b);
	rep(b, PROTO_OP_REGION_FREE, 0);
	save("rep_region_free", b);
	rep(b, PROTO_OP_REGISTER, 0);
	proto_put_results(b, 2, res);
	save("rep_register", b);
	rep(b, PROTO_OP_PIN, 0);
	proto_put_results(b, 1, res + 1);
	save("rep_pin", b);
	rep(b, PROTO_OP_STATS, 0);
	proto_put_stats(b, PROTO_STAT_COUNT, stats);
	save("rep_stats", b);
	rep(b, PROTO_OP_LOOKUP, CXLP_E_SESSION);
	save("rep_error", b);
	rep(b, PROTO_OP_BYE, 0);
	save("rep_bye", b);
}

int
main(int argc, char **argv)
{
	struct pbuf b;

	if (argc != 2) {
		fprintf(stderr, "usage: gen_seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	pbuf_init(&b);
	seed_requests(&b);
	seed_replies(&b);
	pbuf_fini(&b);
	return failures != 0 ? 1 : 0;
}
