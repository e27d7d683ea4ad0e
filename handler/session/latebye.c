/*
 * latebye.c -- BYEs that could not be delivered, sent again at the
 * process's next connect to the same metaserver.
 *
 * cxlp_close unmaps a handler's regions, then sends its BYE once. When
 * the metaserver is away at that moment the BYE fails, and the server
 * keeps the session: it cannot tell a handler that closed from one that
 * is only silent (which may still write into its regions), so it holds
 * the session's regions out of use until the process exits
 * (metaserver/silence.c). An engine that closes and connects again
 * during an outage, as cxlpool.h advises after CXLP_E_SESSION, would
 * collect such sessions, each with a region and a slot of its process's
 * session bound.
 *
 * So the handler remembers the session (url, id, token) of every BYE
 * that went unanswered, process-wide, and the next cxlp_connect to the
 * same URL sends those BYEs before its HELLO, on its own connection,
 * which no other thread uses yet. That is truthful: their regions were
 * unmapped before the first BYE. A BYE that is answered (or refused, e.g.
 * CXLP_E_SESSION: the server no longer knows the session) is forgotten;
 * one that fails again is kept for a later connect, and the first
 * failure stops the round (the server is still away), so a connect
 * during an outage waits at most one extra timeout. At most LATEBYE_MAX
 * are kept; the oldest goes first, and the server's silence rule still
 * ends it.
 */
#include <pthread.h>
#include <string.h>

#include "err.h"
#include "session.h"
#include "log.h"

#define LATEBYE_MAX 64

struct latebye {
	char url[CFG_SERVER_MAX];
	uint64_t session, token;
};

static pthread_mutex_t lb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct latebye lb[LATEBYE_MAX]; /* oldest first */
static unsigned lb_n;

/* latebye_add -- see session.h */
void
latebye_add(const char *url, uint64_t session, uint64_t token)
{
	pthread_mutex_lock(&lb_lock);
	if (lb_n == LATEBYE_MAX) {
		memmove(&lb[0], &lb[1], (LATEBYE_MAX - 1) * sizeof(lb[0]));
		lb_n--;
	}
	strncpy(lb[lb_n].url, url, sizeof(lb[lb_n].url) - 1);
	lb[lb_n].url[sizeof(lb[lb_n].url) - 1] = '\0';
	lb[lb_n].session = session;
	lb[lb_n].token = token;
	lb_n++;
	pthread_mutex_unlock(&lb_lock);
	log_info("BYE of session %llu kept, to be sent at the next connect",
	    (unsigned long long)session);
}

/* Take out the kept BYEs for url into out[]; returns how many. */
static unsigned
take(const char *url, struct latebye *out)
{
	unsigned n = 0, kept = 0;

	pthread_mutex_lock(&lb_lock);
	for (unsigned i = 0; i < lb_n; i++) {
		if (strcmp(lb[i].url, url) == 0) {
			out[n++] = lb[i];
		} else {
			lb[kept++] = lb[i];
		}
	}
	lb_n = kept;
	pthread_mutex_unlock(&lb_lock);
	return n;
}

/* latebye_atfork_child -- see session.h */
void
latebye_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	lb_lock = fresh;
	lb_n = 0;
}

/* latebye_unanswered -- see session.h */
bool
latebye_unanswered(int rc)
{
	return rc == CXLP_E_TIMEOUT || rc == CXLP_E_CONN;
}

/* One BYE for b over h's connection: 0 when it is done with (answered,
 * or refused: the server does not know the session), else the failure. */
static int
send_one(struct cxlp_handler *h, const struct latebye *b)
{
	struct creply rep;
	int rc;

	client_set_session(h->cl, b->session, b->token);
	rc = client_call_once(h->cl, PROTO_OP_BYE, NULL, &rep);
	if (rc == 0) {
		client_reply_fini(&rep);
	}
	log_info("late BYE of session %llu: %s", (unsigned long long)b->session,
	    rc == 0 ? "done" : cxlp_strerror(rc));
	return latebye_unanswered(rc) ? rc : 0;
}

/* latebye_send -- see session.h */
void
latebye_send(struct cxlp_handler *h)
{
	struct latebye pending[LATEBYE_MAX];
	unsigned n = take(h->cfg.server, pending);
	bool away = false;

	for (unsigned i = 0; i < n; i++) {
		if (away || send_one(h, &pending[i]) != 0) {
			away = true;
			latebye_add(pending[i].url, pending[i].session,
			    pending[i].token);
		}
	}
	client_set_session(h->cl, 0, 0);
	cxlp_errmsg_clear();
}
