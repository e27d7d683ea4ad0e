/*
 * cmd_stats.c -- `pool-inspect stats --server URL [--json]`: a running
 * metaserver's stats and sessions, live. Opens a session (HELLO), asks
 * STATS and SESSIONS, ends it (BYE), over one nng REQ socket with nng's
 * own resend turned off (the tool never retries: a lost reply is reported,
 * not repeated). The only file of pool-inspect that includes nng.
 *
 * The session count the server reports includes this tool's own session;
 * the session list leaves it out (it is only the tool looking). The list
 * is copied out of the reply frame before BYE, which frees the frame.
 * `pool-inspect sessions POOL` lists the pool's table without a server.
 *
 * The election (issue 28): the server's role, and the pool's term,
 * leader and last takeover when the pool the server names can be read
 * here (this host maps it); with --elect, the leader and standbys as
 * etcd has them (election.c). The role is "leader" when the owner
 * record has a term (an elected server), "single" otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "cxlpool.h"
#include "err.h"
#include "inspect.h"
#include "owner.h"
#include "pool.h"
#include "proto.h"

static const char *const stat_names[PROTO_STAT_COUNT] = {
	[PROTO_STAT_POOL_BYTES] = "pool_bytes",
	[PROTO_STAT_DATA_BYTES] = "data_bytes",
	[PROTO_STAT_FREE_BYTES] = "free_bytes",
	[PROTO_STAT_REGIONS] = "regions",
	[PROTO_STAT_ORPHAN_REGIONS] = "orphan_regions",
	[PROTO_STAT_KEYS] = "keys",
	[PROTO_STAT_VALUE_BYTES] = "value_bytes",
	[PROTO_STAT_SESSIONS] = "sessions",
	[PROTO_STAT_PINS] = "pins",
	[PROTO_STAT_INDEX_SLOTS] = "index_slots",
	[PROTO_STAT_LARGEST_FREE] = "largest_free_bytes",
	[PROTO_STAT_EVICT_PRESSURE] = "evicted_keys_pressure",
	[PROTO_STAT_EVICT_WATERMARK] = "evicted_keys_watermark",
	[PROTO_STAT_EVICT_ORPHAN] = "evicted_keys_orphan",
	[PROTO_STAT_EVICT_BYTES] = "evicted_bytes",
	[PROTO_STAT_EVICT_SWEEPS] = "evict_clock_sweeps",
	[PROTO_STAT_LEASES] = "leases",
	[PROTO_STAT_LEASE_EXPIRED] = "lease_expiries",
	[PROTO_STAT_LOOKUP_FOUND] = "lookup_keys_found",
	[PROTO_STAT_LOOKUP_MISSING] = "lookup_keys_missing",
};

/* which stats are bytes (shown with units in text) */
static const bool stat_bytes[PROTO_STAT_COUNT] = {
	[PROTO_STAT_POOL_BYTES] = true,
	[PROTO_STAT_DATA_BYTES] = true,
	[PROTO_STAT_FREE_BYTES] = true,
	[PROTO_STAT_LARGEST_FREE] = true,
	[PROTO_STAT_EVICT_BYTES] = true,
	[PROTO_STAT_VALUE_BYTES] = true,
};

/* pipe_up: signalled when the socket's first connection is up */
struct pipe_up {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool up;
};

struct conn {
	nng_socket sock;
	struct pipe_up up; /* its pipe callback's, until the socket closes */
	uint64_t next_id;
	uint64_t session, token;
	void *frame;  /* last reply, nng-allocated */
	size_t flen;
};

/* one listed session, its host copied out of the frame */
struct live_sess {
	struct proto_session_info i; /* i.host unused: see host */
	char host[PROTO_HOST_MAX];
};

struct live {
	char path[PROTO_PATH_MAX + 1];
	uint64_t pool_size, align;
	uint64_t v[PROTO_STATS_MAX];
	uint32_t n;
	struct live_sess *sess; /* malloc'd; without this tool's session */
	uint32_t nsess;
	int sess_rc;            /* 0, or why SESSIONS failed (sess_msg) */
	char sess_msg[256];
};

