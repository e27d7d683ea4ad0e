/*
 * etcd_fixture.h -- etcd-server members started by a test on free
 * loopback ports, each with a temporary data directory, and killed at
 * the end. A test calls etcdfx_skip_unless_present() first: without the
 * etcd binary (Debian's etcd-server; $CXLP_ETCD overrides the path) it
 * is skipped with a message.
 */
#ifndef CXLP_ETCD_FIXTURE_H
#define CXLP_ETCD_FIXTURE_H

#include <stdbool.h>
#include <sys/types.h>

#define ETCDFX_MAX 3

struct etcdfx {
	unsigned n;
	char dir[256];               /* holds every member's data dir */
	int client_port[ETCDFX_MAX];
	int peer_port[ETCDFX_MAX];
	pid_t pid[ETCDFX_MAX];       /* 0: stopped */
	char spec[256];              /* etcd://127.0.0.1:P[,...] */
};

/* etcdfx_skip_unless_present -- cr_skip_test when etcd is missing. */
void etcdfx_skip_unless_present(void);
/* etcdfx_start -- a cluster of n members; returns when it answers
 * (asserts on failure). */
void etcdfx_start(struct etcdfx *fx, unsigned n);
/* etcdfx_kill -- SIGKILL member i and reap it. */
void etcdfx_kill(struct etcdfx *fx, unsigned i);
/* etcdfx_restart -- start member i again on its ports and data. */
void etcdfx_restart(struct etcdfx *fx, unsigned i);
/* etcdfx_wait_ready -- until the cluster answers a read (asserts). */
void etcdfx_wait_ready(struct etcdfx *fx);
/* etcdfx_stop -- kill every member, remove the data. */
void etcdfx_stop(struct etcdfx *fx);

#endif
