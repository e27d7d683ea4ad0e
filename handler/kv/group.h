/*
 * group.h -- what group.c (open, alloc, batches) and group_end.c
 * (commit, rollback, close) share: the handle of a request group.
 */
#ifndef CXLP_HANDLER_GROUP_H
#define CXLP_HANDLER_GROUP_H

#include "kv.h"

enum { G_OPEN, G_COMMITTED, G_ROLLED_BACK, G_UNKNOWN };

/* a staged entry whose page is no longer the group's to free */
#define PAGE_SETTLED UINT64_MAX

struct gkey {
	uint8_t *key;
	uint16_t len;
};

struct cxlp_group {
	uint8_t id[CXLP_GROUP_ID_MAX];
	uint16_t id_len;
	size_t total, count;
	unsigned flags;
	int state;
	struct cxlp_reservation *res;
	cxlp_page_t *staged; /* pages staged, in the server's order */
	struct gkey *skeys;  /* their keys (a commit whose answer was lost) */
	size_t nstaged, cap_staged, cap_skeys;
	struct gkey *pins;   /* keys the group pinned (note 4) */
	size_t npins, cap_pins;
};

/* group_end.c: the GROUP round trip */
/* group_call -- one GROUP command of g; the reply is the caller's. */
int group_call(struct cxlp_handler *h, struct cxlp_group *g, uint32_t cmd,
    struct creply *rep);
/* group_cmd -- a GROUP command whose reply has no body. */
int group_cmd(struct cxlp_handler *h, struct cxlp_group *g, uint32_t cmd);
/* group_check -- 0 if h is open and g open, else why not. */
int group_check(struct cxlp_handler *h, const struct cxlp_group *g);

/* group_end.c: how a group ends */
/* group_rollback -- note 4 of group.c: roll g back here, after the server
 * did (server_done) or by asking it to; lost (the server no longer knows
 * g): release its pins too. Returns CXLP_E_CANCELED with why. */
int group_rollback(struct cxlp_handler *h, struct cxlp_group *g,
    bool server_done, bool lost, const char *why);
/* group_failed -- a group request failed with rc: roll back as rc says. */
int group_failed(struct cxlp_handler *h, struct cxlp_group *g, int rc);
void group_forget_pins(struct cxlp_group *g);
/* group_forget_staged -- drop the staged entries (their pages settled). */
void group_forget_staged(struct cxlp_group *g);
void group_release_reservation(struct cxlp_handler *h, struct cxlp_group *g);

#endif /* CXLP_HANDLER_GROUP_H */
