/*
 * dispatch_fixture.h -- what the metaserver's in-process tests share: a
 * struct ms on a temporary pool (set up per test), clients that are plain
 * numbers for pipes, and builders that send one request through
 * ms_dispatch and decode its reply. dispatch_fixture.c implements it.
 */
#ifndef CXLP_TEST_DISPATCH_FIXTURE_H
#define CXLP_TEST_DISPATCH_FIXTURE_H

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "ms_int.h"

#define POOL_SIZE (64ull << 20)
#define REGION_LEN (2ull << 20)
#define PAGE (64ull << 10)
#define GRACE_MS 1000

struct cl {
	uint64_t session, token, next_id, pipe;
	struct proto_loc region; /* from cl_region */
};

extern struct ms ms;
extern char pool_file[96];

void ms_open(void);
void setup(void);
void teardown(void);
int send_raw(uint64_t pipe, const struct pbuf *frame, struct pbuf *rep,
    struct proto_rep_hdr *h, struct preader *body);
void put_req(struct pbuf *b, const struct cl *c, uint16_t op, uint64_t req_id);
int call_id(struct cl *c, uint16_t op, uint64_t req_id,
    const struct pbuf *body, struct pbuf *rep, struct proto_result *res,
    uint32_t *n);
int call(struct cl *c, uint16_t op, const struct pbuf *body,
    struct proto_result *res, uint32_t *n);
int hello_flags(struct cl *c, uint64_t pipe, uint32_t flags, uint32_t pid,
    uint64_t start_time);
/* hello_from -- hello_flags as a handler of host (hello_flags: "testhost",
 * which is not this host). */
int hello_from(struct cl *c, uint64_t pipe, uint32_t flags, uint32_t pid,
    uint64_t start_time, const char *host);
void hello(struct cl *c, uint64_t pipe);
int region_alloc(struct cl *c, uint64_t len, uint64_t page,
    struct proto_loc *loc);
void client(struct cl *c, uint64_t pipe);
uint64_t page_off(const struct cl *c, unsigned page);
int reg1(struct cl *c, uint32_t flags, const char *key, uint32_t region,
    uint64_t off, uint64_t len, struct proto_result *res);
int reg_page(struct cl *c, uint32_t flags, const char *key, unsigned page,
    struct proto_result *res);
void put_keys(struct pbuf *b, uint32_t flags, size_t n,
    const char *const *keys);
int keyop(struct cl *c, uint16_t op, uint32_t flags, size_t n,
    const char *const *keys, struct proto_result *res, uint32_t *m);
int key1(struct cl *c, uint16_t op, uint32_t flags, const char *key);
uint64_t stat_of(struct cl *c, enum proto_stat which);

#endif