static void
on_pipe(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct pipe_up *u = arg;

	(void)p, (void)ev;
	pthread_mutex_lock(&u->lock);
	u->up = true;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

/* Dial url on c's socket, waiting at most timeout_ms for the
 * connection. An ipc:// dial is made at once (it fails at once when
 * nobody listens); any other in the background, so that a host that
 * drops the packets costs timeout_ms, not the kernel's connect timeout.
 * c->up stays the callback's until the socket is closed. */
static int
dial_within(struct conn *c, const char *url, unsigned timeout_ms)
{
	struct pipe_up *u = &c->up;
	struct timespec until;
	int rv;

	if (strncmp(url, "ipc://", 6) == 0) {
		return nng_dial(c->sock, url, NULL, 0);
	}
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	u->up = false;
	if ((rv = nng_pipe_notify(c->sock, NNG_PIPE_EV_ADD_POST, on_pipe,
	    u)) != 0 || (rv = nng_dial(c->sock, url, NULL,
	    NNG_FLAG_NONBLOCK)) != 0) {
		return rv;
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&u->lock);
	while (!u->up && pthread_cond_timedwait(&u->cond, &u->lock,
	    &until) == 0) {
	}
	rv = u->up ? 0 : NNG_ETIMEDOUT;
	pthread_mutex_unlock(&u->lock);
	return rv;
}

static int
conn_open(struct conn *c, const char *url, unsigned timeout_ms)
{
	int rv;

	memset(c, 0, sizeof(*c));
	c->next_id = 1;
	if ((rv = nng_req0_open(&c->sock)) != 0) {
		return cxlp_fail(CXLP_E_CONN, "req socket: %s",
		    nng_strerror(rv));
	}
	if ((rv = nng_socket_set_ms(c->sock, NNG_OPT_REQ_RESENDTIME,
	    NNG_DURATION_INFINITE)) != 0 ||
	    (rv = nng_socket_set_ms(c->sock, NNG_OPT_RECVTIMEO,
	    (nng_duration)timeout_ms)) != 0 ||
	    (rv = nng_socket_set_ms(c->sock, NNG_OPT_SENDTIMEO,
	    (nng_duration)timeout_ms)) != 0 ||
	    (rv = nng_socket_set_size(c->sock, NNG_OPT_RECVMAXSZ,
	    PROTO_FRAME_MAX)) != 0 ||
	    (rv = dial_within(c, url, timeout_ms)) != 0) {
		nng_close(c->sock);
		return cxlp_fail(CXLP_E_CONN, "cannot reach %s: %s", url,
		    rv == NNG_ETIMEDOUT ? "no connection within --timeout-ms "
		    "(refused, or nothing answers there)" : nng_strerror(rv));
	}
	return 0;
}

static void
conn_close(struct conn *c)
{
	if (c->frame != NULL) {
		nng_free(c->frame, c->flen);
		c->frame = NULL;
	}
	nng_close(c->sock);
}

/* send op with body b; on 0, *body reads the reply's body */
static int
xact(struct conn *c, uint16_t op, struct pbuf *b, struct preader *body)
{
	struct proto_req_hdr h = { PROTO_VERSION, op, c->next_id++,
	    c->session, c->token, 0 };
	struct proto_rep_hdr rh;
	struct pbuf req;
	int rv, rc;

	pbuf_init(&req);
	proto_put_req_hdr(&req, &h);
	pbuf_put_bytes(&req, b->data, b->len);
	if (req.err != 0 || b->err != 0) {
		pbuf_fini(&req);
		return cxlp_fail(-ENOMEM, "out of memory");
	}
	if (c->frame != NULL) {
		nng_free(c->frame, c->flen);
		c->frame = NULL;
	}
	rv = nng_send(c->sock, req.data, req.len, 0);
	pbuf_fini(&req);
	if (rv != 0 || (rv = nng_recv(c->sock, &c->frame, &c->flen,
	    NNG_FLAG_ALLOC)) != 0) {
		return cxlp_fail(rv == NNG_ETIMEDOUT ? CXLP_E_TIMEOUT :
		    CXLP_E_CONN, "%s: %s", proto_op_name(op),
		    nng_strerror(rv));
	}
	if ((rc = proto_get_rep_hdr(c->frame, c->flen, &rh, body)) != 0) {
		return rc;
	}
	if (rh.op != op || rh.req_id != h.req_id) {
		return cxlp_fail(CXLP_E_PROTO, "%s: reply to another request",
		    proto_op_name(op));
	}
	if (rh.status != 0) {
		return cxlp_fail(rh.status, "%s refused: %s",
		    proto_op_name(op), cxlp_strerror(rh.status));
	}
	return 0;
}

static int
hello(struct conn *c, struct live *l)
{
	struct proto_hello m = { .pid = (uint32_t)getpid() };
	struct proto_welcome wel;
	struct preader body;
	char host[PROTO_HOST_MAX + 1] = "";
	struct pbuf b;
	int rc;

	gethostname(host, sizeof(host) - 1);
	m.host = host;
	m.host_len = (uint16_t)strlen(host);
	pbuf_init(&b);
	proto_put_hello(&b, &m);
	rc = xact(c, PROTO_OP_HELLO, &b, &body);
	pbuf_fini(&b);
	if (rc == 0 && (rc = proto_get_welcome(&body, &wel)) == 0) {
		c->session = wel.session;
		c->token = wel.token;
		l->pool_size = wel.pool_size;
		l->align = wel.align;
		memcpy(l->path, wel.path, wel.path_len);
		l->path[wel.path_len] = '\0';
	}
	return rc;
}

/* copy the decoded entries but c's own session into l->sess */
static int
keep_sessions(const struct conn *c, struct live *l,
    const struct proto_session_info *v, uint32_t n)
{
	l->sess = calloc(n + 1, sizeof(*l->sess));
	if (l->sess == NULL) {
		return cxlp_fail(-ENOMEM, "no memory for %u sessions", n);
	}
	for (uint32_t i = 0; i < n; i++) {
		struct live_sess *d = &l->sess[l->nsess];

		if (v[i].id == c->session) {
			continue;
		}
		d->i = v[i];
		d->i.host = NULL;
		memcpy(d->host, v[i].host, v[i].host_len);
		l->nsess++;
	}
	return 0;
}

/* SESSIONS; a failure is recorded in l (the stats still get printed) */
static void
sessions(struct conn *c, struct live *l, struct pbuf *none)
{
	struct proto_session_info *v = NULL;
	struct preader body;
	uint32_t n = 0;
	int rc = xact(c, PROTO_OP_SESSIONS, none, &body);

	if (rc == 0 && (rc = proto_get_sessions(&body, &v, &n)) == 0) {
		rc = keep_sessions(c, l, v, n);
	}
	if (rc != 0) {
		l->sess_rc = rc;
		snprintf(l->sess_msg, sizeof(l->sess_msg), "%s",
		    cxlp_errormsg());
	}
	free(v);
}

static int
query(const struct inspect_opts *o, struct live *l)
{
	struct preader body;
	struct pbuf none;
	struct conn c;
	int rc;

	if ((rc = conn_open(&c, o->server, o->timeout_ms)) != 0) {
		return rc;
	}
	pbuf_init(&none);
	if ((rc = hello(&c, l)) == 0) {
		rc = xact(&c, PROTO_OP_STATS, &none, &body);
		if (rc == 0) {
			rc = proto_get_stats(&body, l->v, PROTO_STATS_MAX,
			    &l->n);
		}
		if (rc == 0) {
			sessions(&c, l, &none);
		}
		/* end the session either way; its outcome does not matter */
		xact(&c, PROTO_OP_BYE, &none, &body);
	}
	pbuf_fini(&none);
	conn_close(&c);
	return rc;
}

static const char *
sess_state(uint32_t flags)
{
	if (flags & PROTO_SESS_FENCED) {
		return "fenced";
	}
	if (flags & PROTO_SESS_DETACHED) {
		return "detached";
	}
	return (flags & PROTO_SESS_ATTACHED) ? "attached" : "unbound";
}

/* stat_name -- see inspect.h */
const char *
stat_name(uint32_t i, char buf[STAT_NAME_LEN])
{
	const char *op;
	size_t k;

	if (i < PROTO_STAT_COUNT && stat_names[i] != NULL) {
		return stat_names[i];
	}
	if (i >= PROTO_STAT_REQUESTS && i < PROTO_STAT_COUNT) {
		op = proto_op_name(i - PROTO_STAT_REQUESTS + 1);
		k = (size_t)snprintf(buf, STAT_NAME_LEN, "requests_");
		for (; *op != '\0' && k + 1 < STAT_NAME_LEN; op++) {
			buf[k++] = (char)(*op >= 'A' && *op <= 'Z' ?
			    *op - 'A' + 'a' : *op);
		}
		buf[k] = '\0';
		return buf;
	}
	snprintf(buf, STAT_NAME_LEN, "stat_%u", i);
	return buf;
}

static void
print_text(const struct inspect_opts *o, const struct live *l)
{
	char a[FMT_SIZE_LEN], b[FMT_SIZE_LEN], name[STAT_NAME_LEN];

	printf("%-15s %s\n", "server", o->server);
	printf("%-15s %s (%s, align %s)\n", "pool", l->path,
	    fmt_size(a, l->pool_size), fmt_size(b, l->align));
	for (uint32_t i = 0; i < l->n; i++) {
		if (i < PROTO_STAT_COUNT && stat_bytes[i]) {
			printf("%-15s %s\n", stat_name(i, name),
			    fmt_size(a, l->v[i]));
		} else {
			printf("%-15s %" PRIu64 "%s\n", stat_name(i, name),
			    l->v[i], i == PROTO_STAT_SESSIONS ?
			    " (this one included)" : "");
		}
	}
}

static void
print_sessions_text(const struct live *l)
{
	char host[PROTO_HOST_MAX * 4 + 4];

	if (l->sess_rc != 0) {
		return;
	}
	if (l->nsess == 0) {
		printf("\nno sessions besides this one\n");
		return;
	}
	printf("\n%8s  %8s  %-24s  %18s  %-8s  %7s  %7s\n", "ID", "PID",
	    "HOST", "INSTANCE", "STATE", "REGIONS", "PINS");
	for (uint32_t i = 0; i < l->nsess; i++) {
		const struct live_sess *s = &l->sess[i];

		printf("%8" PRIu64 "  %8u  %-24s  %#18" PRIx64 "  %-8s  %7u  "
		    "%7u\n", s->i.id, s->i.pid, fmt_key(host, sizeof(host),
		    s->host, s->i.host_len, 24), s->i.instance,
		    sess_state(s->i.flags), s->i.regions, s->i.pins);
	}
	printf("%u session%s besides this one\n", l->nsess,
	    l->nsess == 1 ? "" : "s");
}

static void
print_sessions_json(struct jw *w, const struct live *l)
{
	if (l->sess_rc != 0) {
		return;
	}
	jw_arr(w, "sessions");
	for (uint32_t i = 0; i < l->nsess; i++) {
		const struct live_sess *s = &l->sess[i];

		jw_obj(w, NULL);
		jw_u64(w, "id", s->i.id);
		jw_u64(w, "pid", s->i.pid);
		jw_bytes(w, "host", s->host, s->i.host_len);
		jw_u64(w, "instance", s->i.instance);
		jw_u64(w, "start_time", s->i.start_time);
		jw_str(w, "state", sess_state(s->i.flags));
		jw_u64(w, "regions", s->i.regions);
		jw_u64(w, "pins", s->i.pins);
		jw_close(w);
	}
	jw_close(w);
}

static void election_json(struct jw *w, const struct live *l,
    const struct inspect_elect *el);

static void
print_json(const struct inspect_opts *o, const struct live *l,
    const struct inspect_elect *el)
{
	char name[STAT_NAME_LEN];
	struct jw w;

	jw_begin(&w, stdout, 0);
	jw_str(&w, "server", o->server);
	jw_str(&w, "pool", l->path);
	jw_u64(&w, "pool_size", l->pool_size);
	jw_u64(&w, "align", l->align);
	jw_obj(&w, "stats");
	for (uint32_t i = 0; i < l->n; i++) {
		jw_u64(&w, stat_name(i, name), l->v[i]);
	}
	jw_close(&w);
	print_sessions_json(&w, l);
	election_json(&w, l, el);
	jw_end(&w);
}

struct live_conn {
	struct conn c;
	struct live l;
};

/* live_open -- see inspect.h */
int
live_open(const struct inspect_opts *o, struct live_conn **out)
{
	struct live_conn *lc = calloc(1, sizeof(*lc));
	int rc;

	*out = NULL;
	if (lc == NULL) {
		return cxlp_fail(-ENOMEM, "out of memory");
	}
	if ((rc = conn_open(&lc->c, o->server, o->timeout_ms)) != 0) {
		free(lc);
		return rc;
	}
	if ((rc = hello(&lc->c, &lc->l)) != 0) {
		conn_close(&lc->c);
		free(lc);
		return rc;
	}
	*out = lc;
	return 0;
}

/* live_stats -- see inspect.h */
int
live_stats(struct live_conn *lc, uint64_t *v, uint32_t *n)
{
	struct preader body;
	struct pbuf none;
	int rc;

	pbuf_init(&none);
	rc = xact(&lc->c, PROTO_OP_STATS, &none, &body);
	if (rc == 0) {
		rc = proto_get_stats(&body, v, PROTO_STATS_MAX, n);
	}
	pbuf_fini(&none);
	return rc;
}

/* live_close -- see inspect.h */
void
live_close(struct live_conn *lc)
{
	struct preader body;
	struct pbuf none;

	if (lc == NULL) {
		return;
	}
	pbuf_init(&none);
	(void)xact(&lc->c, PROTO_OP_BYE, &none, &body);
	pbuf_fini(&none);
	conn_close(&lc->c);
	free(lc);
}

/* the pool's side of the election, if this host can read the pool */
static struct pool *
open_served(const struct live *l)
{
	struct pool *p = NULL;

	return pool_open(&p, l->path, POOL_RDONLY, NULL) == 0 ? p : NULL;
}

static void
election_text(const struct inspect_opts *o, const struct live *l,
    const struct inspect_elect *el)
{
	struct pool_owner ow;
	struct pool *p = open_served(l);

	printf("\n");
	if (p == NULL) {
		printf("%-15s %s cannot be read here (pool-inspect summary, on "
		    "a host that maps it, shows its term and last "
		    "takeover)\n", "election", l->path);
	} else {
		printf("%-15s %s\n", "role", pool_owner_get(p, &ow) == 0 &&
		    ow.term != 0 ? "leader (elected)" : "single (no election)");
		printf("%-15s %" PRIu64 "\n", "term", pool_term(p));
		inspect_owner_text(p);
		inspect_takeover_text(p);
		pool_close(&p);
	}
	(void)o;
	inspect_elect_text(el);
}

static void
election_json(struct jw *w, const struct live *l,
    const struct inspect_elect *el)
{
	struct pool *p = open_served(l);

	if (p != NULL) {
		jw_u64(w, "term", pool_term(p));
		inspect_owner_json(w, p);
		inspect_takeover_json(w, p);
		pool_close(&p);
	}
	inspect_elect_json(w, el);
}

/* cmd_stats -- see inspect.h */
int
cmd_stats(int argc, char **argv)
{
	static struct inspect_elect el;
	struct inspect_opts o;
	struct live l;
	int rc;

	if ((rc = inspect_args(argc, argv, OPT_SERVER | OPT_ELECT,
	    "--server URL [--timeout-ms MS] [--elect URL --elect-key K] "
	    "[--json]", &o)) != 0) {
		return rc;
	}
	memset(&el, 0, sizeof(el));
	if (o.elect != NULL && o.elect_key != NULL) {
		inspect_elect_read(o.elect, o.elect_key, &el);
	} else if (o.elect != NULL) {
		el.spec = o.elect;
		el.rc = -EINVAL;
		snprintf(el.why, sizeof(el.why), "give --elect-key "
		    "(/cxlpool/<pool uuid> by default: pool-inspect summary "
		    "POOL --elect URL finds it)");
	}
	memset(&l, 0, sizeof(l));
	if ((rc = query(&o, &l)) != 0) {
		fprintf(stderr, "pool-inspect: %s: %s (%s)\n", o.server,
		    cxlp_errormsg(), cxlp_strerror(rc));
		return 1;
	}
	if (o.json) {
		print_json(&o, &l, &el);
	} else {
		print_text(&o, &l);
		print_sessions_text(&l);
		election_text(&o, &l, &el);
	}
	free(l.sess);
	if (l.sess_rc != 0) {
		fprintf(stderr, "pool-inspect: %s: sessions: %s (%s)\n",
		    o.server, l.sess_msg, cxlp_strerror(l.sess_rc));
		return 1;
	}
	return 0;
}
