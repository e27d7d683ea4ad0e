/*
 * crashpt.h -- test-only crash points at the pool's metadata persists.
 *
 * Every write to the metadata area but the owner record's (owner_hold.c
 * note 4) reaches media through one of two calls in persist.c: pool_persist_cb
 * (a range, after plain stores) and pool_store8 (one aligned 8-byte
 * publish). Each is a numbered persist point. Built with meson option
 * test_hooks (crashpt.c), the process can be made to die at its k-th
 * point, as kill -9 or a power cut would leave the media:
 *
 *   CXLP_CRASH_AT=k     die at point k (1-based), by SIGKILL;
 *   CXLP_CRASH_MODE=    "kill" (default): the stores before the point are
 *                       all visible, as after kill -9;
 *                       "tear": the last stores did not all reach media,
 *                       as after a power cut: a publish (store8) is not
 *                       made, and the second half of a range is garbled;
 *   CXLP_CRASH_COUNT=f  write the number of points passed to file f at
 *                       exit (to size a crash-point sweep).
 *   CXLP_CRASH_COMMIT=k die at the k-th point passed inside a request
 *                       group's commit or the recovery of one (the
 *                       points between crashpt_scope(true) and (false):
 *                       pool/kv.c note 2), counting those only;
 *   CXLP_COMMIT_PAUSE_US=u  sleep u us after each key a request group's
 *                       commit inserts and after each it publishes
 *                       (crashpt_commit_pause): a commit long enough for
 *                       a test's reader to meet it.
 *   CXLP_PIPE_ADD_PAUSE_US=u  the metaserver sleeps u us in its pipe-add
 *                       callback before it records the pipe
 *                       (crashpt_pipe_pause): a window for a peer's first
 *                       request to meet a pipe not yet recorded.
 * And a test in the process can record every persist as it completes
 * (crashpt_set_recorder): which bytes were durable when a page was
 * handed out again (contract 9) is read from that record.
 * Without test_hooks (crashpt_none.c) every call is empty.
 */
#ifndef CXLP_POOL_CRASHPT_H
#define CXLP_POOL_CRASHPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* crashpt_range -- point: [addr, addr + len) is about to be persisted. */
void crashpt_range(void *addr, size_t len);
/* crashpt_store8 -- point: v is about to be stored at dst and persisted. */
void crashpt_store8(uint64_t *dst, uint64_t v);

/* crashpt_persisted -- [addr, addr + len) was just persisted (by
 * pool_persist_cb or pool_store8): the recorder, if any, is told. */
void crashpt_persisted(const void *addr, size_t len);
/* crashpt_set_recorder -- test-only: after each persist of the pool's
 * metadata in this process, fn(arg, addr, len) is called, under the
 * writer's exclusion (pool.h); fn NULL stops it. Returns false when the
 * hooks are compiled out (the test should skip). */
bool crashpt_set_recorder(void (*fn)(void *arg, const void *addr,
    size_t len), void *arg);

/* crashpt_commit_pause -- a commit inserted or published one key (kv.c). */
void crashpt_commit_pause(void);
/* crashpt_pipe_pause -- the metaserver is about to record a new pipe. */
void crashpt_pipe_pause(void);
/* crashpt_scope -- the points from now on are (on) or are not (off) a
 * commit's or its recovery's, for CXLP_CRASH_COMMIT. */
void crashpt_scope(int on);

#endif /* CXLP_POOL_CRASHPT_H */
