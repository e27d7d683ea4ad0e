/*
 * server.c -- the metaserver's sockets: the only file that includes nng.
 *
 * One rep0 socket listens on every URL given. Several workers, each with
 * its own nng_ctx, loop recv -> ms_dispatch -> send, so requests are
 * handled concurrently (the pool lock in ms_dispatch decides what really
 * runs in parallel). Pipe events tell the session layer when a connection
 * comes (with the ipc peer's pid) and goes; they arrive on nng's threads,
 * and the session layer locks. A reaper thread ends detached sessions
 * whose grace period is over.
 *
 * Each worker is a thread of ours that waits for its own recv and send
 * aios, which have no callbacks: a completion wakes the worker directly
 * instead of queueing a callback on nng's task threads, which would wake
 * a task thread first (measured: the callback state machine cost about
 * 25% more server CPU per request at batch 256; bench/README.md). A
 * worker never waits for nng while holding a lock of ours.
 *
 * TLS: tls+tcp:// listeners share one server TLS config, and the reaper
 * logs the handshakes nng saw fail (tls.c).
 *
 * Access: ipc sockets are created 0600, so only their owner connects. A
 * peer on any other transport must open its session with the shared
 * secret (--secret-file): worker_serve asks ms_hello_admit before a HELLO
 * from such a pipe reaches the dispatcher, so a refused peer creates
 * nothing. The transport is read from the pipe's own address for each
 * message, which no pipe event can race.
 *
 * Pipes: a pipe is recorded (ms_pipe_added: its peer's pid and start
 * time) at NNG_PIPE_EV_ADD_PRE, which nng 1.5.2 runs before the protocol
 * starts the pipe (nni_listener_add_pipe: ADD_PRE, then pipe_start, then
 * ADD_POST), so no request of it reaches a worker before its peer is
 * known. At ADD_POST a HELLO could come first and be taken on its own
 * claim of pid and start time (hello.c hello_ident). A pipe that cannot
 * be recorded is closed there, before it serves anything.
 *
 * Signals: SIGINT and SIGTERM are blocked in every thread (the mask is set
 * before nng starts any) and taken synchronously by sigwait in the main
 * thread, which then stops the workers (closing their contexts), closes
 * the socket, stops the reaper, and closes the pool. If nng does not close the socket within
 * CLOSE_DEADLINE_S (an nng 1.5.2 hang: sock_close_within), the process
 * still stops the reaper and waits for the workers, then exits without
 * waiting for nng (server_stop).
 *
 * NNG_FINI: the server never calls nng_fini. In nng 1.5.2 a tls+tcp://
 * listener outlives its close: the TLS connection of its pending accept
 * and each pipe still negotiating are freed by callbacks on nng's task
 * threads that nothing waits for, and they then queue more work for
 * nng's reaper. nng_fini drained the reaper before those ran, freed the
 * aio expire queues, and the late callback locked a freed mutex: "panic:
 * pthread_mutex_lock: Invalid argument", exit status 134 at SIGTERM
 * (about 1 stop in 60 with busy handlers and a peer mid-handshake;
 * tests/metaserver/test_server.c, sigterm_of_a_tls_server_exits_0).
 * deps/nng/tls-conn-freed-before-accept-ends.patch fixes the accept's
 * case; the negotiating pipes' case is nng's design, so the process
 * exits without nng_fini and the kernel ends those threads.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#include "crashpt.h"
#include "deadline.h"
#include "elect.h"
#include "err.h"
#include "log.h"
#include "ms_int.h"
#include "ms_tls.h"

#define CLOSE_DEADLINE_S 3 /* for nng_close at shutdown: it takes ms */
/* The largest frame nng reads for us: frames past PROTO_FRAME_MAX up to
 * this get a CXLP_E_PROTO reply naming the limit (ms_dispatch); nng
 * drops the connection of a larger one without reading it, since
 * reading it would let any peer make the server allocate as much. */
#define RECV_MAX (2 * (size_t)PROTO_FRAME_MAX)
#define JOIN_DEADLINE_S 5   /* then for the workers */

