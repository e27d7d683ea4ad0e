/*
 * crashpoints.h -- what the two halves of the crash-point sweep share
 * (test_crashpoints.c: the watcher, the runs and the verification;
 * crashpoints_workload.c: the script of raw requests and the model it
 * keeps; crashpoints_evict.c: the script's eviction steps): the model of
 * what the server acknowledged, one run's state, the server and crash
 * flags the watcher thread sets, and the requests the script's files
 * share.
 */
#ifndef CXLP_TEST_CRASHPOINTS_H
#define CXLP_TEST_CRASHPOINTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "rawclient.h"
#include "server.h"

#define MiB (1024ull * 1024)
#define NKEYS 16
#define CP_BACK_MAX 4 /* pages one RECLAIM of the workload gets back */
#define PAGE 4096u    /* page size of the regions but one, bytes */
#define BIG MiB       /* page size of region ra4 (two pages), bytes */

/* key indexes: k0..k9, then B's b0..b2, ra4's r0, r1, and e0 (at a
 * page RECLAIM gave back) */
enum { KB0 = 10, KR0 = 13, KE0 = 15 };
enum { SA = 0, SB = 1 }; /* the two sessions */

/* the workload's keys, by index (crashpoints_workload.c) */
extern const char *const cp_names[NKEYS];

struct model {
	bool present[NKEYS];
	uint32_t region[NKEYS];
	uint64_t off[NKEYS];
	bool unsure[NKEYS]; /* presence and pins of this key may differ */
	uint32_t pins[2][NKEYS];
	uint64_t sess[2];
	bool ended[2];
	uint32_t own[2][8];
	unsigned nown[2];
	bool runsure[2]; /* region ownership of this session may differ */
};

struct run {
	struct raw_client c[2];
	struct proto_loc ra1, ra2, rb1, ra3, ra4;
	struct proto_page back[CP_BACK_MAX]; /* RECLAIM's pages, as answered */
	uint32_t nback;
	struct model m;
	bool before;  /* crashed, when the current op began */
	bool stop;    /* the op in flight at the crash is done */
	int failed;   /* an op that must succeed did not */
	uint64_t op_until; /* cp_xcall: when the op in flight gives up */
};

/* the metaserver under test; a crashed one is restarted by the watcher */
extern struct test_server cp_srv;
extern atomic_bool cp_crashed;   /* the server died during this run */
extern atomic_bool cp_restarted; /* ... and the watcher restarted it */
extern bool cp_restart_ok;       /* ... and the restart worked (once set) */

/* cp_workload -- run the script against cp_srv on the two clients,
 * stopping after the op in flight at a crash; r is reset first. */
void cp_workload(struct run *r);
/* cp_clients_close -- on a freshly restarted cp_srv: new sessions on
 * both clients (so neither socket is redialing), then close them. */
void cp_clients_close(void);

/* ---- requests (crashpoints_workload.c) ---------------------------------- */

/* cp_crash_op -- the server crashed during the op in flight. */
bool cp_crash_op(const struct run *r);
/* cp_xcall -- send op with body (may be NULL) under session s and wait
 * for the reply frame, across a crash (the same frame again, once the
 * watcher restarted the server). 0 and *rep (malloc'd), or the transport
 * error. */
int cp_xcall(struct run *r, int s, uint16_t op, const struct pbuf *body,
    uint8_t **rep, size_t *rep_len);
/* cp_not_acked -- an op whose answer was not an acknowledgment: fine
 * only at the crash (else it counts in r->failed). */
void cp_not_acked(struct run *r, const char *what, int rc);
/* cp_reg_at -- the register of key k at off in region, of 100 + k bytes */
struct proto_reg cp_reg_at(int k, uint32_t region, uint64_t off);
/* cp_register -- REGISTER regs[0..n), of keys k[0..n), under session s
 * (pinned if pin); the model keeps each acknowledged one. */
void cp_register(struct run *r, int s, const int *k,
    const struct proto_reg *regs, uint32_t n, bool pin);
/* cp_region -- REGION_ALLOC of len bytes in pages of ps into *loc;
 * true if acknowledged (the model then has s own it). */
bool cp_region(struct run *r, int s, struct proto_loc *loc, uint64_t len,
    uint64_t ps);

/* ---- eviction steps (crashpoints_evict.c) ------------------------------- */

/* cp_region_orphan -- REGION_ALLOC of 2 MiB with no extent free: the
 * server empties the orphan region rb1 (ended session B's, holding b2
 * alone) and grants its extent. */
void cp_region_orphan(struct run *r, int s, struct proto_loc *loc);
/* cp_reclaim -- RECLAIM of want pages of BIG bytes with no extent free
 * and no orphan left: the server evicts keys of s's own regions and names
 * their pages (into r->back). */
void cp_reclaim(struct run *r, int s, uint32_t want);
/* cp_register_back -- key k at the first page RECLAIM gave back: free
 * again, so it must be taken (a page still held answers CXLP_E_BUSY). */
void cp_register_back(struct run *r, int s, int k);

#endif /* CXLP_TEST_CRASHPOINTS_H */
