/*
 * dispatch_helper.c -- cxlpool-bench-dispatch: the metaserver's own work
 * per key, without nng. REGISTER and DELETE frames of BATCH keys go
 * through ms_dispatch, the call each metaserver worker makes for a
 * received frame (session check, reply cache, pool lock, index and key
 * heap, persists, reply encoding), on a real sparse pool in /dev/shm of
 * the size the bench's metaserver gets; only the socket is missing. Next
 * to the nng echo of the same frame sizes (echo.c) it splits "server CPU
 * per registered key" into nng's share and the metaserver's.
 *
 * One session, one region of BATCH 4 KiB pages; each round registers
 * BATCH new keys (32 bytes, as the batch section's) into the pages, then
 * deletes them, freeing the pages for the next round. A round's frames
 * are built before it is timed. It is a separate executable for the
 * reason cxlpool-bench-index is (the pool library's error functions are
 * also libcxlpool's public ones).
 * Usage: cxlpool-bench-dispatch POOLPATH POOLBYTES ROUNDS
 * Prints "batch BATCH", then one line per round (cxlpool-bench takes
 * the percentiles):
 *   round REGISTER_NS DELETE_NS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "ms_int.h"

#define BATCH 256u
#define KEY_LEN 32
#define PAGE 4096u

struct bench_cl {
	struct ms ms;
	uint64_t session, token, next_id;
	uint16_t op; /* of the frame being built */
	struct proto_loc region;
	struct pbuf frame, reply;
};

/* start c->frame with a request header under c's session */
static void
frame_begin(struct bench_cl *c, uint16_t op)
{
	struct proto_req_hdr h = { PROTO_VERSION, op, ++c->next_id,
		c->session, c->token, 0 };

	c->op = op;
	pbuf_reset(&c->frame);
	pbuf_reset(&c->reply);
	proto_put_req_hdr(&c->frame, &h);
}

/* dispatch c->frame; 0 with *body after the reply header, or -1 */
static int
frame_send(struct bench_cl *c, struct preader *body, uint64_t *ns)
{
	struct proto_rep_hdr h = { 0 };
	struct timespec t0, t1;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = ms_dispatch(&c->ms, 1, c->frame.data, c->frame.len, &c->reply);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
	    (uint64_t)(t1.tv_nsec - t0.tv_nsec);
	if (rc != 0 || proto_get_rep_hdr(c->reply.data, c->reply.len, &h,
	    body) != 0 || h.status != 0) {
		fprintf(stderr, "cxlpool-bench-dispatch: %s failed: %d %s\n",
		    proto_op_name(c->op), rc != 0 ? rc : h.status,
		    cxlp_errormsg());
		return -1;
	}
	return 0;
}

/* HELLO, then a region of BATCH pages */
static int
session_open(struct bench_cl *c)
{
	struct proto_hello m = { (uint32_t)getpid(), 0, 0, 1, "bench", 5,
		NULL, 0, 0, 0, 0, 0, 0 };
	struct proto_welcome w;
	struct preader r;
	uint64_t ns;

	frame_begin(c, PROTO_OP_HELLO);
	proto_put_hello(&c->frame, &m);
	if (frame_send(c, &r, &ns) != 0 || proto_get_welcome(&r, &w) != 0) {
		return -1;
	}
	c->session = w.session;
	c->token = w.token;
	frame_begin(c, PROTO_OP_REGION_ALLOC);
	proto_put_region_req(&c->frame, (uint64_t)BATCH * PAGE, PAGE);
	return frame_send(c, &r, &ns) == 0 &&
	    proto_get_loc(&r, &c->region) == 0 ? 0 : -1;
}

/* REGISTER keys into the region's pages, then DELETE them: ns of each */
static int
round_run(struct bench_cl *c, char (*keys)[KEY_LEN], uint64_t *reg_ns,
    uint64_t *del_ns)
{
	static struct proto_reg g[BATCH];
	static const void *k[BATCH];
	static size_t kl[BATCH];
	struct preader r;

	for (unsigned i = 0; i < BATCH; i++) {
		g[i] = (struct proto_reg){ { (const uint8_t *)keys[i], KEY_LEN },
			c->region.region, c->region.region_off +
			(uint64_t)i * PAGE, 64 };
		k[i] = keys[i];
		kl[i] = KEY_LEN;
	}
	frame_begin(c, PROTO_OP_REGISTER);
	proto_put_regs(&c->frame, 0, BATCH, g);
	if (frame_send(c, &r, reg_ns) != 0) {
		return -1;
	}
	frame_begin(c, PROTO_OP_DELETE);
	proto_put_keys(&c->frame, 0, BATCH, k, kl);
	return frame_send(c, &r, del_ns);
}

/* Prints "batch BATCH", then "round REG_NS DEL_NS" per round. */
static int
run(struct bench_cl *c, unsigned rounds)
{
	static char keys[BATCH][KEY_LEN];
	int rc = session_open(c);

	printf("batch %u\n", BATCH);
	for (unsigned i = 0; i < rounds && rc == 0; i++) {
		uint64_t rns = 0, dns = 0;

		for (unsigned j = 0; j < BATCH; j++) {
			memset(keys[j], 0, KEY_LEN);
			snprintf(keys[j], KEY_LEN, "m7b@w01@r%06u@%08x", i,
			    j * 2654435761u);
		}
		rc = round_run(c, keys, &rns, &dns);
		if (rc == 0) {
			printf("round %llu %llu\n", (unsigned long long)rns,
			    (unsigned long long)dns);
		}
	}
	return rc;
}

int
main(int argc, char **argv)
{
	static struct bench_cl c;
	struct ms_config cfg;
	unsigned rounds;
	int rc;

	if (argc != 4 || (rounds = (unsigned)atoi(argv[3])) == 0) {
		fprintf(stderr, "usage: cxlpool-bench-dispatch POOLPATH "
		    "POOLBYTES ROUNDS\n");
		return 2;
	}
	cxlp_set_log_fn(NULL, NULL, CXLP_LOG_OFF);
	ms_config_defaults(&cfg);
	cfg.pool_path = argv[1];
	cfg.size = strtoull(argv[2], NULL, 0);
	unlink(argv[1]);
	if (ms_init(&c.ms, &cfg) != 0) {
		fprintf(stderr, "cxlpool-bench-dispatch: %s\n",
		    cxlp_errormsg());
		return 1;
	}
	pbuf_init(&c.frame);
	pbuf_init(&c.reply);
	rc = run(&c, rounds);
	pbuf_fini(&c.frame);
	pbuf_fini(&c.reply);
	ms_fini(&c.ms);
	unlink(argv[1]);
	return rc == 0 ? 0 : 1;
}