struct worker {
	struct server *srv;
	nng_ctx ctx;
	nng_aio *recv, *send; /* no callbacks: worker_main waits for them */
	pthread_t thread;
	bool started;
	struct pbuf reply;
};

struct server {
	struct ms ms;
	nng_socket sock;
	struct worker w[MS_WORKERS_MAX];
	unsigned nworkers;
	pthread_t reaper;
	bool reaper_started;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stopping;
	bool sock_closed; /* nng_close returned (server_stop) */
	struct ms_http *http; /* --metrics (http.c), or NULL */
	struct ms_tls_watch tlsw; /* failed handshakes (tls.c); the reaper's */
};

/* A peer on this pipe is protected by file permissions (ipc) or lives in
 * this process (inproc); anything else, or a pipe whose address cannot be
 * read, is remote and must show the shared secret. */
static bool
pipe_is_local(nng_pipe pipe)
{
	nng_sockaddr sa;

	if (nng_pipe_get_addr(pipe, NNG_OPT_LOCADDR, &sa) != 0) {
		return false;
	}
	return sa.s_family == NNG_AF_IPC || sa.s_family == NNG_AF_INPROC;
}

/* Dispatch the received message and send the reply in the same msg;
 * returns when nng has taken the reply (or refused it). */
static void
worker_serve(struct worker *w, nng_msg *msg)
{
	nng_pipe pipe = nng_msg_get_pipe(msg);
	int id = nng_pipe_id(pipe);
	struct ms *ms = &w->srv->ms;
	int rc = 0;

	if (ms->secret_len > 0 && !pipe_is_local(pipe) &&
	    ms_hello_admit(ms, nng_msg_body(msg), nng_msg_len(msg),
	    &w->reply) != 0) {
		rc = w->reply.err; /* refused: the reply says so */
	} else {
		rc = ms_dispatch(ms, id > 0 ? (uint64_t)id : 0,
		    nng_msg_body(msg), nng_msg_len(msg), &w->reply);
	}

	nng_msg_clear(msg);
	nng_msg_header_clear(msg);
	if (rc != 0 || nng_msg_append(msg, w->reply.data, w->reply.len) != 0) {
		log_err("op=send rc=%d msg=\"cannot build a reply\"", -ENOMEM);
		nng_msg_free(msg);
		return;
	}
	nng_aio_set_msg(w->send, msg);
	nng_ctx_send(w->ctx, w->send);
	nng_aio_wait(w->send);
	if (nng_aio_result(w->send) != 0) {
		nng_msg_free(nng_aio_get_msg(w->send)); /* not sent: ours */
	}
}

/* A worker's life: serve requests until the socket closes. */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	for (;;) {
		int rv;

		nng_ctx_recv(w->ctx, w->recv);
		nng_aio_wait(w->recv);
		rv = nng_aio_result(w->recv);
		if (rv == NNG_ECLOSED || rv == NNG_ECANCELED) {
			return NULL; /* shutting down */
		}
		if (rv != 0) {
			log_err("op=recv rc=%d msg=\"%s\"", rv,
			    nng_strerror(rv));
			continue;
		}
		worker_serve(w, nng_aio_get_msg(w->recv));
	}
}

static void
pipe_cb(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct server *srv = arg;
	int id = nng_pipe_id(p);
	uint64_t pid = 0;

	if (id <= 0) {
		return;
	}
	if (ev == NNG_PIPE_EV_ADD_PRE) { /* before it can receive */
		if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_PID, &pid) != 0) {
			pid = 0; /* not ipc */
		}
		crashpt_pipe_pause();
		if (ms_pipe_added(&srv->ms, (uint64_t)id, pid) != 0) {
			nng_pipe_close(p); /* nng rejects it */
		}
	} else if (ev == NNG_PIPE_EV_REM_POST) {
		ms_pipe_removed(&srv->ms, (uint64_t)id, cxlp_now_ms());
	}
}

