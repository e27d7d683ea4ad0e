/*
 * core.h -- the core: config, page table, scratch, doubt, trace, fork
 * generation and the keeper scheduler; under every layer, calling none.
 *
 * A file of handler/core/ includes this header, and through it those of the
 * layers below (handler_int.h draws them; tests/handler/check_layers.py
 * checks the rule).
 */
#ifndef CXLP_HANDLER_CORE_H
#define CXLP_HANDLER_CORE_H

#include "handler_int.h"

/* ---- config.c ----------------------------------------------------------- */

/* config_defaults -- fill *cfg with the documented defaults. */
void config_defaults(struct cxlp_config *cfg);
/* config_check -- 0 if cfg is usable for connect, else -EINVAL. */
int config_check(const struct cxlp_config *cfg);
/* config_secret_env -- cfg without a secret takes the one in the file
 * CXLP_SECRET_FILE names, if set (config.c note 2). 0, or -errno /
 * -EINVAL with the file named (cfg's secret left empty). */
int config_secret_env(struct cxlp_config *cfg);

/* ---- doubt.c ------------------------------------------------------------ */

/* doubt_taint -- the REGISTER of pages[0..n) may still land later (sent
 * more than once, or no answer): taint each (pagetab_taint), so that it
 * is quarantined instead of freed. page_lock held; pages in flight,
 * unresolved or registered. */
void doubt_taint(struct cxlp_handler *h, const cxlp_page_t pages[],
    size_t n);
/* doubt_note -- after pages may have gone QUARANTINED (page_lock held):
 * log at err level when the quarantined pages pass a quarter of the
 * handler's pages, and again at every doubling. */
void doubt_note(struct cxlp_handler *h);

/* ---- fork.c ------------------------------------------------------------- */

/* fork_gen_now -- how many forks this process is from the one that
 * loaded the library (0 there); one relaxed load. */
unsigned fork_gen_now(void);
/* fork_child_gen -- in a child of fork(): one generation more. */
void fork_child_gen(void);
/* h_forked -- h was connected before this process forked: in the child
 * it is closed (fork.c note 1). */
bool h_forked(const struct cxlp_handler *h);

/* ---- keeper.c ----------------------------------------------------------- */

/* keeper_init -- set up k, with no thread running. */
void keeper_init(struct keeper *k);
/* keeper_fini -- tear down k (its thread stopped, or never started). */
void keeper_fini(struct keeper *k);
/* keeper_start -- start the keeper thread: 0, or the error (the connect
 * fails: without it there is no keepalive). */
int keeper_start(struct cxlp_handler *h);
/* keeper_stop -- stop and join it; a no-op when none runs. */
void keeper_stop(struct cxlp_handler *h);
/* keeper_add -- append task t to k's table (before keeper_start);
 * returns its number, for keeper_poke. */
int keeper_add(struct keeper *k, const struct keeper_task *t);
/* keeper_poke -- have the keeper run task soon: true; false when no
 * keeper thread runs (or task < 0), and the caller decides (run it
 * itself, or leave it to the next that needs it). Caller holds none of
 * h's locks. */
bool keeper_poke(struct cxlp_handler *h, int task);

#endif /* CXLP_HANDLER_CORE_H */
