/*
 * test_nng_tls_fini.c -- the tls+tcp:// accept of a closing listener and
 * nng_fini (deps/nng/tls-conn-freed-before-accept-ends.patch): every TLS
 * connection nng allocated is handed to nng's reaper before nng_fini
 * frees the aio expire queues the reaper's nni_aio_stop locks.
 *
 * nng 1.5.2's tls_conn_cb, on a failed accept (the listener closing),
 * finished the transport's accept aio and only then freed its
 * connection. Nothing waits for that callback once the accept aio is
 * done, so the listener's close, nng_close and nng_fini's drains of the
 * reaper could all end first: tls_reap then ran while nng_fini freed
 * the expire queues and the metaserver died at its SIGTERM with "panic:
 * pthread_mutex_lock: Invalid argument" (nni_aio_stop in tls_reap; 12 of
 * 3000 stops of an idle TLS metaserver; tests/integration/test_tls.c
 * failed 1 run in about 60).
 *
 * The race is made certain, not likely: the test links nng statically
 * and wraps three of its functions (-Wl,--wrap, tests/deps/meson.build).
 * A thread of nng that has just finished an aio with NNG_ECLOSED or
 * NNG_ECANCELED and then frees a stream (tls_conn_cb's order in 1.5.2)
 * is held there until nng_fini reaches nni_aio_sys_fini (or HOLD_S
 * passes); a free that comes after nni_aio_sys_fini has begun is the bug
 * (and is skipped, so that the test fails instead of crashing). With the
 * patch the free comes first and nng_fini waits for it: no free is late,
 * however slow the machine.
 *
 * A plain program, not a Criterion test: Criterion 2.4 talks to its
 * runner through nng, and this nng (linked into the executable, so
 * Criterion's calls reach it) is what the test tears down with nng_fini.
 * Exit status 0: passed; 1: failed, with the reason on stderr.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>

#define HOLD_S 5 /* the longest a hold waits for nng_fini */

/* nng's own, wrapped (-Wl,--wrap=...) */
void __real_nng_stream_free(void *s);
void __real_nni_aio_finish_error(void *aio, int rv);
void __real_nni_aio_sys_fini(void);
void __wrap_nng_stream_free(void *s);
void __wrap_nni_aio_finish_error(void *aio, int rv);
void __wrap_nni_aio_sys_fini(void);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static atomic_bool armed;     /* from the close on */
static bool aio_fini_begun;   /* nni_aio_sys_fini was entered */
static unsigned holding;      /* threads held in nng_stream_free */
static atomic_uint frees;     /* streams freed once armed */
static atomic_uint late;      /* ... of them after aio_fini_begun */

/* This thread's last finish of an aio failed it as closed/canceled. */
static _Thread_local bool finished_closed;

static struct timespec
in_s(int s)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += s;
	return t;
}

void
__wrap_nni_aio_finish_error(void *aio, int rv)
{
	__real_nni_aio_finish_error(aio, rv);
	finished_closed = armed && (rv == NNG_ECLOSED || rv == NNG_ECANCELED);
}

void
__wrap_nng_stream_free(void *s)
{
	bool hold = finished_closed, is_late;
	struct timespec until = in_s(HOLD_S);

	finished_closed = false;
	if (!armed || s == NULL) {
		__real_nng_stream_free(s);
		return;
	}
	atomic_fetch_add(&frees, 1);
	pthread_mutex_lock(&lock);
	if (hold) { /* the aio someone waits for is done: let them go on */
		holding++;
		while (!aio_fini_begun && pthread_cond_timedwait(&cond, &lock,
		    &until) == 0) {
		}
		holding--;
		pthread_cond_broadcast(&cond);
	}
	is_late = aio_fini_begun;
	pthread_mutex_unlock(&lock);
	if (is_late) {
		atomic_fetch_add(&late, 1); /* would crash: not freed */
		return;
	}
	__real_nng_stream_free(s);
}

void
__wrap_nni_aio_sys_fini(void)
{
	struct timespec until = in_s(HOLD_S);

	pthread_mutex_lock(&lock);
	aio_fini_begun = true;
	pthread_cond_broadcast(&cond);
	while (holding > 0 && pthread_cond_timedwait(&cond, &lock,
	    &until) == 0) {
	}
	pthread_mutex_unlock(&lock);
	__real_nni_aio_sys_fini();
}

static int
fail(const char *what, int rv)
{
	fprintf(stderr, "test_nng_tls_fini: %s: %s\n", what, nng_strerror(rv));
	return 1;
}

int
main(void)
{
	nng_socket s;
	int rv;

	if ((rv = nng_rep0_open(&s)) != 0) {
		return fail("nng_rep0_open", rv);
	}
	/* no certificate needed: nothing connects; the listener's pending
	 * accept already holds a TLS connection (tls_listener_accept) */
	if ((rv = nng_listen(s, "tls+tcp://127.0.0.1:0", NULL, 0)) != 0) {
		return fail("nng_listen tls+tcp://127.0.0.1:0", rv);
	}
	armed = true;
	if ((rv = nng_close(s)) != 0) {
		return fail("nng_close", rv);
	}
	nng_fini();
	if (frees == 0) {
		fprintf(stderr, "test_nng_tls_fini: the closing listener "
		    "freed no stream: the test saw nothing of what it "
		    "checks\n");
		return 1;
	}
	if (late > 0) {
		fprintf(stderr, "test_nng_tls_fini: %u TLS stream(s) freed "
		    "after nng_fini had begun to free the aio expire queues: "
		    "the reaper would run tls_reap on them (panic: "
		    "pthread_mutex_lock: Invalid argument)\n", late);
		return 1;
	}
	printf("test_nng_tls_fini: %u stream(s) freed at the close, none "
	    "after nng_fini began to free the aio queues\n", frees);
	return 0;
}
