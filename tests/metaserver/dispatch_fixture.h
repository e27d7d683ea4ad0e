/*
 * dispatch_fixture.h -- what the metaserver's in-process tests share: a
 * struct ms on a temporary pool (set up per test), clients that are plain
 * numbers for pipes, and builders that send one request through
 * ms_dispatch and decode its reply. dispatch_fixture.c implements it.
 * Every name it exports starts with dfx_ (the macros excepted), so that
 * the test files that include it keep their own names to themselves.
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

struct dfx_cl {
	uint64_t session, token, next_id, pipe;
	struct proto_loc region; /* from cl_region */
	uint16_t version;        /* of its frames; 0: PROTO_VERSION (so a
	                          * client is zeroed before its first HELLO,
	                          * as dfx_hello does) */
};

extern struct ms dfx_ms;
extern char dfx_pool_file[96];

void dfx_ms_open(void);
void dfx_setup(void);
void dfx_teardown(void);
int dfx_send_raw(uint64_t pipe, const struct pbuf *frame, struct pbuf *rep,
    struct proto_rep_hdr *h, struct preader *body);
void dfx_put_req(struct pbuf *b, const struct dfx_cl *c, uint16_t op,
    uint64_t req_id);
int dfx_call_id(struct dfx_cl *c, uint16_t op, uint64_t req_id,
    const struct pbuf *body, struct pbuf *rep, struct proto_result *res,
    uint32_t *n);
int dfx_call(struct dfx_cl *c, uint16_t op, const struct pbuf *body,
    struct proto_result *res, uint32_t *n);
int dfx_hello_flags(struct dfx_cl *c, uint64_t pipe, uint32_t flags,
    uint32_t pid, uint64_t start_time);
/* dfx_hello_from -- dfx_hello_flags as a handler of host
 * (dfx_hello_flags: "testhost", which is not this host). */
int dfx_hello_from(struct dfx_cl *c, uint64_t pipe, uint32_t flags,
    uint32_t pid, uint64_t start_time, const char *host);
void dfx_hello(struct dfx_cl *c, uint64_t pipe);
/* dfx_hello_v -- dfx_hello, its frames of version (0: PROTO_VERSION). */
void dfx_hello_v(struct dfx_cl *c, uint64_t pipe, uint16_t version);
int dfx_region_alloc(struct dfx_cl *c, uint64_t len, uint64_t page,
    struct proto_loc *loc);
void dfx_client(struct dfx_cl *c, uint64_t pipe);
uint64_t dfx_page_off(const struct dfx_cl *c, unsigned page);
int dfx_reg1(struct dfx_cl *c, uint32_t flags, const char *key, uint32_t region,
    uint64_t off, uint64_t len, struct proto_result *res);
int dfx_reg_page(struct dfx_cl *c, uint32_t flags, const char *key,
    unsigned page, struct proto_result *res);
void dfx_put_keys(struct pbuf *b, uint32_t flags, size_t n,
    const char *const *keys);
int dfx_keyop(struct dfx_cl *c, uint16_t op, uint32_t flags, size_t n,
    const char *const *keys, struct proto_result *res, uint32_t *m);
int dfx_key1(struct dfx_cl *c, uint16_t op, uint32_t flags, const char *key);
uint64_t dfx_stat_of(struct dfx_cl *c, enum proto_stat which);

#endif