static void *
reaper_main(void *arg)
{
	struct server *srv = arg;
	uint64_t period = srv->ms.grace_ms / 4;

	/* often enough to see a dead peer soon, cheap enough to not matter */
	period = period < 20 ? 20 : period > 250 ? 250 : period;
	pthread_mutex_lock(&srv->stop_lock);
	while (!srv->stopping) {
		struct timespec ts = cxlp_deadline(CLOCK_REALTIME, period);
		bool term;

		pthread_cond_timedwait(&srv->stop_cond, &srv->stop_lock, &ts);
		pthread_mutex_unlock(&srv->stop_lock);
		term = ms_term_ok(&srv->ms); /* standby.c note 3 */
		if (term) {
			ms_reap(&srv->ms, cxlp_now_ms());
		}
		(void)ms_pool_watch(&srv->ms);
		if (term) {
			ms_leases_expire(&srv->ms);
			ms_evict_background(&srv->ms);
		}
		cxlp_log_flush(); /* counts of rate-limited lines */
		ms_tls_watch_poll(&srv->tlsw, cxlp_now_ms());
		pthread_mutex_lock(&srv->stop_lock);
	}
	pthread_mutex_unlock(&srv->stop_lock);
	return NULL;
}

static int
listen_one(struct server *srv, const char *url, nng_tls_config *tls)
{
	nng_listener l;
	int rv = nng_listener_create(&l, srv->sock, url);

	if (rv != 0) {
		return cxlp_fail(CXLP_E_CONN, "listen %s: %s", url,
		    nng_strerror(rv));
	}
	if (strncmp(url, "ipc://", 6) == 0) {
		rv = nng_listener_set_int(l, NNG_OPT_IPC_PERMISSIONS, 0600);
		if (rv != 0) {
			log_err("op=listen url=%s msg=\"cannot set ipc "
			    "permissions 0600: %s\"", url, nng_strerror(rv));
		}
	}
	if (ms_url_is_tls(url) && (rv = nng_listener_set_ptr(l,
	    NNG_OPT_TLS_CONFIG, tls)) != 0) {
		nng_listener_close(l);
		return cxlp_fail(CXLP_E_CONN, "listen %s: TLS config: %s", url,
		    nng_strerror(rv));
	}
	rv = nng_listener_start(l, 0);
	if (rv != 0) {
		nng_listener_close(l);
		return cxlp_fail(CXLP_E_CONN, "listen %s: %s", url,
		    nng_strerror(rv));
	}
	ms_tls_watch_add(&srv->tlsw, l, url);
	return 0;
}

/* Listen on every URL of cfg; TLS ones share one config (tls.c). */
static int
listen_all(struct server *srv, const struct ms_config *cfg)
{
	nng_tls_config *tls = NULL;
	int rc = 0;

	srv->tlsw.verify_peer = cfg->tls_verify_peer;
	for (unsigned i = 0; i < cfg->nurls && rc == 0; i++) {
		if (ms_url_is_tls(cfg->urls[i]) && tls == NULL) {
			rc = ms_tls_config_new(&tls, cfg);
		}
		if (rc == 0) {
			rc = listen_one(srv, cfg->urls[i], tls);
		}
	}
	if (tls != NULL) {
		nng_tls_config_free(tls); /* the listeners hold it */
	}
	return rc;
}

static int
socket_open(struct server *srv, const struct ms_config *cfg)
{
	int rv = nng_rep0_open(&srv->sock);

	if (rv != 0) {
		return cxlp_fail(CXLP_E_CONN, "rep0 socket: %s",
		    nng_strerror(rv));
	}
	if (nng_socket_set_size(srv->sock, NNG_OPT_RECVMAXSZ, RECV_MAX) != 0 ||
	    nng_pipe_notify(srv->sock, NNG_PIPE_EV_ADD_PRE, pipe_cb,
	    srv) != 0 ||
	    nng_pipe_notify(srv->sock, NNG_PIPE_EV_REM_POST, pipe_cb,
	    srv) != 0) {
		return cxlp_fail(CXLP_E_CONN, "cannot configure the socket");
	}
	return listen_all(srv, cfg);
}

