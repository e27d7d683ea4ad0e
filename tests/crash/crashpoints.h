/*
 * crashpoints.h -- what the two halves of the crash-point sweep share
 * (test_crashpoints.c: the watcher, the runs and the verification;
 * crashpoints_workload.c: the script of raw requests and the model it
 * keeps): the model of what the server acknowledged, one run's state,
 * and the server and crash flags the watcher thread sets.
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
#define NKEYS 13

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
	struct proto_loc ra1, ra2, rb1;
	struct model m;
	bool before;  /* crashed, when the current op began */
	bool stop;    /* the op in flight at the crash is done */
	int failed;   /* an op that must succeed did not */
};

/* the metaserver under test; a crashed one is restarted by the watcher */
extern struct test_server cp_srv;
extern atomic_bool cp_crashed;   /* the server died during this run */
extern atomic_bool cp_restarted; /* ... and the watcher restarted it */

/* cp_workload -- run the script against cp_srv on the two clients,
 * stopping after the op in flight at a crash; r is reset first. */
void cp_workload(struct run *r);
/* cp_clients_close -- on a freshly restarted cp_srv: new sessions on
 * both clients (so neither socket is redialing), then close them. */
void cp_clients_close(void);

#endif /* CXLP_TEST_CRASHPOINTS_H */
