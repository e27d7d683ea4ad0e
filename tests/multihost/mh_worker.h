/*
 * mh_worker.h -- what the files of mh-worker share (mh_worker.c: main,
 * writer, reader; mh_worker_roles.c: the other roles of mh.h but the
 * follower, mh_worker_follow.c's).
 */
#ifndef CXLP_MH_WORKER_H
#define CXLP_MH_WORKER_H

#include <stdbool.h>

#include "cxlpool.h"
#include "mh.h"

/* mh_connect -- a handler on url with the given geometry, direct reads
 * on or off, a 2 s timeout and 15 retries; NULL (reason on stderr). */
struct cxlp_handler *mh_connect(const char *url, size_t page,
    size_t region, bool direct);
/* mh_connect_pool -- mh_connect with the pool's path (NULL: none), whose
 * owner record then names the leader (cxlp_config_set_pool). */
struct cxlp_handler *mh_connect_pool(const char *url, const char *pool,
    size_t page, size_t region, bool direct);
/* mh_ready_go -- write MH_READY, wait for the go byte: 0, or -1. */
int mh_ready_go(void);
/* mh_stdin_said -- a byte (or EOF) is waiting on stdin: read it, true. */
bool mh_stdin_said(void);
/* mh_put_u32 -- write v to stdout: 0, or -1. */
int mh_put_u32(uint32_t v);

/* The roles of mh_worker_roles.c (mh.h). */
int mh_group_writer(const char *url, const char *arg);
int mh_churn(const char *url, const char *arg);
int mh_hot_reader(const char *url, const char *arg);
int mh_connect_only(const char *url, const char *arg);
int mh_rewrite(const char *url, const char *arg);
/* The role of mh_worker_follow.c (mh.h). */
int mh_follower(const char *url, const char *arg);

#endif /* CXLP_MH_WORKER_H */