static int
worker_init(struct server *srv, struct worker *w)
{
	int rv;

	w->srv = srv;
	pbuf_init(&w->reply);
	if ((rv = nng_aio_alloc(&w->recv, NULL, NULL)) != 0 ||
	    (rv = nng_aio_alloc(&w->send, NULL, NULL)) != 0) {
		return rv;
	}
	return nng_ctx_open(&w->ctx, srv->sock);
}

/* Start n workers, each on a thread of its own. */
static int
workers_start(struct server *srv, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct worker *w = &srv->w[i];
		int rv = worker_init(srv, w);

		srv->nworkers = i + 1;
		if (rv == 0) {
			rv = pthread_create(&w->thread, NULL, worker_main, w);
			w->started = rv == 0;
			rv = rv == 0 ? 0 : NNG_ENOMEM;
		}
		if (rv != 0) {
			return cxlp_fail(CXLP_E_CONN, "worker %u: %s", i,
			    nng_strerror(rv));
		}
	}
	log_info("op=start workers=%u", n);
	return 0;
}

static void
aio_free(nng_aio *aio)
{
	if (aio != NULL) {
		nng_aio_free(aio);
	}
}

/* After nng_close: every worker's wait ends with NNG_ECLOSED. */
static void
workers_stop(struct server *srv)
{
	for (unsigned i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->w[i];

		if (w->started) {
			pthread_join(w->thread, NULL);
		}
		aio_free(w->send);
		aio_free(w->recv);
		pbuf_fini(&w->reply);
		memset(w, 0, sizeof(*w));
	}
	srv->nworkers = 0;
}

static void
print_ready(const struct ms_config *cfg)
{
	fprintf(stderr, "cxlpool-metaserver: ready pool=%s listen=",
	    cfg->pool_path);
	for (unsigned i = 0; i < cfg->nurls; i++) {
		fprintf(stderr, "%s%s", i > 0 ? "," : "", cfg->urls[i]);
	}
	fprintf(stderr, "\n");
	fflush(stderr);
}

static int
wait_signal(void)
{
	sigset_t set;
	int sig = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	while (sigwait(&set, &sig) != 0) {
	}
	return sig;
}

static void
block_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Bring the server up: listen, workers, reaper. */
static int
server_start(struct server *srv, const struct ms_config *cfg)
{
	int rc = socket_open(srv, cfg);

	if (rc == 0) {
		rc = workers_start(srv, cfg->workers);
	}
	if (rc == 0 && pthread_create(&srv->reaper, NULL, reaper_main,
	    srv) != 0) {
		rc = cxlp_fail(-EAGAIN, "cannot start the reaper thread");
	}
	srv->reaper_started = rc == 0;
	return rc;
}

static void *
sock_closer_main(void *arg)
{
	struct server *srv = arg;

	nng_close(srv->sock);
	pthread_mutex_lock(&srv->stop_lock);
	srv->sock_closed = true;
	pthread_cond_broadcast(&srv->stop_cond);
	pthread_mutex_unlock(&srv->stop_lock);
	return NULL;
}

/* nng_close of the socket, waited for at most CLOSE_DEADLINE_S. nng 1.5.2
 * blocked in it for good when a pipe closed while one of its messages was
 * half read (seen in 1 of 6 SIGTERMs with three handlers sending):
 * deps/nng/pipe-close-during-transfer.patch fixes that one, and the
 * deadline stays as a net for any other (handler/net/client.c csock_retire
 * has the client side). Returns whether the close finished; if not, its
 * thread is left behind. */
