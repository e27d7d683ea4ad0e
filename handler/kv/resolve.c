/*
 * resolve.c -- pages whose REGISTER outcome was lost (store.c parks them
 * UNRESOLVED, with their keys in h->store.unres): resolve_run registers
 * them again and settles each from the answer; a delete of such a key
 * takes its entry away (pagelife_forget).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "kv.h"
#include "log.h"

/* resolve_push -- see kv.h. Without memory the entry is
 * dropped and its page stays UNRESOLVED for good: kept, never freed. */
void
resolve_push(struct cxlp_handler *h, const struct unresolved *u)
{
	if (h->store.nunres == h->store.cap_unres) {
		size_t cap = h->store.cap_unres ? h->store.cap_unres * 2 : 16;
		void *p = realloc(h->store.unres, cap * sizeof(*u));

		if (p == NULL) {
			log_err("store: no memory to remember page %#llx: "
			    "kept unresolved", (unsigned long long)u->page);
			free(u->key);
			return;
		}
		h->store.unres = p;
		h->store.cap_unres = cap;
	}
	h->store.unres[h->store.nunres++] = *u;
}

/* Take up to CXLP_BATCH_MAX unresolved entries off h->store.unres (page_lock
 * held); returns how many were moved to *out (caller frees). */
static size_t
unres_take(struct cxlp_handler *h, struct unresolved **out)
{
	size_t n = h->store.nunres < CXLP_BATCH_MAX ? h->store.nunres : CXLP_BATCH_MAX;

	*out = NULL;
	if (n == 0) {
		return 0;
	}
	*out = malloc(n * sizeof(**out));
	if (*out == NULL) {
		return 0;
	}
	h->store.nunres -= n;
	memcpy(*out, h->store.unres + h->store.nunres, n * sizeof(**out));
	return n;
}

/* Settle one page from its REGISTER result (page_lock held). Returns true
 * when settled, false to keep it unresolved. */
static bool
unres_settle(struct cxlp_handler *h, const struct unresolved *u,
    const struct proto_result *r)
{
	cxlp_page_t at;
	bool here;
	int rc;

	if (r->status == CXLP_E_SESSION || r->status == CXLP_E_PROTO) {
		return false; /* not an answer about this key: try again */
	}
	here = r->status == 0 && owntab_page_of(h, &r->loc, &at) == 0 &&
	    at == u->page;
	rc = pagetab_move(&h->pages, u->page, PAGE_UNRESOLVED,
	    here ? PAGE_REGISTERED : PAGE_FREE); /* tainted: not FREE */
	cxlp_assert(rc == 0);
	log_info("store: page %#llx resolved %s", (unsigned long long)u->page,
	    here ? "registered" : "not here (quarantined)");
	return true;
}

static int
unres_register(struct cxlp_handler *h, struct unresolved *u, size_t n,
    struct proto_result *res)
{
	struct proto_reg *regs = calloc(n, sizeof(*regs));
	struct creply rep;
	struct pbuf body;
	uint32_t got;
	int rc;

	if (regs == NULL) {
		return cxlp_fail(-ENOMEM, "store: out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		regs[i] = (struct proto_reg){ { u[i].key, u[i].key_len },
			u[i].region, u[i].off, u[i].len };
	}
	pbuf_init(&body);
	proto_put_regs(&body, 0, n, regs);
	rc = h_call(h, PROTO_OP_REGISTER, &body, &rep);
	pbuf_fini(&body);
	if (rc == 0) {
		rc = h_get_results(&rep, res, n, true, &got);
		client_reply_fini(&rep);
	}
	free(regs);
	return rc;
}

/* resolve_run -- settle pages whose register outcome was lost, with one
 * REGISTER of them again. Returns 0 (nothing left, or progress made) or
 * the REGISTER's error (entries kept for the next try).
 *
 * The REGISTER here has a new request id; the lost one may still land
 * later, after the server forgot its id (restart, reply-cache eviction),
 * and would bind the key to its page if the key was deleted meanwhile.
 * Its pages were tainted when parked, so none of them is ever freed
 * again while the handler lives: a late copy finds the key's own bytes
 * (doubt.c, the design note of issue 15, item 5). It holds the reclaim
 * gate exclusive while it registers and settles (reclaim.c note 2). */
int
resolve_run(struct cxlp_handler *h)
{
	struct proto_result *res = NULL;
	struct unresolved *u;
	size_t n;
	int rc;

	pthread_mutex_lock(&h->page_lock);
	n = unres_take(h, &u);
	pthread_mutex_unlock(&h->page_lock);
	if (n == 0) {
		return 0;
	}
	res = calloc(n, sizeof(*res));
	reclaim_gate_lock(h); /* no eviction of mine lands meanwhile */
	rc = res == NULL ? -ENOMEM : unres_register(h, u, n, res);
	pthread_mutex_lock(&h->page_lock);
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && unres_settle(h, &u[i], &res[i])) {
			free(u[i].key);
		} else {
			resolve_push(h, &u[i]);
		}
	}
	pthread_mutex_unlock(&h->page_lock);
	reclaim_gate_unlock(h);
	free(res);
	free(u);
	return rc;
}

/* resolve_fini -- forget unresolved entries (at close). */
void
resolve_fini(struct cxlp_handler *h)
{
	for (size_t i = 0; i < h->store.nunres; i++) {
		free(h->store.unres[i].key);
	}
	free(h->store.unres);
	h->store.unres = NULL;
	h->store.nunres = h->store.cap_unres = 0;
}