static bool
sock_close_within(struct server *srv)
{
	struct timespec until;
	pthread_t t;
	bool closed;

	if (pthread_create(&t, NULL, sock_closer_main, srv) != 0) {
		nng_close(srv->sock);
		return true;
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += CLOSE_DEADLINE_S;
	pthread_mutex_lock(&srv->stop_lock);
	while (!srv->sock_closed && pthread_cond_timedwait(&srv->stop_cond,
	    &srv->stop_lock, &until) == 0) {
	}
	closed = srv->sock_closed;
	pthread_mutex_unlock(&srv->stop_lock);
	if (closed) {
		pthread_join(t, NULL);
	} else {
		pthread_detach(t);
	}
	return closed;
}

static void
reaper_stop(struct server *srv)
{
	if (srv->reaper_started) {
		pthread_mutex_lock(&srv->stop_lock);
		srv->stopping = true;
		pthread_cond_broadcast(&srv->stop_cond);
		pthread_mutex_unlock(&srv->stop_lock);
		pthread_join(srv->reaper, NULL);
		srv->reaper_started = false;
	}
}

/* Before the socket is closed: close every worker's context, which ends
 * its receive (a worker serving a request finishes it, and its reply is
 * refused), and wait up to JOIN_DEADLINE_S for the workers to end;
 * whether they all did. Closing the socket first let a worker in the
 * middle of a request send its reply on a context that nng freed with
 * the socket: nng 1.5.2 panicked ("pthread_mutex_lock: Invalid
 * argument", rep0_ctx_close on the socket's freed lock). */
static bool
workers_end(struct server *srv)
{
	struct timespec until;
	bool all = true;

	for (unsigned i = 0; i < srv->nworkers; i++) {
		if (srv->w[i].started) {
			nng_ctx_close(srv->w[i].ctx);
		}
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += JOIN_DEADLINE_S;
	for (unsigned i = 0; i < srv->nworkers; i++) {
		struct worker *w = &srv->w[i];

		if (w->started && pthread_timedjoin_np(w->thread, NULL,
		    &until) != 0) {
			all = false;
		}
		w->started = false;
	}
	return all;
}

/* Take the server down; safe after a partial server_start. Returns false
 * if nng kept the socket: its threads may still call pipe_cb, so the
 * caller must not free the server's state. Even then no change to the
 * pool is cut short: the workers were stopped first and the reaper is
 * stopped; the pool is consistent after every change, as after kill -9,
 * and is left mapped until exit. */
static bool
server_stop(struct server *srv)
{
	bool closed, joined;

	ms_sess_lock(&srv->ms);
	srv->ms.closing = true; /* pipe events stop detaching sessions */
	ms_sess_unlock(&srv->ms);
	ms_waitq_close(&srv->ms); /* no worker waits for room any more */
	joined = workers_end(srv);
	closed = sock_close_within(srv); /* /health says 503 meanwhile */
	reaper_stop(srv);
	if (closed && joined) {
		workers_stop(srv);
		ms_http_stop(&srv->http); /* no scrape reads the pool now; not
		                           * on the path below: its stop waits
		                           * for the nng thread that hangs */
		/* No nng_fini: the process exits with nng's threads still
		 * tearing down what nng_close left them (see NNG_FINI). No
		 * pipe callback runs after nng_close: nng removes a pipe from
		 * the socket, which nng_close waits for, after its last. */
		return true;
	}
	log_err("op=shutdown msg=\"nng did not close the socket in %d s "
	    "(nng 1.5.2 can hang there when a request arrives as its "
	    "connection closes); exiting without waiting for it\"",
	    CLOSE_DEADLINE_S);
	if (!joined) {
		log_err("op=shutdown msg=\"a worker is still running; the "
		    "pool is left as a kill -9 would leave it\"");
	}
	return false;
}

/* A leader that lost its term (standby.c note 4): stop serving, write
 * nothing more (no ms_fini: closing the pool clears the owner record),
 * resign what is left of the term. */
static int
serve_lost(struct server *srv, struct elect **e)
{
	(void)server_stop(srv);
	explicit_bzero(srv->ms.secret, sizeof(srv->ms.secret));
	log_err("op=shutdown role=deposed status=%d writebacks_refused=%llu "
	    "msg=\"metaserver lost its term: stopped serving, the pool left "
	    "as a kill -9 leaves it\"", MS_EXIT_LOST, (unsigned long long)
	    pool_writebacks_refused(srv->ms.pool));
	elect_stop(e);
	cxlp_log_flush_all();
	return MS_EXIT_LOST;
}

/* ms_serve -- open the pool, listen, serve until SIGINT/SIGTERM. Returns
 * the process exit status (0 clean, 1 on startup failure, MS_EXIT_LOST
 * after the election's term was lost). With --elect, a standby first
 * (standby.c). */
int
ms_serve(const struct ms_config *cfg)
{
	static struct server srv; /* large; one per process */
	struct elect *elect = NULL;
	uint8_t secret[PROTO_SECRET_MAX] = { 0 };
	uint16_t secret_len = 0;
	int rc;

	block_signals();
	cxlp_set_log_fn(NULL, NULL, cfg->log_level);
	if (cfg->secret_file != NULL &&
	    ms_secret_load(cfg->secret_file, secret, &secret_len) != 0) {
		fprintf(stderr, "cxlpool-metaserver: %s\n", cxlp_errormsg());
		return 1;
	}
	pthread_mutex_init(&srv.stop_lock, NULL);
	pthread_cond_init(&srv.stop_cond, NULL);
	if (cfg->elect != NULL && (rc = ms_standby_wait(cfg, &elect)) != 0) {
		if (rc < 0) {
			fprintf(stderr, "cxlpool-metaserver: %s\n",
			    cxlp_errormsg());
		}
		explicit_bzero(secret, sizeof(secret));
		return rc < 0 ? 1 : 0; /* 1: stopped while a standby */
	}
	rc = elect != NULL ? ms_init_elected(&srv.ms, cfg, elect) :
	    ms_init(&srv.ms, cfg);
	if (rc == 1 || rc == MS_EXIT_LOST) { /* elected, then stopped */
		elect_stop(&elect);
		explicit_bzero(secret, sizeof(secret));
		return rc == 1 ? 0 : MS_EXIT_LOST;
	}
	if (rc == -EBUSY) { /* another server has it; the message names it */
		fprintf(stderr, "cxlpool-metaserver: %s\n", cxlp_errormsg());
		explicit_bzero(secret, sizeof(secret));
		elect_stop(&elect);
		return 1;
	}
	if (rc != 0) {
		ms_notify_starting(cfg); /* no server here: an old file lies */
		fprintf(stderr, "cxlpool-metaserver: cannot open pool %s: "
		    "%s\n", cfg->pool_path, cxlp_errormsg());
		if (rc == CXLP_E_VERSION) {
			fprintf(stderr, "cxlpool-metaserver: the pool was "
			    "formatted by another layout version; --reformat "
			    "replaces it (its keys are lost)\n");
		}
		explicit_bzero(secret, sizeof(secret));
		elect_stop(&elect);
		return 1;
	}
	/* the pool is ours now: a ready file an earlier run on it left is
	 * not (one removed before could have been a running server's) */
	ms_notify_starting(cfg);
	memcpy(srv.ms.secret, secret, sizeof(secret));
	srv.ms.secret_len = secret_len;
	explicit_bzero(secret, sizeof(secret));
	rc = server_start(&srv, cfg);
	if (rc == 0 && cfg->metrics_url != NULL) {
		rc = ms_http_start(&srv.ms, cfg->metrics_url, &srv.http);
	}
	if (rc != 0) {
		fprintf(stderr, "cxlpool-metaserver: %s\n", cxlp_errormsg());
	} else {
		print_ready(cfg);
		ms_takeover_record(&srv.ms);
		(void)ms_notify_ready(cfg);
		log_info("op=shutdown signal=%d", wait_signal());
		ms_notify_stopping(cfg);
	}
	if (ms_term_lost(&srv.ms)) {
		return serve_lost(&srv, &elect);
	}
	if (server_stop(&srv)) {
		ms_fini(&srv.ms);
	}
	elect_stop(&elect); /* resign: after the owner record was cleared */
	cxlp_log_flush_all(); /* counts whose window had not ended */
	explicit_bzero(srv.ms.secret, sizeof(srv.ms.secret));
	return rc == 0 ? 0 : 1;
}
